#!/usr/bin/env python3
"""Measure cudalint on a Go tree against the floor of its design.

The floor is tree-sitter's own parse of every Go file `./...` selects
(issue 23): not only the files the prefilter keeps, so that a better
prefilter shows as a gain and a looser one as a cost. Reading the files and
the prefilter are timed apart. cudalint itself runs as users run it (a
subprocess, `--format json`), cold with 1 and N workers, then warm: a run
that fills the result cache, runs answered by the cache alone
(`CUDALINT_NO_REPLAY=1`), and runs as users make them, where an unchanged
run replays its record (README, Result cache); each timing is the best of
--repeat runs, and every ratio is of timings made in this one run.

    python benchmarks/bench.py /usr/lib/go/src --jobs 2
    python benchmarks/bench.py /tmp/moby --file daemon/x/y.go --versus /tmp/moby-without-vendor
    python benchmarks/bench.py /tmp/moby --semgrep benchmarks/semgrep-cuda.yml --semgrep-bin .venv/bin/semgrep

`--file` also times a warm run on one file of the tree (as pre-commit runs
it); `--versus` times a cold run on a second tree alternately with the first
(moby with and without its vendor/); `--semgrep` runs semgrep with a rule
file on the same tree alternately with cudalint (1 worker each, `--jobs 1`
for semgrep), wall and CPU time. The start-up of the interpreter is
measured apart, since the floor has none.

cudalint runs with its bytecode written and read (to a temporary
PYTHONPYCACHEPREFIX, PYTHONDONTWRITEBYTECODE dropped), as an installed wheel
runs: a checkout's environment that forbids bytecode would otherwise charge
every run the compilation of cudalint's modules.
"""

from __future__ import annotations

import argparse
import atexit
import os
import resource
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


