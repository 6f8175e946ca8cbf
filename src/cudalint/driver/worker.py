"""A worker: one process's share of a run. It analyses the jobs it is
given (a cache miss each) and stores their results in the cache."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cudalint.cache import ResultCache
from cudalint.driver.dependencies import KnownFacts
from cudalint.driver.keys import read_all, result_key
from cudalint.driver.package import Context, guarded, in_deep_stack
from cudalint.findings import Result

_RECURSION_LIMIT = 20000

# A job: its index, its files (its own, then its dependencies'), the facts
# of its dependencies known so far, and whether to export its own facts.
Job = tuple[int, list[Path], KnownFacts, bool]

# A job's state in the array shared with the parent, so that after a worker
# dies the parent knows which jobs it was running (suspects) and which merely
# waited.
QUEUED, STARTED, DONE = 0, 1, 2


class Worker:
    """The state of one process's jobs: the context they share, the open
    cache (or None) and, in a pool, the array of job states."""

    def __init__(self, context: Context, cache: ResultCache | None, states: Any = None) -> None:
        self.context = context
        self.cache = cache
        self.states = states
        sys.setrecursionlimit(max(sys.getrecursionlimit(), _RECURSION_LIMIT))

    def work(self, job: Job) -> Result:
        """Analyse one directory (a cache miss): read its files once, analyse
        those bytes, and store the result under the key of those same bytes
        (a file edited during the run can then never lend its result to
        another content)."""
        index, paths, known, export = job
        if self.states is not None:
            self.states[index] = STARTED
        reads = read_all(paths, self.context.settings)
        result = in_deep_stack(guarded, paths, self.context, reads, known, export)
        if self.cache is not None and result.internal_errors == 0:
            self.cache.put(result_key(self.cache, self.context.modules, paths, reads), result)
        if self.states is not None:
            self.states[index] = DONE
        return result
