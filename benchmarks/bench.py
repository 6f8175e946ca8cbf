#!/usr/bin/env python3
"""Measure cudalint on a Go tree against the floor of its design.

The floor is what any tree-sitter-based analyzer must pay: reading the files,
the byte prefilter, and tree-sitter's own parse of the files that survive it.
cudalint itself runs as users run it (a subprocess, `--format json`), cold
with 1 and N workers, then warm (a second run that can use the result cache,
where the installed cudalint has one).

    python benchmarks/bench.py /usr/lib/go/src --jobs 2

Prints one line per measurement and the ratios the project tracks. The
start-up of the interpreter is measured apart, since the floor has none.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cudalint.discover import discover
from cudalint.knowledge import load_knowledge
from cudalint.syntax import GO
from cudalint.checks import CHECKS, all_rules
from cudalint.prefilter import may_match, needles_for
from tree_sitter import Parser


def _timed(function, repeat: int = 1):
    """The value and the best wall time of `repeat` calls: the minimum is
    the figure least disturbed by whatever else the machine does."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return value, best


def _run_cudalint(tree: Path, jobs: int, cache_dir: Path, cold: bool) -> tuple[float, int, str]:
    """Wall time, peak RSS in KiB of the main process (GNU time's %M; each
    worker process peaks separately and lower) and the JSON output."""
    arguments = [sys.executable, "-m", "cudalint", "--format", "json", "--jobs", str(jobs), f"{tree}/..."]
    environment = dict(os.environ, CUDALINT_CACHE_DIR=str(cache_dir))
    if cold:
        environment["CUDALINT_NO_CACHE"] = "1"
    with tempfile.NamedTemporaryFile("r") as measured:
        if shutil.which("time") or Path("/usr/bin/time").exists():
            arguments = ["/usr/bin/time", "-f", "%M", "-o", measured.name, *arguments]
        start = time.perf_counter()
        done = subprocess.run(arguments, capture_output=True, text=True, env=environment, cwd=tree)
        elapsed = time.perf_counter() - start
        text = Path(measured.name).read_text().strip().splitlines()
    peak = int(text[-1]) if text and text[-1].isdigit() else 0
    return elapsed, peak, done.stdout


def _start_up() -> float:
    """The interpreter and cudalint's imports (`cudalint --version`), best of
    three: a fixed cost of every run, whatever the tree."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cudalint", "--version"], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs for each timing (default 3)")
    options = parser.parse_args()
    tree = options.tree.resolve()

    files = discover(["./..."], tree).files
    contents, read_time = _timed(lambda: [path.read_bytes() for path in files], options.repeat)
    lines = sum(data.count(b"\n") for data in contents)
    knowledge = load_knowledge()
    enabled = frozenset(rule.id for rule in all_rules())
    needles = needles_for(CHECKS, knowledge, enabled)
    by_directory: dict[Path, list[bytes]] = {}
    for path, data in zip(files, contents):
        by_directory.setdefault(path.parent, []).append(data)
    survivors, prefilter_time = _timed(
        lambda: [data for group in by_directory.values() if may_match(group, needles) for data in group], options.repeat,
    )
    go_parser = Parser(GO)

    def parse_all() -> None:
        for data in survivors:
            go_parser.parse(data)  # nothing is kept: the floor, not a memory test

    _, parse_time = _timed(parse_all, options.repeat)
    floor = read_time + prefilter_time + parse_time
    surviving_lines = sum(data.count(b"\n") for data in survivors)

    print(f"tree              {tree}")
    print(f"files             {len(files)} ({lines} lines); {len(survivors)} survive the prefilter ({surviving_lines} lines)")
    print(f"read              {read_time:8.2f} s")
    print(f"prefilter         {prefilter_time:8.2f} s")
    print(f"parse survivors   {parse_time:8.2f} s   (tree-sitter alone)")
    print(f"floor             {floor:8.2f} s   (read + prefilter + parse)")
    start_up = _start_up()
    print(f"start-up          {start_up:8.2f} s   (python -m cudalint --version)")
    with tempfile.TemporaryDirectory() as cache:
        cache_dir = Path(cache)
        results: dict[str, float] = {}
        outputs: set[str] = set()
        for label, jobs, cold in (("cold, 1 worker", 1, True), (f"cold, {options.jobs} workers", options.jobs, True),
                                  ("warm (fill)", options.jobs, False), ("warm", options.jobs, False)):
            runs = [_run_cudalint(tree, jobs, cache_dir, cold) for _ in range(1 if label == "warm (fill)" else options.repeat)]
            elapsed, peak = min(run[0] for run in runs), max(run[1] for run in runs)
            outputs.update(run[2] for run in runs)
            results[label] = elapsed
            print(f"cudalint {label:18s} {elapsed:8.2f} s   {len(files) / elapsed:8.0f} files/s   "
                  f"{lines / elapsed:9.0f} lines/s   peak {peak / 1024:6.0f} MiB")
        cold1 = results["cold, 1 worker"]
        coldn = results[f"cold, {options.jobs} workers"]
        warm = results["warm"]
        same = len(outputs) == 1
        print(f"ratio cold(1)/floor        {cold1 / floor:6.2f}")
        print(f"ratio cold(1)/parse        {cold1 / parse_time if parse_time else float('inf'):6.2f}")
        print(f"ratio (cold(1) - start-up)/floor {(cold1 - start_up) / floor:6.2f}")
        print(f"speed-up {options.jobs} workers        {cold1 / coldn:6.2f}x")
        print(f"warm / cold({options.jobs})             {warm / coldn:6.2%}")
        print(f"identical output across runs: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
