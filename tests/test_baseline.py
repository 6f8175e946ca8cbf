"""The baseline: --write-baseline records today's findings, --baseline then
reports only new ones, matched by fingerprint and not by line number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import cudalint
from test_sarif import validate

LEGACY = """package p

// #include <cuda_runtime_api.h>
import "C"

func sync() {
	C.cudaDeviceSynchronize()
	C.cudaDeviceSynchronize()
}

func reset() {
	_ = C.cudaDeviceReset()
}
"""


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.go").write_text(LEGACY)
    run = cudalint("--write-baseline", "cudalint-baseline.json", cwd=tmp_path)
    assert run.exit_code == 0 and run.stdout == ""
    assert "wrote 3 findings to the baseline cudalint-baseline.json" in run.stderr
    return tmp_path


def test_baseline_file_is_stable_sorted_json(legacy: Path) -> None:
    document = json.loads((legacy / "cudalint-baseline.json").read_text())
    assert document["schema_version"] == 1 and document["tool"]["name"] == "cudalint"
    assert [(e["rule"], e["path"], e["line"], e["fingerprint"][-2:]) for e in document["findings"]] == [
        ("CL301", "pkg/a.go", 7, ":1"), ("CL301", "pkg/a.go", 8, ":2"), ("CL302", "pkg/a.go", 12, ":1"),
    ]
    again = cudalint("--write-baseline", "again.json", cwd=legacy)
    assert again.exit_code == 0
    assert (legacy / "again.json").read_text() == (legacy / "cudalint-baseline.json").read_text()


def test_known_findings_are_not_reported_even_after_lines_move(legacy: Path) -> None:
    run = cudalint("--baseline", "cudalint-baseline.json", cwd=legacy)
    assert run.exit_code == 0
    assert run.stdout == "No findings (1 file analysed); 3 suppressed by the baseline, shown by --show-suppressed.\n"
    moved = LEGACY.replace('import "C"\n', 'import "C"\n\n// Package docs added later.\n\nvar version = "1"\n')
    (legacy / "pkg" / "a.go").write_text(moved.replace("func reset", "func other() {}\n\nfunc reset"))
    assert cudalint("--baseline", "cudalint-baseline.json", cwd=legacy).exit_code == 0


def test_new_findings_are_reported(legacy: Path) -> None:
    grown = LEGACY.replace("func reset() {\n", "func reset() {\n\tC.cudaDeviceSynchronize()\n")
    grown = grown.replace("\tC.cudaDeviceSynchronize()\n}\n\nfunc reset", "\tC.cudaDeviceSynchronize()\n\tC.cudaDeviceSynchronize()\n}\n\nfunc reset")
    (legacy / "pkg" / "a.go").write_text(grown)
    run = cudalint("--baseline", "cudalint-baseline.json", "--format", "json", cwd=legacy)
    assert run.exit_code == 1
    document = json.loads(run.stdout)
    # A third identical line in sync() and a first one in reset(): two new findings.
    assert [(f["rule"], f["function"]) for f in document["findings"]] == [("CL301", "sync"), ("CL301", "reset")]
    assert document["summary"]["suppressed"] == {"in_source": 0, "baseline": 3}
    assert document["summary"]["baseline"] == {"path": "cudalint-baseline.json", "stale_entries": 0}


def test_fixed_findings_leave_stale_entries_that_are_reported_as_a_note(legacy: Path) -> None:
    (legacy / "pkg" / "a.go").write_text(LEGACY.replace("\t_ = C.cudaDeviceReset()\n", ""))
    run = cudalint("--baseline", "cudalint-baseline.json", cwd=legacy)
    assert run.exit_code == 0
    assert "1 entry of the baseline cudalint-baseline.json match no finding any more" in run.stderr
    assert "--write-baseline cudalint-baseline.json" in run.stderr


def test_paths_are_relative_to_the_baseline_file(legacy: Path) -> None:
    run = cudalint("--baseline", "../cudalint-baseline.json", ".", cwd=legacy / "pkg")
    assert run.exit_code == 0, run.stdout


def test_show_suppressed_marks_baseline_findings_in_sarif(legacy: Path) -> None:
    (legacy / "pkg" / "b.go").write_text(LEGACY.replace("func sync", "func more").replace("func reset() {\n\t_ = C.cudaDeviceReset()\n}\n", ""))
    document = json.loads(cudalint("--baseline", "cudalint-baseline.json", "--show-suppressed", "--format", "sarif", cwd=legacy).stdout)
    validate(document)
    results = document["runs"][0]["results"]
    states = sorted((r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["baselineState"]) for r in results)
    assert states == [("pkg/a.go", "unchanged")] * 3 + [("pkg/b.go", "new")] * 2
    assert all("suppressions" not in r for r in results[3:])
    (suppression,) = results[0]["suppressions"]
    assert suppression == {"kind": "external", "status": "accepted", "justification": "accepted in the baseline cudalint-baseline.json"}


@pytest.mark.parametrize("content, message", [
    (None, "cudalint-baseline.json: no such file (create it with --write-baseline cudalint-baseline.json)"),
    ("{", "not a cudalint baseline: invalid JSON"),
    ('{"findings": []}', "not a cudalint baseline (schema_version 1 with a findings list)"),
    ('{"schema_version": 1, "findings": [{"rule": "CL301"}]}', "finding #1 lacks a string rule, path or fingerprint"),
])
def test_unusable_baseline_is_an_error(tmp_path: Path, content: str | None, message: str) -> None:
    (tmp_path / "a.go").write_text(LEGACY)
    if content is not None:
        (tmp_path / "cudalint-baseline.json").write_text(content)
    run = cudalint("--baseline", "cudalint-baseline.json", cwd=tmp_path)
    assert run.exit_code == 2 and message in run.stderr and run.stdout == ""


def test_baseline_and_write_baseline_exclude_each_other(legacy: Path) -> None:
    run = cudalint("--baseline", "cudalint-baseline.json", "--write-baseline", "x.json", cwd=legacy)
    assert run.exit_code == 2 and "exclude each other" in run.stderr


def test_a_run_over_some_files_neither_calls_other_entries_stale_nor_drops_them(tmp_path: Path) -> None:
    """Issue 12, defect 1: the pre-commit hook passes the staged files only."""
    for name in ("a", "b"):
        (tmp_path / "pkg" / name).mkdir(parents=True)
        (tmp_path / "pkg" / name / f"{name}.go").write_text(LEGACY.replace("package p", f"package {name}"))
    assert cudalint("--no-cache", "--write-baseline", "bl.json", cwd=tmp_path).exit_code == 0
    assert len(json.loads((tmp_path / "bl.json").read_text())["findings"]) == 6
    subset = cudalint("--no-cache", "--baseline", "bl.json", "pkg/a/a.go", cwd=tmp_path)
    assert subset.exit_code == 0 and "match no finding" not in subset.stderr
    rewritten = cudalint("--no-cache", "--write-baseline", "bl.json", "pkg/a/a.go", cwd=tmp_path)
    assert rewritten.exit_code == 0
    assert len(json.loads((tmp_path / "bl.json").read_text())["findings"]) == 6  # b's entries kept
    assert cudalint("--no-cache", "--baseline", "bl.json", cwd=tmp_path).exit_code == 0
    # A finding fixed in the analysed file is stale, and said so.
    (tmp_path / "pkg" / "a" / "a.go").write_text(LEGACY.replace("package p", "package a").replace("\t_ = C.cudaDeviceReset()\n", ""))
    fixed = cudalint("--no-cache", "--baseline", "bl.json", "pkg/a/a.go", cwd=tmp_path)
    assert fixed.exit_code == 0 and "1 entry of the baseline bl.json match no finding" in fixed.stderr


def test_a_comment_added_to_a_baselined_line_keeps_it_baselined(legacy: Path) -> None:
    source = legacy / "pkg" / "a.go"
    source.write_text(LEGACY.replace("\t_ = C.cudaDeviceReset()", "\t_ = C.cudaDeviceReset() // TODO: check it"))
    run = cudalint("--no-cache", "--baseline", "cudalint-baseline.json", cwd=legacy)
    assert run.exit_code == 0, run.stdout
