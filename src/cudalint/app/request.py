"""What a run is asked for, by the command line's options or by the
library's arguments: one record both build and the session reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Request:
    """What a run is asked for: the patterns (relative to the working
    directory; none means `./...`) and every option that changes what is
    analysed or reported. None for select, ignore and max_same_issues
    means "as the configuration says"."""

    patterns: tuple[str, ...] = ()
    select: tuple[str, ...] | None = None  # rule-ID prefixes; an item may list several: "CL1,CL301"
    ignore: tuple[str, ...] | None = None
    preview: bool = False
    excludes: tuple[str, ...] = ()  # globs relative to the working directory; replace the configuration's
    knowledge_files: tuple[Path, ...] = ()  # in addition to the configuration's
    config_file: Path | None = None
    isolated: bool = False
    all_modules: bool = False
    baseline_file: Path | None = None
    new_from_rev: str | None = None
    new_from_merge_base: str | None = None
    new_from_patch: Path | None = None
    whole_files: bool = False
    jobs: int | None = None  # None: one per CPU
    no_cache: bool = False
    cache_dir: Path | None = None  # None: with the analysed tree
    debug: bool = False
    quiet: bool = False  # no notes, no warnings
    progress_after: float | None = None
    max_same_issues: int | None = None
    # Editors' buffers (absolute path -> bytes): with it, each pattern is a
    # buffer's path, analysed as that file with the rest of its package
    # (`--stdin-filename`, the language server); unsaved text wins over disk.
    overlay: Mapping[Path, bytes] | None = None
