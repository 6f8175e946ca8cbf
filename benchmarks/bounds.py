#!/usr/bin/env python3
"""The speed-up a tree allows over N workers, from its own jobs.

Runs cudalint in this process with one worker, timing every job (and the
moment each job lends its summary), then schedules those jobs over 1, 2, 4,
8 and 16 ideal workers on the run's own dependency graph: no start-up, no
transfer. What it prints is a bound, not a measurement: no pool does
better than the package that is its largest unit of work, or the longest
chain of packages waiting for their imports' summaries.

    python benchmarks/bounds.py /usr/lib/go/src
    python benchmarks/bounds.py /tmp/gpu-repos --all-modules
"""

from __future__ import annotations

import heapq
import os
import sys
import time
from pathlib import Path

import cudalint.driver.schedule as schedule_module
import cudalint.driver.worker as worker_module


class _Lent:
    """Stands for a pool's queue: notes when a job lends its summary."""

    def __init__(self, started: dict, lent_at: dict) -> None:
        self.started = started
        self.lent_at = lent_at

    def put(self, item: tuple) -> None:
        self.lent_at[item[0]] = time.perf_counter() - self.started["at"]


def _simulate(schedule, durations: list[float], lent_at: dict, workers: int, key, lending: bool) -> float:
    count = len(schedule.nodes)
    blocking = [len(set(needs)) for needs in schedule.needs]
    ready = [(key(i), i) for i in range(count) if not blocking[i]]
    heapq.heapify(ready)
    events: list[tuple[float, int, int]] = []  # (time, 0: importers freed / 1: worker free, job)
    now, free, released = 0.0, workers, 0
    while released < count:
        while ready and free:
            _, i = heapq.heappop(ready)
            if durations[i] == 0.0:  # a cache hit, or done in the parent
                heapq.heappush(events, (now, 0, i))
                continue
            free -= 1
            heapq.heappush(events, (now + durations[i], 1, i))
            heapq.heappush(events, (now + (lent_at.get(i, durations[i]) if lending else durations[i]), 0, i))
        at, kind, i = heapq.heappop(events)
        now = max(now, at)
        if kind == 1:
            free += 1
            continue
        released += 1
        for k in schedule.dependents[i]:
            blocking[k] -= 1
            if not blocking[k]:
                heapq.heappush(ready, (key(k), k))
    return max([now] + [at for at, _, _ in events])


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    tree, extra = Path(sys.argv[1]).resolve(), sys.argv[2:]
    durations: dict[int, float] = {}
    lent_at: dict[int, float] = {}
    started: dict[str, float] = {}
    schedules: list = []
    real_work, real_init = worker_module.Worker.work, schedule_module.Schedule.__init__

    def work(self, job):
        self.lending = _Lent(started, lent_at)
        started["at"] = time.perf_counter()
        result = real_work(self, job)
        durations[job.index] = time.perf_counter() - started["at"]
        return result

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        schedules.append(self)

    worker_module.Worker.work = work
    schedule_module.Schedule.__init__ = init
    from cudalint.app.entry import main as cudalint

    os.chdir(tree)
    sys.argv = ["cudalint", "--no-cache", "--format", "json", "--jobs", "1", *extra, "./..."]
    begun = time.perf_counter()
    stdout = sys.stdout
    sys.stdout = open(os.devnull, "w")
    try:
        cudalint()
    except SystemExit:
        pass
    finally:
        sys.stdout.close()
        sys.stdout = stdout
    wall = time.perf_counter() - begun
    schedule = schedules[0]
    times = [durations.get(i, 0.0) for i in range(len(schedule.nodes))]
    outside = wall - sum(times)
    chain = schedule.chains()
    largest = max(range(len(times)), key=lambda i: times[i])
    print(f"tree {tree}: 1 worker {wall:.2f} s; {sum(1 for t in times if t)} jobs, {sum(times):.2f} s in jobs, "
          f"{outside:.2f} s outside them; largest {times[largest]:.2f} s ({schedule.nodes[largest].directory})")
    for workers in (1, 2, 4, 8, 16):
        plain = _simulate(schedule, times, lent_at, workers, lambda i: -schedule.size[i], False) + outside
        chained = _simulate(schedule, times, lent_at, workers, lambda i: -chain[i], True) + outside
        print(f"  {workers:2d} workers: largest first {plain:6.2f} s ({wall / plain:4.1f}x); "
              f"longest chain first, summaries lent {chained:6.2f} s ({wall / chained:4.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
