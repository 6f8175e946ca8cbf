"""Temporary git repositories for the tests that run real tools on one:
pre-commit (which clones the hook repository) and the GitHub Action's
install step (which installs cudalint from the action's own checkout)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What a clone of cudalint holds that installing it needs, and the hook manifest.
PROJECT_FILES = ("pyproject.toml", "README.md", "src", "rules", ".pre-commit-hooks.yaml", "action.yml")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without GIT_* variables (a test run inside a git hook
    must not act on the outer repository)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(extra)
    return env


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def init(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    git("init", "-q", cwd=directory)
    git("config", "user.name", "cudalint tests", cwd=directory)
    git("config", "user.email", "tests@cudalint.invalid", cwd=directory)
    git("config", "commit.gpgsign", "false", cwd=directory)
    return directory


def commit_all(directory: Path) -> str:
    git("add", "-A", cwd=directory)
    git("commit", "-q", "-m", "test", cwd=directory)
    return git("rev-parse", "HEAD", cwd=directory)


def copy_project(destination: Path) -> tuple[Path, str]:
    """The project as a fresh git repository with one commit: (path, commit)."""
    init(destination)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            shutil.copy2(source, destination / name)
    return destination, commit_all(destination)


def readme_block(marker: str) -> str:
    """The fenced block after `<!-- marker -->` in README.md."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(f"<!-- {marker} -->") + 1
    assert lines[start].startswith("```"), f"README.md: no fenced block after <!-- {marker} -->"
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[start + 1:end]) + "\n"
