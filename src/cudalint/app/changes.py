"""Only what a change touched, as golangci-lint's new-from options:

- `--new-from-rev REF`: the lines changed since a git revision (the working
  tree, staged or not, against REF, plus untracked files, which are new whole);
- `--new-from-merge-base REF`: the same since the best common ancestor of REF
  and HEAD (what a pull request adds to its base branch);
- `--new-from-patch FILE`: the lines a unified diff adds (`git diff`,
  `diff -u`), its paths relative to the repository root (or the current
  directory outside a repository), with git's `a/` and `b/` prefixes;
- `--whole-files` with any of them: every line of a touched file.

git computes the diff, with its output format forced whatever the user's
configuration says (prefixes, quoting, colour, external diff drivers,
context), and file names are read as git writes them (C-quoted, or followed
by a TAB when they hold a space): a change is never silently nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

_SGR = re.compile(rb"\x1b\[[0-9;]*m")
_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# Environment variables that would change git's diff output under us.
_GIT_DIFF_ENV = ("GIT_DIFF_OPTS", "GIT_EXTERNAL_DIFF")
_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13,
            ord('"'): ord('"'), ord("\\"): ord("\\")}


class ChangesError(Exception):
    """No repository, an unknown revision, no git, an unreadable patch: the message says which."""


@dataclass
class Changes:
    """What a change touched: each file (relative to `root`, '/'-separated)
    with the lines it added or changed, None for a file new as a whole."""

    root: Path
    lines: dict[str, set[int] | None] = field(default_factory=dict)
    option: str = "--new-from-rev"  # how notes name what was asked for
    whole_files: bool = False

    def key(self, path: str, cwd: Path) -> str:
        """A finding's path (relative to cwd) as `lines` stores it."""
        absolute = os.path.normpath(os.path.join(cwd, path))
        directory, name = os.path.split(absolute)
        return Path(os.path.relpath(os.path.join(os.path.realpath(directory), name), self.root)).as_posix()

    def is_new(self, path: str, line: int, cwd: Path) -> bool:
        key = self.key(path, cwd)
        if key not in self.lines:
            return False
        lines = self.lines[key]
        return self.whole_files or lines is None or line in lines


def _git_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in _GIT_DIFF_ENV}


