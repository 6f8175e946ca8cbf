"""The GitHub Action (action.yml): its structure, and its install and run
scripts executed for real the way the runner executes them (bash, inputs
passed through the environment, outputs through $GITHUB_OUTPUT)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gitrepo import ROOT, clean_env, copy_project
from cudalint.reporters import FORMATS
from test_sarif import validate

pytestmark = pytest.mark.slow

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
STEPS = ACTION["runs"]["steps"]
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
BUGGY = """package p

// #include <cuda_runtime_api.h>
import "C"

func sync() {
	C.cudaDeviceSynchronize()
}
"""


def step(name: str) -> dict:
    return next(s for s in STEPS if s.get("name") == name)


def uses(prefix: str) -> dict:
    return next(s for s in STEPS if s.get("uses", "").startswith(prefix))


def test_metadata_and_inputs() -> None:
    assert ACTION["name"] == "cudalint" and ACTION["description"]
    assert ACTION["runs"]["using"] == "composite"
    for name in ("patterns", "format", "category", "output", "upload", "fail-on-findings", "args", "working-directory", "python-version"):
        spec = ACTION["inputs"][name]
        assert spec["description"] and "default" in spec and spec.get("required") is False, name
    assert ACTION["inputs"]["patterns"]["default"] == "./..."
    assert ACTION["inputs"]["format"]["default"] == "sarif"
    for fmt in FORMATS:  # every format cudalint has is offered
        assert fmt in ACTION["inputs"]["format"]["description"]
    assert set(ACTION["outputs"]) == {"exit-code", "report"}


def test_steps_set_up_python_install_run_and_upload() -> None:
    setup = uses("actions/setup-python@")
    assert setup["with"]["python-version"] == "${{ inputs.python-version }}"
    assert STEPS.index(setup) == 2  # after the runner check and the cache restore
    windows = step("Refuse runners the Action does not support")
    assert STEPS.index(windows) == 0 and "runner.os == 'Windows'" in windows["if"] and "exit 2" in windows["run"]
    cache = uses("actions/cache@")
    assert cache["if"] == "${{ inputs.cache == 'true' }}" and cache["with"]["path"].endswith("/.cudalint_cache")
    assert ACTION["inputs"]["all-modules"]["default"] == "true"
    install = step("Install cudalint")
    assert '"$GITHUB_ACTION_PATH"' in install["run"]  # the action's own checkout, not an index
    assert install["env"]["PYTHON"] == "${{ steps.python.outputs.python-path }}" and setup["id"] == "python"
    run = step("Run cudalint")
    assert run["id"] == "run" and run["working-directory"] == "${{ inputs.working-directory }}"
    upload = uses("github/codeql-action/upload-sarif@")
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4"
    assert upload["with"] == {"sarif_file": "${{ steps.run.outputs.report }}", "category": "${{ inputs.category }}"}
    assert "inputs.format == 'sarif'" in upload["if"] and "inputs.upload == 'true'" in upload["if"]
    assert "!cancelled()" in upload["if"]  # findings do not stop the upload
    fail = step("Fail on findings")
    assert "steps.run.outputs.exit-code == '1'" in fail["if"] and STEPS.index(fail) > STEPS.index(upload)


def test_scripts_take_inputs_from_the_environment_only() -> None:
    declared = set(ACTION["inputs"])
    used = set()
    text = (ROOT / "action.yml").read_text()
    for expression in EXPRESSION.findall(text):
        used |= set(re.findall(r"\binputs\.([a-z-]+)", expression))
    assert used == declared  # every input is used, and only declared ones are
    for s in STEPS:
        if "run" in s:
            assert s["shell"] == "bash"
            assert "${{" not in s["run"], f"{s['name']}: an expression spliced into a script is an injection risk"


def resolve(env: dict[str, str], inputs: dict[str, str], temp: Path) -> dict[str, str]:
    """The step's env as the runner would evaluate it, for the expressions the action uses."""
    values = {"runner.temp": str(temp), "steps.python.outputs.python-path": sys.executable}
    values |= {f"inputs.{name}": value for name, value in inputs.items()}
    out = {}
    for key, value in env.items():
        out[key] = EXPRESSION.sub(lambda m: values[m.group(1)], value)
    return out


def bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # GitHub runs `shell: bash` steps as `bash --noprofile --norc -eo pipefail {0}`.
    file = cwd / ".step.sh"
    file.write_text(script)
    try:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(file)], cwd=cwd, env=clean_env(**env),
            capture_output=True, text=True, timeout=600,
        )
    finally:
        file.unlink()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """RUNNER_TEMP after the action's install step ran against a clean clone."""
    action_path, _ = copy_project(tmp_path_factory.mktemp("action") / "cudalint")
    temp = tmp_path_factory.mktemp("runner-temp")
    install = step("Install cudalint")
    env = resolve(install["env"], {}, temp) | {"RUNNER_TEMP": str(temp), "GITHUB_ACTION_PATH": str(action_path)}
    done = bash(install["run"], env, temp)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (temp / "cudalint-venv" / "bin" / "cudalint").exists()
    return temp


