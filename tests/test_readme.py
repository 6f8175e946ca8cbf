"""The README's snippets work as written: the CI commands, the workflows, the
configuration, the suppression comments and the baseline commands; and its
JSON section documents every key cudalint emits. (The pre-commit snippet is
run by tests/test_precommit.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clirun import cudalint
from gitrepo import ROOT, clean_env, readme_block
from test_action import ACTION
from test_sarif import validate

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUGGY = """package gpu

// #include <cuda_runtime_api.h>
import "C"

func Sync() {
	C.cudaDeviceSynchronize()
}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "a.go").write_text(BUGGY)
    return tmp_path


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """bash with this environment's cudalint first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=300,
        env=clean_env(PATH=bin_dir + os.pathsep + os.environ.get("PATH", "")),
    )


def test_ci_snippet(project: Path) -> None:
    install, run = readme_block("snippet:ci").strip().splitlines()
    assert install.startswith("python3 -m pip install ") and "cudalint" in install
    done = shell(run, project)
    assert done.returncode == 1 and "gpu/a.go:7:2: CL301" in done.stdout


def test_workflow_snippet_uses_the_action_with_its_inputs() -> None:
    workflow = yaml.safe_load(readme_block("snippet:workflow"))
    assert workflow["permissions"]["security-events"] == "write"
    assert workflow["permissions"]["actions"] == "read"  # upload-sarif reads the run in private repositories
    assert workflow["permissions"]["contents"] == "read"
    assert {"push", "pull_request"} <= set(workflow[True] if True in workflow else workflow["on"])  # YAML 1.1 reads `on` as true
    steps = workflow["jobs"]["cudalint"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    (action,) = [s for s in steps if s.get("uses", "").split("@")[0].endswith("/cudalint")]
    assert set(action["with"]) <= set(ACTION["inputs"])


def test_code_scanning_snippet_runs_and_uploads_what_it_wrote(project: Path) -> None:
    steps = yaml.safe_load(readme_block("snippet:code-scanning"))
    runs = [s["run"] for s in steps if "run" in s]
    assert "pip install" in runs[0]
    done = shell(runs[1], project)
    assert done.returncode == 0, done.stderr  # findings do not fail this step
    validate(json.loads((project / "cudalint.sarif").read_text()))
    upload = steps[-1]
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4" and upload["with"]["sarif_file"] == "cudalint.sarif"
    assert shell(runs[1].replace("./...", "nowhere/..."), project).returncode != 0  # tool errors still do


def test_configuration_snippet_is_valid(project: Path) -> None:
    text = readme_block("snippet:config")
    config = tomllib.loads(text)["tool"]["cudalint"]
    (project / "pyproject.toml").write_text(text)
    (project / "ci").mkdir()
    (project / "ci" / "our-wrappers.toml").write_text(
        'family = "ours"\ndescription = "our wrappers"\nimport = "example.com/ours/gpu"\n'
        '[status]\ntype = "error"\nkind = "error"\nresult = "last"\n[status_calls]\nmatch = ["gpu.*"]\n'
    )
    (project / "gpu" / "a_gen.go").write_text(BUGGY.replace("func Sync", "func Generated"))
    run = cudalint("--format", "json", cwd=project)
    assert run.exit_code == 1, run.stderr
    document = json.loads(run.stdout)
    assert [(f["path"], f["rule"]) for f in document["findings"]] == [("gpu/a.go", "CL301")]  # a_gen.go is excluded
    assert config["level"] == {"CL201": "error"}


def test_suppression_snippet_suppresses_without_cl001(project: Path) -> None:
    body = "\n".join("\t" + line if line else "" for line in readme_block("snippet:suppressions").splitlines())
    (project / "gpu" / "a.go").write_text(BUGGY.replace("\tC.cudaDeviceSynchronize()\n", body + "\n"))
    run = cudalint("--format", "json", "--show-suppressed", cwd=project)
    assert run.exit_code == 0, run.stdout
    findings = json.loads(run.stdout)["findings"]
    assert [(f["rule"], f["suppression"]["kind"]) for f in findings] == [("CL301", "inSource")] * 2


def test_baseline_snippet(project: Path) -> None:
    write, check = [line.split("#")[0].strip() for line in readme_block("snippet:baseline").strip().splitlines()]
    assert shell(write, project).returncode == 0
    assert shell(check, project).returncode == 0
    (project / "gpu" / "b.go").write_text(BUGGY.replace("func Sync", "func Other"))
    assert shell(check, project).returncode == 1


def _keys(value) -> set[str]:
    keys = set()
    if isinstance(value, dict):
        for key, item in value.items():
            keys.add(key)
            if key != "by_rule":  # its keys are rule IDs
                keys |= _keys(item)
    elif isinstance(value, list):
        for item in value:
            keys |= _keys(item)
    return keys


def test_json_keys_are_documented(project: Path) -> None:
    (project / "gpu" / "broken.go").write_text("package gpu\n\nfunc f( {\n")
    (project / "gpu" / "b.go").write_text(
        BUGGY.replace("func Sync", "func Quiet").replace("Synchronize()", "Synchronize() //cudalint:ignore CL301 why")
    )
    (project / "leak.go").write_text(
        'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nimport "unsafe"\n\n'
        "func f(n C.size_t) {\n\tvar d unsafe.Pointer\n\tif C.cudaMalloc(&d, n) != C.cudaSuccess {\n\t\treturn\n\t}\n}\n"
    )
    assert cudalint("--write-baseline", "base.json", "gpu/a.go", cwd=project).exit_code == 0
    run = cudalint("--format", "json", "--show-suppressed", "--baseline", "base.json", "./...", cwd=project)
    document = json.loads(run.stdout)
    assert any(f["steps"] for f in document["findings"]) and document["notifications"]
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### JSON\n"):readme.index("### SARIF\n")]
    missing = sorted(key for key in _keys(document) if f'"{key}"' not in section and f"`{key}`" not in section)
    assert not missing, f"README.md's JSON section does not document {missing}"


def test_example_output_in_the_readme_is_what_cudalint_prints() -> None:
    """The README's first screen shows `cudalint examples/...`: it must be
    the real output, byte for byte."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    marker = "```text\n$ cudalint examples/...\n"
    start = readme.index(marker) + len(marker)
    shown = readme[start:readme.index("```", start)]
    run = cudalint("--no-cache", "--color", "never", "examples/...", cwd=ROOT)
    assert run.exit_code == 1
    assert run.stdout == shown


