#!/usr/bin/env python3
"""How cold runs scale with workers: the same tree at 1, 2, 4, 8 and 16 workers.

Each tree is run as users run it (`python -m cudalint --format json --jobs N
./...`, no cache), every worker count once per round and the rounds
repeated, so that a machine that slows down mid-sweep slows every count
alike; each figure is the best of its rounds. It prints, per tree, the wall
and CPU time of every count, the speed-up over one worker, and whether every
run printed the same bytes (output must not depend on the worker count).

    python benchmarks/sweep.py /usr/lib/go/src /tmp/moby
    python benchmarks/sweep.py /tmp/gpu-repos --all-modules --workers 1,4,16 --repeat 2

`--json FILE` also writes every run's figures, for the table in README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from bench import run_cudalint


def sweep(tree: Path, workers: list[int], repeat: int, extra: tuple[str, ...]) -> dict:
    """Best wall and CPU time per worker count, and whether the outputs agree."""
    best: dict[int, tuple[float, float, int]] = {}
    outputs: set[str] = set()
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(repeat):
            for count in workers:
                elapsed, peak, output, cpu = run_cudalint(tree, count, Path(cache), True, extra=extra)
                outputs.add(output)
                if count not in best or elapsed < best[count][0]:
                    best[count] = (elapsed, cpu, peak)
    findings = len(json.loads(next(iter(outputs))).get("findings", [])) if len(outputs) == 1 else None
    return {
        "tree": str(tree), "findings": findings, "identical": len(outputs) == 1,
        "runs": {count: {"wall": wall, "cpu": cpu, "peak_kib": peak} for count, (wall, cpu, peak) in sorted(best.items())},
    }


def table(measured: dict) -> str:
    runs = measured["runs"]
    base = runs[min(runs)]["wall"]
    rows = [f"{measured['tree']}: {measured['findings']} findings, identical output: {'yes' if measured['identical'] else 'NO'}",
            "| workers | wall | CPU | speed-up | peak (largest process) |", "|---:|---:|---:|---:|---:|"]
    for count, run in runs.items():
        rows.append(f"| {count} | {run['wall']:.2f} s | {run['cpu']:.2f} s | {base / run['wall']:.2f}x | "
                    f"{run['peak_kib'] / 1024:.0f} MiB |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", type=Path, nargs="+")
    parser.add_argument("--workers", default="1,2,4,8,16", help="comma-separated worker counts (default 1,2,4,8,16)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each figure is the best of them (default 3)")
    parser.add_argument("--all-modules", action="store_true", help="pass --all-modules (a folder of several repositories)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args()
    workers = [int(count) for count in options.workers.split(",")]
    extra = ("--all-modules",) if options.all_modules else ()
    print(f"{os.cpu_count()} CPUs; workers {workers}; best of {options.repeat}", flush=True)
    results = []
    for tree in options.trees:
        measured = sweep(tree.resolve(), workers, options.repeat, extra)
        results.append(measured)
        print(table(measured), flush=True)
    if options.json:
        options.json.write_text(json.dumps(results, indent=1))
    return 0 if all(measured["identical"] for measured in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
