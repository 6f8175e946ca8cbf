"""Replaying a warm run: the report of the last identical run, where nothing
it read has changed.

A warm run looks up every package's result in the cache, and yet pays the
interpreter's imports of every analysis, the listing of the tree, a status
of every file and the keys of every package: about 2.5 times `cudalint
--version` on moby. What decides its report is a function of what the run
looked at. So a run that was answered wholly by the cache is recorded: the
command line, the working directory and the environment (the key), every
path the process asked the file system about (a status, a listing, a link,
a file opened to read) with the answer it got, every `git` query with its
output, and the bytes it wrote to standard output and error with its exit
status. The next run with the same key asks the file system the same
questions; where every answer is the same, it writes the recorded report
and exits, before importing the analysis. One answer that differs (a file
edited, added or removed in a listed directory, another git index), and
the run is made as usual, and recorded again if it is warm.

Only runs whose every effect is their report are recorded or replayed: no
--fix, --diff, --output, FORMAT:FILE, baseline writing, standard input,
nor any option not known to be plain. Standard output and error must not
be terminals (the report would depend on the terminal's width and colours,
the progress line on time): CI, pre-commit hooks, editors and scripts;
`CUDALINT_NO_REPLAY=1` turns it off (the benchmarks time both ways). A
run that had worker processes analyse packages (what they read is not
the parent's to see), wrote a file outside the cache or ran a command
other than a git query is not recorded; what the process analysed itself
it read under the hooks, like what it took from the cache. What the cache itself holds is not an input: a key covers what
made it. Recorded answers live in the cache directory, `runs/`, the last
`_KEPT` invocations.
"""

from __future__ import annotations

import base64
import builtins
import functools
import hashlib
import io
import json
import os
import re
import stat
import sys
import time
from typing import Any

_FORMAT = 2
_KEPT = 32
_RUNS = "runs"
# Options that change nothing but the report; anything else makes a run
# neither recorded nor replayed.
_FLAGS = frozenset({
    "--preview", "--isolated", "--all-modules", "--show-suppressed", "--show-source", "--show-paths",
    "--statistics", "--quiet", "-q", "--strict", "--exit-zero", "--debug",
})
_VALUED = frozenset({
    "--format", "--sarif-category", "--select", "--ignore", "--exclude", "--knowledge", "--rules", "--config",
    "--baseline", "--color", "--jobs", "-j", "--cache-dir", "--fail-on", "--max-same-issues",
})
# Environment variables a shell changes between commands without meaning anything to a run.
_VOLATILE_ENVIRONMENT = frozenset({"_", "OLDPWD", "SHLVL"})
# File systems whose answers change by themselves and mean nothing to a
# report (a tree under /dev/shm is a tree like any other).
_NOT_INPUTS = ("/proc/", "/sys/")
# What the cache keeps in its directory: all else there (a module cache
# kept beside it in one CI cache, a tree analysed with --cache-dir .) is input.
_CACHE_OWN = re.compile(r"(?:[0-9a-f]{2}|runs|CACHEDIR\.TAG|\.gitignore|\.tmp-[^/]*)(?:/.*)?")
# A file changed this recently may change again within its time stamp's grain
# unseen (git's "racy" entries): such a run is not recorded.
_RACY_NS = 2_000_000_000
# The git queries a run asks about ignored files (`discover`), with the only
# flags it gives them: a record is data, and no record makes a run execute
# anything else.
_GIT_QUERIES = {
    "rev-parse": frozenset({"--show-toplevel", "--absolute-git-dir"}),
    "ls-files": frozenset({"-z", "--stage", "--full-name"}),
    "check-ignore": frozenset({"--verbose", "--non-matching", "--no-index", "-z", "--stdin"}),
}


def _git_query(command: Any) -> bool:
    """Whether a command is one of the git queries a run asks (`git`, then
    only --git-dir= and --work-tree=, then a query with its own flags)."""
    if not isinstance(command, list) or not command or not all(isinstance(arg, str) for arg in command):
        return False
    if command[0] != "git":
        return False
    rest = command[1:]
    while rest and rest[0].startswith(("--git-dir=", "--work-tree=")):
        rest = rest[1:]
    return bool(rest) and rest[0] in _GIT_QUERIES and set(rest[1:]) <= _GIT_QUERIES[rest[0]]


