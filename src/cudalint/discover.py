"""Turning command-line patterns into Go files, with the go command's `./...` rules.

The walk never follows symbolic links (so loops cannot trap it), skips what the
go command skips (vendor/, testdata/, names starting with '.' or '_', nested
modules), and ignores build constraints: a cgo file behind `//go:build cuda` is
exactly the file a CUDA linter must read.

Like ruff, a walk also leaves out untracked files that git ignores (build
output, generated copies), but only below the directory a pattern names. The
go command reads no .gitignore and builds every file of `./...`, so a file git
tracks is always analysed, and a repository *around* the named directory that
ignores it (a checkout unpacked in another repository's `build/` or `.cache/`)
has no say over it: its own .gitignore files decide, as for any checkout.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.findings import Notification, NotificationKind
from cudalint.source import display_path

_SKIPPED_DIRS = frozenset({"vendor", "testdata"})


@dataclass(frozen=True)
class IgnoreRule:
    """The git ignore rule that matched, as `git check-ignore -v` names it."""

    source: Path  # the .gitignore, info/exclude or core.excludesFile that holds it
    line: int
    pattern: str


@dataclass(frozen=True)
class IgnoredFile:
    """A file a walk found and left out: untracked, and ignored by git below
    the directory its pattern named."""

    path: Path
    rule: IgnoreRule


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    # Left out of `files`, so that "nothing analysed" can name the rule.
    ignored: list[IgnoredFile] = field(default_factory=list)
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


def _wildcard_root(pattern: str, cwd: Path) -> tuple[Path, str]:
    """The literal directory before a pattern's first '...', which the walk
    starts from (and which the pattern names), and the rest of the pattern."""
    literal = pattern.split("...", 1)[0]
    root_text = literal if (not literal or literal.endswith("/")) else os.path.dirname(literal)
    root = Path(os.path.normpath(cwd / root_text)) if root_text else cwd
    return root, pattern[len(root_text):].lstrip("/")


def _expand_wildcard(
    pattern: str, cwd: Path, notes: list[Notification], nested: list[Path], all_modules: bool = False,
) -> list[Path]:
    """Walk from the literal directory before the first '...' and keep the
    directories whose path below it matches the rest of the pattern."""
    root, remainder = _wildcard_root(pattern, cwd)
    if not _is_dir(root):
        return []
    regex = _pattern_regex(remainder)

    def matches(directory: Path) -> bool:
        rel = directory.relative_to(root).as_posix()
        return bool(regex.match("" if rel == "." else rel))

    return _walk(root, cwd, matches, notes, nested, all_modules)


def _named_directory(pattern: str, cwd: Path) -> Path | None:
    """The directory a pattern names, below which git's ignore rules may
    leave files out; None for a file named on its own, which is analysed."""
    if "..." in pattern:
        return _wildcard_root(pattern, cwd)[0]
    if pattern.endswith(".go"):
        return None
    path = Path(pattern)
    return Path(os.path.normpath(path if path.is_absolute() else cwd / path))


def discover(patterns: list[str], cwd: Path, *, all_modules: bool = False) -> Discovery:
    """The Go files the patterns name, with the go command's meaning of
    `./...` (nested modules are other modules, not walked), or, with
    `all_modules`, every module of the tree (code scanning of a whole
    repository)."""
    result = Discovery()
    cwd = cwd.resolve()
    seen: set[Path] = set()
    whole: set[Path] = set()  # directories a pattern named whole
    named: set[Path] = set()  # files named on their own
    walked: dict[Path, Path] = {}  # file -> the deepest directory a pattern that found it named
    for pattern in patterns:
        if "..." in pattern:
            matched = _expand_wildcard(pattern, cwd, result.notifications, result.nested_modules, all_modules)
        else:
            matched = _expand_path(pattern, cwd, result.notifications) or []
        if not matched:
            result.unmatched.append(pattern)
        directory = _named_directory(pattern, cwd)
        if directory is None:
            named.update(matched)
        else:
            whole.update(path.parent for path in matched)
            for path in matched:
                if len(directory.parts) > len(walked.get(path, Path()).parts):
                    walked[path] = directory
        for path in matched:
            if path not in seen:
                seen.add(path)
                result.files.append(path)
    result.files.sort(key=lambda p: p.as_posix())
    result.ignored = _git_ignored({path: root for path, root in walked.items() if path not in named})
    if result.ignored:
        dropped = {ignored.path for ignored in result.ignored}
        result.files = [path for path in result.files if path not in dropped]
    for directory in sorted({path.parent for path in result.files} - whole):
        siblings, _ = _package_files(directory, cwd, [], walking=False)
        result.context.extend(path for path in siblings if path not in seen)
    return result


def _git_ignored(walked: dict[Path, Path]) -> list[IgnoredFile]:
    """The walked files (each with the directory its pattern named) that are
    untracked and that git ignores below that directory, in path order. A
    file that several patterns found is judged below the deepest directory
    they named: it is analysed if any of them would analyse it."""
    by_root: dict[Path, list[Path]] = {}
    for path, root in walked.items():
        by_root.setdefault(root, []).append(path)
    rules: dict[Path, IgnoreRule] = {}
    for root, paths in by_root.items():
        rules.update(_ignored_below(root, paths))
    return [IgnoredFile(path, rules[path]) for path in sorted(rules, key=lambda p: p.as_posix())]


_GIT_LOCATIONS = frozenset({"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"})


def _git(args: list[str], cwd: Path, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes | None:
    """git's output, or None when git is missing, slow, or says no (not a
    repository, a repository it does not trust): then nothing is ignored.
    The repository is the one that holds `cwd` (or the one named in `args`),
    never one that GIT_DIR, set by a hook or a user, points elsewhere to."""
    env = {key: value for key, value in os.environ.items() if key not in _GIT_LOCATIONS}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode in ok else None


@dataclass(frozen=True)
class _Repository:
    top: Path
    git_dir: Path


def _repository(directory: Path) -> _Repository | None:
    """The git work tree that holds a directory, if any."""
    out = _git(["rev-parse", "--show-toplevel", "--absolute-git-dir"], directory)
    lines = os.fsdecode(out).split("\n") if out is not None else []
    if len(lines) != 3 or lines[2]:  # two paths and the last newline; a path with a newline is not parsed
        return None
    return _Repository(Path(lines[0]), Path(lines[1]))


def _ignored_below(root: Path, paths: list[Path]) -> dict[Path, IgnoreRule]:
    """The untracked files among `paths` (all below `root`) that git ignores.
    When the repository ignores `root` itself, or a directory around it, the
    named tree is not its business (a checkout unpacked in its `build/` or
    `.cache/`): only the tree's own .gitignore files, and the user's global
    excludes, decide, as they would for the tree on its own."""
    real_root = root.resolve()
    repository = _repository(real_root)
    if repository is None:
        return {}
    try:
        root_from_top = real_root.relative_to(repository.top)
    except ValueError:
        return {}
    untracked = _untracked(real_root, _paths_from(root, root_from_top, paths))
    if not untracked:
        return {}
    around = [root_from_top.as_posix()] if root_from_top.parts else []
    rules = _check_ignore(repository.git_dir, repository.top, [*untracked, *around])
    if around and around[0] in rules:
        within = {Path(name).relative_to(root_from_top).as_posix(): path for name, path in untracked.items()}
        return {within[name]: rule for name, rule in _check_ignore_alone(real_root, list(within)).items()}
    return {untracked[name]: rule for name, rule in rules.items() if name in untracked}


def _paths_from(root: Path, root_from_top: Path, paths: list[Path]) -> dict[str, Path]:
    """Each path below `root` by its name from the top of the work tree, as
    git writes it; by string slicing, as a walk of a large tree names
    thousands (pathlib's relative_to costs more than the walk)."""
    skip = len(os.path.join(str(root), ""))
    top = "" if not root_from_top.parts else f"{root_from_top.as_posix()}/"
    return {top + str(path)[skip:]: path for path in paths}


def _untracked(real_root: Path, files: dict[str, Path]) -> dict[str, Path]:
    """The files (by path from the top of the work tree) that git does not
    track; a file of a submodule is the submodule's to judge, so it counts
    as tracked."""
    tracked, submodules = _tracked(real_root)
    return {
        name: path for name, path in files.items()
        if name not in tracked and not any(name.startswith(f"{module}/") for module in submodules)
    }


def _tracked(real_root: Path) -> tuple[set[str], list[str]]:
    """The files git tracks below a directory, and its submodules, as paths
    from the top of the work tree."""
    out = _git(["ls-files", "-z", "--stage", "--full-name"], real_root)
    files: set[str] = set()
    submodules: list[str] = []
    for entry in (out or b"").split(b"\0"):
        info, _, name = entry.partition(b"\t")
        if name:
            (submodules.append if info.startswith(b"160000 ") else files.add)(os.fsdecode(name))
    return files, submodules


def _check_ignore_alone(tree: Path, names: list[str]) -> dict[str, IgnoreRule]:
    """git's verdict on a tree's files by the tree's own rules: its work tree
    is that tree, its git directory an empty one (no info/exclude)."""
    with tempfile.TemporaryDirectory(prefix="cudalint-") as scratch:
        if _git(["init", "--quiet", "--bare", "--template=", scratch], tree) is None:
            return {}
        return _check_ignore(Path(scratch), tree, names)


def _check_ignore(git_dir: Path, work_tree: Path, names: list[str]) -> dict[str, IgnoreRule]:
    """The rule that ignores each of `names` (paths in the work tree), for
    those a rule ignores. The index is not read (the caller knows what is
    tracked): a directory holding tracked files is judged by its rules."""
    out = _git(
        [f"--git-dir={git_dir}", f"--work-tree={work_tree}",
         "check-ignore", "--verbose", "--non-matching", "--no-index", "-z", "--stdin"],
        work_tree, b"\0".join(b"./" + os.fsencode(name) for name in names),  # ./: a leading ':' is no pathspec magic
        ok=(0, 1),  # 1: none ignored
    )
    fields = out.split(b"\0") if out is not None else []
    if len(fields) < 4 * len(names):
        return {}
    rules: dict[str, IgnoreRule] = {}
    for index, name in enumerate(names):
        source, line, pattern = (os.fsdecode(value) for value in fields[4 * index:4 * index + 3])
        if source and not pattern.startswith("!"):
            rules[name] = IgnoreRule(work_tree / source, int(line), pattern)  # a relative source lies in the work tree
    return rules


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
