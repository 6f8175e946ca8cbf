#!/usr/bin/env python3
"""Time and memory of cudalint on the hostile inputs of tests/test_hostile.py.

The suite checks that each of these gives a notification at most; this
script says what each one costs, so that a regression in either shows:

    python benchmarks/hostile.py

Each input sits in a directory of its own beside one small cgo file, and
cudalint runs as users run it (a subprocess, one worker, no cache).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CGO_FILE = b"""package p

// #include <cuda_runtime_api.h>
import "C"

func sync() {
\tC.cudaDeviceSynchronize()
}
"""


def _deep_nesting() -> bytes:
    return b"package p\n\nfunc deep() {\n" + b"{\n" * 10_000 + b"}\n" * 10_000 + b"}\n"


def _twenty_megabytes() -> bytes:
    row = b"\t0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,\n"
    return b'package p\n\nimport "C"\n\nvar blob = []byte{\n' + row * (20 * 1024 * 1024 // len(row)) + b"}\n"


def _five_megabyte_line() -> bytes:
    values = ",".join(str(i % 256) for i in range(1_500_000))
    return ('package p\n\nimport "C"\n\nvar table = []byte{' + values + "}\n").encode()


def _five_megabyte_function() -> bytes:
    body = " ".join(["x++;"] * 1_300_000)
    return ('package p\n\nimport "C"\n\nfunc g() { x := 0; ' + body + " _ = x }\n").encode()


INPUTS: dict[str, Callable[[], bytes]] = {
    "10,000-deep nesting": _deep_nesting,
    "20 MB generated file": _twenty_megabytes,
    "5 MB single line": _five_megabyte_line,
    "5 MB single function": _five_megabyte_function,
}


def _measure(directory: Path) -> tuple[float, int, str]:
    """Wall time, peak RSS in KiB (GNU time) and the last line of stderr."""
    with tempfile.NamedTemporaryFile("r") as measured:
        command = ["/usr/bin/time", "-f", "%M", "-o", measured.name,
                   sys.executable, "-m", "cudalint", "--no-cache", "-j", "1", "."]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=directory, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        peak = Path(measured.name).read_text().strip().splitlines()
    notes = [line for line in done.stderr.splitlines() if line.startswith("hostile.go")]
    return elapsed, int(peak[-1]) if peak and peak[-1].isdigit() else 0, notes[0] if notes else "(no notification)"


def main() -> int:
    for label, generate in INPUTS.items():
        with tempfile.TemporaryDirectory() as name:
            directory = Path(name)
            (directory / "good.go").write_bytes(CGO_FILE)
            data = generate()
            (directory / "hostile.go").write_bytes(data)
            elapsed, peak, note = _measure(directory)
            print(f"{label:22s} {len(data) / 1e6:6.1f} MB {elapsed:7.2f} s  peak {peak / 1024:6.0f} MiB  {note[:110]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
