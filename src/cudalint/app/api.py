"""The library entry point: what tests, benchmarks and other tools call
instead of repeating the driver's set-up.

    from cudalint import check
    result = check(["./..."], select=("CL1",), base=Path("service"))
    for finding in result.findings: ...
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cudalint.catalog import select_rules
from cudalint.checks import all_rules
from cudalint.discover import discover
from cudalint.driver import Settings, analyze
from cudalint.findings import Result
from cudalint.knowledge import load_knowledge


def check(
    patterns: Sequence[str | Path] = ("./...",),
    *,
    select: Sequence[str] = ("CL",),
    ignore: Sequence[str] = (),
    preview: bool = False,
    knowledge_files: Sequence[Path] = (),
    base: Path | None = None,
    jobs: int = 1,
    cache_dir: Path | None = None,
) -> Result:
    """Analyse what the patterns name (Go-style, relative to `base`, default
    the current directory) with the selected rules and the shipped knowledge
    plus `knowledge_files`; no configuration file is read, no cache is used
    unless `cache_dir` is given. Raises ValueError for a pattern that matches
    no Go file."""
    base = (base or Path.cwd()).resolve()
    discovery = discover([str(pattern) for pattern in patterns], base)
    if discovery.unmatched:
        raise ValueError(f"no Go files match {', '.join(discovery.unmatched)}")
    enabled = select_rules(all_rules(), tuple(select), tuple(ignore), preview=preview)
    settings = Settings(base=base, enabled=enabled, jobs=jobs, cache_dir=cache_dir)
    result = analyze(discovery.files, settings, load_knowledge(tuple(knowledge_files)))
    result.notifications[:0] = discovery.notifications
    result.sort()
    return result
