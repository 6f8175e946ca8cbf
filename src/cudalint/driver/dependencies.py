"""Dependencies: the packages a package imports, read for their facts and
never reported.

A run reads, besides the packages it reports on, the packages they import
(transitively, bottom-up), the way `go vet` loads dependencies, where those
can matter: they, or a package they import, mention something the rules
look for. Packages of the same module are found through its go.mod; those
of other modules through vendor/, go.work, replace directives and the
module cache (`resolve.py`), where the machine has them; the standard
library is never read. The run is planned here as a list of
packages (`Node`): those the run reports on, then the dependencies outside
it, each read once by the parent and summarised once per run by a job of its
own. A dependency analysed in the same run lends its importers the facts its
own result carries; one whose job could not finish (or an import cycle) has
its facts made from its files by the importer's job: the facts are the same
either way.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from cudalint.checks import FACT_ANALYSES
from cudalint.cside import glue_makes_objects
from cudalint.discover import package_files
from cudalint.framework import ImportedFacts, ObjectFact, export_facts, start_run
from cudalint.functions import collect_packages
from cudalint.knowledge import Knowledge
from cudalint.driver.files import FileFacts, FileIndex
from cudalint.module import Modules, imports, in_module_imports
from cudalint.parse import parse
from cudalint.source import SourceFile

# Import chains deeper than this are not followed (a guard, not a limit real modules reach).
MAX_IMPORT_DEPTH = 64


@dataclass
class Node:
    """One package of the run's plan: its directory, its own files, whether
    the run reports on it (else it is read only for its summary: a
    dependency outside the run, its test files left out), and the
    directories whose facts it receives (its imports that matter,
    transitively, bottom-up: the order in which an importer's facts are
    assembled)."""

    directory: Path
    paths: list[Path]
    reported: bool
    dependencies: list[Path]
    # The prefilter's verdict on its files, where the plan made it (None:
    # the job makes it).
    matches: bool | None = None


# What a job receives for one dependency: its directory, and either the
# facts it exported (known: analysed or looked up in this run) or, where
# those are unknown (its job failed; an import cycle), its files.
Dependency = tuple[Path, "list[ObjectFact] | None", "list[SourceFile]"]


class DependencyFacts:
    """The facts of dependencies made from their files in one process, by
    their bytes (a dependency whose facts are unknown, imported by many
    packages, is read once)."""

    def __init__(self, knowledge: Knowledge, modules: Modules) -> None:
        self.knowledge = knowledge
        self.modules = modules
        self._made: dict[tuple, list[ObjectFact]] = {}

    def imported_by(self, dependencies: list[Dependency]) -> ImportedFacts:
        """The facts of the packages a package imports (bottom-up): those
        known from the dependency's own job, else made from its files and
        its own imports' facts. A dependency that cannot be analysed says
        nothing (its calls stay hand-overs, as before facts)."""
        # The facts their own jobs made first, wherever they stand in the
        # list; then each package made here after the made packages it
        # imports, whatever order the list has (a walk that met a cycle of
        # a misread layout may list search before the db it imports): its
        # bytes and its imports' facts decide its facts, the same in every
        # importer and every worker that makes them.
        found: list[ObjectFact] = [fact for _, known, _ in dependencies if known is not None for fact in known]
        made = [(directory, sources, _imported(sources)) for directory, known, sources in dependencies if known is None]
        for directory, sources, imported in _imports_first(made, self.modules):
            key = (directory, tuple((s.path, hashlib.sha256(s.data).hexdigest()) for s in sources), _context(found, imported))
            if key not in self._made:
                self._made[key] = self.summary(directory, sources, ImportedFacts(found))
            found += self._made[key]
        return ImportedFacts(found)

    def summary(self, directory: Path, sources: list[SourceFile], imported: ImportedFacts) -> list[ObjectFact]:
        """The facts a package outside the run exports, made from its files
        (test files left out: importers never see them)."""
        import_path = self.modules.import_path(directory)
        if import_path is None:
            return []
        try:
            parsed = [parse(source)[0] for source in sources if not source.path.name.endswith("_test.go")]
            imports = {i.path for file in parsed for i in file.imports}
            package_names = {**self.modules.declared_names(directory, imports), **self.knowledge.package_names}
            packages = collect_packages(parsed, directory.as_posix(), package_names, import_path=import_path) if parsed else []
            facts: list[ObjectFact] = []
            for package in packages:
                if package.import_path is not None:
                    facts += export_facts(start_run(package, self.knowledge, frozenset(), imported), FACT_ANALYSES)
            return facts
        except Exception:  # noqa: BLE001 - a dependency's trouble is reported where it is analysed
            return []


def _context(found: list[ObjectFact], imported: tuple[str, ...]) -> str:
    """What the facts a package is made with say of the packages its files
    import: a package made in two importers' contexts that differ there is
    made twice, never served from the other's."""
    paths = set(imported)
    return hashlib.sha256(repr(sorted(repr(f) for f in found if f.import_path in paths)).encode()).hexdigest()


