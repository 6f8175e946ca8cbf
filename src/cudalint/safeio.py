"""Reading the small input files a run is given (configuration, baseline,
API knowledge): regular files only, never more than a bound.

A FIFO named as `--config` would block the run forever and `/dev/zero` would
fill memory; a file that is not regular, or larger than the bound, is an
error the caller reports with its own exception type.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MiB = 1024 * 1024


class InputFileError(Exception):
    """The file cannot be used: the message says why, without the path."""


def read_regular(path: Path | str, limit: int) -> bytes:
    """The bytes of `path` (symbolic links followed), which must be a regular
    file of at most `limit` bytes. OSError for I/O errors, InputFileError
    for a file that is not regular or too large."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)  # O_NONBLOCK: opening a FIFO never waits for a writer
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise InputFileError("is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise InputFileError("not a regular file (a FIFO, a device, a socket...)")
        if status.st_size > limit:
            raise InputFileError(f"larger than the {_size(limit)} cudalint reads")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 * MiB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # it grew while being read
                raise InputFileError(f"larger than the {_size(limit)} cudalint reads")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _size(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit >= MiB else f"{limit // 1024} KiB"
