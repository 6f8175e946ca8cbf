"""The pre-commit hook, run by the real pre-commit: `pre-commit try-repo`
installs cudalint from a clone of this project into its own environment
(language: python) and runs the hook on the files it is given. The README's
.pre-commit-config.yaml snippet is run the same way."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gitrepo import ROOT, clean_env, commit_all, copy_project, init, readme_block

pytestmark = pytest.mark.slow

BUGGY = """package gpu

// #include <cuda_runtime_api.h>
import "C"

import "unsafe"

func Fill(n C.size_t) {
	var d unsafe.Pointer
	C.cudaMalloc(&d, n)
	C.cudaMemset(d, 0, n)
	C.cudaFree(d)
}
"""

CLEAN = """package gpu

// #include <cuda_runtime_api.h>
import "C"

import (
	"errors"
	"unsafe"
)

var errCUDA = errors.New("cuda error")

func Zero(n C.size_t) error {
	var d unsafe.Pointer
	if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
		return errCUDA
	}
	defer C.cudaFree(d)
	if st := C.cudaMemset(d, 0, n); st != C.cudaSuccess {
		return errCUDA
	}
	return nil
}
"""


def test_hook_manifest() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "cudalint" and hook["entry"] == "cudalint"
    assert hook["language"] == "python" and hook["types"] == ["go"]
    assert hook.get("pass_filenames", True) is True  # the staged files are the arguments
    assert hook["require_serial"] is True  # one package's files are never split over processes
    exclude = re.compile(hook["exclude"])
    assert exclude.search("vendor/x/a.go") and exclude.search("pkg/testdata/a.go") and not exclude.search("pkg/vendored.go")


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> tuple[Path, str]:
    return copy_project(tmp_path_factory.mktemp("hook") / "cudalint")


@pytest.fixture
def target(tmp_path: Path) -> Path:
    repo = init(tmp_path / "service")
    (repo / "gpu").mkdir()
    (repo / "gpu" / "buggy.go").write_text(BUGGY)
    (repo / "gpu" / "clean.go").write_text(CLEAN)
    (repo / "README.md").write_text("not Go: pre-commit never passes it to the hook\n")
    commit_all(repo)
    return repo


def pre_commit(*args: str, cwd: Path, home: Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=600, env=clean_env(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never"),
    )
    return done.returncode, done.stdout


def test_try_repo_fails_on_the_buggy_file_and_passes_on_the_clean_one(hook_repo, target: Path, tmp_path: Path) -> None:
    repo, commit = hook_repo
    home = tmp_path / "home"
    clean_status, clean_output = pre_commit(
        "try-repo", str(repo), "cudalint", "--ref", commit, "--files", "gpu/clean.go", "README.md", cwd=target, home=home,
    )
    buggy_status, buggy_output = pre_commit(
        "try-repo", str(repo), "cudalint", "--ref", commit, "--files", "gpu/buggy.go", cwd=target, home=home,
    )

    assert clean_status == 0, clean_output
    assert re.search(r"^cudalint\.+Passed$", clean_output, re.MULTILINE)

    assert buggy_status == 1, buggy_output
    assert re.search(r"^cudalint\.+Failed$", buggy_output, re.MULTILINE)
    assert "gpu/buggy.go:10:2: CL301 " in buggy_output and "gpu/buggy.go:11:2: CL301 " in buggy_output
    assert "clean.go" not in buggy_output


def test_readme_pre_commit_config_works(hook_repo, target: Path, tmp_path: Path) -> None:
    repo, commit = hook_repo
    config = yaml.safe_load(readme_block("snippet:pre-commit"))
    (entry,) = config["repos"]
    assert entry["repo"].endswith("/cudalint") and entry["rev"].startswith("v")
    entry["repo"], entry["rev"] = str(repo), commit
    (target / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    commit_all(target)
    status, output = pre_commit("run", "--all-files", cwd=target, home=tmp_path / "home")
    assert status == 1, output
    assert "gpu/buggy.go:10:2: CL301 " in output and "clean.go" not in output


WRAPPED = """package gpu

// #include <cuda_runtime_api.h>
import "C"

import "unsafe"

func Zero(n C.size_t) error {
	var d unsafe.Pointer
	res := C.cudaMalloc(&d, n)
	if err := errorString(res); err != nil {
		return err
	}
	defer C.cudaFree(d)
	return nil
}
"""

HELPERS = """package gpu

// #include <cuda_runtime_api.h>
import "C"

import "errors"

func errorString(res C.cudaError_t) error {
	if res != C.cudaSuccess {
		return errors.New(C.GoString(C.cudaGetErrorString(res)))
	}
	return nil
}

func sync() {
	C.cudaDeviceSynchronize()
}
"""


def test_a_staged_file_gets_exactly_what_a_full_run_gives_it(hook_repo, tmp_path: Path) -> None:
    """The hook passes the staged files only; their package is still read
    whole (the converter lives in another file), and only the staged files
    are reported."""
    repo, commit = hook_repo
    target = init(tmp_path / "service")
    (target / "gpu").mkdir()
    (target / "gpu" / "alloc.go").write_text(WRAPPED)
    (target / "gpu" / "helpers.go").write_text(HELPERS)
    commit_all(target)
    home = tmp_path / "home"
    status, output = pre_commit("try-repo", str(repo), "cudalint", "--ref", commit, "--files", "gpu/alloc.go", cwd=target, home=home)
    assert status == 0, output  # no CL101 on the failure branch, and helpers.go's CL301 is not reported
    assert "helpers.go" not in output
    status, output = pre_commit("try-repo", str(repo), "cudalint", "--ref", commit, "--files", "gpu/helpers.go", cwd=target, home=home)
    assert status == 1 and "gpu/helpers.go:16:2: CL301 " in output and "alloc.go" not in output, output