def run_step(temp: Path, project: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    values = {name: str(spec["default"]) for name, spec in ACTION["inputs"].items()} | inputs
    run = step("Run cudalint")
    outputs = project / ".github_output"
    outputs.write_text("")
    env = resolve(run["env"], values, temp) | {"GITHUB_OUTPUT": str(outputs), "RUNNER_TEMP": str(temp)}
    done = bash(run["run"], env, project / values["working-directory"])
    return done, dict(line.split("=", 1) for line in outputs.read_text().splitlines())


def test_the_install_and_run_steps_work(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "a.go").write_text(BUGGY)
    done, outputs = run_step(installed, tmp_path)
    assert done.returncode == 0, done.stderr  # findings: the upload comes first, the last step fails the job
    assert outputs == {"exit-code": "1", "report": str((tmp_path / "cudalint.sarif").resolve())}
    document = json.loads((tmp_path / "cudalint.sarif").read_text())
    validate(document)
    assert [r["ruleId"] for r in document["runs"][0]["results"]] == ["CL301"]

    done, outputs = run_step(installed, tmp_path, format="github", patterns="gpu/...", args="--select CL3 --quiet")
    assert done.returncode == 0 and outputs == {"exit-code": "1"}
    assert done.stdout.startswith("::error file=gpu/a.go,line=7,col=2,")

    done, outputs = run_step(installed, tmp_path, patterns="nowhere/...")
    assert done.returncode == 2 and outputs["exit-code"] == "2"
    assert "pattern 'nowhere/...' matches no Go files" in done.stderr

    done, _ = run_step(installed, tmp_path, format="xml")
    assert done.returncode == 2 and "unknown format 'xml'" in done.stdout


def test_multi_line_inputs_and_no_stale_report_after_a_failure(installed: Path, tmp_path: Path) -> None:
    """Issue 12, defects 2 and 3: every line of a multi-line `patterns` or
    `args` input counts, and a run that fails (exit 2) outputs no report
    for upload, even with an old one on disk."""
    for name in ("gpu", "nvml"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.go").write_text(BUGGY.replace("package gpu", f"package {name}"))
    done, outputs = run_step(installed, tmp_path, patterns="gpu/...\nnvml/...", args="--select\nCL3")
    assert done.returncode == 0 and outputs["exit-code"] == "1", done.stderr
    document = json.loads((tmp_path / "cudalint.sarif").read_text())
    assert sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in document["runs"][0]["results"]) == [
        "gpu/a.go", "nvml/a.go",
    ]
    done, outputs = run_step(installed, tmp_path, patterns="nowhere/...")
    assert done.returncode == 2 and outputs == {"exit-code": "2"}
    assert not (tmp_path / "cudalint.sarif").exists()


# -- issue 24, item 5 ----------------------------------------------------------


def _two_packages(project: Path) -> None:
    for name in ("gpu", "a b"):
        (project / name).mkdir()
        (project / name / "a.go").write_text(BUGGY)


def _reported(project: Path, report: str = "cudalint.sarif") -> list[str]:
    document = json.loads((project / report).read_text())
    return sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in document["runs"][0]["results"])


def test_args_with_a_space_one_line_shell_quoted_or_one_argument_per_line(installed: Path, tmp_path: Path) -> None:
    _two_packages(tmp_path)
    done, outputs = run_step(installed, tmp_path)
    assert outputs["exit-code"] == "1" and _reported(tmp_path) == ["a%20b/a.go", "gpu/a.go"], done.stderr
    for args in ('--exclude "a b/**" --select CL3', "--exclude 'a b/**'", "--exclude a\\ b/**", "--exclude\na b/**\n--select\nCL3\n"):
        done, outputs = run_step(installed, tmp_path, args=args)
        assert done.returncode == 0 and outputs["exit-code"] == "1", (args, done.stdout + done.stderr)
        assert _reported(tmp_path) == ["gpu/a.go"], args
    # Patterns are read the same way: a directory with a space in its name.
    done, outputs = run_step(installed, tmp_path, patterns="'a b/...'")
    assert outputs["exit-code"] == "1" and _reported(tmp_path) == ["a%20b/a.go"], done.stdout + done.stderr
    done, outputs = run_step(installed, tmp_path, patterns="a b/...\ngpu")
    assert outputs["exit-code"] == "1" and _reported(tmp_path) == ["a%20b/a.go", "gpu/a.go"], done.stdout + done.stderr