def _git(cwd: Path, option: str, *args: str) -> bytes:
    command = ["git", "-c", "core.quotePath=false", *args]
    try:
        done = subprocess.run(command, cwd=cwd, env=_git_env(), capture_output=True, timeout=300)
    except FileNotFoundError:
        raise ChangesError(f"{option} needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise ChangesError(f"{option}: git {args[0]} did not answer within 300 s") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ChangesError(f"{option}: git {args[0]} failed: {said[-1] if said else f'exit status {done.returncode}'}")
    return done.stdout


def _toplevel(cwd: Path, option: str) -> Path | None:
    try:
        out = _git(cwd, option, "rev-parse", "--show-toplevel")
    except ChangesError as error:
        if "needs git" in str(error):
            raise
        return None
    text = os.fsdecode(out.rstrip(b"\n"))
    return Path(os.path.realpath(text)) if text else None


def _verify(root: Path, revision: str, option: str) -> str:
    """The commit a revision names; a clear error if it names none."""
    if revision.startswith("-"):
        raise ChangesError(f"{option}: {revision!r} is not a revision of this repository")
    try:
        return os.fsdecode(_git(root, option, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").strip())
    except ChangesError:
        raise ChangesError(f"{option}: {revision!r} is not a revision of this repository") from None


def _repository(cwd: Path, option: str) -> Path:
    root = _toplevel(cwd, option)
    if root is None:
        raise ChangesError(f"{option}: {cwd} is not inside a git repository")
    return root


def since_revision(revision: str, cwd: Path, whole_files: bool = False, option: str = "--new-from-rev") -> Changes:
    """The lines changed in the working tree since `revision`, and the untracked files."""
    root = _repository(cwd, option)
    commit = _verify(root, revision, option)
    return _since_commit(root, commit, Changes(root, option=f"{option} {revision}", whole_files=whole_files), option)


def since_merge_base(ref: str, cwd: Path, whole_files: bool = False) -> Changes:
    """The lines changed since the best common ancestor of `ref` and HEAD."""
    option = "--new-from-merge-base"
    root = _repository(cwd, option)
    commit = _verify(root, ref, option)
    try:
        base = os.fsdecode(_git(root, option, "merge-base", commit, "HEAD").strip())
    except ChangesError:
        raise ChangesError(f"{option}: {ref!r} and HEAD have no common ancestor") from None
    return _since_commit(root, base, Changes(root, option=f"{option} {ref} (merge base {base[:12]})", whole_files=whole_files), option)


def _since_commit(root: Path, commit: str, changes: Changes, option: str) -> Changes:
    diff = _git(
        # --find-renames: a moved file is not new code, whatever diff.renames says.
        root, option, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--unified=0", "--find-renames",
        "--src-prefix=a/", "--dst-prefix=b/", commit, "--",
    )
    changes.lines.update(parse_patch(diff, strip=1))
    if changes.whole_files:  # files touched without a line added: renamed, mode changed, lines deleted
        names = _git(root, option, "diff", "--name-only", "-z", "--diff-filter=d", commit, "--")
        for name in filter(None, names.split(b"\0")):
            changes.lines.setdefault(os.fsdecode(name), set())
    untracked = _git(root, option, "ls-files", "-z", "--others", "--exclude-standard", "--full-name")
    for name in filter(None, untracked.split(b"\0")):
        changes.lines[os.fsdecode(name)] = None
    return changes


def from_patch(patch: Path, cwd: Path, whole_files: bool = False) -> Changes:
    """The lines a unified diff adds. Its paths are relative to the
    repository around cwd (as `git apply` reads them), or to cwd outside a
    repository; one leading directory (git's a/ and b/) is stripped unless
    only the unstripped path names an existing file (a --no-prefix patch)."""
    option = "--new-from-patch"
    try:
        data = patch.read_bytes()
    except OSError as error:
        raise ChangesError(f"{option}: cannot read {patch}: {error.strerror or error}") from None
    root = _toplevel(cwd, option) or Path(os.path.realpath(cwd))
    # `git diff > pr.diff` under color.ui=always writes colour codes into the file.
    parsed = parse_patch(_SGR.sub(b"", data), strip=None)
    if data.strip() and not parsed:
        raise ChangesError(f"{option}: {patch} is not a unified diff (no '+++' file header found)")
    changes = Changes(root, option=f"{option} {patch}", whole_files=whole_files)
    for name, lines in parsed.items():
        stripped = name.split("/", 1)[1] if "/" in name else name
        chosen = name if (not (root / stripped).exists() and (root / name).exists()) else stripped
        previous = changes.lines.get(chosen, set())
        changes.lines[chosen] = None if previous is None or lines is None else previous | lines
    return changes


def unquote(name: bytes) -> bytes:
    """A file name as git writes it in a header: C-quoted ("a/\\303\\244\\tb.go")
    or plain, where a TAB ends it (git adds one after a name with a space,
    `diff -u` one before its timestamp)."""
    if not name.startswith(b'"'):
        return name.split(b"\t", 1)[0]
    out = bytearray()
    index = 1
    while index < len(name):
        char = name[index]
        if char == ord('"'):
            break
        if char == ord("\\") and index + 1 < len(name):
            following = name[index + 1]
            if ord("0") <= following <= ord("7"):
                digits = name[index + 1:index + 4]
                out.append(int(digits, 8) & 0xFF)
                index += 1 + len(digits)
                continue
            out.append(_ESCAPES.get(following, following))
            index += 2
            continue
        out.append(char)
        index += 1
    return bytes(out)


def _strip(name: bytes, strip: int | None) -> str | None:
    """The path a header names ('/dev/null': None), less `strip` leading
    directories (None: left for the caller)."""
    if name == b"/dev/null":
        return None
    text = os.fsdecode(name)
    if strip:
        parts = text.split("/", strip)
        text = parts[-1] if len(parts) > strip else text
    return os.path.normpath(text).replace(os.sep, "/")


def parse_patch(data: bytes, strip: int | None = 1) -> dict[str, set[int]]:
    """File (as the '+++' header names it) -> the line numbers, in the new
    file, of its added lines. Hunk bodies are walked line by line (counted by
    their headers, so a removed line '-- x' is never taken for a header, and
    context lines, which diff.interHunkContext or GIT_DIFF_OPTS put in, are
    not taken for changes)."""
    changed: dict[str, set[int]] = {}
    current: str | None = None
    lines = data.split(b"\n")
    index = 0
    while index < len(lines):
        line = lines[index].rstrip(b"\r")
        index += 1
        if line.startswith(b"diff --git "):
            current = None
        elif line.startswith(b"--- ") and index < len(lines) and lines[index].startswith(b"+++ "):
            new = unquote(lines[index].rstrip(b"\r")[4:])
            index += 1
            current = _strip(new, strip)
            if current is not None:
                changed.setdefault(current, set())
        elif line.startswith(b"@@ ") and current is not None:
            hunk = _HUNK.match(line)
            if hunk is None:
                continue
            old_left = int(hunk.group(1)) if hunk.group(1) is not None else 1
            number = int(hunk.group(2))
            new_left = int(hunk.group(3)) if hunk.group(3) is not None else 1
            while (old_left > 0 or new_left > 0) and index < len(lines):
                body = lines[index]
                kind = body[:1]
                if kind == b"+":
                    changed[current].add(number)
                    number += 1
                    new_left -= 1
                elif kind == b"-":
                    old_left -= 1
                elif kind in (b" ", b"", b"\r"):
                    number += 1
                    new_left -= 1
                    old_left -= 1
                elif kind != b"\\":  # not "\ No newline at end of file": the hunk ended early
                    break
                index += 1
    return changed
