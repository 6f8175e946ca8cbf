"""What the plan knows of each Go file, kept between runs under the file's
status, so that a warm run reads no file it analysed before.

The plan needs of a file only its digest (the cache keys are made of it),
its imports and the prefilter's two verdicts; a package's job needs its
bytes only if the package is not in the cache. Like git's index, the file
index keeps those answers under the file's status (size, modification and
change times, inode): a file whose status is unchanged is not read again.
A file modified in the two seconds before the run started is never kept
(a second write in the same clock tick would leave its status unchanged),
nor one read from an editor's buffer, nor one that could not be read: those
are read every run. The index is an entry of the result cache, under its
salt (rules, configuration, knowledge, cudalint's code), and trusted as
little: a damaged entry is an empty index.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cudalint import prefilter
from cudalint.cache import ResultCache
from cudalint.findings import Notification
from cudalint.module import imports
from cudalint.source import SourceFile, display_path, read_source

# A file modified this close before the run may be modified again within
# the same clock tick of the file system: its status cannot vouch for it.
_RACY_NANOSECONDS = 2_000_000_000


@dataclass(frozen=True)
class FileFacts:
    """What the plan reads off a file's bytes."""

    digest: bytes  # SHA-256 of the bytes
    size: int
    imports: tuple[str, ...]
    matches: bool  # the prefilter's verdict for a package of the run
    fact_matches: bool  # its verdict for a dependency outside the run
    feeds: bool  # its verdict for a dependency of the module: its summary can matter
    # The absolute `-I` directories of its `#cgo CFLAGS`, whose headers its
    # package's cache key covers as it covers the usual CUDA ones.
    include_dirs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Needles:
    """The prefilter's three needle sets: what a package of the run must
    hold to be analysed, what a package of the module must hold for its
    importers to need its summary (not the needles of rules that look only
    at the package's own code: a finalizer, a conversion), and what a
    dependency outside the module must hold."""

    run: tuple[bytes, ...]
    importers: tuple[bytes, ...]
    outside: tuple[bytes, ...]


# What a function that ends the process calls (a logger's `Fatal` calling
# `os.Exit(1)`): a package of the module holding one tells its importers
# where their paths end, GPU code or not.
_ENDS_PROCESS = (b"os.Exit(", b"Goexit(", b".Fatal")


# A `#cgo CFLAGS` directive of a Go file's preamble (`//` or `/* */`).
_CFLAGS = re.compile(rb"^\s*(?://)?\s*#cgo\b[^:\n]*CFLAGS:(.*)$", re.M)


def absolute_include_dirs(sources: Iterable[bytes]) -> tuple[Path, ...]:
    """The absolute `-I` directories of these Go files' `#cgo CFLAGS` (in
    a `//` or a `/* */` preamble): where their `<...>` headers are read,
    as system headers are."""
    found: list[Path] = []
    for data in sources:
        if b"-I/" not in data:
            continue
        for flags in _CFLAGS.findall(data):
            found += [Path(flag[2:].decode("utf-8", "replace")) for flag in flags.split() if flag.startswith(b"-I/")]
    return tuple(dict.fromkeys(found))


def facts_of(data: bytes, needles: Needles, test: bool = False) -> FileFacts:
    imported = tuple(imports(data))
    matches = prefilter.file_matches(data, needles.run, imported)
    return FileFacts(
        hashlib.sha256(data).digest(), len(data), imported, matches, prefilter.file_matches(data, needles.outside, imported),
        (matches and prefilter.file_matches(data, needles.importers, imported))  # (its needles are some of the run's)
        or (not test and any(ending in data for ending in _ENDS_PROCESS)),
        tuple(str(directory) for directory in absolute_include_dirs((data,))),
    )


class FileIndex:
    """The run's view of its Go files: each read at most once, and not at
    all where the kept index vouches for it. `reads` receives the bytes of
    every file read (the jobs analyse those), and the notification of every
    file that could not be."""

    def __init__(
        self, base: Path, needles: Needles,
        reads: dict[Path, SourceFile | Notification], cache: ResultCache | None = None,
        overlay: Mapping[Path, bytes] | None = None,
    ) -> None:
        self.base = base
        self.needles = needles
        self.reads = reads
        self.overlay = overlay
        self._cache = cache
        self._started = time.time_ns()
        self._kept: dict[str, list] = _load(cache) if cache is not None else {}
        self._changed = False
        self.known: dict[Path, FileFacts] = {}

    def vouches(self) -> bool:
        """Whether an earlier run left an index: this run may read little."""
        return bool(self._kept)

    def facts(self, path: Path) -> FileFacts | None:
        """The file's facts; None where it cannot be read (its notification
        is in `reads`)."""
        found = self.known.get(path)
        if found is not None:
            return found
        status = self._status(path)
        entry = self._kept.get(os.fspath(path)) if status is not None else None
        if entry is not None and entry[0] == status:
            found = FileFacts(bytes.fromhex(entry[1]), entry[2], tuple(entry[3]), entry[4], entry[5], entry[6], tuple(entry[7]))
        else:
            read = self.reads.get(path)
            if read is None:
                read = self.reads[path] = read_source(path, display_path(path, self.base), self.overlay)
            if not isinstance(read, SourceFile):
                return None
            found = facts_of(read.data, self.needles, path.name.endswith("_test.go"))
            if status is not None and self._cache is not None:
                self._kept[os.fspath(path)] = [
                    status, found.digest.hex(), found.size, list(found.imports), found.matches, found.fact_matches,
                    found.feeds, list(found.include_dirs),
                ]
                self._changed = True
        self.known[path] = found
        return found

    def _status(self, path: Path) -> list[int] | None:
        """The status the index keeps a file under; None for a file it must
        not keep (an editor's buffer, not a regular file, just modified)."""
        if self._cache is None or (self.overlay is not None and path in self.overlay):
            return None
        try:
            status = os.stat(path)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(status.st_mode) or status.st_mtime_ns > self._started - _RACY_NANOSECONDS:
            return None
        return [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]

    def save(self) -> None:
        """Keep the index for the next run, if anything changed."""
        if self._cache is None:
            return
        if not self._changed:
            return
        kept = self._kept
        if len(kept) > 4 * len(self.known) + _SPARE:
            # Runs on parts of a tree keep each other's files; files long
            # gone are dropped once they outnumber the run's.
            seen = {os.fspath(path) for path in self.known}
            kept = {name: entry for name, entry in kept.items() if name in seen}
        self._cache.put_blob(_KEY, json.dumps(kept, separators=(",", ":")).encode())


_KEY = "file-index"
_SPARE = 10_000
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _load(cache: ResultCache) -> dict[str, list]:
    data = cache.get_blob(_KEY)
    if data is None:
        return {}
    try:
        kept = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(kept, dict):
        return {}
    return {name: entry for name, entry in kept.items() if _well_formed(entry)}


def _well_formed(entry: object) -> bool:
    return (
        isinstance(entry, list) and len(entry) == 8
        and isinstance(entry[0], list) and len(entry[0]) == 4 and all(type(n) is int for n in entry[0])
        and isinstance(entry[1], str) and _DIGEST.fullmatch(entry[1]) is not None
        and type(entry[2]) is int and isinstance(entry[3], list) and all(isinstance(i, str) for i in entry[3])
        and type(entry[4]) is bool and type(entry[5]) is bool and type(entry[6]) is bool
        and isinstance(entry[7], list) and all(isinstance(i, str) for i in entry[7])
    )
