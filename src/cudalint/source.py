"""Reading Go source files, and turning byte offsets into user-facing positions.

Bad input is normal input for a linter run over whole repositories: every way a
file can fail to be Go source ends here as one Notification, never an exception.
"""

from __future__ import annotations

import bisect
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.findings import Notification, NotificationKind, Position, Span

_BOM = b"\xef\xbb\xbf"
# Larger files are generated data, not code to analyse: notified and skipped.
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass
class SourceFile:
    path: Path
    display: str
    data: bytes
    _line_starts: list[int] = field(default_factory=list, repr=False)
    _ascii: bool | None = field(default=None, repr=False)

    @property
    def line_starts(self) -> list[int]:
        if not self._line_starts:
            starts = [0]
            find = self.data.find
            i = find(b"\n")
            while i != -1:
                starts.append(i + 1)
                i = find(b"\n", i + 1)
            self._line_starts = starts
        return self._line_starts

    def line_text(self, line: int, limit: int = 400) -> str:
        """Line `line` (1-based) without its newline, cut at `limit` bytes
        (generated code has lines of megabytes; findings keep a copy)."""
        starts = self.line_starts
        if line < 1 or line > len(starts):
            return ""
        start = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.data)
        end = min(end, start + limit)
        return self.data[start:end].rstrip(b"\r").decode("utf-8", "replace")

    def position(self, row: int, byte_column: int) -> Position:
        """A tree-sitter point (0-based row, byte column) as a 1-based Position."""
        if self.ascii:
            return Position(row + 1, byte_column + 1, byte_column + 1)
        starts = self.line_starts
        line_start = starts[row] if row < len(starts) else len(self.data)
        prefix = self.data[line_start : line_start + byte_column]
        utf16 = len(prefix.decode("utf-8", "replace").encode("utf-16-le")) // 2
        return Position(row + 1, byte_column + 1, utf16 + 1)

    @property
    def ascii(self) -> bool:
        """Whether byte columns are also UTF-16 columns (the usual case)."""
        if self._ascii is None:
            self._ascii = self.data.isascii()
        return self._ascii

    def offset_position(self, offset: int) -> Position:
        row = bisect.bisect_right(self.line_starts, offset) - 1
        return self.position(row, offset - self.line_starts[row])

    def span(self, node) -> Span:
        return Span(self.position(*node.start_point), self.position(*node.end_point))

    @property
    def parse_bytes(self) -> bytes:
        """The bytes handed to the parser: a leading BOM (which Go ignores)
        becomes spaces so that every byte offset stays the same."""
        if self.data.startswith(_BOM):
            return b"   " + self.data[3:]
        return self.data


def display_path(path: Path, base: Path) -> str:
    """Paths in output are relative to `base` where possible, always with '/'."""
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        try:
            return Path(os.path.relpath(path, base)).as_posix() if path.is_absolute() else path.as_posix()
        except ValueError:
            return path.as_posix()


def read_source(path: Path, display: str, overlay: Mapping[Path, bytes] | None = None) -> SourceFile | Notification:
    """The file's bytes, checked to be Go source. `overlay` holds the text of
    buffers an editor has open (the language server, `--stdin-filename`):
    a path it names is read from it, unsaved text winning over the disk."""

    def problem(message: str, line: int | None = None, column: int | None = None) -> Notification:
        kind = NotificationKind.UNREADABLE if line is None else NotificationKind.NOT_GO_SOURCE
        return Notification(kind, display, message, line, column)

    def too_large(size: int) -> Notification:
        return Notification(
            NotificationKind.TOO_COMPLEX, display,
            f"is {size // (1024 * 1024)} MiB, larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB "
            f"cudalint analyses (generated code?); skipped",
        )

    if overlay is not None and path in overlay:
        data = overlay[path]
        if len(data) > MAX_FILE_BYTES:
            return too_large(len(data))
        return _checked(SourceFile(path, display, data))
    try:
        # O_NONBLOCK: a FIFO swapped in after discovery must not block the
        # run; the size is checked on the open file, and never more than the
        # bound is read, even from a file that grows meanwhile.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            status = os.fstat(fd)
            if stat.S_ISDIR(status.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(status.st_mode):
                return Notification(NotificationKind.NOT_GO_SOURCE, display, "not a regular file (a FIFO, a device, ...); skipped")
            if status.st_size > MAX_FILE_BYTES:
                return too_large(status.st_size)
            chunks = []
            total = 0
            while True:
                chunk = os.read(fd, MAX_FILE_BYTES + 1 - total)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_FILE_BYTES:
                    return too_large(total)
            data = b"".join(chunks)
        finally:
            os.close(fd)
    except IsADirectoryError:
        return Notification(NotificationKind.NOT_GO_SOURCE, display, "is a directory, not a Go source file; skipped")
    except FileNotFoundError:
        return problem("cannot read: the file disappeared during the run; skipped")
    except PermissionError:
        return problem("cannot read: permission denied; skipped")
    except OSError as error:
        return problem(f"cannot read: {error.strerror or error}; skipped")
    return _checked(SourceFile(path, display, data))


def _checked(source: SourceFile) -> SourceFile | Notification:
    """The source, or the notification that says it is not Go source."""
    data, display = source.data, source.display
    nul = data.find(b"\x00")
    if nul != -1:
        where = source.offset_position(nul)
        return Notification(
            NotificationKind.NOT_GO_SOURCE, display,
            "binary content (NUL byte): not Go source; skipped", where.line, where.column,
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = source.offset_position(error.start)
        return Notification(
            NotificationKind.NOT_GO_SOURCE, display,
            "invalid UTF-8: Go source must be UTF-8 encoded; skipped", where.line, where.column,
        )
    return source


def repository_root(start: Path) -> Path:
    """The nearest directory at or above `start` that holds `.git` (a
    directory, or the file of a worktree or submodule), else `start`: SARIF
    and GitHub annotations name files relative to it."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start
