"""Fixes, as analysistest.RunWithSuggestedFixes checks them: the fixture
after `--fix` equals its golden copy, analysed again it has no finding of
the fixed kind and no new one, and gofmt accepts it; --diff shows the same
edits; a fix is offered only where it is safe."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cudalint import fixes
from cudalint.findings import Fix, Finding, Position, Span, TextEdit
from clirun import cudalint
from conftest import FIXTURES
from test_sarif import validate

LEAKS = FIXTURES / "fixes" / "leaks"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "leaks"
    shutil.copytree(LEAKS, target)
    (target / "leaks.go.golden").unlink()
    return target


def test_fix_gives_the_golden_file_and_leaves_nothing_to_fix(copy: Path) -> None:
    run = cudalint("--isolated", "--no-cache", "--fix", "leaks.go", cwd=copy)
    assert "fixed 3 findings" in run.stderr
    assert run.exit_code == 0, run.stdout
    assert (copy / "leaks.go").read_text() == (LEAKS / "leaks.go.golden").read_text()
    again = cudalint("--isolated", "--no-cache", "--format", "json", "leaks.go", cwd=copy)
    assert json.loads(again.stdout)["findings"] == []
    twice = cudalint("--isolated", "--no-cache", "--fix", "leaks.go", cwd=copy)
    assert "fixed 0 findings" in twice.stderr  # idempotent
    assert (copy / "leaks.go").read_text() == (LEAKS / "leaks.go.golden").read_text()


def test_the_golden_files_are_gofmt_clean(tmp_path: Path) -> None:
    gofmt = shutil.which("gofmt")
    if gofmt is None:
        pytest.skip("gofmt is not installed (Debian: golang-go): the golden files' formatting is not checked")
    for golden in sorted((FIXTURES / "fixes").rglob("*.go.golden")):
        copy = tmp_path / golden.name.removesuffix(".golden")
        copy.write_bytes(golden.read_bytes())
        done = subprocess.run([gofmt, "-l", str(copy)], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout == "", golden


def test_a_defer_registered_too_early_moves_after_the_check(tmp_path: Path) -> None:
    """CL202's fix: the defer (and its trailing comment) leaves its line and
    follows the acquisition's success check; the CL101 it caused goes too."""
    source = FIXTURES / "fixes" / "defers"
    target = tmp_path / "defers"
    target.mkdir()
    shutil.copy(source / "defers.go", target / "defers.go")
    run = cudalint("--isolated", "--no-cache", "--fix", "defers.go", cwd=target)
    assert "fixed 2 findings" in run.stderr and run.exit_code == 0
    assert (target / "defers.go").read_text() == (source / "defers.go.golden").read_text()


def test_diff_shows_the_fixes_and_exits_one_then_zero(copy: Path) -> None:
    run = cudalint("--isolated", "--no-cache", "--diff", "leaks.go", cwd=copy)
    assert run.exit_code == 1
    assert run.stdout.startswith("--- a/leaks.go\n+++ b/leaks.go\n")
    assert run.stdout.count("\n+\tdefer C.cudaFree(d)\n") == 2 and "\n+\t\tdefer C.cudaStreamDestroy(s)\n" in run.stdout
    assert (copy / "leaks.go").read_text() == (LEAKS / "leaks.go").read_text()  # --diff writes nothing
    cudalint("--isolated", "--no-cache", "--fix", "leaks.go", cwd=copy)
    clean = cudalint("--isolated", "--no-cache", "--diff", "leaks.go", cwd=copy)
    assert clean.exit_code == 0 and clean.stdout == ""


UNSAFE_TO_FIX = """package p

/*
#include <stdio.h>
#include <cuda_runtime_api.h>
*/
import "C"

import (
	"errors"
	"unsafe"
)

var errBusy = errors.New("busy")

// Released on one path: a defer would free it twice.
func releasedSometimes(n int, busy bool) error {
	var d unsafe.Pointer
	if st := C.cudaMalloc(&d, C.size_t(n)); st != C.cudaSuccess {
		return errors.New("cudaMalloc failed")
	}
	if busy {
		return errBusy
	}
	_ = C.cudaFree(d)
	return nil
}

// Handed on when it succeeds: a defer would free what it returns.
func handedOn(n int, busy bool) (unsafe.Pointer, error) {
	var d unsafe.Pointer
	if st := C.cudaMalloc(&d, C.size_t(n)); st != C.cudaSuccess {
		return nil, errors.New("cudaMalloc failed")
	}
	if busy {
		return nil, errBusy
	}
	return d, nil
}

// Passed to a C function the knowledge does not describe: it may keep it.
func passedOn(s string) {
	cs := C.CString(s)
	C.puts(cs)
}
"""


