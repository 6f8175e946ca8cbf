"""The order of the jobs: directories in dependency order, so that a
package's importers receive its facts instead of making them again."""

from __future__ import annotations

from pathlib import Path

from cudalint.driver.dependencies import KnownFacts
from cudalint.findings import Result
from cudalint.module import Modules


def _directory_bytes(paths: list[Path]) -> int:
    size = 0
    for path in paths:
        try:
            size += path.stat().st_size
        except OSError:
            pass
    return size


def record(known: KnownFacts, modules: Modules, directory: Path, result: Result) -> None:
    """File a directory's exported facts (none is an answer too: the
    package says nothing) under its import path."""
    path = modules.import_path(directory)
    if path is None or not result.exports_facts:
        return
    facts = known.setdefault(path, [])
    facts.extend(exported for exported in result.facts if exported.import_path == path)


class Schedule:
    """Directories in dependency order. A directory whose package imports
    packages analysed in this run waits until their jobs are done: their
    results carry the facts of their exported functions, which it then
    receives instead of making them again (once per worker, as it would
    otherwise). Jobs that could not finish, or an import cycle, leave the
    waiting jobs to make them from the files: the facts are the same either
    way, only the time differs."""

    def __init__(self, misses: list[list[Path]], known: KnownFacts, modules: Modules):
        self.known = known
        self.modules = modules
        self.pending = set(range(len(misses)))
        self.running: set[int] = set()
        own = [paths[0].parent for paths in misses]
        self.directories = own
        job_of = {directory: i for i, directory in enumerate(own)}
        self.imports = [
            sorted({p.parent for p in paths if p.parent != own[i]}, key=lambda d: d.as_posix()) for i, paths in enumerate(misses)
        ]
        self.waits_for = [{job_of[d] for d in self.imports[i] if d in job_of} for i in range(len(misses))]
        # Only a package some job imports needs its facts exported.
        self.imported = {job for waits in self.waits_for for job in waits}
        self.size = [_directory_bytes(paths) for paths in misses]

    def ready(self) -> list[int]:
        """The jobs that may start now, largest first (the run lasts at least
        as long as its biggest package, so that one must not start last)."""
        ready = [i for i in self.pending if not (self.waits_for[i] & (self.pending | self.running))]
        if not ready and not self.running:
            ready = list(self.pending)  # a cycle: nothing to wait for any more
        return sorted(ready, key=lambda i: (-self.size[i], i))

    def start(self, i: int) -> tuple[KnownFacts, bool]:
        """The job's dependencies' facts, and whether to export its own."""
        self.pending.discard(i)
        self.running.add(i)
        return self.facts_for(i), i in self.imported

    def facts_for(self, i: int) -> KnownFacts:
        found: KnownFacts = {}
        for directory in self.imports[i]:
            path = self.modules.import_path(directory)
            if path is not None and path in self.known:
                found[path] = self.known[path]
        return found

    def finish(self, i: int, result: Result | None) -> None:
        self.running.discard(i)
        self.pending.discard(i)
        if result is not None and result.internal_errors == 0:
            record(self.known, self.modules, self.directories[i], result)

    def give_back(self, i: int) -> None:
        self.running.discard(i)
        self.pending.add(i)
