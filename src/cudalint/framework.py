"""The pass framework, after golang.org/x/tools/go/analysis.

Two kinds of analyzer run over a package:

* an **Analysis** computes a result that others read (call classification,
  variable uses, resource lifetimes, lock states, Go-memory provenance). It
  reports nothing. Its result is computed at most once per package, on the
  first `result_of` that asks for it.
* a **Rule** (`cudalint.catalog.Rule`) reports findings and computes nothing
  that others need. It declares the analyses it requires and reads their
  typed results with `Pass.result_of`.

An analysis may also export **facts** about the package's exported objects
(functions, methods `T.M`, types), as go/analysis's object facts: its
`facts` hook turns a run into {object name: fact}, each fact an instance of
its `fact_type` and plain data (frozen dataclasses, tuples, strings), so
that facts travel between processes and into the result cache as the
driver moves them, without knowing what they say. The passes over an
importing package read them with `Pass.imported_facts(analysis)`.

`result_of` only answers for analyses the asking rule or analysis declared
(directly or through the requirements of those), as go/analysis's `ResultOf`
does: a forgotten declaration is an error in the tests, not a silent
recomputation. A crash while computing a result is remembered, so that every
rule reading it fails the same way and the driver reports it once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from tree_sitter import Node

from cudalint.cfg import CFG, ExitKind, PackageCFGs
from cudalint.findings import Finding, Fix, Related, Span, Step, fill_template
from cudalint.functions import Package, Unit
from cudalint.gotypes import sole_implementations
from cudalint.knowledge import Knowledge
from cudalint.parse import ParsedFile

R = TypeVar("R")
F = TypeVar("F")


@dataclass(frozen=True, eq=False)
class Analysis(Generic[R]):
    """A named computation over one package whose result rules share."""

    name: str
    doc: str
    run: Callable[[Pass], R]
    requires: tuple[Analysis, ...] = ()
    # What it tells importers: {object name: fact} for one package (only the
    # objects it has something to say about), read off a pass that may ask
    # for its own result; every fact is a `fact_type`.
    facts: Callable[[Pass], Mapping[str, Any]] | None = None
    fact_type: type | None = None

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
# A call whose type arguments the parse saw as blanks (parse.generic_calls): `Alloc   (n)`.
_BLANKED_CALL = re.compile(r"[\w)] {3,}\(")


@dataclass(frozen=True)
class NoReturn:
    """The fact an exported function that never returns gives its importers
    (the `noreturn` analysis exports it): how it ends (ExitKind values;
    none: it blocks for ever). The framework reads it itself (as it reads
    ErrorType): the graphs of a run end a path at the calls of such functions."""

    exits: tuple[str, ...]

    def concerns_callers(self) -> bool:
        return False  # it sharpens the graphs of code analysed anyway


@dataclass(frozen=True)
class ErrorType:
    """The fact an exported type whose values report failure as non-nil
    gives its importers (an interface with `Error() string`, or a type with
    that method, through a pointer only: `pointer`). The framework reads it
    too: a function whose last result is `gpu.Error` returns an error."""

    pointer: bool

    def concerns_callers(self) -> bool:
        return False  # it sharpens the reading of code analysed anyway


@dataclass(frozen=True)
class ObjectFact:
    """One fact an analysis exports about an object of a package, named as
    importers name it (`Alloc`, `Device.Alloc`, `Buffer`)."""

    import_path: str
    name: str
    fact: Any


class ImportedFacts:
    """The facts the packages a package imports exported: per import path
    and object name, one fact per fact type."""

    def __init__(self, facts: Iterable[ObjectFact] = ()) -> None:
        self._facts: dict[str, dict[str, dict[type, Any]]] = {}
        for exported in facts:
            self._facts.setdefault(exported.import_path, {}).setdefault(exported.name, {})[type(exported.fact)] = exported.fact

    def __bool__(self) -> bool:
        return bool(self._facts)

    def with_facts(self, facts: Iterable[ObjectFact]) -> ImportedFacts:
        """These facts and more: an external test package (`x_test`) also
        sees the facts of the package it tests, analysed in the same job."""
        combined = ImportedFacts(facts)
        for import_path, objects in self._facts.items():
            combined._facts.setdefault(import_path, {}).update(objects)
        return combined

    def concern_callers(self, sources: Iterable[bytes], imports: Callable[[bytes], Iterable[str]]) -> bool:
        """Whether some fact received can make a finding in code that calls
        no API itself (the wrapper is the API there): a fact about an object
        of a package the code imports, whose name it spells. Facts reach a
        package from every package below it; one that imports a wrapper of
        `netns.Setup` calls the wrapper, whose own facts say so."""
        concerned: dict[str, set[str]] = {}
        for import_path, objects in self._facts.items():
            for name, facts in objects.items():
                if any(fact.concerns_callers() for fact in facts.values()):
                    concerned.setdefault(import_path, set()).add(name.rpartition(".")[2])
        if not concerned:
            return False
        for data in sources:
            names = {name for path in imports(data) for name in concerned.get(path, ())}
            if names and re.search(rb"\b(?:%s)\b" % b"|".join(re.escape(name.encode()) for name in sorted(names)), data):
                return True
        return False

    def packages(self) -> frozenset[str]:
        """The import paths that exported at least one fact."""
        return frozenset(self._facts)

    def objects(self, import_path: str) -> Mapping[str, Any]:
        """The names of the objects of that package some fact is about."""
        return self._facts.get(import_path, {})

    def knows(self, import_path: str, name: str) -> bool:
        """Whether some analysis exported a fact about import_path.name."""
        return name in self._facts.get(import_path, {})

    def fact(self, fact_type: type[F], import_path: str, name: str) -> F | None:
        return self._facts.get(import_path, {}).get(name, {}).get(fact_type)

    def error_types(self) -> dict[tuple[str, str], bool]:
        """(import path, type) -> whether only a pointer to it is an error,
        for the imported error types."""
        return {
            (path, name): facts[ErrorType].pointer
            for path, objects in self._facts.items() for name, facts in objects.items() if ErrorType in facts
        }

    def exits(self) -> dict[tuple[str, str], frozenset[ExitKind]]:
        """(import path, name) -> how it ends, for the imported functions
        that never return: the CFG builder ends a path at their calls."""
        return {
            (path, name): frozenset(ExitKind(kind) for kind in facts[NoReturn].exits)
            for path, objects in self._facts.items() for name, facts in objects.items() if NoReturn in facts
        }


def concern_callers(facts: Iterable[ObjectFact]) -> bool:
    """Whether an importer whose own bytes mention nothing the rules look
    for must still be analysed: a fact it receives says that a function
    hands out or releases a resource, wraps a status or touches the thread.
    Facts that only sharpen the analysis of code analysed anyway (types,
    embeddings, functions that never return, parameters only kept or
    lent: with no resource of its own, such code has none to keep or lend)
    do not: on moby they made 125 packages (949 files) be analysed for
    nothing."""
    return any(exported.fact.concerns_callers() for exported in facts)


class FactView:
    """One analysis's facts about the objects of imported packages."""

    def __init__(self, imported: ImportedFacts, fact_type: type) -> None:
        self._imported = imported
        self._type = fact_type

    def get(self, import_path: str, name: str) -> Any:
        return self._imported.fact(self._type, import_path, name)

    def names(self, import_path: str) -> list[str]:
        """The objects of that package this analysis has a fact about."""
        return sorted(name for name, facts in self._imported.objects(import_path).items() if self._type in facts)

    def items(self) -> Iterator[tuple[str, str, Any]]:
        """(import path, name, fact) for every fact of this type."""
        for import_path in sorted(self._imported.packages()):
            for name, facts in self._imported.objects(import_path).items():
                if self._type in facts:
                    yield import_path, name, facts[self._type]


