"""Hostile inputs, as a linter run over whole repositories meets them: each
gives a notification at most, never a traceback, and the findings in the
other files are unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import CGO_FILE, cudalint_process

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def baseline_findings(tmp_path_factory) -> tuple[Path, set]:
    root = tmp_path_factory.mktemp("clean")
    (root / "good.go").write_text(CGO_FILE)
    run = cudalint_process("--no-cache", "--format", "json", ".", cwd=root)
    return root, {(f["path"], f["line"], f["rule"]) for f in json.loads(run.stdout)["findings"]}


def _with_hostile(root: Path, name: str, data: bytes, baseline: set) -> dict:
    (root / "good.go").write_text(CGO_FILE)
    (root / name).write_bytes(data)
    run = cudalint_process("--no-cache", "--format", "json", ".", cwd=root)
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.exit_code == 1, run.stderr[-2000:]
    report = json.loads(run.stdout)
    found = {(f["path"], f["line"], f["rule"]) for f in report["findings"] if f["path"] == "good.go"}
    assert found == baseline
    return report


def test_ten_thousand_levels_of_nesting(tmp_path: Path, baseline_findings) -> None:
    _, baseline = baseline_findings
    source = "package p\n\nfunc deep() {\n" + "{\n" * 10000 + "}\n" * 10000 + "}\n"
    report = _with_hostile(tmp_path, "deep.go", source.encode(), baseline)
    notes = [n for n in report["notifications"] if n["path"] == "deep.go"]
    assert len(notes) <= 1


def test_twenty_megabytes_of_generated_code(tmp_path: Path, baseline_findings) -> None:
    _, baseline = baseline_findings
    row = b"\t0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,\n"
    data = b'package p\n\nimport "C"\n\nvar blob = []byte{\n' + row * (20 * 1024 * 1024 // len(row)) + b"}\n"
    report = _with_hostile(tmp_path, "blob.go", data, baseline)
    (note,) = [n for n in report["notifications"] if n["path"] == "blob.go"]
    assert note["kind"] == "too-complex" and "larger than the 8 MiB" in note["message"]


def test_a_five_megabyte_line(tmp_path: Path, baseline_findings) -> None:
    _, baseline = baseline_findings
    values = ",".join(str(i % 256) for i in range(1_500_000))
    data = ('package p\n\nimport "C"\n\nvar table = []byte{' + values + "}\n").encode()
    assert len(data) > 5_000_000
    report = _with_hostile(tmp_path, "table.go", data, baseline)
    assert [n for n in report["notifications"] if n["path"] == "table.go"] == []


def test_a_five_megabyte_function(tmp_path: Path, baseline_findings) -> None:
    _, baseline = baseline_findings
    body = " ".join(["x++;"] * 1_300_000)
    data = ('package p\n\nimport "C"\n\nfunc g() { x := 0; ' + body + " _ = x }\n").encode()
    report = _with_hostile(tmp_path, "huge.go", data, baseline)
    (note,) = [n for n in report["notifications"] if n["path"] == "huge.go"]
    assert "function g is too large to analyse" in note["message"]


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("nul.go", b"package p\x00\n", "not-go-source"),
        ("latin1.go", b"package p\n// caf\xe9\n", "not-go-source"),
        ("crlf.go", CGO_FILE.replace("\n", "\r\n").replace("package p", "package p").encode(), None),
        ("bom.go", b"\xef\xbb\xbf" + CGO_FILE.encode(), None),
    ],
)
def test_small_oddities(tmp_path: Path, baseline_findings, name: str, data: bytes, kind: str | None) -> None:
    _, baseline = baseline_findings
    report = _with_hostile(tmp_path, name, data, baseline)
    notes = [n for n in report["notifications"] if n["path"] == name]
    assert [n["kind"] for n in notes] == ([kind] if kind else [])
