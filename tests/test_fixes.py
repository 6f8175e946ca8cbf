"""Fixes, as analysistest.RunWithSuggestedFixes checks them: the fixture
after `--fix` equals its golden copy, analysed again it has no finding of
the fixed kind and no new one, and gofmt accepts it; --diff shows the same
edits; a fix is offered only where it is safe."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from cudalint.fixes import editing
from cudalint.findings import Fix, Finding, Position, Span, TextEdit
from clirun import cudalint, cudalint_process
from conftest import FIXTURES
from test_sarif import validate

LEAKS = FIXTURES / "fixes" / "leaks"
FIX_FIXTURES = sorted({golden.parent for golden in (FIXTURES / "fixes").rglob("*.go.golden")})
# Each fixture's doc names the command its golden files come from.
_COMMAND = re.compile(r"`cudalint (--fix(?: --unsafe-fixes)?)`")


def _fix_command(directory: Path) -> list[str]:
    found = {m.group(1) for path in directory.glob("*.go") for m in _COMMAND.finditer(path.read_text())}
    assert len(found) == 1, f"{directory}: say once which `cudalint --fix ...` makes the golden files"
    return found.pop().split()


def _go_mod(directory: Path) -> Path:
    """The go.mod the fixture belongs to (fixes depend on its go version)."""
    return next(parent / "go.mod" for parent in (directory, *directory.parents) if (parent / "go.mod").is_file())


def _copy_fixture(directory: Path, target: Path) -> Path:
    target.mkdir()
    for path in directory.iterdir():
        if path.suffix in (".go", ".toml"):
            shutil.copy(path, target / path.name)
    shutil.copy(_go_mod(directory), target / "go.mod")
    return target


def _findings(directory: Path) -> list[dict]:
    run = cudalint("--isolated", "--no-cache", "--preview", "--format", "json", ".", cwd=directory)
    return json.loads(run.stdout)["findings"]


def _kind(finding: dict) -> tuple[str, str, str]:
    """A finding apart from where it is: line numbers move when fixes add lines."""
    return finding["path"], finding["rule"], re.sub(r"\d+", "N", finding["message"])


def _offset(path: Path, line: int, column: int) -> int:
    """The byte offset of a 1-based line and byte column."""
    lines = path.read_bytes().split(b"\n")
    return sum(len(text) + 1 for text in lines[:line - 1]) + column - 1


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return _copy_fixture(LEAKS, tmp_path / "leaks")


@pytest.mark.parametrize("directory", FIX_FIXTURES, ids=lambda d: d.name)
def test_fixes_give_the_golden_files_and_no_new_finding(directory: Path, tmp_path: Path) -> None:
    """As analysistest.RunWithSuggestedFixes: each file after the fixes is
    its golden copy; analysed again, the fixed findings are gone and nothing
    new appears; fixing again changes nothing."""
    command = _fix_command(directory)
    target = _copy_fixture(directory, tmp_path / directory.name)
    before = _findings(target)
    unsafe = "--unsafe-fixes" in command
    fixable = [f for f in before if any(fix["safety"] == "safe" or unsafe for fix in f["fixes"])]
    for finding in fixable:
        for edit in (edit for fix in finding["fixes"] for edit in fix["edits"]):
            assert _offset(target / finding["path"], edit["line"], edit["column"]) == edit["start"], edit
            assert _offset(target / finding["path"], edit["end_line"], edit["end_column"]) == edit["end"], edit
    validate(json.loads(cudalint("--isolated", "--no-cache", "--preview", "--format", "sarif", ".", cwd=target).stdout))
    run = cudalint("--isolated", "--no-cache", "--preview", *command, ".", cwd=target)
    fixed = int(re.search(r"fixed (\d+) findings?", run.stderr).group(1))
    assert fixed == len(fixable) > 0, run.stderr
    for path in sorted(directory.glob("*.go")):
        golden = path.with_name(path.name + ".golden")
        expected = golden.read_text() if golden.exists() else path.read_text()
        assert (target / path.name).read_text() == expected, path.name
    after = Counter(map(_kind, _findings(target)))
    assert after <= Counter(map(_kind, before)) - Counter(map(_kind, fixable)), after
    again = cudalint("--isolated", "--no-cache", "--preview", *command, ".", cwd=target)
    assert "fixed 0 findings" in again.stderr
    assert all((target / p.name.removesuffix(".golden")).read_text() == p.read_text() for p in directory.glob("*.go.golden"))


def test_the_golden_files_are_gofmt_clean(tmp_path: Path) -> None:
    gofmt = shutil.which("gofmt")
    if gofmt is None:
        pytest.skip("gofmt is not installed (Debian: golang-go): the golden files' formatting is not checked")
    for golden in sorted((FIXTURES / "fixes").rglob("*.go.golden")):
        copy = tmp_path / golden.name.removesuffix(".golden")
        copy.write_bytes(golden.read_bytes())
        done = subprocess.run([gofmt, "-l", str(copy)], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout == "", golden


CUDA_INCLUDE = Path("/usr/local/cuda/include")


def _go_version(go: str) -> tuple[int, int]:
    printed = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True).stdout
    match = re.match(r"go(\d+)\.(\d+)", printed)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


@pytest.mark.parametrize("directory", FIX_FIXTURES, ids=lambda d: d.name)
def test_the_fixed_files_pass_go_vet(directory: Path, tmp_path: Path) -> None:
    """The golden files type-check with their cgo preambles against the CUDA
    headers, and go vet finds nothing in them (the fixture's go.mod says
    which Go it needs)."""
    go = shutil.which("go")
    if go is None or shutil.which("gcc") is None:
        pytest.skip("go or gcc is not installed (Debian: golang-go, gcc): the golden files are not type-checked")
    if not (CUDA_INCLUDE / "cuda_runtime_api.h").is_file():
        pytest.skip(f"no CUDA headers in {CUDA_INCLUDE}: the golden files' cgo is not type-checked")
    go_mod = _go_mod(directory).read_text()
    needed = re.search(r"^go (\d+)\.(\d+)", go_mod, re.MULTILINE)
    if needed and _go_version(go) < (int(needed.group(1)), int(needed.group(2))):
        pytest.skip(f"the fixture needs {needed.group(0)}, the installed Go is older: not type-checked")
    module = tmp_path / "module"
    module.mkdir()
    (module / "go.mod").write_text(go_mod)
    for path in directory.glob("*.go"):
        golden = path.with_name(path.name + ".golden")
        shutil.copy(golden if golden.exists() else path, module / path.name)
    env = {
        **os.environ, "CGO_ENABLED": "1", "CGO_CFLAGS": f"-I{CUDA_INCLUDE}", "GOFLAGS": "-mod=mod", "GOPROXY": "off",
        "GOCACHE": str(tmp_path / "cache"), "GOPATH": str(tmp_path / "gopath"),
    }
    # unsafeptr reports the header shapes the fixtures keep on purpose (the
    # ones CL503 leaves without a fix); every other analyzer runs.
    done = subprocess.run([go, "vet", "-unsafeptr=false", "."], cwd=module, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


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
    assert not any(fix["safety"] == "safe" for f in document["findings"] for fix in f["fixes"])
    assert [f["line"] for f in document["findings"] if f["fixes"]] == [32]  # the constructor's: unsafe
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
    plan = editing.plan([_finding(first), _finding(overlapping), _finding(apart), _finding(apart, safe=False)])
    assert plan.fixes == 2 and plan.edits["f.go"] == [first, apart]
    assert editing.plan([_finding(apart, safe=False)]).fixes == 0
    assert editing.plan([_finding(apart, safe=False)], unsafe=True).fixes == 1
    assert editing.apply(b"abcdefghi", plan.edits["f.go"]) == b"ABCDefghZ"


def test_a_file_changed_since_it_was_read_is_not_written() -> None:
    edit = _edit(0, 4, "ABCD", "abcd")
    assert editing.apply(b"abcd", [edit]) == b"ABCD"
    assert editing.apply(b"wxyz", [edit]) is None


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


HEADER_VIEW = """package p