@dataclass
class PackageRun:
    """What the passes over one package share: its inputs and the results of
    the analyses computed so far."""

    package: Package
    cfgs: PackageCFGs
    knowledge: Knowledge
    enabled: frozenset[str]
    # The facts of the packages this one imports.
    imported: ImportedFacts = field(default_factory=ImportedFacts)
    results: dict[Analysis, Any] = field(default_factory=dict)
    failures: dict[Analysis, BaseException] = field(default_factory=dict)


def start_run(package: Package, knowledge: Knowledge, enabled: frozenset[str], imported: ImportedFacts) -> PackageRun:
    """A run over one package whose graphs end a path at the calls of the
    imported functions that never return."""
    package.resolution.imported_error_types = imported.error_types()
    package.resolution.typed_packages = imported.packages() | knowledge.import_paths
    return PackageRun(package, PackageCFGs(package, imported_exits=imported.exits()), knowledge, enabled, imported)


def export_facts(run: PackageRun, analyses: Iterable[Analysis]) -> list[ObjectFact]:
    """The facts these analyses export about the package of a run, in a
    stable order. An analysis's hook runs after the hooks of the analyses
    that require it, and may read the names those export facts about
    (`Pass.exported_objects`). A crash is raised: the package then exports
    nothing (its importers read its files instead)."""
    import_path = run.package.import_path
    assert import_path is not None, "only a package of a module exports facts"
    exporting = [analysis for analysis in analyses if analysis.facts is not None]
    implementations = sole_implementations(run.package)
    dependents = {
        analysis: [other for other in exporting if other is not analysis and analysis in requirements(other.requires)]
        for analysis in exporting
    }
    by_analysis: dict[Analysis, dict[str, Any]] = {}
    while len(by_analysis) < len(exporting):
        analysis = next(a for a in exporting if a not in by_analysis and all(d in by_analysis for d in dependents[a]))
        named = frozenset(name for other in dependents[analysis] for name in by_analysis[other])
        hook = analysis.facts
        assert hook is not None
        by_analysis[analysis] = _through_interfaces(
            dict(hook(Pass(run, requirements((analysis,)), analysis=analysis, exported=named))), implementations,
        )
    return [
        ObjectFact(import_path, name, fact)
        for analysis in exporting for name, fact in sorted(by_analysis[analysis].items())
    ]


