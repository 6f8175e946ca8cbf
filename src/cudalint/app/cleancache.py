"""`cudalint --clean-cache`: remove cudalint's caches, and nothing else.

The caches are the project's result cache (`--cache-dir`, `CUDALINT_CACHE_DIR`,
or `.cudalint_cache` in the current directory) and the user-level cache
(`$XDG_CACHE_HOME/cudalint`, default `~/.cache/cudalint`), where one exists.
A directory is removed only when it is a real directory (not a symbolic
link) that carries the cache's own tag: a regular file `CACHEDIR.TAG` whose
content is exactly the one cudalint writes. A directory without it (a
mistyped `--cache-dir $HOME`, someone else's cache) is left alone and named.
Removal never follows a symbolic link inside the cache (shutil.rmtree with
descriptors), so a planted link cannot lead it out of the tree.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.cache import CACHEDIR_TAG, DEFAULT_DIRECTORY

TAG_FILE = "CACHEDIR.TAG"


def user_cache() -> Path:
    home = os.environ.get("XDG_CACHE_HOME")
    base = Path(home) if home and Path(home).is_absolute() else Path.home() / ".cache"
    return base / "cudalint"


def candidates(cache_dir: Path | None, cwd: Path) -> list[tuple[Path, bool]]:
    """(directory, named by the user) for each cache this run would clean."""
    found: list[tuple[Path, bool]] = []
    if cache_dir is not None:
        found.append((cache_dir if cache_dir.is_absolute() else cwd / cache_dir, True))
    else:
        found.append((cwd / DEFAULT_DIRECTORY, False))
    try:
        found.append((user_cache(), False))
    except RuntimeError:  # no home directory
        pass
    unique: list[tuple[Path, bool]] = []
    for path, named in found:
        if all(os.path.abspath(path) != os.path.abspath(seen) for seen, _ in unique):
            unique.append((path, named))
    return unique


def is_tagged(directory: Path) -> bool:
    """A real directory holding cudalint's own CACHEDIR.TAG (a regular file)."""
    try:
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            return False
        fd = os.open(directory / TAG_FILE, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return os.read(fd, len(CACHEDIR_TAG) + 1) == CACHEDIR_TAG
    finally:
        os.close(fd)


@dataclass
class Cleaned:
    removed: list[Path] = field(default_factory=list)
    refused: list[tuple[Path, str]] = field(default_factory=list)  # named by the user, or not ours
    absent: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


def clean(cache_dir: Path | None, cwd: Path) -> Cleaned:
    cleaned = Cleaned()
    for directory, named in candidates(cache_dir, cwd):
        if not os.path.lexists(directory):
            cleaned.absent.append(directory)
            continue
        if os.path.islink(directory):
            cleaned.refused.append((directory, "is a symbolic link"))
            continue
        if not is_tagged(directory):
            cleaned.refused.append((directory, f"has no cudalint {TAG_FILE}, so it is not a cudalint cache"))
            continue
        errors: list[str] = []
        if sys.version_info >= (3, 12):
            shutil.rmtree(directory, onexc=lambda function, path, error: errors.append(f"{path}: {error}"))
        else:  # pragma: no cover - Python 3.10 and 3.11
            shutil.rmtree(directory, onerror=lambda function, path, info: errors.append(f"{path}: {info[1]}"))
        if errors and os.path.lexists(directory):
            cleaned.failed.append((directory, errors[0]))
        else:
            cleaned.removed.append(directory)
    return cleaned
