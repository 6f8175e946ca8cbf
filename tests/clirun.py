"""Running the real command line in-process (click's runner) or as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from cudalint.app.cli import main


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str


def cudalint(*args: str, cwd: Path) -> Run:
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(previous)
    return Run(result.exit_code, result.stdout, result.stderr)


def cudalint_process(*args: str, cwd: Path) -> Run:
    done = subprocess.run(
        [sys.executable, "-m", "cudalint", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    return Run(done.returncode, done.stdout, done.stderr)


CGO_FILE = """package p

// #include <cuda_runtime_api.h>
import "C"

func sync() {
	C.cudaDeviceSynchronize()
}
"""


def cgo_project(root: Path) -> Path:
    """A repository root (a bare .git marker) holding one cgo package, gpu/."""
    (root / ".git").mkdir()
    (root / "gpu").mkdir()
    (root / "gpu" / "a.go").write_text(CGO_FILE)
    return root
