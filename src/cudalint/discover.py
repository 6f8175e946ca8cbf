"""Turning command-line patterns into Go files, with the go command's `./...` rules.

The walk never follows symbolic links (so loops cannot trap it), skips what the
go command skips (vendor/, testdata/, names starting with '.' or '_', nested
modules), and ignores build constraints: a cgo file behind `//go:build cuda` is
exactly the file a CUDA linter must read.
"""

from __future__ import annotations

import os
import subprocess
import re
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.findings import Notification, NotificationKind
from cudalint.source import display_path

_SKIPPED_DIRS = frozenset({"vendor", "testdata"})


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    notifications: list[Notification] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    # Subdirectories not walked because they hold their own go.mod.
    nested_modules: list[Path] = field(default_factory=list)
    # The other files of the packages of files named one by one (as the
    # pre-commit hook names staged files): read, so that the package is
    # analysed whole, but not reported.
    context: list[Path] = field(default_factory=list)


def _exists(path: Path) -> bool:
    """Path.exists() raises on EACCES or ENAMETOOLONG: those are "no" here
    (listing that directory then fails and is reported)."""
    try:
        return path.exists()
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def printable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (kept by Python as
    surrogates) become \\xNN escapes, so that no output format fails on them."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _utf8_name(name: str) -> bool:
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _ignored_name(name: str) -> bool:
    return name.startswith((".", "_"))


def _is_go_file_name(name: str) -> bool:
    return name.endswith(".go") and not _ignored_name(name)


def _package_files(
    directory: Path, base: Path, notes: list[Notification], *, walking: bool,
) -> tuple[list[Path], list[Path]]:
    """The Go files of one directory, and its subdirectories."""
    files: list[Path] = []
    subdirs: list[Path] = []
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as error:
        notes.append(Notification(
            NotificationKind.UNREADABLE, printable(display_path(directory, base)),
            f"cannot list directory: {error.strerror or error}; skipped",
        ))
        return files, subdirs
    for entry in entries:
        try:
            if entry.is_symlink():
                continue
            if not _utf8_name(entry.name):
                if entry.is_dir(follow_symlinks=False) or _is_go_file_name(entry.name):
                    what = "directory" if entry.is_dir(follow_symlinks=False) else "file"
                    notes.append(Notification(
                        NotificationKind.UNREADABLE, printable(display_path(Path(entry.path), base)),
                        f"{what} name is not valid UTF-8; skipped",
                    ))
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name.endswith(".go") and not _ignored_name(entry.name):
                    what = "walked as a package directory" if walking else "skipped"
                    notes.append(Notification(
                        NotificationKind.NOT_GO_SOURCE, display_path(Path(entry.path), base),
                        f"is a directory, not a Go source file; {what}",
                    ))
                subdirs.append(Path(entry.path))
            elif _is_go_file_name(entry.name) and entry.is_file(follow_symlinks=False):
                files.append(Path(entry.path))
        except OSError as error:
            notes.append(Notification(
                NotificationKind.UNREADABLE, printable(display_path(Path(entry.path), base)),
                f"cannot stat: {error.strerror or error}; skipped",
            ))
    return files, subdirs


def _walk(
    root: Path, base: Path, matches, notes: list[Notification], nested: list[Path], all_modules: bool = False,
) -> list[Path]:
    found: list[Path] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        files, subdirs = _package_files(directory, base, notes, walking=True)
        if matches(directory):
            found.extend(files)
        for sub in reversed(subdirs):
            if sub.name in _SKIPPED_DIRS or _ignored_name(sub.name):
                continue
            if _exists(sub / "go.mod"):
                nested.append(sub)
                if not all_modules:
                    continue
            stack.append(sub)
    return found


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """go's matchPattern: '...' matches any string, and 'x/...' also matches 'x'."""
    escaped = re.escape(pattern).replace(r"\.\.\.", ".*")
    if escaped.endswith("/.*"):
        escaped = escaped[: -len("/.*")] + "(/.*)?"
    return re.compile(f"^{escaped}$")


