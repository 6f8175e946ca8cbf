"""The order of the jobs: packages bottom-up, so that a package's importers
receive its summary instead of making it again, and each package's cache
key is made once, from its own inputs and its imports' summaries.

The schedule owns the run's bookkeeping in the parent: which packages are
waiting for their imports, which can be looked up in the cache (a hit is
done at once and may free its importers), which must run, and the facts
each finished package lends its importers.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cudalint.cache import ResultCache
from cudalint.cside import headers_signature
from cudalint.driver.dependencies import Dependency, Node
from cudalint.driver.files import FileFacts, FileIndex
from cudalint.driver.keys import own_digest, result_key, summary_digest
from cudalint.findings import Notification, Result
from cudalint.framework import ObjectFact, concern_callers
from cudalint.module import Modules
from cudalint.source import SourceFile, display_path, read_source


@dataclass
class Job:
    """What a worker needs for one package: its files and their bytes (read
    once, by the parent), what it receives from its imports, whether it
    exports its facts, whether the run reports on it (else it is only
    summarised), and the key its result is stored under (None: not
    stored)."""

    index: int
    directory: Path
    paths: list[Path]
    reads: list[SourceFile | Notification]
    dependencies: list[Dependency]
    export: bool
    reported: bool
    key: str | None
    # The prefilter's verdict, made by the parent (None: the job makes it).
    matches: bool | None = None


class Schedule:
    """The run's packages (`nodes`, from `dependencies.plan`) in dependency
    order. A package waits until the packages whose facts it receives are
    done; it is then looked up in the cache (`trusted` vets a hit), and
    runs only if that misses. A job that could not finish, or an import
    cycle, leaves its importers to make its facts from its files: the facts
    are the same either way, only the time differs."""

    def __init__(
        self, nodes: list[Node], files: FileIndex, modules: Modules,
        cache: ResultCache | None, trusted: Callable[[Result, Node], Result | None],
        may_skip: Callable[[Node], bool] = lambda node: False, largest_first: bool = True,
    ) -> None:
        self.nodes = nodes
        self.files = files
        self.reads = files.reads
        self.modules = modules
        self.cache = cache
        self.trusted = trusted
        self.may_skip = may_skip
        # Over workers the largest package goes first (the run lasts at least
        # as long as it, so it must not start last); in one process the
        # smallest do, so that the bytes held for the rest are fewest when
        # the largest is analysed (the run's peak memory).
        self.largest_first = largest_first
        self._chain: list[int] | None = None
        index_of = {node.directory: i for i, node in enumerate(nodes)}
        self.needs = [[index_of[d] for d in node.dependencies if d in index_of] for node in nodes]
        self.dependents: list[list[int]] = [[] for _ in nodes]
        for i, needs in enumerate(self.needs):
            for j in set(needs):
                self.dependents[j].append(i)
        self.blocking = [len(set(needs)) for needs in self.needs]
        # Only a package some package imports needs its facts exported.
        self.imported = {j for needs in self.needs for j in needs}
        self.size = [sum(facts.size for facts in self._facts(i) if facts is not None) for i in range(len(nodes))]
        self.facts: list[list[ObjectFact] | None] = [None] * len(nodes)
        self.digests: list[str | None] = [None] * len(nodes)
        self._own: list[str | None] = [None] * len(nodes)
        self._listed_headers: dict[str, tuple] = {}
        self.done = [False] * len(nodes)
        # Whether node i's importers were freed (its facts lent before its
        # job finished, or its job done).
        self.lent = [False] * len(nodes)
        self.running: set[int] = set()
        self.unblocked = [i for i in range(len(nodes)) if not self.blocking[i]]
        self.queued: list[tuple[int, int]] = []  # (-size, index): misses that may run now
        self.waiting = set(range(len(nodes)))  # neither queued, running nor done
        self.keys: dict[int, str | None] = {}
        # Results found in the cache, for the run to merge.
        self.hits: list[tuple[int, Result]] = []

    def _reads(self, i: int) -> list[SourceFile | Notification]:
        """Node i's files as the parent read them, or read now (those the
        file index vouched for, and those let go: for a dependency whose
        importer needs its files)."""
        return [self._read(path) for path in self.nodes[i].paths]

    def _read(self, path: Path) -> SourceFile | Notification:
        read = self.reads.get(path)
        if read is None:
            read = self.reads[path] = read_source(path, display_path(path, self.files.base), self.files.overlay)
        return read

    def _facts(self, i: int) -> list[FileFacts | None]:
        """What the plan knows of node i's files (None: unreadable)."""
        return [self.files.facts(path) for path in self.nodes[i].paths]

    def own(self, i: int) -> str:
        if self._own[i] is None:
            node = self.nodes[i]
            entries: list[tuple[Path, bytes | Notification]] = []
            include_dirs: list[str] = []
            for path, facts in zip(node.paths, self._facts(i)):
                if facts is not None:
                    entries.append((path, facts.digest))
                    include_dirs += facts.include_dirs
                else:
                    read = self._read(path)
                    entries.append((path, read if isinstance(read, Notification) else hashlib.sha256(read.data).digest()))
            headers = tuple(entry for name in dict.fromkeys(include_dirs) for entry in self._headers_in(name))
            self._own[i] = own_digest(self.modules, node.directory, entries, headers)
        return self._own[i]

    def _headers_in(self, directory: str) -> tuple:
        """The headers of an absolute `-I` directory, by name, size and
        date: listed once per run, however many packages name it (gocv's
        every package names OpenCV's)."""
        if directory not in self._listed_headers:
            self._listed_headers[directory] = headers_signature((Path(directory),), usual=False)
        return self._listed_headers[directory]

    def _key(self, i: int) -> str | None:
        if self.cache is None:
            return None
        imported = []
        for j in self.needs[i]:
            if self.facts[j] is not None:
                digest = self.digests[j]
                if digest is None:
                    return None  # a summary no key can name: never cached
                imported.append((self.nodes[j].directory, digest))
            else:
                imported.append((self.nodes[j].directory, "files:" + self.own(j)))
        node = self.nodes[i]
        return result_key(self.cache, "reported" if node.reported else "summary", self.own(i), i in self.imported, imported)

    def _look_up(self) -> None:
        """Every package whose imports are done: a cache hit is done at
        once (and may free its importers), a miss is queued."""
        while self.unblocked:
            i = self.unblocked.pop()
            if i not in self.waiting:
                continue
            self.waiting.discard(i)
            skipped = self._skipped(i)
            if skipped is not None:
                self.hits.append((i, skipped))
                self.finish(i, skipped)
                continue
            key = self.keys[i] = self._key(i)
            cached = self.cache.get(key) if key is not None and self.cache is not None else None
            if cached is not None:
                cached = self.trusted(cached, self.nodes[i])
            if cached is not None and i in self.imported and self.nodes[i].reported and not cached.exports_facts:
                cached = None
            if cached is not None:
                self.hits.append((i, cached))
                self.finish(i, cached)
            else:
                heapq.heappush(self.queued, (self._order(i), i))

    def _order(self, i: int) -> int:
        if not self.largest_first:
            return self.size[i]
        if self._chain is None:
            self._chain = self.chains()
        return -self._chain[i]

    def chains(self) -> list[int]:
        """Each package's bytes plus the longest chain of importers that
        wait for it: over workers, the package that heads the longest chain
        starts first (a large binding imported by a large package must not
        wait behind packages nothing waits for). Depth first, without
        recursion; in an import cycle the importer still open counts 0."""
        chain = [0] * len(self.nodes)
        state = [0] * len(self.nodes)  # 0: not seen, 1: open, 2: done
        for start in range(len(self.nodes)):
            if state[start]:
                continue
            state[start] = 1
            stack = [(start, iter(self.dependents[start]))]
            while stack:
                i, rest = stack[-1]
                for k in rest:
                    if not state[k]:
                        state[k] = 1
                        stack.append((k, iter(self.dependents[k])))
                        break
                else:
                    stack.pop()
                    state[i] = 2
                    chain[i] = self.size[i] + max((chain[k] for k in self.dependents[i] if state[k] == 2), default=0)
        return chain

    def _skipped(self, i: int) -> Result | None:
        """The result of a package the prefilter skips, made here without a
        job, where nothing it receives or hands out can change that: no
        importer needs its summary, and its imports lent it no fact (a
        package that calls a dependency's wrapper is analysed)."""
        node = self.nodes[i]
        if not node.reported or i in self.imported or not self.may_skip(node):
            return None
        if any(self.facts[j] is None or concern_callers(self.facts[j]) for j in self.needs[i]):
            return None
        readable = [path for path, facts in zip(node.paths, self._facts(i)) if facts is not None]
        unreadable = [read for path in node.paths if path not in readable and isinstance(read := self._read(path), Notification)]
        return Result(notifications=unreadable, files_skipped=len(readable))

    def look_up(self) -> None:
        """Look up every package that may be looked up now (an unchanged
        tree is answered here, before any worker starts)."""
        self._refill()

    def _refill(self) -> None:
        self._look_up()
        if not self.queued and not self.running and self.waiting:
            # A cycle: nothing to wait for any more.
            self.unblocked = sorted(self.waiting, reverse=True)
            self._look_up()

    def ready(self) -> list[int]:
        """Every job that may start now, in the schedule's order (largest
        first over workers), handed over: the caller starts each, or gives
        it back."""
        self._refill()
        ready = [i for _, i in sorted(self.queued) if not self.done[i] and i not in self.running]
        self.queued = []
        return ready

    def next(self) -> int | None:
        """The first job in the schedule's order that may start now, handed
        over (None: none)."""
        self._refill()
        while self.queued:
            i = heapq.heappop(self.queued)[1]
            if not self.done[i] and i not in self.running:
                return i
        return None

    def start(self, i: int) -> Job:
        """Node i's job, with what its imports lend it."""
        self.running.add(i)
        dependencies: list[Dependency] = []
        for j in self.needs[i]:
            node = self.nodes[j]
            if self.facts[j] is not None:
                dependencies.append((node.directory, self.facts[j], []))
            else:
                sources = [read for read in self._reads(j) if isinstance(read, SourceFile) and not read.path.name.endswith("_test.go")]
                dependencies.append((node.directory, None, sources))
        node = self.nodes[i]
        reads = self._reads(i)
        if self.cache is not None:
            self.own(i)  # an importer whose job cannot use its facts has its key name its files
        for path in node.paths:
            # The job holds them now (one copy, not two, while the largest
            # package runs); read again only if its worker dies, or an
            # importer must make its facts from its files.
            self.reads.pop(path, None)
        return Job(i, node.directory, node.paths, reads, dependencies, i in self.imported, node.reported, self.keys.get(i), node.matches)

    def _record(self, i: int, facts: list) -> None:
        node = self.nodes[i]
        if node.reported:
            path = self.modules.import_path(node.directory)
            facts = [f for f in facts if f.import_path == path]
        self.facts[i] = list(facts)
        self.digests[i] = summary_digest(self.facts[i]) if self.cache is not None else None

    def _release(self, i: int) -> None:
        """Free the packages that waited for node i's facts."""
        if self.lent[i]:
            return
        self.lent[i] = True
        for k in self.dependents[i]:
            self.blocking[k] -= 1
            if not self.blocking[k]:
                self.unblocked.append(k)

    def lend(self, i: int, facts: list) -> None:
        """Node i's job made its summary and runs its rules now: its
        importers need nothing else from it, and may start."""
        if self.done[i] or self.lent[i]:
            return
        self._record(i, facts)
        self._release(i)

    def finish(self, i: int, result: Result | None) -> None:
        """Node i is done: file its facts (unless its job failed), let its
        bytes go (an importer that must make its facts reads them again),
        and free the packages that waited for it."""
        self.running.discard(i)
        self.waiting.discard(i)
        if self.done[i]:
            return
        self.done[i] = True
        node = self.nodes[i]
        if self.cache is not None:
            self.own(i)  # an importer that cannot use the facts has its key name the files
        if self.lent[i]:
            pass  # its importers have its facts already (the same ones)
        elif result is not None and result.internal_errors == 0 and (result.exports_facts or not node.reported):
            self._record(i, result.facts)
        if self.facts[i] is not None or not self.dependents[i]:
            for path in node.paths:
                self.reads.pop(path, None)
        self._release(i)

    def give_back(self, i: int) -> None:
        """A job that did not finish (its pool broke): it may start again."""
        self.running.discard(i)
        heapq.heappush(self.queued, (self._order(i), i))
