"""Source rewrites (`--fix`): which files a fix may write, and how.

A fix names its file by the path the analysis displays, and that name may
come from anywhere (a cache entry is data someone else could have written).
So a file is written only where the name is one of the files this run
analysed, the file lies under the analysed root and is reached from it
without a symbolic link (a link could lead out of the tree, or to another
analysed file that gets the same edit), and its whole content is still the
bytes the analysis read.

The check and the write happen under an exclusive lock on the file (flock),
so that two runs on one tree never both apply an edit: the second finds
bytes it did not analyse. The new content replaces the file atomically and
keeps its mode, owner and group; a file whose mode has no owner write bit is
refused, even for root, which could write it anyway.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path

from cudalint.fixes import editing
from cudalint.findings import TextEdit

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# How long a run waits for another one's lock on a file before giving up on it.
LOCK_WAIT_SECONDS = 60.0


class Refused(Exception):
    """The file is not rewritten; the message says why, after its path
    (`a.go` + " changed since it was analysed")."""


def target(path: str, analysed: dict[str, Path], root: Path) -> Path:
    """The file a fix naming `path` may write: one of the run's analysed
    files (by displayed path), under `root` and reached from it without a
    symbolic link. Refused otherwise."""
    file = analysed.get(path)
    if file is None:
        raise Refused("is not one of the files this run analysed")
    absolute, top = Path(os.path.abspath(file)), Path(os.path.abspath(root))
    try:
        below = absolute.relative_to(top)
    except ValueError:
        raise Refused(f"is outside the analysed root {top}") from None
    real = Path(os.path.realpath(absolute))
    if real != Path(os.path.realpath(top)) / below:
        raise Refused(f"is reached through a symbolic link (it is {real}), which could lead out of the tree")
    return file


def rewrite(file: Path, edits: list[TextEdit]) -> bool:
    """Apply the edits to the file, under its lock; False where they change
    nothing. Refused where the file cannot be rewritten as it is, OSError
    for an I/O error."""
    fd = _locked(file)
    try:
        status = os.fstat(fd)
        _check_writable(status)
        data = _read_all(fd)
        new = editing.apply(data, edits)
        if new is None:
            raise Refused("changed since it was analysed")
        if new == data:
            return False
        _replace(file, new, status)
        return True
    finally:
        os.close(fd)  # the lock goes with it, after the rename


def _locked(file: Path) -> int:
    """A descriptor of the file, holding its exclusive lock. The file a
    waiting run locked may have been replaced meanwhile (by the run that
    held the lock): then the new one is locked instead."""
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fd = os.open(file, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
        except OSError:
            if os.path.islink(file):  # made a link since target() looked
                raise Refused("is a symbolic link") from None
            raise
        try:
            if not _lock(fd, deadline):
                raise Refused(f"stayed locked by another process for {LOCK_WAIT_SECONDS:.0f} s")
            opened, now = os.fstat(fd), os.stat(file, follow_symlinks=False)
        except BaseException:
            os.close(fd)
            raise
        if (opened.st_dev, opened.st_ino) == (now.st_dev, now.st_ino):
            return fd
        os.close(fd)


def _lock(fd: int, deadline: float) -> bool:
    if fcntl is None:  # pragma: no cover
        return True
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def _check_writable(status: os.stat_result) -> None:
    if not stat.S_ISREG(status.st_mode):
        raise Refused("is not a regular file")
    mode = stat.S_IMODE(status.st_mode)
    if not mode & stat.S_IWUSR:
        raise Refused(f"has mode {mode:04o}, with no owner write bit (make it writable to fix it)")
    if hasattr(os, "geteuid") and os.geteuid() != 0 and status.st_uid != os.geteuid():
        raise Refused(f"is owned by another user (uid {status.st_uid}), whom a rewrite would not keep")


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1024 * 1024):
        chunks.append(chunk)
    return b"".join(chunks)


def _replace(file: Path, data: bytes, status: os.stat_result) -> None:
    """Write a new file beside it with its mode, owner and group, and rename
    it over the file."""
    handle, temporary = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".cudalint", dir=file.parent)
    try:
        _keep_owner(handle, status)
        os.fchmod(handle, stat.S_IMODE(status.st_mode))
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view):]
        os.close(handle)
        handle = -1
        os.replace(temporary, file)
    except BaseException:
        if handle >= 0:
            os.close(handle)
        Path(temporary).unlink(missing_ok=True)
        raise


def _keep_owner(handle: int, status: os.stat_result) -> None:
    """The owner and group of the original (before the mode: a change of
    owner clears set-id bits). Refused where they cannot be kept."""
    if not hasattr(os, "fchown"):  # pragma: no cover - Windows
        return
    mine = os.fstat(handle)
    if (mine.st_uid, mine.st_gid) == (status.st_uid, status.st_gid):
        return
    try:
        os.fchown(handle, status.st_uid if os.geteuid() == 0 else -1, status.st_gid)
    except OSError:
        raise Refused(f"has group {status.st_gid}, which a rewrite by this user would not keep") from None