# The file system's own functions, as asked while a recording replaces them.
_STAT, _LSTAT, _SCANDIR, _LISTDIR, _READLINK = os.stat, os.lstat, os.scandir, os.listdir, os.readlink


def plain_options(args: list[str]) -> bool:
    """Whether the command line asks for a report only (see the module)."""
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            return "-" not in args[index:]
        if arg == "-" or arg == "":
            return False
        if not arg.startswith("-"):
            continue
        name, has_value, value = arg.partition("=")
        if name in _FLAGS and not has_value:
            continue
        if name.startswith("-j") and name[2:].isdigit():
            continue
        if name not in _VALUED:
            return False
        if not has_value:
            if index >= len(args):
                return False
            value = args[index]
            index += 1
        if name == "--format" and ":" in value:
            return False
    return True


def _cache_directory(args: list[str], cwd: str) -> str | None:
    """Where the run keeps its cache, as the command line and environment
    say (None: no cache)."""
    if os.environ.get("CUDALINT_NO_CACHE") or "--no-cache" in args:
        return None
    found = os.environ.get("CUDALINT_CACHE_DIR") or ".cudalint_cache"
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--cache-dir" and index + 1 < len(args):
            found = args[index + 1]
        elif arg.startswith("--cache-dir="):
            found = arg.partition("=")[2]
    return os.path.normpath(os.path.join(cwd, found))


@functools.lru_cache(maxsize=1)
def _tool_stamp() -> tuple:
    """What the running tool is made of: the interpreter, the digest of
    cudalint's own files (its knowledge among them, as the cache keys
    them: by content, not by dates) and the parser's by their status.
    Made once per process (a run that is not replayed asks twice: to look
    for its record, then to start one)."""
    digest = hashlib.sha256()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for directory, subdirectories, names in os.walk(package):
        subdirectories.sort()
        for name in sorted(names):
            if name.endswith((".py", ".toml")):
                with open(os.path.join(directory, name), "rb") as file:
                    digest.update(name.encode() + b"\0" + file.read())
    stamp: list = [sys.version, sys.executable, _FORMAT, digest.hexdigest()]
    import importlib.util

    for module in ("tree_sitter", "tree_sitter_go", "click", "networkx"):
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        if origin:
            status = os.stat(origin)
            stamp.append((module, status.st_size, status.st_mtime_ns))
    return tuple(stamp)


def _own_and_private(path: str, directory: bool) -> bool:
    """As the cache asks of itself: a real directory or file (no link),
    owned by this user, that no one else may write."""
    try:
        found = _LSTAT(path)
    except OSError:
        return False
    kind = stat.S_ISDIR(found.st_mode) if directory else stat.S_ISREG(found.st_mode)
    owner = not hasattr(os, "geteuid") or found.st_uid == os.geteuid()
    return kind and owner and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _key(args: list[str], cwd: str) -> str:
    """The run's identity: its command line, directory, environment, who
    runs it (what a user may read is not in a file's status) and the tool."""
    environment = sorted((name, value) for name, value in os.environ.items() if name not in _VOLATILE_ENVIRONMENT)
    who = [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())] if hasattr(os, "getuid") else []
    return hashlib.sha256(json.dumps([args, cwd, environment, who, _tool_stamp()]).encode("utf-8", "surrogateescape")).hexdigest()


def _terminal() -> bool:
    try:
        return sys.stdout.isatty() or sys.stderr.isatty()
    except (AttributeError, ValueError, OSError):
        return True


def _where(args: list[str]) -> tuple[str, str] | None:
    """The record's path and key for this command line, or None where the
    run is not one to record or replay."""
    if not plain_options(args) or _terminal() or os.environ.get("CUDALINT_NO_REPLAY"):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    cache = _cache_directory(args, cwd)
    if cache is None:
        return None
    try:
        key = _key(args, cwd)
    except (OSError, ValueError):
        return None  # cudalint's own files unreadable: the run is made, and says why if it must
    return os.path.join(cache, _RUNS, key), cache


