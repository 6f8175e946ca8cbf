"""The command line, as click parsed it, and its exit statuses: 0 no
findings, 1 findings, 2 usage or tool error (including a pattern that
matches no Go file, an unusable configuration, rules or baseline file, and
an internal error that left the result incomplete)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Options:
    """The command line, as click parsed it."""

    patterns: tuple[str, ...]
    fmt: str
    extra_outputs: tuple[tuple[str, Path], ...]
    output: Path | None
    sarif_category: str
    select: str | None
    preview: bool
    ignore: str | None
    excludes: tuple[str, ...]
    knowledge_files: tuple[Path, ...]
    config_file: Path | None
    isolated: bool
    all_modules: bool
    baseline_file: Path | None
    write_baseline: Path | None
    show_suppressed: bool
    show_source: bool
    show_paths: bool
    color_mode: str
    jobs: int | None
    quiet: bool
    list_rules: bool
    explain: str | None
    no_cache: bool
    cache_dir: Path | None
    strict: bool
    fail_on: str
    exit_zero: bool
    statistics: bool
    diff: bool
    fix: bool
    unsafe_fixes: bool
    new_from_rev: str | None
    new_from_merge_base: str | None
    new_from_patch: Path | None
    whole_files: bool
    check_wants: bool
    debug: bool
    dump_cfg: str | None
    show_fixes: bool
    add_ignore: str | None
    max_same_issues: int | None
    clean_cache: bool
    show_settings: bool
    server: bool = False
    stdin_filename: Path | None = None
