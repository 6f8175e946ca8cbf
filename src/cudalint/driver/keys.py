"""Cache keys: what a package's result depends on, and the cache opened
under the salt of everything else (rules, configuration, knowledge).

A key is made bottom-up, once per package per run (DESIGN.md, *Run: keys,
phases and parallel work*): a digest of the package's own inputs (the bytes
of its Go files, each hashed once, of the C files beside them, its module's
path and go version) and the digests of the summaries (exported facts) its
imports lent it. An edit that leaves a dependency's summary unchanged
re-analyses that dependency only.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cudalint.cache import CacheRefused, ResultCache, add_contents, add_digests, fingerprint
from cudalint.cside import headers_signature, local_c_files, read_c
from cudalint.discover import printable
from cudalint.driver.settings import Settings
from cudalint.findings import Notification, NotificationKind
from cudalint.knowledge import Knowledge
from cudalint.module import Modules
from cudalint.source import display_path


def salt(settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...]) -> str:
    """Everything else a result depends on: rules, configuration, knowledge."""
    return repr((
        settings.base, sorted(settings.enabled), settings.prefilter, settings.per_file, knowledge.families, needles,
        headers_signature(settings.c_include),
    ))


def open_cache(settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...]) -> tuple[ResultCache | None, Notification | None]:
    """The run's cache, or None and the notification saying why not."""
    if settings.cache_dir is None:
        return None, None
    try:
        return ResultCache(settings.cache_dir, salt(settings, knowledge, needles)), None
    except CacheRefused as error:
        return None, Notification(
            NotificationKind.CACHE, printable(display_path(settings.cache_dir, settings.base)),
            f"cache directory not used: {error}; analysing without the cache",
        )


def own_digest(
    modules: Modules, directory: Path, files: list[tuple[Path, bytes | Notification]], headers: tuple = (),
) -> str:
    """A digest of a package's own inputs: the digests (SHA-256) of its Go
    files' bytes, or their read failures, the bytes of the C files the C
    side reads beside them, the headers of the absolute `-I` directories
    of its `#cgo CFLAGS` (`headers`: by name, size and date, as the CUDA
    headers are in every key), and what it takes from its module's go.mod
    (import paths; fixes use no newer Go)."""
    digest = hashlib.sha256()
    add_digests(digest, files)
    add_contents(digest, _c_files(directory) + _module_entry(modules, directory))
    if headers:
        digest.update(repr(headers).encode())
    return digest.hexdigest()


def summary_digest(facts: list) -> str | None:
    """The digest of a package's summary (the facts it exported), which
    keys its importers' results; None where it cannot be made (they are
    then not cached)."""
    return fingerprint(facts)


def result_key(cache: ResultCache, kind: str, own: str, export: bool, imported: list[tuple[Path, str]]) -> str:
    """The key of a package's result: its own inputs, what the job makes
    (`kind`: reported, or a summary only; whether facts are exported), and
    for each import it receives, the digest of its summary (or, where that
    is unknown, of its files)."""
    parts = [kind, own, "export" if export else "-"]
    for directory, digest in imported:
        parts.append(f"{os.fspath(directory)}={digest}")
    return cache.derived_key(parts)


def _module_entry(modules: Modules, directory: Path) -> list[tuple[Path, bytes]]:
    module = modules.of(directory)
    if module is None:
        return []
    return [(module.root / "go.mod", f"module {module.path}\ngo {module.go_version}".encode())]


def _c_files(directory: Path) -> list[tuple[Path, bytes]]:
    """The bytes of the C files the C side reads in the directory."""
    found = []
    for path in local_c_files(directory):
        data = read_c(path)
        found.append((path, data if data is not None else b"\0unreadable"))
    return found
