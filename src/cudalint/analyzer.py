"""The pass framework, after golang.org/x/tools/go/analysis: an Analyzer has a
name, documentation and the rules it reports; it runs once per package over
facts computed earlier (units, graphs, call facts) and never recomputes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tree_sitter import Node

from cudalint.catalog import Rule
from cudalint.cfg import CFG, PackageCFGs
from cudalint.facts import Facts
from cudalint.findings import Finding, Step
from cudalint.functions import Package, Unit
from cudalint.knowledge import Knowledge
from cudalint.parse import ParsedFile


@dataclass
class Pass:
    package: Package
    cfgs: PackageCFGs
    facts: Facts
    knowledge: Knowledge
    enabled: frozenset[str]
    findings: list[Finding] = field(default_factory=list)
    # Results shared by the passes of one package (computed by the first that asks).
    shared: dict = field(default_factory=dict)
    # Functions on which the pass crashed: the rest of the package goes on.
    failures: list[tuple[Unit, BaseException]] = field(default_factory=list)

    def graphs_of(self, units: Iterable[Unit]) -> Iterator[tuple[Unit, CFG]]:
        """The graphs of these units (built on demand), in package order."""
        wanted = set(units)
        for unit in self.package.units:
            if unit in wanted:
                graph = self.cfgs.graphs.get(unit)
                if graph is not None:
                    yield unit, graph

    def units_with_api_calls(self) -> list[Unit]:
        """The functions that call something the API knowledge describes:
        the only ones the resource and status rules have anything to say about."""
        return [unit for unit in self.package.units if unit.node in self.facts.api_calls]

    @contextmanager
    def isolating(self, unit: Unit) -> Iterator[None]:
        """Run one function's share of a pass; a crash there is recorded for
        a notification naming the function, and the pass continues."""
        try:
            yield
        except Exception as error:  # noqa: BLE001 - isolate one function
            self.failures.append((unit, error))

    def fact(self, key: str, compute: Callable[[], object]):
        if key not in self.shared:
            self.shared[key] = compute()
        return self.shared[key]

    def report(self, rule_id: str, unit: Unit, node: Node, message: str, steps: tuple[Step, ...] = ()) -> None:
        self.report_in(rule_id, unit.file, unit.name, node, message, steps)

    def report_in(
        self, rule_id: str, file: ParsedFile, function: str, node: Node, message: str, steps: tuple[Step, ...] = (),
    ) -> None:
        """Report outside any function (a package-level initializer, say)."""
        if rule_id not in self.enabled:
            return
        source = file.source
        span = source.span(node)
        self.findings.append(Finding(
            rule_id, source.display, span, message, function,
            source.line_text(span.start.line), steps,
        ))


@dataclass(frozen=True)
class Analyzer:
    name: str
    doc: str
    rules: tuple[Rule, ...]
    run: Callable[[Pass], None]
    # Byte strings one of which a file must contain for this analyzer to have
    # anything to say about its package (the prefilter's input).
    needles: Callable[[Knowledge], frozenset[bytes]]

    @property
    def rule_ids(self) -> frozenset[str]:
        return frozenset(rule.id for rule in self.rules)
