"""The editor's open buffers and workspace folders, as the analysis needs
them: the overlay of unsaved text (which wins over the files on disk), the
open files of a package directory, and the folder a file belongs to (the
directory a command-line run would start from, and so whose configuration
applies)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from cudalint.app.server.jobs import Job


def uri_path(uri: str) -> Path | None:
    """The file a `file:` URI names, resolved; None for other schemes
    (untitled buffers, remote files)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = Path(unquote(parsed.path))
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None


@dataclass
class Buffer:
    uri: str
    path: Path
    version: int | None
    text: str


class Documents:
    """Open Go buffers by URI, and the workspace folders."""

    def __init__(self) -> None:
        self._buffers: dict[str, Buffer] = {}
        self._folders: dict[str, Path] = {}

    # -- buffers -------------------------------------------------------------

    def update(self, uri: str, version: int | None, text: str) -> Buffer | None:
        """The buffer's new text (opened or changed); None for a buffer that
        is no Go file on this machine."""
        path = uri_path(uri)
        if path is None or not path.name.endswith(".go"):
            return None
        buffer = self._buffers[uri] = Buffer(uri, path, version, text)
        return buffer

    def close(self, uri: str) -> Buffer | None:
        return self._buffers.pop(uri, None)

    def get(self, uri: str) -> Buffer | None:
        return self._buffers.get(uri)

    def buffers(self) -> list[Buffer]:
        return list(self._buffers.values())

    def in_directory(self, directory: Path) -> list[Buffer]:
        return sorted((b for b in self._buffers.values() if b.path.parent == directory), key=lambda b: b.path)

    def overlay(self) -> dict[Path, bytes]:
        """Every open buffer's text, by path: what the analysis reads
        instead of the disk."""
        return {buffer.path: buffer.text.encode("utf-8", "surrogatepass") for buffer in self._buffers.values()}

    # -- workspace folders ------------------------------------------------------

    def set_folders(self, uris: list[str]) -> None:
        self._folders = {uri: path for uri in uris if (path := uri_path(uri)) is not None}

    def add_folder(self, uri: str) -> None:
        path = uri_path(uri)
        if path is not None:
            self._folders[uri] = path

    def remove_folder(self, uri: str) -> None:
        self._folders.pop(uri, None)

    def folder_of(self, path: Path) -> Path:
        """The deepest workspace folder that holds `path`, else its own
        directory: where `cudalint` would be run from."""
        holding = [folder for folder in self._folders.values() if folder == path.parent or folder in path.parents]
        return max(holding, key=lambda folder: len(folder.parts)) if holding else path.parent

    # -- jobs -----------------------------------------------------------------

    def job(self, folder: Path, directory: Path) -> Job | None:
        """The analysis of the open buffers of one package directory (None
        when none is open any more)."""
        buffers = [buffer for buffer in self.in_directory(directory) if self.folder_of(buffer.path) == folder]
        if not buffers:
            return None
        return Job(
            cwd=folder, files=tuple(buffer.path for buffer in buffers), overlay=self.overlay(),
            versions={buffer.path: buffer.version for buffer in buffers},
        )
