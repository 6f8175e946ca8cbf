#!/usr/bin/env python3
"""Time and memory of cudalint on hostile inputs: those of
tests/test_hostile.py, the path-engine and process blow-ups of issue 14
(a function of gotos, a loop of conditional frees, sequential ifs that free
and re-allocate, nested literals, and `--jobs 1000`), and the recursion of
issue 20 (10,000 nested closures; rings and chains of 5,000 functions, from
tests/rings.py).

The suite checks that each of these gives a notification at most; this
script says what each one costs, so that a regression in either shows:

    python benchmarks/hostile.py                      # the installed cudalint
    python benchmarks/hostile.py --pythonpath OLD/src # another checkout's code

Each input sits in a directory of its own beside one small cgo file, and
cudalint runs as users run it (a subprocess, one worker, no cache). The
`--jobs 1000` input is a tree of 64 small packages; for it the peak is the
sum over the whole process tree, sampled every 20 ms, and the number of
worker processes is shown.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from rings import SHAPES, ring_source  # noqa: E402 - the tests' generators

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


_HEAD = 'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nimport "unsafe"\n\n'
_ACQUIRE = ["\tvar d unsafe.Pointer", "\tif C.cudaMalloc(&d, 16) != C.cudaSuccess {", "\t\treturn", "\t}"]


def _gotos(labels: int = 200) -> bytes:
    """A 10 KB function of labels, each a conditional free and a goto."""
    body = ["func f(n int) {", *_ACQUIRE]
    for i in range(labels):
        body += [f"L{i}:", f"\tif n == {i} {{", "\t\tC.cudaFree(d)", f"\t\tgoto L{(i * 7 + 3) % labels}", "\t}"]
    return (_HEAD + "\n".join(body + ["\tC.cudaFree(d)", "}"]) + "\n").encode()


def _loop_of_frees(k: int = 60) -> bytes:
    """A loop with k conditional frees: k double releases, not k squared."""
    body = ["func f(n int) {", *_ACQUIRE, "\tfor i := 0; i < n; i++ {"]
    for i in range(k):
        body += [f"\t\tif i == {i} {{", "\t\t\tC.cudaFree(d)", "\t\t}"]
    return (_HEAD + "\n".join(body + ["\t}", "}"]) + "\n").encode()


def _sequential_ifs(blocks: int = 1280) -> bytes:
    """1,280 sequential ifs that free and re-allocate."""
    body = ["func f(n int) {", *_ACQUIRE]
    for i in range(blocks):
        body += [f"\tif n > {i} {{", "\t\tC.cudaFree(d)", "\t\tif C.cudaMalloc(&d, 16) != C.cudaSuccess {",
                 "\t\t\treturn", "\t\t}", "\t}"]
    return (_HEAD + "\n".join(body + ["\tC.cudaFree(d)", "}"]) + "\n").encode()


def _nested_literals(depth: int = 3000) -> bytes:
    return (_HEAD + "func f() {\n\tC.cudaDeviceSynchronize()\n\tx := " + "T{" * depth + "}" * depth + "\n\t_ = x\n}\n").encode()


def _nested_closures(depth: int = 10_000) -> bytes:
    return (_HEAD + "func f() {\n" + "func() {" * depth + "\nC.cudaDeviceSynchronize()\n" + "}()" * depth + "\n}\n").encode()


INPUTS: dict[str, Callable[[], bytes]] = {
    "10,000-deep nesting": _deep_nesting,
    "20 MB generated file": _twenty_megabytes,
    "5 MB single line": _five_megabyte_line,
    "5 MB single function": _five_megabyte_function,
    "function of 200 gotos": _gotos,
    "loop of 60 cond. frees": _loop_of_frees,
    "1,280 sequential ifs": _sequential_ifs,
    "3,000 nested literals": _nested_literals,
    "10,000 nested closures": _nested_closures,
    **{f"5,000: {shape}": (lambda shape=shape: ring_source(shape, 5000).encode()) for shape in SHAPES},
}


def _env(pythonpath: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def _measure(directory: Path, pythonpath: str | None) -> tuple[float, int, str]:
    """Wall time, peak RSS in KiB (GNU time), and what cudalint said about
    hostile.go: its notification, or its findings by rule."""
    with tempfile.NamedTemporaryFile("r") as measured:
        command = ["/usr/bin/time", "-f", "%M", "-o", measured.name,
                   sys.executable, "-m", "cudalint", "--no-cache", "-j", "1", "--format", "json", "."]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=directory, capture_output=True, text=True, env=_env(pythonpath), timeout=1800)
        elapsed = time.perf_counter() - start
        peak = Path(measured.name).read_text().strip().splitlines()
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return elapsed, 0, f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
    notes = [n["message"] for n in report["notifications"] if n["path"] == "hostile.go"]
    counts = Counter(f["rule"] for f in report["findings"] if f["path"] == "hostile.go")
    said = "; ".join(notes) or ", ".join(f"{n:,} {rule}" for rule, n in sorted(counts.items())) or "(nothing)"
    return elapsed, int(peak[-1]) if peak and peak[-1].isdigit() else 0, said


def _tree(pid: int) -> list[int]:
    out = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [child for c in (task / "children").read_text().split() for child in _tree(int(c))]
        except OSError:
            pass
    return out


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _measure_jobs(pythonpath: str | None) -> str:
    """`--jobs 1000` on 64 small packages: wall time, peak memory of the
    whole process tree, and the most processes alive at once."""
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        for index in range(64):
            (root / f"p{index:02d}").mkdir()
            (root / f"p{index:02d}" / "a.go").write_bytes(CGO_FILE)
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "cudalint", "--no-cache", "--jobs", "1000", "./..."], cwd=root,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(pythonpath),
        )
        peak = processes = 0
        while process.poll() is None:
            tree = _tree(process.pid)
            processes = max(processes, len(tree))
            peak = max(peak, sum(_rss_kib(pid) for pid in tree))
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
    return f"{'--jobs 1000, 64 packages':24s} {'':9s} {elapsed:7.2f} s  peak {peak / 1024:6.0f} MiB  {processes} processes (cpus: {len(os.sched_getaffinity(0))})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pythonpath", help="run the cudalint found on this PYTHONPATH (e.g. another checkout's src)")
    parser.add_argument("--only", help="run only the inputs whose label contains this text")
    options = parser.parse_args()
    for label, generate in INPUTS.items():
        if options.only and options.only not in label:
            continue
        with tempfile.TemporaryDirectory() as name:
            directory = Path(name)
            (directory / "good.go").write_bytes(CGO_FILE)
            data = generate()
            (directory / "hostile.go").write_bytes(data)
            elapsed, peak, note = _measure(directory, options.pythonpath)
            print(f"{label:24s} {len(data) / 1e6:6.2f} MB {elapsed:7.2f} s  peak {peak / 1024:6.0f} MiB  {note[:110]}", flush=True)
    if not options.only or "jobs" in options.only:
        print(_measure_jobs(options.pythonpath), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