def test_args_that_cannot_be_read_say_how_they_were_read(installed: Path, tmp_path: Path) -> None:
    _two_packages(tmp_path)
    done, outputs = run_step(installed, tmp_path, args='--exclude "a b/**')
    assert done.returncode == 2 and outputs == {"exit-code": "2"}
    assert "::error title=cudalint::args is one line, so it is split as a shell splits words, and it has no closing quotation" in done.stdout
    done, outputs = run_step(installed, tmp_path, args="--select CL3\n--quiet")
    assert done.returncode == 2 and outputs == {"exit-code": "2"}
    assert ("args has several lines, so each line is one argument, taken as it is, but line 1 (--select CL3) holds an "
            "option and its value: put the value on the next line, write --select=VALUE") in done.stdout
    done, outputs = run_step(installed, tmp_path, args='--exclude\n"a b/**"')
    assert done.returncode == 2 and "but line 2 is quoted" in done.stdout
    done, outputs = run_step(installed, tmp_path, args="--select=CL3\n--exclude=a b/**")  # = keeps a line one argument
    assert done.returncode == 0 and _reported(tmp_path) == ["gpu/a.go"], done.stdout + done.stderr


def test_the_category_is_the_one_the_sarif_file_names(installed: Path, tmp_path: Path) -> None:
    """upload-sarif ignores its category input for a file with
    automationDetails: the Action has cudalint write the category."""
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "a.go").write_text(BUGGY)
    done, outputs = run_step(installed, tmp_path, category="cudalint-gpu")
    assert outputs["exit-code"] == "1", done.stderr
    assert json.loads((tmp_path / "cudalint.sarif").read_text())["runs"][0]["automationDetails"] == {"id": "cudalint-gpu/"}
    assert uses("github/codeql-action/upload-sarif@")["with"]["category"] == "${{ inputs.category }}"


def test_an_output_in_a_missing_directory_is_created(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "a.go").write_text(BUGGY)
    done, outputs = run_step(installed, tmp_path, output="out/reports/cudalint.sarif")
    assert done.returncode == 0 and outputs == {
        "exit-code": "1", "report": str((tmp_path / "out" / "reports" / "cudalint.sarif").resolve()),
    }, done.stderr
    validate(json.loads((tmp_path / "out" / "reports" / "cudalint.sarif").read_text()))


def test_the_report_output_is_described_for_every_format_that_sets_it(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "a.go").write_text(BUGGY)
    description = ACTION["outputs"]["report"]["description"]
    for fmt in FORMATS:
        done, outputs = run_step(installed, tmp_path, format=fmt, output=f"report.{fmt}", upload="false")
        assert outputs["exit-code"] == "1", (fmt, done.stderr)
        if "report" in outputs:
            assert outputs["report"] == str((tmp_path / f"report.{fmt}").resolve())
            assert fmt in description, fmt
        else:
            assert fmt in ("text", "github") and fmt not in description


def token_step(**context: str) -> tuple[dict[str, str], dict]:
    """The step that decides whether the token may upload, with the
    workflow context the runner would give it."""
    check = step("Check that the token may upload")
    values = {"github.event_name": "push", "github.repository": "owner/repo", "github.actor": "someone",
              "github.event.pull_request.head.repo.full_name": "", "steps.run.outputs.report": "/w/cudalint.sarif"} | context
    env = {key: EXPRESSION.sub(lambda m: values[m.group(1)], value) for key, value in check["env"].items()}
    return env, check


def test_the_upload_is_skipped_where_the_token_is_read_only(tmp_path: Path) -> None:
    """A pull request from a fork (and a Dependabot run) gets a read-only
    token: upload-sarif would fail the job, so the upload is skipped with a
    notice that says why and where the report is."""
    upload = uses("github/codeql-action/upload-sarif@")
    check = step("Check that the token may upload")
    assert check["id"] == "token" and STEPS.index(check) == STEPS.index(upload) - 1
    assert "steps.token.outputs.upload == 'true'" in upload["if"]
    assert check["if"].replace("${{ ", "").replace(" }}", "") in upload["if"]  # the check runs whenever the upload could

    def decide(**context: str) -> tuple[str, str]:
        env, _ = token_step(**context)
        outputs = tmp_path / "github_output"
        outputs.write_text("")
        done = bash(check["run"], env | {"GITHUB_OUTPUT": str(outputs)}, tmp_path)
        assert done.returncode == 0, done.stderr
        return outputs.read_text().strip(), done.stdout

    fork = {"github.event_name": "pull_request", "github.event.pull_request.head.repo.full_name": "fork/repo"}
    decision, said = decide(**fork)
    assert decision == "upload=false"
    assert said.startswith("::notice title=cudalint::the SARIF report is not uploaded to code scanning: this pull request comes from a fork (fork/repo)")
    assert "/w/cudalint.sarif" in said
    assert decide(**{**fork, "github.event.pull_request.head.repo.full_name": "owner/repo"}) == ("upload=true", "")
    assert decide(**{**fork, "github.event_name": "pull_request_target"})[0] == "upload=true"  # the base repository's token
    assert decide()[0] == "upload=true"
    assert decide(**{"github.actor": "dependabot[bot]"})[0] == "upload=false"
