"""Issue 24: `--add-ignore REASON` (ruff's --add-noqa): a directive above each
line with a reported finding, written under --fix's rules (fixes/rewrite.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from clirun import cudalint

SOURCE = """package p

// #include <cuda_runtime_api.h>
import "C"

func f(a int) {
	if a > 0 {
		C.cudaDeviceSynchronize()
	} else {
		_ = C.cudaDeviceSynchronize()
	}
	C.cudaDeviceSynchronize() // a comment of its own
	s := `abc
def`
	_ = s
}
"""

REASON = "legacy code, see ISSUE-12"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.go").write_text(SOURCE)
    return tmp_path


def test_every_finding_gets_a_directive_and_the_run_is_clean(tree: Path) -> None:
    run = cudalint("--no-cache", "--add-ignore", REASON, ".", cwd=tree)
    assert run.exit_code == 0, run.stderr
    assert "added 3 suppressions to 1 file" in run.stderr
    text = (tree / "a.go").read_text()
    assert f"\t\t//cudalint:ignore CL301 {REASON}\n\t\tC.cudaDeviceSynchronize()\n" in text
    assert f"\t\t//cudalint:ignore CL302 {REASON}\n\t\t_ = C.cudaDeviceSynchronize()\n" in text
    assert f"\t//cudalint:ignore CL301 {REASON}\n\tC.cudaDeviceSynchronize() // a comment of its own\n" in text
    after = cudalint("--no-cache", ".", cwd=tree)
    assert after.exit_code == 0 and "CL001" not in after.stdout, after.stdout
    if shutil.which("gofmt"):
        assert subprocess.run(["gofmt", "-l", "a.go"], cwd=tree, capture_output=True, text=True).stdout == ""
    # Again: nothing left to suppress, nothing written.
    again = cudalint("--no-cache", "--add-ignore", REASON, ".", cwd=tree)
    assert again.exit_code == 0 and "added 0 suppressions to 0 files" in again.stderr
    assert (tree / "a.go").read_text() == text


def test_a_closing_brace_line_gets_gofmt_s_indentation(tree: Path) -> None:
    (tree / "a.go").write_text(SOURCE.replace("\t} else {\n\t\t_ = C.cudaDeviceSynchronize()\n\t}\n", "\t}\n"))
    (tree / "b.go").write_text("package p\n\nfunc g() {\n\tfor {\n\t}\n}\n")
    (tree / "b.go").write_text(
        "package p\n\n// #include <cuda_runtime_api.h>\nimport \"C\"\n\nfunc g(a int) {\n\tif a > 0 {\n\t\treturn\n"
        "\t} else if C.cudaDeviceSynchronize(); a < 0 {\n\t\treturn\n\t}\n}\n"
    )
    assert cudalint("--no-cache", "--add-ignore", REASON, ".", cwd=tree).exit_code == 0
    assert f"\t\treturn\n\t\t//cudalint:ignore CL301 {REASON}\n\t}} else if" in (tree / "b.go").read_text()
    if shutil.which("gofmt"):
        assert subprocess.run(["gofmt", "-l", "."], cwd=tree, capture_output=True, text=True).stdout == ""
    assert cudalint("--no-cache", ".", cwd=tree).exit_code == 0


def test_line_endings_mode_and_same_line_rules_are_kept(tree: Path) -> None:
    crlf = SOURCE.replace("C.cudaDeviceSynchronize() // a comment of its own", "C.cudaDeviceSynchronize(); _ = C.cudaDeviceSynchronize()")
    (tree / "a.go").write_bytes(crlf.replace("\n", "\r\n").encode())
    os.chmod(tree / "a.go", 0o640)
    assert cudalint("--no-cache", "--add-ignore", REASON, ".", cwd=tree).exit_code == 0
    data = (tree / "a.go").read_bytes()
    assert f"\t//cudalint:ignore CL301,CL302 {REASON}\r\n".encode() in data
    assert data.count(b"\r\n") == data.count(b"\n")
    assert oct(os.stat(tree / "a.go").st_mode & 0o777) == oct(0o640)
    assert cudalint("--no-cache", ".", cwd=tree).exit_code == 0


def test_only_what_the_run_reports(tree: Path) -> None:
    (tree / "b.go").write_text(SOURCE.replace("func f(", "func g("))
    run = cudalint("--no-cache", "--add-ignore", REASON, "--select", "CL302", "a.go", cwd=tree)
    assert run.exit_code == 0
    assert (tree / "b.go").read_text() == SOURCE.replace("func f(", "func g(")  # not named: never written
    assert (tree / "a.go").read_text().count("//cudalint:ignore") == 1  # CL302 only


def test_a_file_changed_since_it_was_analysed_is_not_written(tree: Path, monkeypatch) -> None:
    from cudalint.app import addignore

    real = addignore.add

    def edit_first(findings, analysed, root, digests, reason):
        (tree / "a.go").write_text(SOURCE + "\n// edited meanwhile\n")
        return real(findings, analysed, root, digests, reason)

    monkeypatch.setattr(addignore, "add", edit_first)
    run = cudalint("--no-cache", "--add-ignore", REASON, ".", cwd=tree)
    assert "a.go changed since it was analysed: no directive added" in run.stderr
    assert "//cudalint:ignore" not in (tree / "a.go").read_text()


def test_a_read_only_file_and_a_link_out_of_the_tree_are_refused(tree: Path, tmp_path_factory) -> None:
    os.chmod(tree / "a.go", 0o444)
    run = cudalint("--no-cache", "--add-ignore", REASON, ".", cwd=tree)
    assert "no owner write bit" in run.stderr and "//cudalint" not in (tree / "a.go").read_text()
    os.chmod(tree / "a.go", 0o644)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "c.go").write_text(SOURCE.replace("func f(", "func h("))
    (tree / "sub").mkdir()
    os.symlink(outside / "c.go", tree / "sub" / "c.go")
    run = cudalint("--no-cache", "--add-ignore", REASON, "./...", cwd=tree)
    assert "//cudalint" not in (outside / "c.go").read_text()


@pytest.mark.parametrize("reason", ["", "  ", "CL301 legacy", "two\nlines"])
def test_a_reason_a_directive_cannot_carry_is_a_usage_error(tree: Path, reason: str) -> None:
    run = cudalint("--no-cache", "--add-ignore", reason, ".", cwd=tree)
    assert run.exit_code == 2 and "Invalid value for --add-ignore: the reason must" in run.stderr, run.stderr
    assert (tree / "a.go").read_text() == SOURCE


def test_add_ignore_and_fix_exclude_each_other(tree: Path) -> None:
    run = cudalint("--no-cache", "--add-ignore", REASON, "--fix", ".", cwd=tree)
    assert run.exit_code == 2 and "exclude each other" in run.stderr


def test_the_readme_command_verbatim(tree: Path) -> None:
    import sys

    from gitrepo import readme_block

    (command,) = readme_block("snippet:add-ignore").strip().splitlines()
    bin_dir = str(Path(sys.executable).parent)
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", command], cwd=tree, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", "")),
    )
    assert done.returncode == 0, done.stderr
    assert "\t\t//cudalint:ignore CL301 legacy, see ISSUE-123\n" in (tree / "a.go").read_text()
    assert subprocess.run([sys.executable, "-m", "cudalint", "./..."], cwd=tree, capture_output=True).returncode == 0


def test_a_directive_never_splits_what_gofmt_aligns(tree: Path) -> None:
    """A comment line between two lines gofmt aligns (trailing comments, struct
    fields, keyed elements, const/var specs) ends the section, and gofmt would
    re-pad both halves: such a line is refused and said, never written
    un-gofmt'd."""
    source = (
        'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\n'
        "func f() {\n"
        "\tx := 1" + " " * 20 + "// one\n"
        "\tC.cudaDeviceSynchronize() // two\n"
        "\t_ = x\n"
        "}\n"
    )
    (tree / "a.go").write_text(source)
    run = cudalint("--no-cache", "--add-ignore", REASON, ".", cwd=tree)
    assert run.exit_code == 0
    assert "a.go:8 is aligned by gofmt with the line above it" in run.stderr
    assert (tree / "a.go").read_text() == source
    if shutil.which("gofmt"):
        forced = source.replace("\tC.cudaDeviceSynchronize() // two\n", f"\t//cudalint:ignore CL301 {REASON}\n\tC.cudaDeviceSynchronize() // two\n")
        assert subprocess.run(["gofmt", "-l", "a.go"], cwd=tree, capture_output=True, text=True).stdout == ""
        (tree / "b.txt").write_text(forced)
        assert subprocess.run(["gofmt", "-l", "b.txt"], cwd=tree, capture_output=True, text=True).stdout  # what it avoided
