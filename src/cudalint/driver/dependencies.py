"""Dependencies: the packages a package imports, read for their facts and
never reported.

A run reads, besides the packages it reports on, the packages they import
(transitively, bottom-up), the way `go vet` loads dependencies, where those
can matter: they, or a package they import, mention something the rules
look for. Packages of the same module are found through its go.mod; those
of other modules through vendor/, go.work, replace directives and the
module cache (`resolve.py`), where the machine has them; the standard
library is never read. A dependency analysed in the same run
lends its importers the facts its own result carries; one outside the run,
or whose job has not finished, has its facts made from its files, once per
process and content: the facts are the same either way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from cudalint import prefilter
from cudalint.checks import FACT_ANALYSES
from cudalint.discover import package_files
from cudalint.framework import ImportedFacts, ObjectFact, export_facts, start_run
from cudalint.functions import collect_packages
from cudalint.knowledge import Knowledge
from cudalint.module import Modules, in_module_imports
from cudalint.parse import parse
from cudalint.source import SourceFile, display_path, read_source
from cudalint.findings import Notification

# Import chains deeper than this are not followed (a guard, not a limit real modules reach).
MAX_IMPORT_DEPTH = 64

# Import path -> the facts its package exported (an empty list is an answer
# too: the package says nothing).
KnownFacts = dict[str, list[ObjectFact]]


class DependencyFacts:
    """The facts of dependencies made from their files in one process, by
    their bytes (a dependency imported by many packages is read once)."""

    def __init__(self, knowledge: Knowledge, modules: Modules) -> None:
        self.knowledge = knowledge
        self.modules = modules
        self._made: dict[tuple, list[ObjectFact]] = {}

    def imported_by(self, dependencies: dict[Path, list[SourceFile]], known: KnownFacts) -> ImportedFacts:
        """The facts of the packages a package imports (`dependencies`, its
        imports' files, bottom-up): those the parent already has from the
        dependency's own analysis, else made from the dependency's files and
        its own imports' facts. A dependency that cannot be analysed says
        nothing (its calls stay hand-overs, as before facts)."""
        found: list[ObjectFact] = []
        for directory, sources in dependencies.items():
            import_path = self.modules.import_path(directory)
            if import_path is None:
                continue
            if import_path in known:
                found += known[import_path]
                continue
            # Its own imports come before it in every importer's list, the same
            # way: its bytes decide its facts.
            key = (directory, tuple((s.path, hashlib.sha256(s.data).hexdigest()) for s in sources))
            if key not in self._made:
                self._made[key] = self._from_files(directory, import_path, sources, ImportedFacts(found))
            found += self._made[key]
        return ImportedFacts(found)

    def _from_files(self, directory: Path, import_path: str, sources: list[SourceFile], imported: ImportedFacts) -> list[ObjectFact]:
        try:
            parsed = [parse(source)[0] for source in sources if not source.path.name.endswith("_test.go")]
            packages = collect_packages(
                parsed, directory.as_posix(), self.knowledge.package_names, import_path=import_path,
            ) if parsed else []
            facts: list[ObjectFact] = []
            for package in packages:
                if package.import_path is not None:
                    facts += export_facts(start_run(package, self.knowledge, frozenset(), imported), FACT_ANALYSES)
            return facts
        except Exception:  # noqa: BLE001 - a dependency's trouble is reported where it is analysed
            return []


def with_dependencies(
    directories: list[list[Path]], base: Path, modules: Modules, needles: tuple[bytes, ...],
    reads: dict[Path, SourceFile | Notification], described: frozenset[str] = frozenset(),
    c_api_needles: tuple[bytes, ...] = (), overlay: Mapping[Path, bytes] | None = None,
) -> list[list[Path]]:
    """Each directory's files followed by the files of the packages of its
    module it imports, transitively and bottom-up, where those can matter
    (their files mention something the rules look for). They are read for
    their facts, not reported, and they are part of the directory's cache
    key: editing a dependency re-analyses its importers. What is read lands
    in `reads`. Packages the knowledge describes (`described`) are not read."""
    imports: dict[Path, list[Path]] = {}
    files_of: dict[Path, list[Path]] = {paths[0].parent: paths for paths in directories}
    relevant: dict[Path, bool] = {}
    matches: dict[Path, bool] = {}
    # Outside the module only what can make a fact counts: an import of a
    # described Go API, or a cgo call of a described C API (`C.cuda`,
    # `C.nvml`: `c_api_needles`). `unsafe.Pointer` or cgo in
    # golang.org/x/sys is no reason to summarise it.
    outside: set[Path] = set()
    fact_needles = tuple(f'"{path}"'.encode() for path in sorted(described) if path != "C") + c_api_needles

    def contents(directory: Path) -> list[bytes]:
        found = []
        if directory not in files_of:
            files_of[directory] = package_files(directory)
        for path in files_of[directory]:
            read = reads[path] = read_source(path, display_path(path, base), overlay)
            if isinstance(read, SourceFile):
                found.append(read.data)
        return found

    def scan(directory: Path, main: Path) -> list[Path]:
        if directory not in imports:
            if directory in outside and not prefilter.may_match(_raw(directory, files_of), fact_needles):
                matches[directory] = False
                imports[directory] = []  # read only as deep as the API
                return []
            data = contents(directory)
            matches[directory] = prefilter.may_match(data, fact_needles if directory in outside else needles)
            inside = in_module_imports(directory, modules.of(directory), data)
            beyond = [d for d in modules.outside_imports(main, directory, data, described) if d not in inside]
            outside.update(beyond)
            imports[directory] = inside + beyond
        return imports[directory]

    def matters(directory: Path, stack: frozenset[Path] = frozenset()) -> bool:
        """A dependency can hand something out only if it, or a package it
        imports, calls something the rules look for."""
        if directory not in relevant:
            relevant[directory] = matches.get(directory, False) or any(
                matters(d, stack | {directory}) for d in imports.get(directory, ()) if d not in stack
            )
        return relevant[directory]

    out = []
    for paths in directories:
        own = paths[0].parent
        order: list[Path] = []
        seen = {own}

        def visit(directory: Path, depth: int) -> None:
            for dependency in scan(directory, own):
                if dependency not in seen and depth < MAX_IMPORT_DEPTH:
                    seen.add(dependency)
                    visit(dependency, depth + 1)
                    order.append(dependency)

        visit(own, 0)
        extra = [path for directory in order if matters(directory) for path in files_of[directory] if not path.name.endswith("_test.go")]
        out.append(paths + extra)
    return out


def _raw(directory: Path, files_of: dict[Path, list[Path]]) -> list[bytes]:
    """The bytes of a dependency's Go files, undecoded: most dependencies
    outside the module are only searched for an API's names, once."""
    if directory not in files_of:
        files_of[directory] = package_files(directory)
    found = []
    for path in files_of[directory]:
        try:
            with open(path, "rb") as stream:
                found.append(stream.read())
        except OSError:
            continue
    return found
