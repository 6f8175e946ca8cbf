"""`--new-from-rev REF`: the lines changed since a git revision, so that a
legacy repository can gate only what a change adds (golangci-lint's
new-from-rev). git itself computes the diff: the working tree (staged or not)
against REF, plus untracked files, which are new whole.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
_FILE = re.compile(r"^\+\+\+ (?:b/)?(.*)$", re.MULTILINE)


class ChangesError(Exception):
    """No repository, an unknown revision, no git: the message says which."""


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise ChangesError("--new-from-rev needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise ChangesError("git did not answer within 120 s") from None
    if done.returncode != 0:
        raise ChangesError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"git {args[0]} failed")
    return done.stdout


def changed_lines(revision: str, cwd: Path) -> dict[str, set[int] | None]:
    """Path (relative to cwd, '/'-separated) -> the lines added or changed
    since `revision`; None for a file that is new as a whole."""
    try:
        _git(cwd, "rev-parse", "--show-toplevel")
    except ChangesError:
        raise ChangesError(f"--new-from-rev: {cwd} is not inside a git repository") from None
    try:
        _git(cwd, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    except ChangesError:
        raise ChangesError(f"--new-from-rev: {revision!r} is not a revision of this repository") from None
    diff = _git(cwd, "diff", "--unified=0", "--no-color", "--no-ext-diff", "--relative", revision, "--")
    changed: dict[str, set[int] | None] = {}
    for section in re.split(r"^diff --git ", diff, flags=re.MULTILINE)[1:]:
        target = _FILE.search(section)
        if target is None or target.group(1) == "/dev/null":
            continue  # deleted
        lines: set[int] = set()
        for hunk in _HUNK.finditer(section):
            start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
            lines.update(range(start, start + count))
        changed[target.group(1)] = lines
    for path in _git(cwd, "ls-files", "--others", "--exclude-standard").splitlines():
        changed[Path(os.path.normpath(path)).as_posix()] = None
    return changed


def is_new(changed: dict[str, set[int] | None], path: str, line: int) -> bool:
    lines = changed.get(Path(os.path.normpath(path)).as_posix(), set())
    return lines is None or line in lines