def test_no_fix_where_a_defer_could_change_behaviour(tmp_path: Path) -> None:
    (tmp_path / "p.go").write_text(UNSAFE_TO_FIX)
    document = json.loads(cudalint("--isolated", "--no-cache", "--format", "json", "p.go", cwd=tmp_path).stdout)
    assert sorted(f["line"] for f in document["findings"] if f["rule"] == "CL101") == [19, 32, 43]
    assert all(f["fixes"] == [] for f in document["findings"])
    assert cudalint("--isolated", "--no-cache", "--diff", "p.go", cwd=tmp_path).exit_code == 0


def test_fixes_in_json_and_sarif(copy: Path) -> None:
    document = json.loads(cudalint("--isolated", "--no-cache", "--format", "json", "leaks.go", cwd=copy).stdout)
    fix = document["findings"][0]["fixes"][0]
    assert fix["safety"] == "safe" and fix["message"] == "add `defer C.cudaFree(d)` after the error check"
    assert fix["edits"][0]["text"].endswith("}\n\tdefer C.cudaFree(d)")
    sarif = json.loads(cudalint("--isolated", "--no-cache", "--format", "sarif", "leaks.go", cwd=copy).stdout)
    validate(sarif)
    replacement = sarif["runs"][0]["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"].endswith("defer C.cudaFree(d)")
    assert replacement["deletedRegion"]["startLine"] == 21
    text = cudalint("--isolated", "--no-cache", "--color", "never", "leaks.go", cwd=copy).stdout
    assert "CL101 [*] device memory" in text and text.rstrip().endswith("3 fixable with --fix ([*]).")


def _edit(start: int, end: int, text: str, original: str) -> TextEdit:
    where = Position(1, start + 1, start + 1)
    return TextEdit(start, end, text, original, Span(where, where))


def _finding(*edits: TextEdit, safe: bool = True) -> Finding:
    where = Position(1, 1, 1)
    return Finding("CL101", "f.go", Span(where, where), "m", fixes=(Fix("fix", safe, edits),))


def test_overlapping_fixes_wait_a_round_and_unsafe_ones_need_asking() -> None:
    first, overlapping, apart = _edit(0, 4, "ABCD", "abcd"), _edit(2, 6, "XY", "cdef"), _edit(8, 9, "Z", "i")
    plan = fixes.plan([_finding(first), _finding(overlapping), _finding(apart), _finding(apart, safe=False)])
    assert plan.fixes == 2 and plan.edits["f.go"] == [first, apart]
    assert fixes.plan([_finding(apart, safe=False)]).fixes == 0
    assert fixes.plan([_finding(apart, safe=False)], unsafe=True).fixes == 1
    assert fixes.apply(b"abcdefghi", plan.edits["f.go"]) == b"ABCDefghZ"


def test_a_file_changed_since_it_was_read_is_not_written() -> None:
    edit = _edit(0, 4, "ABCD", "abcd")
    assert fixes.apply(b"abcd", [edit]) == b"ABCD"
    assert fixes.apply(b"wxyz", [edit]) is None


def test_a_loop_body_is_wrapped_only_with_unsafe_fixes(tmp_path: Path) -> None:
    """CL201's fix is unsafe (the body's defers move, captures change): --fix
    alone leaves the file alone, --unsafe-fixes wraps the body that does not
    jump and leaves the one with `continue`."""
    source = FIXTURES / "fixes" / "loops"
    target = tmp_path / "loops"
    target.mkdir()
    shutil.copy(source / "loops.go", target / "loops.go")
    text = cudalint("--isolated", "--no-cache", "--color", "never", "loops.go", cwd=target).stdout
    assert "[*]" not in text
    cudalint("--isolated", "--no-cache", "--fix", "loops.go", cwd=target)
    assert (target / "loops.go").read_text() == (source / "loops.go").read_text()
    run = cudalint("--isolated", "--no-cache", "--fix", "--unsafe-fixes", "loops.go", cwd=target)
    assert "fixed 1 finding" in run.stderr
    assert (target / "loops.go").read_text() == (source / "loops.go.golden").read_text()
    remaining = json.loads(cudalint("--isolated", "--no-cache", "--format", "json", "--select", "CL2", "loops.go", cwd=target).stdout)
    assert [f["line"] for f in remaining["findings"]] == [32]  # skipFailures: no fix, still reported
