"""Bad input is normal input: every broken file gives one clear notification,
never a traceback, and never stops the analysis of the other files."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.driver import Settings, analyze
from cudalint.findings import NotificationKind
from cudalint.checks import all_rules
from clirun import CGO_FILE, cudalint, cudalint_process
from gosrc import knowledge

SYNTAX_ERROR_FILE = """package p

// #include <cuda_runtime_api.h>
import "C"

func broken() {
	if {
}

func fine() {
	C.cudaDeviceReset()
}
"""


def nested(depth: int) -> str:
    """A CUDA call buried under `depth` blocks: deep enough to exceed the
    nesting limit, and relevant enough that the analysis must try it."""
    return "\t" + "if true {\n" * depth + "_ = C.cudaDeviceReset()\n" + "}\n" * depth


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "good.go").write_text(CGO_FILE)
    (tmp_path / "syntax.go").write_text(SYNTAX_ERROR_FILE.replace("package p", "package p\n"))
    (tmp_path / "latin1.go").write_bytes(b"package p\n\n// caf\xe9\n")
    (tmp_path / "binary.go").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50)
    (tmp_path / "bom.go").write_bytes(b"\xef\xbb\xbf" + CGO_FILE.replace("func sync", "func bomSync").encode())
    (tmp_path / "crlf.go").write_bytes(CGO_FILE.replace("func sync", "func crlfSync").replace("\n", "\r\n").encode())
    (tmp_path / "dir.go").mkdir()
    deep = CGO_FILE.replace("func sync", "func deepSync") + "\nfunc deep() {\n" + nested(1500) + "}\n"
    (tmp_path / "deep.go").write_text(deep)
    terms = " + ".join(["1"] * 10000)
    (tmp_path / "long.go").write_text(f"package p\n\nfunc long() int {{\n\treturn {terms}\n}}\n")
    return tmp_path


def test_each_bad_file_gives_one_notification_and_the_rest_is_analysed(tree: Path) -> None:
    run = cudalint_process("--format", "json", ".", cwd=tree)
    assert "Traceback" not in run.stderr
    assert run.exit_code == 1, run.stderr
    import json

    report = json.loads(run.stdout)
    found = {(f["path"], f["line"], f["rule"]) for f in report["findings"]}
    assert found == {
        ("good.go", 7, "CL301"), ("syntax.go", 12, "CL301"), ("bom.go", 7, "CL301"),
        ("crlf.go", 7, "CL301"), ("deep.go", 7, "CL301"),
    }
    notes = {n["path"]: n for n in report["notifications"]}
    assert sorted(notes) == ["binary.go", "deep.go", "dir.go", "latin1.go", "syntax.go"]
    assert notes["syntax.go"]["kind"] == "syntax-error" and notes["syntax.go"]["line"] == 8
    assert notes["latin1.go"]["message"].startswith("invalid UTF-8") and notes["latin1.go"]["line"] == 3
    assert notes["binary.go"]["message"].startswith("binary content")
    assert notes["deep.go"]["kind"] == "too-complex" and "deep" in notes["deep.go"]["message"]
    assert notes["dir.go"]["message"] == "is a directory, not a Go source file; skipped"
    assert len(report["notifications"]) == 5


def test_text_output_prints_notifications_to_stderr(tree: Path) -> None:
    run = cudalint(".", cwd=tree)
    assert run.exit_code == 1
    assert "syntax.go:8:" in run.stderr and "syntax error" in run.stderr
    assert "syntax error" not in run.stdout


def test_columns_after_a_bom_and_crlf(tree: Path) -> None:
    settings = Settings(base=tree, enabled=frozenset(r.id for r in all_rules()))
    result = analyze([tree / "bom.go", tree / "crlf.go"], settings, knowledge())
    assert [(f.path, f.span.start.line, f.span.start.column) for f in result.findings] == [
        ("bom.go", 7, 2), ("crlf.go", 7, 2),
    ]


def test_unreadable_and_vanished_files(tree: Path, monkeypatch) -> None:
    import os

    original = os.open

    def deny(path, *args, **kwargs):
        if str(path).endswith("good.go"):
            raise PermissionError(13, "Permission denied")
        return original(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    settings = Settings(base=tree, enabled=frozenset(r.id for r in all_rules()))
    result = analyze([tree / "good.go", tree / "gone.go", tree / "crlf.go"], settings, knowledge())
    messages = {n.path: n.message for n in result.notifications}
    assert messages == {
        "good.go": "cannot read: permission denied; skipped",
        "gone.go": "cannot read: the file disappeared during the run; skipped",
    }
    assert all(n.kind is NotificationKind.UNREADABLE for n in result.notifications)
    assert [f.path for f in result.findings] == ["crlf.go"]


def test_explicit_patterns_that_are_not_go_files_are_errors(tree: Path) -> None:
    run = cudalint("dir.go", "good.go", cwd=tree)
    assert run.exit_code == 2
    assert "dir.go: is a directory, not a Go source file; skipped" in run.stderr
    assert "pattern 'dir.go' matches no Go files" in run.stderr
    (tree / "notes.txt").write_text("hello")
    assert cudalint("notes.txt", cwd=tree).exit_code == 2


def test_fifo_named_like_a_go_file_is_not_read(tree: Path) -> None:
    import os

    os.mkfifo(tree / "pipe.go")
    run = cudalint_process("pipe.go", cwd=tree)
    assert run.exit_code == 2
    assert "pipe.go: not a regular file (a FIFO, a device, ...); skipped" in run.stderr
    walked = cudalint_process("--format", "json", ".", cwd=tree)  # the walk skips it silently
    assert walked.exit_code == 1 and "pipe.go" not in walked.stdout


def test_a_crash_in_one_function_is_isolated(tree: Path, monkeypatch) -> None:
    """An internal error of one rule on one function is a notification naming
    the rule, the file and the function; the rest of the run completes and
    the exit status is 2. --debug adds the traceback."""
    from cudalint import syntax
    from cudalint.checks import status_discarded

    original = status_discarded._dropped

    def fragile(calls, statement):
        function = syntax.enclosing_function(statement)
        if function is not None and syntax.text(function.child_by_field_name("name")) == "bomSync":
            raise RuntimeError("injected")
        return original(calls, statement)

    monkeypatch.setattr(status_discarded, "_dropped", fragile)
    run = cudalint("--no-cache", "--format", "json", "good.go", "bom.go", "crlf.go", cwd=tree)
    assert run.exit_code == 2
    import json

    report = json.loads(run.stdout)
    assert {(f["path"], f["rule"]) for f in report["findings"]} == {("good.go", "CL301"), ("crlf.go", "CL301")}
    (note,) = [n for n in report["notifications"] if n["kind"] == "internal-error"]
    assert note["path"] == "bom.go" and note["line"] == 6
    assert "rule CL301 on function bomSync: RuntimeError: injected" in note["message"]
    assert "Traceback" not in note["message"]
    debug = cudalint("--no-cache", "--debug", "--format", "json", "bom.go", cwd=tree)
    assert "Traceback (most recent call last)" in json.loads(debug.stdout)["notifications"][0]["message"]


def test_strict_turns_unparsable_files_into_exit_status_2(tree: Path) -> None:
    assert cudalint("--no-cache", "syntax.go", cwd=tree).exit_code == 1
    assert cudalint("--no-cache", "--strict", "syntax.go", cwd=tree).exit_code == 2
    assert cudalint("--no-cache", "--strict", "crlf.go", cwd=tree).exit_code == 1
