"""Recursion in the code analysed is never recursion in the analyzer.

Issue 20: moby's bridge driver crashed the lock analysis with RecursionError,
which asked "is this a lock wrapper?" recursively along mutually recursive
functions. Each generator below writes 5,000 functions of one shape (a ring
where each calls the next, or a chain): the run must end without any
notification, within a bounded time and 400 MiB, and still give the findings
the shape has, the same as for a ring of five.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from rings import SHAPES, ring_source

# Measures the child alone: resource's RUSAGE_CHILDREN of a process whose
# only child is the cudalint run.
_MEASURE = """
import resource, subprocess, sys, time
start = time.monotonic()
done = subprocess.run([sys.executable, "-m", "cudalint", "--no-cache", "--jobs", "1", "--format", "json", "./..."],
                      capture_output=True, text=True, timeout=float(sys.argv[1]))
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stdout.write(f"{done.returncode} {peak} {time.monotonic() - start:.1f}\\n" + done.stdout)
sys.stderr.write(done.stderr)
"""


def _write(directory: Path, shape: str, n: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "go.mod").write_text("module example.com/p\n\ngo 1.21\n")
    (directory / "p.go").write_text(ring_source(shape, n))


def _run(directory: Path, timeout: float = 60.0) -> tuple[dict, int, float]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(timeout)], cwd=directory, capture_output=True, text=True, timeout=timeout + 30,
    )
    head, _, report = done.stdout.partition("\n")
    status, peak_kib, seconds = head.split()
    assert status in ("0", "1"), done.stderr
    return json.loads(report), int(peak_kib), float(seconds)


def _rules(report: dict) -> dict[str, int]:
    return dict(Counter(finding["rule"] for finding in report["findings"]))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_five_functions_of_each_shape_give_their_findings(tmp_path: Path, shape: str) -> None:
    """The shapes' findings, read on rings of five, are what the 5,000 give."""
    _write(tmp_path, shape, 5)
    report, _, _ = _run(tmp_path)
    assert report["notifications"] == []
    assert _rules(report) == SHAPES[shape][1](5)


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_five_thousand_functions_end_in_bounded_time_and_memory(tmp_path: Path, shape: str) -> None:
    _write(tmp_path, shape, 5000)
    report, peak_kib, seconds = _run(tmp_path)
    assert report["notifications"] == []
    assert _rules(report) == SHAPES[shape][1](5000)
    assert peak_kib < 400 * 1024, f"{peak_kib // 1024} MiB"
    assert seconds < 60, seconds  # the figures are benchmarks/hostile.py's; this catches a blow-up


@pytest.mark.slow
def test_ten_thousand_nested_closures_end_in_a_notification_at_once(tmp_path: Path) -> None:
    """Finding a declaration by walking up the tree was quadratic (tree-sitter
    finds a parent by descending from the root): 10,000 nested literals took
    42 s to say they nest too deeply."""
    body = "func() {" * 10_000 + "\nC.cudaDeviceSynchronize()\n" + "}()" * 10_000
    (tmp_path / "go.mod").write_text("module example.com/p\n\ngo 1.21\n")
    (tmp_path / "p.go").write_text(
        'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nfunc f() {\n' + body + "\n}\n\n"
        "func g() {\n\tC.cudaDeviceSynchronize()\n}\n"
    )
    report, _, seconds = _run(tmp_path, timeout=30)
    assert [(n["kind"], n["line"]) for n in report["notifications"]] == [("too-complex", 6)]
    assert [(f["rule"], f["function"]) for f in report["findings"]] == [("CL301", "g")]
    assert seconds < 30


@pytest.mark.slow
def test_sixty_thousand_nested_ifdefs_in_a_preamble(tmp_path: Path) -> None:
    """The C side read conditional blocks recursively (RecursionError in the
    call index, which every rule needs) and re-read each block's text."""
    depth = 60_000
    preamble = "".join(f"#ifdef X{i}\n" for i in range(depth)) + "int helper(void);\n" + "#endif\n" * depth
    (tmp_path / "go.mod").write_text("module example.com/p\n\ngo 1.21\n")
    (tmp_path / "p.go").write_text(
        "package p\n\n/*\n" + preamble + '*/\nimport "C"\n\nfunc f() {\n\tC.cudaDeviceSynchronize()\n}\n'
    )
    report, _, seconds = _run(tmp_path, timeout=30)
    assert report["notifications"] == []
    assert [(f["rule"], f["function"]) for f in report["findings"]] == [("CL301", "f")]
