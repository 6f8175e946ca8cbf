"""The text format (code frames, colour only on a terminal, the summary by
rule) and GitHub workflow commands."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import cudalint
from cudalint.reporters.github import command, escape_data, escape_property

SOURCE = """package p

// #include <cuda_runtime_api.h>
import "C"

func f() {
	if true {
		/* é */ C.cudaDeviceSynchronize()
	}
	_ = C.cudaDeviceReset()
}
"""

ANSI = "\x1b["


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "p.go").write_text(SOURCE, encoding="utf-8")
    return tmp_path


def test_show_source_underlines_the_finding(project: Path) -> None:
    run = cudalint("--show-source", cwd=project)
    assert run.exit_code == 1
    lines = run.stdout.splitlines()
    # Tabs become 4-column stops, the multi-byte é counts as one column.
    assert lines[:5] == [
        "p.go:8:12: CL301 the cudaError_t returned by C.cudaDeviceSynchronize is discarded; "
        "compare it with C.cudaSuccess and handle the failure",
        "  |",
        "8 |         /* é */ C.cudaDeviceSynchronize()",
        "  |                 " + "^" * len("C.cudaDeviceSynchronize()"),
        "",
    ]
    assert lines[6:9] == ["   |", "10 |     _ = C.cudaDeviceReset()", "   |         " + "^" * len("C.cudaDeviceReset()")]
    assert lines[-1] == "Found 2 findings (CL301: 1, CL302: 1): 1 error, 1 warning; 1 file analysed."
    assert ANSI not in run.stdout


def test_colour_only_on_a_terminal(project: Path) -> None:
    assert ANSI not in cudalint(cwd=project).stdout  # a pipe
    assert ANSI in cudalint("--color", "always", cwd=project).stdout
    assert ANSI not in cudalint("--color", "always", "--format", "json", cwd=project).stdout

    def on_a_terminal(*args: str, **env: str) -> str:
        leader, follower = pty.openpty()
        with subprocess.Popen(
            [sys.executable, "-m", "cudalint", *args], cwd=project, stdout=follower, stderr=subprocess.DEVNULL,
            env={**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, **env},
        ) as process:
            os.close(follower)
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the other side is closed
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            process.wait(timeout=120)
        os.close(leader)
        return b"".join(chunks).decode()

    coloured = on_a_terminal()
    assert ANSI in coloured and "CL301" in coloured
    plain = on_a_terminal(NO_COLOR="1")
    assert ANSI not in plain and "CL301" in plain
    assert ANSI not in on_a_terminal("--color", "never")


def test_github_workflow_commands(project: Path) -> None:
    (project / ".cudalint.toml").write_text('[level]\nCL302 = "note"\n')
    (project / "broken.go").write_text("package p\n\nfunc g( {\n")
    run = cudalint("--format", "github", cwd=project)
    assert run.exit_code == 1
    assert run.stdout.splitlines() == [
        "::error file=p.go,line=8,col=11,endLine=8,endColumn=36,title=CL301 status-discarded::"  # characters, not bytes (é)
        "the cudaError_t returned by C.cudaDeviceSynchronize is discarded; compare it with C.cudaSuccess and handle the failure",
        "::notice file=p.go,line=10,col=6,endLine=10,endColumn=25,title=CL302 status-blank::"
        "the cudaError_t returned by C.cudaDeviceReset is assigned to _; compare it with C.cudaSuccess and handle the failure",
        "::warning file=broken.go,line=3,col=1,title=cudalint%3A syntax-error::" + run.stdout.split("syntax-error::")[1].splitlines()[0],
        # The findings as text too: the log shows no workflow command.
        "p.go:8:12: CL301 the cudaError_t returned by C.cudaDeviceSynchronize is discarded; compare it with C.cudaSuccess and handle the failure",
        "p.go:10:6: CL302 the cudaError_t returned by C.cudaDeviceReset is assigned to _; compare it with C.cudaSuccess and handle the failure",
        "Found 2 findings (CL301: 1, CL302: 1): 1 error, 1 note; 2 files analysed.",
    ]
    assert "syntax error" in run.stdout


def test_github_paths_are_relative_to_the_repository_root(project: Path) -> None:
    (project / ".git").mkdir()
    (project / "sub").mkdir()
    (project / "p.go").rename(project / "sub" / "p.go")
    run = cudalint("--format", "github", "-q", ".", cwd=project / "sub")
    assert run.stdout.startswith("::error file=sub/p.go,line=8,")


def test_github_escaping() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert command("warning", "x: y", file="a,b.go", line=3, col=None) == "::warning file=a%2Cb.go,line=3::x: y"


def test_output_replaces_a_regular_file_atomically_and_writes_through_a_symlink(project: Path) -> None:
    report = project / "report.sarif"
    report.write_text("old report\n")
    reader = report.open()  # a reader of the old report keeps the whole old report
    before = report.stat().st_ino
    assert cudalint("--format", "sarif", "--output", "report.sarif", cwd=project).exit_code == 1
    assert reader.read() == "old report\n"
    reader.close()
    assert report.stat().st_ino != before and report.read_text().startswith("{")
    # no temporary left behind (the result cache has its own directory)
    assert sorted(p.name for p in project.iterdir()) == [".cudalint_cache", "p.go", "report.sarif"]

    (project / "real").mkdir()
    (project / "link.json").symlink_to(project / "real" / "target.json")
    assert cudalint("--format", "json", "--output", "link.json", cwd=project).exit_code == 1
    assert (project / "link.json").is_symlink()
    assert json.loads((project / "real" / "target.json").read_text())["summary"]["findings"] == 2