def _expand_wildcard(
    pattern: str, cwd: Path, notes: list[Notification], nested: list[Path], all_modules: bool = False,
) -> list[Path]:
    """Walk from the literal directory before the first '...' and keep the
    directories whose path below it matches the rest of the pattern."""
    literal = pattern.split("...", 1)[0]
    root_text = literal if (not literal or literal.endswith("/")) else os.path.dirname(literal)
    root = Path(os.path.normpath(cwd / root_text)) if root_text else cwd
    if not _is_dir(root):
        return []
    remainder = pattern[len(root_text):].lstrip("/")
    regex = _pattern_regex(remainder)

    def matches(directory: Path) -> bool:
        rel = directory.relative_to(root).as_posix()
        return bool(regex.match("" if rel == "." else rel))

    return _walk(root, cwd, matches, notes, nested, all_modules)


def discover(patterns: list[str], cwd: Path, *, all_modules: bool = False) -> Discovery:
    """The Go files the patterns name, with the go command's meaning of
    `./...` (nested modules are other modules, not walked), or, with
    `all_modules`, every module of the tree (code scanning of a whole
    repository)."""
    result = Discovery()
    cwd = cwd.resolve()
    seen: set[Path] = set()
    whole: set[Path] = set()  # directories a pattern named whole
    for pattern in patterns:
        if "..." in pattern:
            matched = _expand_wildcard(pattern, cwd, result.notifications, result.nested_modules, all_modules)
        else:
            matched = _expand_path(pattern, cwd, result.notifications) or []
        if not matched:
            result.unmatched.append(pattern)
        if "..." in pattern or not pattern.endswith(".go"):
            whole.update(path.parent for path in matched)
        for path in matched:
            if path not in seen:
                seen.add(path)
                result.files.append(path)
    result.files.sort(key=lambda p: p.as_posix())
    # Files a walk found that git ignores are build output or vendored
    # copies, as ruff treats them; a file named on its own is analysed.
    ignored = _git_ignored([path for path in result.files if path.parent in whole], cwd)
    if ignored:
        result.files = [path for path in result.files if path not in ignored]
    for directory in sorted({path.parent for path in result.files} - whole):
        siblings, _ = _package_files(directory, cwd, [], walking=False)
        result.context.extend(path for path in siblings if path not in seen)
    return result


def _git_ignored(paths: list[Path], cwd: Path) -> set[Path]:
    """The paths git's ignore rules (.gitignore, .git/info/exclude) exclude,
    when cwd is inside a git work tree; nothing otherwise (or without git)."""
    if not paths:
        return set()
    try:
        done = subprocess.run(
            ["git", "check-ignore", "--no-index", "-z", "--stdin"], cwd=cwd, capture_output=True, timeout=60,
            input=b"\0".join(os.fsencode(path) for path in paths),
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if done.returncode not in (0, 1):  # 128: not a repository
        return set()
    return {Path(os.fsdecode(name)) for name in done.stdout.split(b"\0") if name}



def _expand_path(pattern: str, cwd: Path, notes: list[Notification]) -> list[Path] | None:
    """A directory (that package only) or a single file. None: already reported."""
    path = Path(pattern)
    if not path.is_absolute():
        path = cwd / path
    path = Path(os.path.normpath(path))
    if not _utf8_name(pattern):
        notes.append(Notification(
            NotificationKind.UNREADABLE, printable(display_path(path, cwd)), "file name is not valid UTF-8; skipped",
        ))
        return None
    try:
        if path.is_dir():
            if pattern.endswith(".go"):
                notes.append(Notification(
                    NotificationKind.NOT_GO_SOURCE, display_path(path, cwd),
                    "is a directory, not a Go source file; skipped",
                ))
                return None
            files, _ = _package_files(path, cwd, notes, walking=False)
            return files
        if path.exists():
            if not path.is_file():
                notes.append(Notification(
                    NotificationKind.NOT_GO_SOURCE, display_path(path, cwd),
                    "not a regular file (a FIFO, a device, ...); skipped",
                ))
                return None
            if not path.name.endswith(".go"):
                notes.append(Notification(
                    NotificationKind.NOT_GO_SOURCE, display_path(path, cwd),
                    "not a .go file; skipped",
                ))
                return None
            return [path]
    except OSError as error:
        notes.append(Notification(
            NotificationKind.UNREADABLE, printable(display_path(path, cwd)),
            f"cannot read: {error.strerror or error}; skipped",
        ))
        return None
    return []


def package_files(directory: Path) -> list[Path]:
    """The Go files of one package directory, as a directory pattern names
    them (a package read for its summaries, not reported)."""
    files, _ = _package_files(directory, directory, [], walking=False)
    return sorted(files, key=lambda p: p.name)