# -- answers of the file system, and of git ------------------------------------


def _status(path: str, follow: bool) -> Any:
    """A status as a record compares it: a directory by identity (its
    entries are compared where it was listed), anything else also by size,
    modification and change times; an error by its kind."""
    try:
        found = _STAT(path) if follow else _LSTAT(path)
    except OSError as error:
        return type(error).__name__
    if stat.S_ISDIR(found.st_mode):
        return [found.st_mode, found.st_ino, found.st_dev]
    return [found.st_mode, found.st_ino, found.st_dev, found.st_size, found.st_mtime_ns, found.st_ctime_ns]


def _kinds(entries, path: str, cache: str) -> list:
    """A listing as a record compares it: each entry's name and kind; the
    cache directory is no input of the run that makes it."""
    return sorted(
        [entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink()]
        for entry in entries if os.path.join(path, entry.name, "") != cache
    )


def _entries(path: str, cache: str) -> Any:
    try:
        with _SCANDIR(path) as listing:
            return _kinds(listing, path, cache)
    except OSError as error:
        return type(error).__name__


def _visible(names, path: str, cache: str) -> list:
    return sorted(name for name in names if os.path.join(path, name, "") != cache)


def _names(path: str, cache: str) -> Any:
    try:
        return _visible(_LISTDIR(path), path, cache)
    except OSError as error:
        return type(error).__name__


def _link(path: str) -> Any:
    try:
        return _READLINK(path)
    except OSError as error:
        return type(error).__name__