def _through_interfaces(facts: dict[str, Any], implementations: dict[str, str]) -> dict[str, Any]:
    """An importer's call of an interface's method is the method of the
    package's one type that implements it (`gotypes.sole_implementations`):
    its facts, also under the interface's name (`DCGM.CreateGroup` is
    `dcgmProvider.CreateGroup`), for every analysis alike."""
    for interface, implementation in implementations.items():
        prefix = implementation + "."
        for name, fact in list(facts.items()):
            if name.startswith(prefix):
                facts.setdefault(interface + name[len(implementation):], fact)
    return facts


@dataclass
class Pass:
    """One rule's (or analysis's) view of a package run."""

    run: PackageRun
    allowed: frozenset[Analysis]
    rule_id: str | None = None  # the rule this pass reports for; None: an analysis
    analysis: Analysis | None = None  # the analysis this pass computes for, if any
    # While facts are exported: the objects the analyses requiring this one
    # export facts about.
    exported: frozenset[str] = frozenset()
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
            inner = Pass(run, requirements(analysis.requires), analysis=analysis)
            try:
                run.results[analysis] = analysis.run(inner)
            except Exception as error:  # noqa: BLE001 - remembered and re-raised to every reader
                run.failures[analysis] = error
                raise AnalysisFailure(analysis, error) from error
        return run.results[analysis]

    def imported_facts(self, analysis: Analysis) -> FactView:
        """The facts `analysis` exported about the objects of the packages
        this one imports: for the pass's own analysis and those it declared."""
        if analysis not in self.allowed and analysis is not self.analysis:
            asker = self.rule_id or (self.analysis.name if self.analysis is not None else "an analysis")
            raise UndeclaredAnalysis(f"{asker} reads the facts of {analysis.name} without requiring it")
        assert analysis.fact_type is not None, f"{analysis.name} exports no facts"
        return FactView(self.run.imported, analysis.fact_type)

    def exported_objects(self) -> frozenset[str]:
        """While facts are exported: the objects of this package that the
        analyses requiring this one export facts about."""
        return self.exported

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
        if file.blanked:
            # A fix copying a generic call's text would write blanks for its type arguments.
            fixes = tuple(fix for fix in fixes if not any(_BLANKED_CALL.search(edit.text) for edit in fix.edits))
            message = file.original_text(message)
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