def _feature_runs(readme: str) -> list[tuple[str, str]]:
    """(command, shown output) of each `$ cudalint ...` block between the
    features markers."""
    section = readme[readme.index("<!-- features:start -->"):readme.index("<!-- features:end -->")]
    runs = []
    for block in section.split("```text\n")[1:]:
        body = block[:block.index("```")]
        command, _, shown = body.partition("\n")
        assert command.startswith("$ cudalint "), command
        runs.append((command[2:], shown))
    return runs


def test_the_ci_options_shown_on_the_example_project_print_what_the_readme_says(tmp_path: Path) -> None:
    """Statistics, the exit policy, several formats in one run,
    --new-from-rev, --diff and --fix, run as the README shows them, in a
    fresh git checkout of the example project."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    git = ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "example"]):
        subprocess.run(git + command, cwd=tmp_path, check=True, capture_output=True, env=clean_env())
    runs = _feature_runs((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(runs) == 6
    for command, shown in runs:
        bin_dir = str(Path(sys.executable).parent)
        run = subprocess.run(
            ["bash", "-c", command + " 2>&1"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
            env=clean_env(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), CUDALINT_NO_CACHE="1", NO_COLOR="1"),
        )
        assert run.stdout == shown, command
    assert json.loads((tmp_path / "gl-code-quality.json").read_text())[0]["check_name"].startswith("CL3")
    assert (tmp_path / "checkstyle.xml").read_text().startswith("<?xml")
    assert "<testsuite" in (tmp_path / "junit.xml").read_text()
    fixed = (tmp_path / "examples" / "internal" / "gpu" / "diag.go").read_text()
    assert fixed.index("defer C.cudaFree(d)") < fixed.index("C.cudaMemset(d, pattern, n)")