# cudalint's runs, as an installed wheel runs them: with bytecode.
_ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
_ENVIRONMENT["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="cudalint-bench-bytecode-")
atexit.register(shutil.rmtree, _ENVIRONMENT["PYTHONPYCACHEPREFIX"], ignore_errors=True)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cudalint(
    tree: Path, jobs: int, cache_dir: Path, cold: bool, target: str = "./...", extra: tuple[str, ...] = (),
    replay: bool = True,
) -> tuple[float, int, str, float]:
    """Wall time, peak RSS in KiB (GNU time's %M: of the largest process),
    the JSON output and the CPU time of the whole process tree. `replay`:
    an unchanged run may answer from its record (else from the cache only)."""
    arguments = [sys.executable, "-m", "cudalint", "--format", "json", "--jobs", str(jobs), *extra, target]
    environment = dict(_ENVIRONMENT, CUDALINT_CACHE_DIR=str(cache_dir))
    if cold:
        environment["CUDALINT_NO_CACHE"] = "1"
    if not replay:
        environment["CUDALINT_NO_REPLAY"] = "1"
    with tempfile.NamedTemporaryFile("r") as measured:
        if shutil.which("time") or Path("/usr/bin/time").exists():
            arguments = ["/usr/bin/time", "-f", "%M", "-o", measured.name, *arguments]
        cpu = children_cpu()
        start = time.perf_counter()
        done = subprocess.run(arguments, capture_output=True, text=True, env=environment, cwd=tree)
        elapsed = time.perf_counter() - start
        cpu = children_cpu() - cpu
        text = Path(measured.name).read_text().strip().splitlines()
    peak = int(text[-1]) if text and text[-1].isdigit() else 0
    return elapsed, peak, done.stdout, cpu


def _run_semgrep(semgrep: str, rules: Path, tree: Path) -> tuple[float, float, int]:
    """Wall and CPU time of semgrep over the tree (vendor/ left out, as
    `./...` leaves it out), and its number of results."""
    import json

    arguments = [semgrep, "scan", "--metrics=off", "--disable-version-check", "--jobs", "1", "--config", str(rules.resolve()),
                 "--exclude", "vendor", "--json", "--quiet", "."]
    cpu = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(arguments, capture_output=True, text=True, cwd=tree)
    elapsed = time.perf_counter() - start
    try:
        results = len(json.loads(done.stdout)["results"])
    except (ValueError, KeyError):
        results = -1
    return elapsed, children_cpu() - cpu, results


def _start_up() -> float:
    """The interpreter and cudalint's imports (`cudalint --version`), best of
    three: a fixed cost of every run, whatever the tree."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cudalint", "--version"], capture_output=True, check=True, env=_ENVIRONMENT)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs for each timing (default 3)")
    parser.add_argument("--file", help="also time a warm run on this file of the tree (relative to it)")
    parser.add_argument("--versus", type=Path, help="also time a cold run (1 worker) on this tree, alternately")
    parser.add_argument("--semgrep", type=Path, help="a semgrep rule file: run semgrep alternately with cudalint")
    parser.add_argument("--semgrep-bin", default="semgrep")
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

    def parse(selected: list[bytes]) -> None:
        for data in selected:
            go_parser.parse(data)  # nothing is kept: the floor, not a memory test

    _, floor = _timed(lambda: parse(contents), options.repeat)
    _, survivors_time = _timed(lambda: parse(survivors), options.repeat)
    surviving_lines = sum(data.count(b"\n") for data in survivors)

    print(f"tree              {tree}")
    print(f"files             {len(files)} ({lines} lines); {len(survivors)} survive the prefilter ({surviving_lines} lines)")
    print(f"read              {read_time:8.2f} s")
    print(f"prefilter         {prefilter_time:8.2f} s")
    print(f"parse survivors   {survivors_time:8.2f} s   (tree-sitter alone)")
    print(f"floor             {floor:8.2f} s   (tree-sitter's parse of every file ./... selects)")
    start_up = _start_up()
    print(f"start-up          {start_up:8.2f} s   (python -m cudalint --version)")
    with tempfile.TemporaryDirectory() as cache:
        cache_dir = Path(cache)
        results: dict[str, float] = {}
        outputs: set[str] = set()
        # "warm, cache only": every package from the result cache, no replay
        # of the whole run's record; "warm": as users run it (a replay).
        for label, jobs, cold, replay in (
            ("cold, 1 worker", 1, True, True), (f"cold, {options.jobs} workers", options.jobs, True, True),
            ("warm (fill)", options.jobs, False, True), ("warm, cache only", options.jobs, False, False),
            ("warm", options.jobs, False, True),
        ):
            runs = [
                run_cudalint(tree, jobs, cache_dir, cold, replay=replay)
                for _ in range(1 if label == "warm (fill)" else options.repeat)
            ]
            elapsed, peak = min(run[0] for run in runs), max(run[1] for run in runs)
            cpu = min(run[3] for run in runs)
            outputs.update(run[2] for run in runs)
            results[label] = elapsed
            print(f"cudalint {label:18s} {elapsed:8.2f} s   cpu {cpu:7.2f} s   {len(files) / elapsed:8.0f} files/s   "
                  f"{lines / elapsed:9.0f} lines/s   peak {peak / 1024:6.0f} MiB")
        if options.file:
            alone = min(run_cudalint(tree, options.jobs, cache_dir, False, options.file, replay=False)[0] for _ in range(options.repeat))
            print(f"cudalint warm, one file, cache only {alone:8.2f} s   ({options.file})")
            one = min(run_cudalint(tree, options.jobs, cache_dir, False, options.file)[0] for _ in range(options.repeat + 1))
            print(f"cudalint warm, one file    {one:8.2f} s   ({options.file})")
        cold1 = results["cold, 1 worker"]
        coldn = results[f"cold, {options.jobs} workers"]
        warm = results["warm"]
        cache_only = results["warm, cache only"]
        same = len(outputs) == 1
        print(f"ratio cold(1)/floor        {cold1 / floor:6.2f}")
        print(f"ratio (cold(1) - start-up)/floor {(cold1 - start_up) / floor:6.2f}")
        print(f"speed-up {options.jobs} workers        {cold1 / coldn:6.2f}x")
        print(f"warm / cold({options.jobs})             {warm / coldn:6.2%}")
        print(f"warm / start-up            {warm / start_up:6.2f}")
        print(f"warm, cache only / cold({options.jobs}) {cache_only / coldn:6.2%}; / start-up {cache_only / start_up:6.2f}")
        if options.file:
            print(f"one file warm / start-up   {one / start_up:6.2f}")
        print(f"identical output across runs: {'yes' if same else 'NO'}")
        if options.versus:
            versus = options.versus.resolve()
            pairs = [(run_cudalint(tree, 1, cache_dir, True)[0], run_cudalint(versus, 1, cache_dir, True)[0])
                     for _ in range(options.repeat)]
            mine, other = min(p[0] for p in pairs), min(p[1] for p in pairs)
            print(f"versus {versus}: cold(1) {mine:.2f} s here, {other:.2f} s there; ratio {mine / other:.2f}")
    if options.semgrep:
        with tempfile.TemporaryDirectory() as cache:
            walls, cpus, sg_walls, sg_cpus = [], [], [], []
            found = 0
            for _ in range(options.repeat):  # alternately: the machine's drift hits both alike
                elapsed, _, _, cpu = run_cudalint(tree, 1, Path(cache), True)
                walls.append(elapsed)
                cpus.append(cpu)
                elapsed, cpu, found = _run_semgrep(options.semgrep_bin, options.semgrep, tree)
                sg_walls.append(elapsed)
                sg_cpus.append(cpu)
            print(f"semgrep ({options.semgrep.name}, {found} results): wall {min(sg_walls):.2f} s, cpu {min(sg_cpus):.2f} s; "
                  f"cudalint cold(1): wall {min(walls):.2f} s, cpu {min(cpus):.2f} s")
            print(f"cudalint faster than semgrep: {min(sg_walls) / min(walls):.1f}x wall, {min(sg_cpus) / min(cpus):.1f}x cpu")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