import (
	"reflect"
	"unsafe"
)

func view(p unsafe.Pointer, n int) []float32 {
	return *(*[]float32)(unsafe.Pointer(&reflect.SliceHeader{Data: uintptr(p), Len: n, Cap: n}))
}
"""


def test_header_fixes_follow_the_go_version_of_go_mod_even_through_the_cache(tmp_path: Path) -> None:
    """unsafe.Slice is Go 1.17: a module that says less (or a go.mod with no
    go directive, which Go reads as 1.16) gets no fix, and raising the
    version is seen by a cached run."""
    (tmp_path / "p.go").write_text(HEADER_VIEW)
    cache = ["--isolated", "--cache-dir", str(tmp_path / "cache"), "--format", "json", "."]

    def fixes() -> list:
        return json.loads(cudalint_process(*cache, cwd=tmp_path).stdout)["findings"][0]["fixes"]

    (tmp_path / "go.mod").write_text("module example.com/p\n")
    assert fixes() == []
    (tmp_path / "go.mod").write_text("module example.com/p\n\ngo 1.16\n")
    assert fixes() == []
    (tmp_path / "go.mod").write_text("module example.com/p\n\ngo 1.17\n")
    (fix,) = fixes()
    assert fix["safety"] == "safe" and fix["message"] == "use `unsafe.Slice((*float32)(p), n)`"
    assert fix["edits"][-1]["text"] == ""  # the reflect import goes with its only use
