"""The library entry point: what tests, benchmarks and other tools call
instead of repeating the command line's set-up.

    from cudalint import check
    result = check(["./..."], select=("CL1",), base=Path("service"))
    for finding in result.findings: ...

It is the command line's run (`cudalint.app.session`): the same
configuration discovery from `base` (the nearest `.cudalint.toml` or
`pyproject.toml` with `[tool.cudalint]`, and the nested ones that own some
of the files), the same rules, knowledge, exclusions and per-file ignores,
the same baseline and `--new-from-rev` gate; what it returns is what
`cudalint --format json` reports (directives naming a retired rule stay
among the suppressed findings).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cudalint.app.request import Request
from cudalint.app.session import Session
from cudalint.findings import Result


def check(
    patterns: Sequence[str | Path] = ("./...",),
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    preview: bool = False,
    knowledge_files: Sequence[Path] = (),
    base: Path | None = None,
    jobs: int = 1,
    cache_dir: Path | None = None,
    config: Path | None = None,
    isolated: bool = False,
    exclude: Sequence[str] = (),
    baseline: Path | None = None,
    new_from_rev: str | None = None,
) -> Result:
    """Analyse what the patterns name (Go-style, relative to `base`, default
    the current directory) as `cudalint` run in `base` would: `select`,
    `ignore` and `exclude` replace the configuration's lists (None and ()
    keep them), `knowledge_files` add to its knowledge, `config` names the
    configuration file and `isolated` reads none, `baseline` and
    `new_from_rev` leave out what `--baseline` and `--new-from-rev` leave
    out (their paths, like the patterns, relative to `base`). No cache is used unless `cache_dir` is given. Raises ValueError
    (cudalint.app.errors.RunError) where the command line exits 2 before
    its report: a pattern that matches no Go file, an unusable
    configuration, knowledge file, baseline or revision, a prefix that
    matches no rule."""
    base = (base or Path.cwd()).resolve()
    request = Request(
        patterns=tuple(str(pattern) for pattern in patterns),
        select=tuple(select) if select is not None else None,
        ignore=tuple(ignore) if ignore is not None else None,
        preview=preview, excludes=tuple(exclude), knowledge_files=tuple(knowledge_files),
        config_file=_under(base, config), isolated=isolated, baseline_file=_under(base, baseline), new_from_rev=new_from_rev,
        jobs=jobs, no_cache=cache_dir is None, cache_dir=cache_dir,
    )
    return Session(request, base).check()


def _under(base: Path, path: Path | None) -> Path | None:
    return None if path is None else base / path
