"""`cudalint.check` and the command line are one run (cudalint.app.session):
on a project with a configuration file, a nested module with its own, a
baseline and a change since a revision, the library returns exactly what
`cudalint --format json` reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import cudalint
from cudalint import check
from cudalint.app.errors import OptionError, RunError
from gitrepo import commit_all, init

STATUS = """package gpu

// #include <cuda_runtime_api.h>
import "C"

func sync() {
	C.cudaDeviceSynchronize()
}

func reset() {
	_ = C.cudaDeviceReset()
}
"""
LEAK = """package gpu

// #include <cuda_runtime_api.h>
import "C"

import "unsafe"

func leak(n int) {
	var d unsafe.Pointer
	if C.cudaMalloc(&d, C.size_t(n)) != C.cudaSuccess {
		return
	}
}
"""
ADDED = """
func later() {
	C.cudaDeviceSynchronize()
}
"""


def _project(root: Path) -> Path:
    """The root's configuration leaves CL302 out, excludes gen/ and makes
    CL101 a note; the nested module tools/ has a configuration of its own
    that selects only CL3."""
    init(root)
    (root / "go.mod").write_text("module example.com/svc\n\ngo 1.22\n")
    (root / ".cudalint.toml").write_text('ignore = ["CL302"]\nexclude = ["gen"]\n[level]\nCL101 = "note"\n')
    for directory, text in (("gpu/status.go", STATUS), ("gpu/leak.go", LEAK), ("gen/gen.go", STATUS), ("tools/t.go", STATUS)):
        path = root / directory
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("package gpu", f"package {path.parent.name}"))
    (root / "tools" / ".cudalint.toml").write_text('select = ["CL3"]\n')
    return root


def _reported(findings: list) -> list[tuple]:
    return [(f.path, f.span.start.line, f.rule_id, f.message, f.fingerprint) for f in findings]


def _from_json(stdout: str) -> list[tuple]:
    return [(f["path"], f["line"], f["rule"], f["message"], f["fingerprint"]) for f in json.loads(stdout)["findings"]]


def _suppressed(stdout: str) -> list[tuple]:
    return [(f["path"], f["line"], f["rule"]) for f in json.loads(stdout)["findings"] if f["suppression"] is not None]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _project(tmp_path / "svc")


def test_the_library_reads_the_configuration_the_command_line_reads(project: Path) -> None:
    run = cudalint("--no-cache", "--format", "json", cwd=project)
    result = check(base=project)
    assert _reported(result.findings) == _from_json(run.stdout)
    rules = {(path, rule) for path, _, rule, _, _ in _reported(result.findings)}
    assert ("gpu/status.go", "CL301") in rules and ("tools/t.go", "CL301") in rules
    assert not [path for path, _ in rules if path.startswith("gen/")]  # the root's exclude
    assert [path for path, rule in rules if rule == "CL302"] == ["tools/t.go"]  # the root ignores it, tools/ is its own
    assert ("gpu/leak.go", "CL101") in rules
    isolated = check(base=project, isolated=True)
    assert ("gen/gen.go", "CL301") in {(f.path, f.rule_id) for f in isolated.findings}
    assert _reported(isolated.findings) == _from_json(cudalint("--no-cache", "--format", "json", "--isolated", cwd=project).stdout)


def test_a_nested_configuration_owns_its_files_in_both(project: Path) -> None:
    """Named one by one (as pre-commit names staged files), tools/t.go gets
    its own configuration, and the other files of its package are read."""
    run = cudalint("--no-cache", "--format", "json", "tools/t.go", "gpu/status.go", cwd=project)
    result = check(["tools/t.go", "gpu/status.go"], base=project)
    assert _reported(result.findings) == _from_json(run.stdout)
    assert {f.rule_id for f in result.findings if f.path == "tools/t.go"} == {"CL301", "CL302"}


def test_the_baseline_leaves_out_the_same_findings(project: Path) -> None:
    assert cudalint("--no-cache", "--write-baseline", "baseline.json", cwd=project).exit_code == 0
    (project / "gpu" / "status.go").write_text(STATUS + ADDED)
    run = cudalint("--no-cache", "--format", "json", "--show-suppressed", "--baseline", "baseline.json", cwd=project)
    result = check(base=project, baseline=Path("baseline.json"))
    reported = [finding for finding in _from_json(run.stdout) if finding[:3] not in _suppressed(run.stdout)]
    assert _reported(result.findings) == reported
    assert [(path, line, rule) for path, line, rule, _, _ in reported] == [("gpu/status.go", 15, "CL301")]
    assert [(f.path, f.span.start.line, f.rule_id) for f in result.suppressed] == _suppressed(run.stdout)


def test_new_from_rev_leaves_out_the_same_findings(project: Path) -> None:
    base = commit_all(project)
    (project / "gpu" / "status.go").write_text(STATUS + ADDED)
    run = cudalint("--no-cache", "--format", "json", "--new-from-rev", base, cwd=project)
    result = check(base=project, new_from_rev=base)
    assert _reported(result.findings) == _from_json(run.stdout)
    assert [(f.path, f.span.start.line) for f in result.findings] == [("gpu/status.go", 15)]


def test_options_replace_the_configuration_in_both(project: Path) -> None:
    run = cudalint("--no-cache", "--format", "json", "--select", "CL3", "--ignore", "CL301", "--exclude", "tools", cwd=project)
    result = check(base=project, select=("CL3",), ignore=("CL301",), exclude=("tools",))
    assert _reported(result.findings) == _from_json(run.stdout)
    assert {(f.path, f.rule_id) for f in result.findings} == {("gpu/status.go", "CL302"), ("gen/gen.go", "CL302")}


def test_what_stops_the_command_line_raises_in_the_library(project: Path) -> None:
    with pytest.raises(ValueError, match="no Go files match nowhere/..."):
        check(["nowhere/..."], base=project)
    with pytest.raises(OptionError, match="'CL9' matches no rule"):
        check(base=project, select=("CL9",))
    (project / ".cudalint.toml").write_text("selekt = []\n")
    with pytest.raises(RunError, match="unknown key 'selekt'"):
        check(base=project)
    assert check(base=project, isolated=True).findings
