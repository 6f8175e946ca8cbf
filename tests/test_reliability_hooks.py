"""The pre-commit hook against file names that look like options (issue 14,
item 5), run by the real pre-commit on a repository that commits them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from clirun import CGO_FILE
from gitrepo import ROOT, clean_env, commit_all, copy_project, init
import pytest

pytestmark = pytest.mark.slow  # runs the real pre-commit

VICTIM = "package p\n\n// precious: a hook must never write here\n"


def test_the_manifest_ends_options_before_file_names() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["args"] == ["--"]


def _hook(repo: Path, commit: str, target: Path, home: Path) -> subprocess.CompletedProcess:
    commit_all(target)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(repo), "cudalint", "--ref", commit, "--all-files"],
        cwd=target, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
        env=clean_env(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never"),
    )


def test_file_names_that_look_like_options_are_files(tmp_path: Path) -> None:
    repo, commit = copy_project(tmp_path / "cudalint")
    home = tmp_path / "home"  # shared: pre-commit installs the hook once
    first = init(tmp_path / "first")
    (first / "victim.go").write_text(VICTIM)
    (first / "--output=victim.go").write_text(CGO_FILE)
    done = _hook(repo, commit, first, home)
    assert (first / "victim.go").read_text() == VICTIM, done.stdout
    assert done.returncode == 1 and "--output=victim.go:7:2: CL301 " in done.stdout, done.stdout

    second = init(tmp_path / "second")
    (second / "-rf.go").write_text(CGO_FILE)
    done = _hook(repo, commit, second, home)
    assert "No such option" not in done.stdout, done.stdout
    assert done.returncode == 1 and "-rf.go:7:2: CL301 " in done.stdout, done.stdout
