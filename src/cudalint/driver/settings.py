"""What a run is asked to do: the settings every job of it shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cudalint.globs import PerFileIgnores


@dataclass(frozen=True)
class Settings:
    base: Path
    enabled: frozenset[str]
    jobs: int = 1
    debug: bool = False
    # Off only in benchmarks and crash checks that must run every stage on every file.
    prefilter: bool = True
    # Rules disabled for some files by the configuration's per-file-ignores.
    per_file: PerFileIgnores | None = None
    # Where results are cached (None: no cache).
    cache_dir: Path | None = None
    # The files to report on, when some files are read only for their
    # package's sake (None: report on every file read).
    reported: frozenset[Path] | None = None
    # Show progress on standard error (a terminal, not CI) after this many
    # seconds; None: never.
    progress_after: float | None = None
    # Directories of C headers besides the usual CUDA locations (configuration).
    c_include: tuple[Path, ...] = ()
    # Editors' unsaved buffers (resolved path -> bytes), read instead of the
    # files on disk (cudalint.source.read_source).
    overlay: Mapping[Path, bytes] | None = None

    def enabled_for(self, path: Path) -> frozenset[str]:
        return self.per_file.enabled_for(path, self.enabled) if self.per_file else self.enabled
