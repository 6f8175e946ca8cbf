"""A retired rule (CL505) keeps its ID and never reports; naming it in a
directive, --select or --ignore gets a note, never an error or a finding
that would change a user's exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint import check
from cudalint.checks import all_rules, rule_by_id
from cudalint.suppressions import is_retired_note, retired_note
from clirun import cudalint

# A finalizer that CL505 used to report (a driver release, no context made current),
# with the directives users wrote for it.
DRIVER_FINALIZER = """package f

// #include <cuda.h>
import "C"

import (
	"errors"
	"runtime"
)

type devMem struct{ ptr C.CUdeviceptr }

// Free releases the memory; the finalizer is a safety net.
func (m *devMem) Free() {
	if m.ptr == 0 {
		return
	}
	_ = C.cuMemFree(m.ptr) //cudalint:ignore CL505 the finalizer may run on any thread
	m.ptr = 0
}

func newDevMem(n C.size_t) (*devMem, error) {
	m := &devMem{}
	if C.cuMemAlloc(&m.ptr, n) != C.CUDA_SUCCESS {
		return nil, errors.New("cuMemAlloc failed")
	}
	//cudalint:ignore CL505 reviewed: Free is the explicit release
	runtime.SetFinalizer(m, (*devMem).Free)
	return m, nil
}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "f.go").write_text(DRIVER_FINALIZER)
    return tmp_path


def test_cl505_is_retired_and_says_why() -> None:
    rule = rule_by_id("CL505")
    assert rule is not None and rule.retired and rule.check is None
    assert "H200" in rule.doc and "CUDA_SUCCESS" in rule.doc and "CL507" in rule.doc
    assert "retired" in rule.summary.lower()
    assert [r.id for r in all_rules() if r.retired] == ["CL505"]


def test_list_rules_explain_and_sarif_say_it_is_retired(project: Path) -> None:
    listing = cudalint("--list-rules", cwd=project).stdout
    assert any(line.startswith("CL505") and "Retired" in line for line in listing.splitlines())
    explained = cudalint("--explain", "CL505", cwd=project)
    assert explained.exit_code == 0 and "## Retired" in explained.stdout and "driver 580" in explained.stdout
    sarif = json.loads(cudalint("--format", "sarif", "--no-cache", cwd=project).stdout)
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert "Retired" in rules["CL505"]["shortDescription"]["text"]


def test_a_directive_naming_it_gets_a_note_not_a_finding(project: Path) -> None:
    run = cudalint("--no-cache", cwd=project)
    assert run.exit_code == 0, run.stdout
    assert run.stdout.startswith("No findings")
    notes = [line for line in run.stderr.splitlines() if "CL505" in line]
    assert [line.split(": CL001 note: ")[0] for line in notes] == ["f.go:18:43", "f.go:27:20"]
    assert all("retired" in line.lower() for line in notes)
    sarif = json.loads(cudalint("--no-cache", "--format", "sarif", cwd=project).stdout)
    assert sarif["runs"][0]["results"] == []
    document = json.loads(cudalint("--no-cache", "--format", "json", "--show-suppressed", cwd=project).stdout)
    assert [f["rule"] for f in document["findings"]] == []


def test_the_library_keeps_the_note_among_suppressed_findings(project: Path) -> None:
    result = check(["."], base=project, preview=True)
    assert not [f for f in result.findings if f.rule_id == "CL001"]
    notes = [f for f in result.suppressed if is_retired_note(f)]
    assert len(notes) == 2 and all(f.rule_id == "CL001" for f in notes)
    assert [f for f in result.suppressed if not is_retired_note(f)] == []  # Free clears: no CL507, no CL508


def test_no_note_when_cl001_is_disabled(project: Path) -> None:
    run = cudalint("--no-cache", "--ignore", "CL0", cwd=project)
    assert run.exit_code == 0 and "CL505" not in run.stderr


def test_select_and_ignore_naming_it_get_a_note(project: Path) -> None:
    only = cudalint("--no-cache", "--select", "CL505", cwd=project)
    assert only.exit_code == 0 and "--select: note: CL505" in only.stderr
    mixed = cudalint("--no-cache", "--select", "CL505,CL3", cwd=project)
    assert mixed.exit_code == 0 and "--select: note: CL505" in mixed.stderr
    ignored = cudalint("--no-cache", "--ignore", "CL505", cwd=project)
    assert ignored.exit_code == 0 and "--ignore: note: CL505" in ignored.stderr
    quiet = cudalint("--no-cache", "--quiet", "--select", "CL505", cwd=project)
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_a_prefix_is_no_mention_of_the_retired_rule() -> None:
    assert retired_note("CL5") is None and retired_note("CL50") is None
    assert retired_note("CL504") is None and retired_note("cl505") is not None
