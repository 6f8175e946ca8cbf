"""The pass framework, after golang.org/x/tools/go/analysis.

Two kinds of analyzer run over a package:

* an **Analysis** computes a result that others read (call classification,
  variable uses, resource lifetimes, lock states, Go-memory provenance). It
  reports nothing. Its result is computed at most once per package, on the
  first `result_of` that asks for it.
* a **Rule** (`cudalint.catalog.Rule`) reports findings and computes nothing
  that others need. It declares the analyses it requires and reads their
  typed results with `Pass.result_of`.

`result_of` only answers for analyses the asking rule or analysis declared
(directly or through the requirements of those), as go/analysis's `ResultOf`
does: a forgotten declaration is an error in the tests, not a silent
recomputation. A crash while computing a result is remembered, so that every
rule reading it fails the same way and the driver reports it once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from tree_sitter import Node

from cudalint.cfg import CFG, PackageCFGs
from cudalint.findings import Finding, Fix, Related, Span, Step, fill_template
from cudalint.functions import Package, Unit
from cudalint.knowledge import Knowledge
from cudalint.parse import ParsedFile

R = TypeVar("R")


@dataclass(frozen=True, eq=False)
class Analysis(Generic[R]):
    """A named computation over one package whose result rules share."""

    name: str
    doc: str
    run: Callable[[Pass], R]
    requires: tuple[Analysis, ...] = ()

    def __repr__(self) -> str:
        return f"Analysis({self.name})"


def requirements(roots: tuple[Analysis, ...]) -> frozenset[Analysis]:
    """The analyses these declare, transitively (themselves included)."""
    found: set[Analysis] = set()
    stack = list(roots)
    while stack:
        analysis = stack.pop()
        if analysis not in found:
            found.add(analysis)
            stack.extend(analysis.requires)
    return frozenset(found)


class UndeclaredAnalysis(Exception):
    """A rule or analysis asked for the result of one it did not require."""


@dataclass
class AnalysisFailure(Exception):
    """Raised by result_of for an analysis that crashed on this package (or
    on one function of it): the rule reading it cannot go on there."""

    analysis: Analysis
    error: BaseException

    def __str__(self) -> str:
        return f"analysis {self.analysis.name}: {type(self.error).__name__}: {self.error}"


@dataclass
class Ref:
    """A related location named in a message: `@name` in the message renders
    as "line N" in text, and in SARIF as a link to the location (Go code has
    no `@`, so a message quoting code cannot be misread)."""

    node: Node | Span
    label: str


_PLACEHOLDER = re.compile(r"@([a-z_]+)\b")


@dataclass
class PackageRun:
    """What the passes over one package share: its inputs and the results of
    the analyses computed so far."""

    package: Package
    cfgs: PackageCFGs
    knowledge: Knowledge
    enabled: frozenset[str]
    # Summaries of the packages of the module this one imports (import path
    # -> function name -> cudalint.analyses.summaries.FunctionSummary).
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[Analysis, Any] = field(default_factory=dict)
    failures: dict[Analysis, BaseException] = field(default_factory=dict)


@dataclass
class Pass:
    """One rule's (or analysis's) view of a package run."""

    run: PackageRun
    allowed: frozenset[Analysis]
    rule_id: str | None = None  # the rule this pass reports for; None: an analysis
    findings: list[Finding] = field(default_factory=list)
    # Functions on which the rule crashed: the rest of the package goes on.
    crashes: list[tuple[Unit, BaseException]] = field(default_factory=list)

    @property
    def package(self) -> Package:
        return self.run.package

    @property
    def cfgs(self) -> PackageCFGs:
        return self.run.cfgs

    @property
    def knowledge(self) -> Knowledge:
        return self.run.knowledge

    def result_of(self, analysis: Analysis[R]) -> R:
        if analysis not in self.allowed:
            asker = self.rule_id or "an analysis"
            raise UndeclaredAnalysis(f"{asker} reads {analysis.name} without requiring it")
        run = self.run
        if analysis in run.failures:
            raise AnalysisFailure(analysis, run.failures[analysis])
        if analysis not in run.results:
            inner = Pass(run, requirements(analysis.requires))
            try:
                run.results[analysis] = analysis.run(inner)
            except Exception as error:  # noqa: BLE001 - remembered and re-raised to every reader
                run.failures[analysis] = error
                raise AnalysisFailure(analysis, error) from error
        return run.results[analysis]

    def graphs_of(self, units) -> Iterator[tuple[Unit, CFG]]:
        """The graphs of these units (built on demand), in package order."""
        wanted = set(units)
        for unit in self.package.units:
            if unit in wanted:
                graph = self.cfgs.graphs.get(unit)
                if graph is not None:
                    yield unit, graph

    def visit_graphs(self, units, visit: Callable[[Unit, CFG], None]) -> None:
        """visit(unit, graph) for each of these functions whose body can run
        (a literal in dead code is never created), each isolated: a crash
        on one function is recorded and the others are visited."""
        for unit, graph in self.graphs_of(units):
            if graph.created:
                with self.isolating(unit):
                    visit(unit, graph)

    @contextmanager
    def isolating(self, unit: Unit) -> Iterator[None]:
        """Run one function's share of a rule; a crash there is recorded for
        a notification naming the function, and the rule goes on."""
        try:
            yield
        except Exception as error:  # noqa: BLE001 - isolate one function
            self.crashes.append((unit, error))

    def report(
        self, unit: Unit, node: Node, message: str, *, steps: tuple[Step, ...] = (), fixes: tuple[Fix, ...] = (), **refs: Ref,
    ) -> None:
        self.report_in(unit.file, unit.name, node, message, steps=steps, fixes=fixes, **refs)

    def report_in(
        self, file: ParsedFile, function: str, node: Node, message: str, *, steps: tuple[Step, ...] = (),
        fixes: tuple[Fix, ...] = (), **refs: Ref,
    ) -> None:
        """Report for this pass's rule, outside any function too (a
        package-level initializer). `message` may name related locations as
        `@name`, each given as a keyword Ref."""
        assert self.rule_id is not None, "analyses report nothing"
        source = file.source
        span = source.span(node)
        related: list[Related] = []
        order: dict[str, int] = {}

        def place(match: re.Match) -> str:
            name = match.group(1)
            if name not in refs:
                return match.group(0)
            ref = refs[name]
            where = ref.node if isinstance(ref.node, Span) else source.span(ref.node)
            if where == span:
                return f"line {span.start.line}"  # the finding's own place is no related location
            if name not in order:
                order[name] = len(related)
                related.append(Related(where, ref.label))
            return "{@%d}" % order[name]

        template = _PLACEHOLDER.sub(place, message) if refs else ""
        text = fill_template(template, tuple(related)) if refs else message
        if not related:
            template = ""
        self.findings.append(Finding(
            self.rule_id, source.display, span, text, function,
            source.line_text(span.start.line), steps, tuple(related), template, fixes=fixes,
        ))
