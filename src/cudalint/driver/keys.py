"""Cache keys: what a directory's result depends on, and the cache opened
under the salt of everything else (rules, configuration, knowledge)."""

from __future__ import annotations

from pathlib import Path

from cudalint.cache import CacheRefused, ResultCache
from cudalint.cside import headers_signature, local_c_files, read_c
from cudalint.discover import printable
from cudalint.driver.settings import Settings
from cudalint.findings import Notification, NotificationKind
from cudalint.knowledge import Knowledge
from cudalint.module import Modules
from cudalint.source import SourceFile, display_path, read_source


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


def read_all(paths: list[Path], settings: Settings) -> list[SourceFile | Notification]:
    return [read_source(path, display_path(path, settings.base), settings.overlay) for path in paths]


def result_key(cache: ResultCache, modules: Modules, paths: list[Path], reads: list[SourceFile | Notification]) -> str:
    """The key of a directory's result: the bytes of its Go files and of the
    packages it imports, of the C files beside them (the C side of cgo
    reads them), and its module's path and go version (fixes use no newer
    Go)."""
    entries = [(path, read.data if isinstance(read, SourceFile) else read) for path, read in zip(paths, reads)]
    return cache.key(entries + _c_files(paths[0].parent) + _module_entry(modules, paths[0].parent))


def _module_entry(modules: Modules, directory: Path) -> list[tuple[Path, bytes]]:
    """What a result takes from the module's go.mod: its path (import
    paths) and go version (which fixes are offered)."""
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
