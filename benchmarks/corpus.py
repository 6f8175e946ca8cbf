#!/usr/bin/env python3
"""Run cudalint over whole trees and fail on any crash of cudalint itself.

A tree nobody here has read is where an analyzer crashes: moby's bridge
driver made the lock analysis recurse until Python gave up. For each TREE
this runs cudalint as CI would (`python -m cudalint --no-cache --format json
./...` in TREE, or `--all-modules` with the option), and fails when a run
gives an internal-error notification, prints a traceback, exits with a status
other than 0 or 1, or does not produce a report. It prints one row per tree:
files analysed, findings by family, notifications by kind, seconds and peak
memory (the largest process, from the kernel's accounting of children).

    python benchmarks/corpus.py /usr/lib/go-1.19/src ~/src/moby ~/src/go-nvml
    python benchmarks/corpus.py --all-modules --jobs 2 ~/src/*

Exit status: 0 when every tree ran clean, 1 when one did not (each problem
is printed), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path


def _run(tree: Path, jobs: int, all_modules: bool, timeout: float) -> tuple[dict | None, list[str], float, int]:
    """(report or None, problems, seconds, peak KiB) of one cudalint run on tree."""
    command = [sys.executable, "-m", "cudalint", "--no-cache", "--format", "json", "--jobs", str(jobs)]
    if all_modules:
        command.append("--all-modules")
    command.append("./...")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, [f"no report within {timeout:.0f} s"], time.monotonic() - start, 0
    seconds = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    problems = []
    if done.returncode not in (0, 1):
        problems.append(f"exit status {done.returncode}: {done.stderr.strip().splitlines()[-1:] or ''}")
    if "Traceback (most recent call last)" in done.stderr:
        problems.append("a traceback on standard error:\n" + done.stderr[-2000:])
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return None, [*problems, "standard output is not a JSON report"], seconds, peak
    for note in report.get("notifications", []):
        if note.get("kind") == "internal-error":
            problems.append(f"{note.get('path')}: {note.get('message')}")
    # ru_maxrss of children is the largest child so far: a tree's own peak
    # shows only where it exceeds those before it.
    return report, problems, seconds, peak if peak > before else 0


def _row(tree: Path, report: dict | None, seconds: float, peak: int) -> str:
    if report is None:
        return f"{tree}: no report ({seconds:.1f} s)"
    findings = Counter(finding["rule"][:3] for finding in report.get("findings", []))
    notes = Counter(note["kind"] for note in report.get("notifications", []))
    analysed = report.get("summary", {}).get("files_analysed", report.get("files_analysed", "?"))
    memory = f", {peak // 1024} MiB" if peak else ""
    return (
        f"{tree}: {analysed} files analysed; findings {dict(sorted(findings.items())) or 0}; "
        f"notifications {dict(sorted(notes.items())) or 0}; {seconds:.1f} s{memory}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="directories to analyse (each with ./...)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--all-modules", action="store_true", help="analyse every module of each tree")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per tree (default 1800)")
    options = parser.parse_args(argv)
    failed = 0
    for tree in options.trees:
        if not tree.is_dir():
            print(f"{tree}: not a directory", file=sys.stderr)
            return 2
        report, problems, seconds, peak = _run(tree.resolve(), options.jobs, options.all_modules, options.timeout)
        print(_row(tree, report, seconds, peak), flush=True)
        for problem in problems:
            print(f"  PROBLEM {problem}", flush=True)
        failed += bool(problems)
    print(f"{len(options.trees) - failed} of {len(options.trees)} trees ran clean")
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