def _git_answer(query: list) -> Any:
    import subprocess

    args, cwd, stdin, removed = query
    if not _git_query(args):
        return "not a query a run asks"
    environment = {name: value for name, value in os.environ.items() if name not in removed}
    try:
        done = subprocess.run(
            args, cwd=cwd, input=base64.b64decode(stdin) if stdin is not None else None,
            capture_output=True, timeout=60, env=environment,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return type(error).__name__
    return [done.returncode, hashlib.sha256(done.stdout).hexdigest()]


def _ask(kind: str, subject: Any, cache: str) -> Any:
    if kind == "g":
        return _git_answer(subject)
    if kind in "DL":
        return (_entries if kind == "D" else _names)(subject, cache)
    return _link(subject) if kind == "R" else _status(subject, kind == "s")


def _unchanged(questions: list, cache: str) -> bool:
    return all(_ask(kind, subject, cache) == answer for kind, subject, answer in questions)


class Replay:
    """A recorded run whose every answer is still the same: its report and
    status. A record not of the shape a run writes raises ValueError here,
    before anything is written: it is a miss, never a failure."""

    def __init__(self, record: dict) -> None:
        self.status = record["status"]
        if self.status not in (0, 1):
            raise ValueError("not a status a record keeps")
        self._writes: list[tuple[str, str, str | bytes]] = []
        for stream, kind, data in record["written"]:
            if stream not in ("o", "e") or kind not in ("t", "b", "f") or not isinstance(data, str):
                raise ValueError("not a write a run makes")
            self._writes.append((stream, kind, base64.b64decode(data, validate=True) if kind == "b" else data))

    def write(self) -> None:
        """The report, as the recorded run wrote it: the same writes and
        flushes to the same streams (and their buffers), in the same order."""
        for stream, kind, data in self._writes:
            target = sys.stdout if stream == "o" else sys.stderr
            if kind == "t":
                target.write(data)
            elif kind == "b":
                target.buffer.write(data)
            else:
                target.flush()
        sys.stdout.flush()
        sys.stderr.flush()


def recorded(args: list[str]) -> Replay | None:
    """The recorded run to replay for this command line; None where the
    run must be made (no record, or some answer changed)."""
    where = _where(args)
    if where is None:
        return None
    if not all(_own_and_private(path, True) for path in (where[1], os.path.dirname(where[0]))):
        return None
    try:
        descriptor = os.open(where[0], os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(descriptor, "rb") as file:
            if not _own_and_private(where[0], False):
                return None
            record = json.loads(file.read())
        if not isinstance(record, dict) or record.get("format") != _FORMAT or not _unchanged(record["questions"], os.path.join(where[1], "")):
            return None
        return Replay(record)
    except (OSError, ValueError, KeyError, TypeError):
        return None


# -- recording -----------------------------------------------------------------


class _Tap:
    """A stream that notes what is written through it and when it is
    flushed (text, and bytes written to its buffer), in one list with the
    other stream's, in order: a log holding both (`>log 2>&1`) gets them in
    the order the run gave them. A write that fails (a reader that went
    away) leaves a report that is not the run's: the recording is spoilt."""

    def __init__(self, stream: Any, written: list, name: str, spoil, binary: bool = False) -> None:
        self._stream = stream
        self._written = written
        self._name = name
        self._spoil = spoil
        self._binary = binary

    def write(self, data):
        try:
            count = self._stream.write(data)  # first: click probes a stream by writing b"" to it
        except (TypeError, ValueError):
            raise  # the wrong kind of data for this stream: nothing was written
        except BaseException:
            self._spoil("a write of its report failed")
            raise
        if data:
            self._written.append([self._name, "b", base64.b64encode(bytes(data)).decode()] if self._binary else [self._name, "t", data])
        return count

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._stream.flush()
        except BaseException:
            self._spoil("a write of its report failed")
            raise
        self._written.append([self._name, "f", ""])

    @property
    def buffer(self):
        buffer = getattr(self._stream, "buffer", None)
        return None if buffer is None else _Tap(buffer, self._written, self._name, self._spoil, binary=True)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class _Entry:
    """A directory entry whose questions are noted: its status, and
    whether a link leads to a directory or a file (what the listing
    itself does not say)."""

    def __init__(self, entry: os.DirEntry, note) -> None:
        self._entry = entry
        self._note = note
        self.name = entry.name
        self.path = entry.path

    def __fspath__(self) -> str:
        return self._entry.path

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        if follow_symlinks and self._entry.is_symlink():
            self._note("s", self._entry.path)
        return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        if follow_symlinks and self._entry.is_symlink():
            self._note("s", self._entry.path)
        return self._entry.is_file(follow_symlinks=follow_symlinks)

    def is_symlink(self) -> bool:
        return self._entry.is_symlink()

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        self._note("s" if follow_symlinks else "l", self._entry.path)
        return self._entry.stat(follow_symlinks=follow_symlinks)

    def inode(self) -> int:
        return self._entry.inode()


class _Listing:
    """os.scandir's iterator, read whole so that its entries can be noted."""

    def __init__(self, entries: list) -> None:
        self._entries = iter(entries)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._entries)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._entries = iter(())


class Recording:
    """The file system questions and git queries of one run, and its
    report, noted while it runs; `save` keeps them where `answer` looks."""

    def __init__(self, path: str, cache: str) -> None:
        self.path = path
        self.cache = os.path.join(cache, "")
        self.started = time.time_ns()
        self.questions: dict[tuple, Any] = {}
        self.written: list = []
        self.spoiled: str | None = None
        self._saved: dict[str, Any] = {}

    # The hooks: each asks the real function, notes the question and its answer.

    def _input(self, path: Any, dir_fd: int | None = None) -> str | None:
        """The absolute name of a path asked about, where it is an input:
        not in the cache, and not an open file's descriptor (its path was
        noted when it was opened). A path relative to a directory's
        descriptor (the cache's own way) is named through /proc."""
        if isinstance(path, int):
            return None
        try:
            name = os.fsdecode(os.fspath(path))
            if dir_fd is not None:
                name = os.path.join(_READLINK(f"/proc/self/fd/{dir_fd}"), name)
            name = os.path.abspath(name)
        except (TypeError, ValueError, OSError):
            self.spoil("a path it could not name")
            return None
        if name + os.sep == self.cache or name.startswith(_NOT_INPUTS):
            return None
        if name.startswith(self.cache) and _CACHE_OWN.fullmatch(name[len(self.cache):]):
            return None
        return name

    def _note(self, kind: str, path: Any, ask, dir_fd: int | None = None) -> None:
        name = self._input(path, dir_fd)
        if name is not None and (kind, name) not in self.questions:
            self.questions[(kind, name)] = ask(name)

    def install(self) -> None:
        import subprocess

        real = self._saved
        real.update(stat=_STAT, lstat=_LSTAT, scandir=_SCANDIR, listdir=_LISTDIR, readlink=_READLINK,
                    open=builtins.open, io_open=io.open, os_open=os.open, run=subprocess.run, fork=os.fork,
                    stdout=sys.stdout, stderr=sys.stderr)

        def stat_(path, *args, **kwargs):
            follow = kwargs.get("follow_symlinks", True)
            self._note("s" if follow else "l", path, lambda p: _status(p, follow), kwargs.get("dir_fd"))
            return real["stat"](path, *args, **kwargs)

        def lstat_(path, *args, **kwargs):
            self._note("l", path, lambda p: _status(p, False), kwargs.get("dir_fd"))
            return real["lstat"](path, *args, **kwargs)

        def status_of(kind: str, path: str) -> None:
            self._note(kind, path, lambda p: _status(p, kind == "s"))

        def scandir_(path="."):
            if self._input(path) is None:
                return real["scandir"](path)  # the cache's own, or a descriptor's
            try:
                with real["scandir"](path) as listing:
                    received = list(listing)
            except OSError as error:
                unlisted("D", path, error)
                raise
            # The record holds what the run saw, not a second listing that
            # a file made meanwhile could be in.
            self._note("D", path, lambda p: _kinds(received, p, self.cache))
            return _Listing([_Entry(entry, status_of) for entry in received])

        def listdir_(path="."):
            try:
                names = real["listdir"](path)
            except OSError as error:
                unlisted("L", path, error)
                raise
            self._note("L", path, lambda p: _visible(names, p, self.cache))
            return names

        def unlisted(kind: str, path, error: OSError) -> None:
            refused(error)
            failure = type(error).__name__
            self._note(kind, path, lambda p: failure)

        def refused(error: OSError) -> None:
            """What the user may not read depends on more than the key
            says (capabilities, ACLs): such a run is not recorded."""
            if isinstance(error, PermissionError):
                self.spoil("it was refused a file")

        def readlink_(path, *args, **kwargs):
            self._note("R", path, _link)
            return real["readlink"](path, *args, **kwargs)

        def opened(path, flags_write: bool, dir_fd: int | None = None) -> None:
            if flags_write:
                if path != os.devnull and self._input(path, dir_fd) is not None:
                    self.spoil(f"it wrote {os.fsdecode(os.fspath(path))}")
                return
            self._note("s", path, lambda p: _status(p, True), dir_fd)

        def opening(real_open):
            """The hook of `builtins.open` and of `io.open` (one function,
            reached by both names)."""

            def open_(file, mode="r", *args, **kwargs):
                opened(file, any(flag in mode for flag in "wax+"))
                try:
                    return real_open(file, mode, *args, **kwargs)
                except OSError as error:
                    refused(error)
                    raise

            return open_

        def os_open_(path, flags, *args, **kwargs):
            opened(path, bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC)), kwargs.get("dir_fd"))
            try:
                return real["os_open"](path, flags, *args, **kwargs)
            except OSError as error:
                refused(error)
                raise

        def run_(args, *rest, **kwargs):
            done = real["run"](args, *rest, **kwargs)
            self._note_git(args, kwargs, done)
            return done

        def fork_():
            self.spoil("it started a process")
            return real["fork"]()

        os.stat, os.lstat, os.scandir, os.listdir, os.readlink = stat_, lstat_, scandir_, listdir_, readlink_
        builtins.open, io.open = opening(real["open"]), opening(real["io_open"])
        os.open, subprocess.run, os.fork = os_open_, run_, fork_
        sys.stdout = _Tap(sys.stdout, self.written, "o", self.spoil)
        sys.stderr = _Tap(sys.stderr, self.written, "e", self.spoil)

    def _note_git(self, args: Any, kwargs: dict, done: Any) -> None:
        """A git query whose answer the next run can ask again; any other command spoils the record."""
        command = [os.fsdecode(arg) for arg in args] if isinstance(args, (list, tuple)) else None
        if not _git_query(command):
            self.spoil("it ran a command")
            return
        environment = kwargs.get("env")
        removed = sorted(set(os.environ) - set(environment)) if environment is not None else []
        if environment is not None and any(os.environ.get(name) != value for name, value in environment.items()):
            self.spoil("it ran git in another environment")
            return
        stdin = kwargs.get("input")
        cwd = os.fspath(kwargs["cwd"]) if kwargs.get("cwd") is not None else os.getcwd()
        query = [command, os.path.abspath(cwd), base64.b64encode(stdin).decode() if stdin is not None else None, removed]
        self.questions[("g", json.dumps(query))] = [done.returncode, hashlib.sha256(done.stdout or b"").hexdigest()]

    def uninstall(self) -> None:
        real = self._saved
        if not real:
            return
        import subprocess

        os.stat, os.lstat, os.scandir, os.listdir, os.readlink = (
            real["stat"], real["lstat"], real["scandir"], real["listdir"], real["readlink"])
        builtins.open, io.open, os.open, subprocess.run, os.fork = (
            real["open"], real["io_open"], real["os_open"], real["run"], real["fork"])
        sys.stdout, sys.stderr = real["stdout"], real["stderr"]
        self._saved = {}

    def spoil(self, reason: str) -> None:
        """This run is not one to replay (the first reason is kept)."""
        if self.spoiled is None:
            self.spoiled = reason

    def save(self, status: int) -> None:
        """Keep the record, unless the run was spoiled or an input changed
        too recently to be told apart from a later change."""
        self.uninstall()
        if self.spoiled is not None or status not in (0, 1):
            return
        questions = []
        for (kind, subject), answer in sorted(self.questions.items()):
            if kind in "sl" and isinstance(answer, list) and len(answer) > 3 and answer[4] >= self.started - _RACY_NS:
                return
            questions.append([kind, json.loads(subject) if kind == "g" else subject, answer])
        record = {"format": _FORMAT, "status": status, "questions": questions, "written": self.written}
        directory = os.path.dirname(self.path)
        if not _own_and_private(os.path.dirname(directory), True):
            return  # the cache refused its directory: neither does a record use it
        try:
            os.makedirs(directory, mode=0o755, exist_ok=True)
            if not _own_and_private(directory, True):
                return
            temporary = f"{self.path}.{os.getpid()}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            with os.fdopen(os.open(temporary, flags, 0o644), "w", encoding="utf-8", errors="surrogateescape") as file:
                json.dump(record, file, separators=(",", ":"))
            os.replace(temporary, self.path)
            _forget_oldest(directory)
        except OSError:
            pass


def _forget_oldest(directory: str) -> None:
    records = sorted(
        (entry.stat().st_mtime_ns, entry.path) for entry in os.scandir(directory) if not entry.name.endswith(".tmp")
    )
    for _, path in records[:-_KEPT]:
        try:
            os.unlink(path)
        except OSError:
            pass


_ACTIVE: list[Recording] = []


def start(args: list[str]) -> Recording | None:
    """Begin noting a run that could be replayed later (None: not such a run)."""
    where = _where(args)
    if where is None:
        return None
    recording = Recording(*where)
    recording.install()
    _ACTIVE.append(recording)
    return recording


def not_replayable(reason: str) -> None:
    """What the run did cannot be replayed (worker processes analysed
    packages): the running recording, if any, is not kept."""
    for recording in _ACTIVE:
        recording.spoil(reason)


def finish(recording: Recording | None, status: int) -> None:
    if recording is None:
        return
    _ACTIVE.remove(recording)
    recording.save(status)
