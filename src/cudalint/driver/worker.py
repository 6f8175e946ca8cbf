"""A worker: one process's share of a run. It analyses the jobs it is
given (a cache miss each: a package reported on, or a dependency to
summarise) and stores their results in the cache."""

from __future__ import annotations

import gc
import sys
from typing import Any

from cudalint.cache import ResultCache
from cudalint.driver.package import Context, guarded, in_deep_stack
from cudalint.driver.schedule import Job
from cudalint.findings import Result
from cudalint.source import SourceFile

_RECURSION_LIMIT = 20000
# Before a package this large (its Go files' bytes) the process hands back
# the memory of the packages before it: the peak is set by the largest
# packages, and a full collection costs up to a few tenths of a second.
_LARGE_JOB_BYTES = 1024 * 1024

# A job's state in the array shared with the parent, so that after a worker
# dies the parent knows which jobs it was running (suspects) and which merely
# waited.
QUEUED, STARTED, DONE = 0, 1, 2


def _trimmer():
    """glibc's malloc_trim, where there is one: the trees of a package
    analysed in a thread of its own are freed into that thread's arena,
    which glibc keeps unless asked; without it a process's memory grows
    with every large package it analysed, not with the largest."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _trimmer()


def _give_memory_back() -> None:
    """Before a large package: the trees and objects of the packages
    before it, some held in reference cycles until the collector's next
    full pass (rare in a process with many long-lived objects), go back to
    the system before this one grows the process again."""
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)


class Worker:
    """The state of one process's jobs: the context they share, the open
    cache (or None) and, in a pool, the array of job states."""

    def __init__(self, context: Context, cache: ResultCache | None, states: Any = None, lending: Any = None) -> None:
        self.context = context
        self.cache = cache
        self.states = states
        # Where a pool's worker sends a package's facts as soon as they are
        # made (index, facts), so that its importers start while its rules run.
        self.lending = lending
        # Jobs this process ran: before its first there is nothing to give back.
        self.analysed = 0
        sys.setrecursionlimit(max(sys.getrecursionlimit(), _RECURSION_LIMIT))

    def work(self, job: Job) -> Result:
        """Analyse one package from the bytes the parent read, and store the
        result under the key the parent made of those same bytes (a file
        edited during the run can then never lend its result to another
        content)."""
        if self.states is not None:
            self.states[job.index] = STARTED
        if self.analysed and sum(len(read.data) for read in job.reads if isinstance(read, SourceFile)) >= _LARGE_JOB_BYTES:
            _give_memory_back()
        self.analysed += 1
        if job.reported:
            lend = None
            if self.lending is not None and job.export:
                def lend(facts: list, index: int = job.index) -> None:
                    self.lending.put((index, facts))
            result = in_deep_stack(guarded, job.paths, self.context, job.reads, job.dependencies, job.export, job.matches, lend)
        else:
            result = in_deep_stack(self._summary, job)
        if self.cache is not None and job.key is not None and result.internal_errors == 0:
            self.cache.put(job.key, result)
        if self.states is not None:
            self.states[job.index] = DONE
        return result

    def _summary(self, job: Job) -> Result:
        """A dependency outside the run: only the facts it exports."""
        dependencies = self.context.dependencies
        sources = [read for read in job.reads if isinstance(read, SourceFile)]
        facts = dependencies.summary(job.directory, sources, dependencies.imported_by(job.dependencies))
        return Result(facts=facts, exports_facts=True)