def _imported(sources: list[SourceFile]) -> tuple[str, ...]:
    """The import paths a package's files name, in order, each once."""
    return tuple(dict.fromkeys(path for source in sources for path in imports(source.data)))


# A package to make: its directory, its files, and the import paths they name, in order.
_Made = tuple[Path, list[SourceFile], tuple[str, ...]]


def _imports_first(made: list[_Made], modules: Modules) -> list[_Made]:
    """The packages to make, each after those of them it imports (in list
    order otherwise; a cycle is broken where the list meets it)."""
    by_path = {path: index for index, (directory, _, _) in enumerate(made) if (path := modules.import_path(directory)) is not None}
    order: list[int] = []
    visited: set[int] = set()

    def visit(index: int) -> None:
        if index in visited:
            return
        visited.add(index)
        for imported in made[index][2]:
            if (below := by_path.get(imported)) is not None:
                visit(below)
        order.append(index)

    for index in sorted(by_path.values()):  # (one outside any module has no facts to make)
        visit(index)
    return [made[index] for index in order]


def fact_needles_of(described: frozenset[str], c_api_needles: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """What makes a dependency outside the module worth summarising: an
    import of a described Go API, or a cgo call of a described C API
    (`C.cuda`, `C.nvml`: `c_api_needles`). `unsafe.Pointer` or cgo in
    golang.org/x/sys is no reason to summarise it."""
    return tuple(f'"{path}"'.encode() for path in sorted(described) if path != "C") + c_api_needles


def plan(
    directories: list[list[Path]], modules: Modules, files: FileIndex, described: frozenset[str] = frozenset(),
) -> list[Node]:
    """The run's packages: one node per directory of the run, in order,
    then one per dependency outside the run that can matter (its files, or
    a package it imports, mention something the rules look for). Every
    file is read here at most once (`files`: not at all where the index
    kept from an earlier run vouches for it): the jobs are handed these
    bytes and the cache keys are made of their digests. Packages the
    knowledge describes (`described`) are not read."""
    imports: dict[Path, list[Path]] = {}
    files_of: dict[Path, list[Path]] = {paths[0].parent: paths for paths in directories}
    relevant: dict[Path, bool] = {}
    matches: dict[Path, bool] = {}
    feeds: dict[Path, bool] = {}  # whether its own summary can matter to its importers
    # Outside the module only what can make a fact counts (fact_needles_of).
    outside: set[Path] = set()

    def contents(directory: Path) -> list[FileFacts]:
        if directory not in files_of:
            files_of[directory] = package_files(directory)
        return [facts for path in files_of[directory] if (facts := files.facts(path)) is not None]

    def scan(directory: Path, main: Path) -> list[Path]:
        if directory not in imports:
            found = contents(directory)
            # A binding whose C++ glue makes the objects its Go types own
            # (gocv's `return new cv::Mat();`) names no API in its Go files.
            glue = directory in outside and not any(facts.fact_matches for facts in found) and any(
                "C" in facts.imports for facts in found
            ) and glue_makes_objects(directory)
            if directory in outside and not glue and not any(facts.fact_matches for facts in found):
                matches[directory] = feeds[directory] = False
                imports[directory] = []  # read only as deep as the API
                return []
            matches[directory] = glue or any(facts.fact_matches if directory in outside else facts.matches for facts in found)
            feeds[directory] = glue or any(facts.fact_matches if directory in outside else facts.feeds for facts in found)
            imported = list(dict.fromkeys(path for facts in found for path in facts.imports))
            inside = in_module_imports(directory, modules.of(directory), imported)
            beyond = [d for d in modules.outside_imports(main, directory, imported, described) if d not in inside]
            outside.update(beyond)
            imports[directory] = inside + beyond
        return imports[directory]

    def matters(directory: Path, stack: frozenset[Path] = frozenset()) -> bool:
        """A dependency can hand something out only if it, or a package it
        imports, calls something the rules look for."""
        if directory not in relevant:
            relevant[directory] = feeds.get(directory, False) or any(
                matters(d, stack | {directory}) for d in imports.get(directory, ()) if d not in stack
            )
        return relevant[directory]

    below: dict[Path, list[Path] | None] = {}  # a directory's imports, transitively, bottom-up (None: a cycle)

    def beneath(directory: Path, main: Path, stack: set[Path]) -> list[Path] | None:
        """The post-order of a depth-first walk of the imports from the
        directory, once per directory: Go's imports form no cycle, so the
        walk from a package an importer reaches is that walk with what the
        importer saw before left out (a cycle, from a misread layout, or a
        chain deeper than half the bound makes the caller walk step by step).
        Which directory's module resolves the imports does not matter here:
        `scan` reads a directory's imports once, from the first to ask."""
        if directory in below:
            return below[directory]
        if directory in stack or len(stack) >= MAX_IMPORT_DEPTH // 2:
            return None
        stack.add(directory)
        order: list[Path] = []
        seen = {directory}
        for dependency in scan(directory, main):
            if dependency in seen:
                continue
            nested = beneath(dependency, main, stack)
            if nested is None:
                stack.discard(directory)
                below[directory] = None
                return None
            for found in (*nested, dependency):
                if found not in seen:
                    seen.add(found)
                    order.append(found)
        stack.discard(directory)
        below[directory] = order
        return order

    def dependencies_of(own: Path, main: Path) -> list[Path]:
        order = beneath(own, main, set())
        if order is None:
            order = walked(own, main)
        return [directory for directory in order if matters(directory)]

    def walked(own: Path, main: Path) -> list[Path]:
        order: list[Path] = []
        seen = {own}

        def visit(directory: Path, depth: int) -> None:
            for dependency in scan(directory, main):
                if dependency not in seen and depth < MAX_IMPORT_DEPTH:
                    seen.add(dependency)
                    visit(dependency, depth + 1)
                    order.append(dependency)

        visit(own, 0)
        return order

    nodes = [Node(paths[0].parent, paths, True, dependencies_of(paths[0].parent, paths[0].parent)) for paths in directories]
    for node in nodes:
        if node.directory not in outside:
            node.matches = matches[node.directory]
    # The package whose module resolves a dependency's imports: the run's
    # package that first reaches it (its imports were scanned from there).
    main_of = {node.directory: node.directory for node in nodes}
    for node in nodes:  # grows as dependencies are added
        for directory in node.dependencies:
            if directory not in main_of:
                main_of[directory] = main_of[node.directory]
                own = [path for path in files_of[directory] if not path.name.endswith("_test.go")]
                nodes.append(Node(directory, own, False, dependencies_of(directory, main_of[directory])))
    return nodes
