"""The runs of their own the command line offers beside a check (as ruff's
commands): `--list-rules`, `--write-baseline`, `--diff`, `--check-wants`,
`--clean-cache`, `--show-settings` and `--add-ignore`. Each says what it
did and exits with its own status; the work itself is done by the module
named after it (`baseline`, `fixing`, `wants`, `cleancache`,
`showsettings`, `addignore`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

from cudalint import __version__
from cudalint.app import addignore, cleancache, fixing, pipestatus, showsettings
from cudalint.app.baseline import Baseline, BaselineError
from cudalint.app.baseline import render as render_baseline
from cudalint.app.config import Config, ConfigError
from cudalint.app.errors import RunError
from cudalint.app.options import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, Options
from cudalint.app.reporting import write_atomically
from cudalint.app.session import Session, rule_prefixes
from cudalint.app.wants import compare, wanted
from cudalint.checks import all_rules
from cudalint.findings import Result
from cudalint.reporters.text import safe_line
from cudalint.source import display_path


def rule_table() -> str:
    """The rule table; a preview rule's summary starts with `[preview since
    X]` (it runs only with --preview or when selected by its full ID)."""
    rows = [(r.id, r.name, r.level.value, f"[preview since {r.since}] {r.summary}" if r.preview else r.summary) for r in all_rules()]
    widths = [max(len(row[i]) for row in rows + [("ID", "NAME", "LEVEL", "")]) for i in range(3)]
    lines = [f"{'ID':<{widths[0]}}  {'NAME':<{widths[1]}}  {'LEVEL':<{widths[2]}}  SUMMARY"]
    lines += [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}" for a, b, c, d in rows]
    return "\n".join(lines)


def write_baseline(options: Options, session: Session, result: Result) -> NoReturn:
    """--write-baseline: record the findings; an existing baseline's entries
    this run could not have reproduced (about files it did not analyse, or
    rules that did not run on them) are kept, so a run over some files or
    rules never shrinks it."""
    target, cwd, ran = options.write_baseline, session.cwd, session.covered(result)
    kept: list[dict] = []
    if target.is_file():
        try:
            kept = Baseline.load(target, str(target)).entries_outside(ran, cwd)
        except BaselineError:
            kept = []  # not a baseline: replaced whole
    try:
        write_atomically(target, render_baseline(result.findings, target, cwd, __version__, kept))
    except OSError as error:
        raise RunError(f"cannot write {target}: {error.strerror or error}") from None
    if not options.quiet:
        for note in result.notifications:
            click.echo(safe_line(note.render()), err=True)
        count = len(result.findings)
        click.echo(f"cudalint: wrote {count} finding{'s' if count != 1 else ''} to the baseline {target}", err=True)
    sys.exit(EXIT_ERROR if result.internal_errors else EXIT_CLEAN)


def show_diff(options: Options, session: Session, result: Result) -> NoReturn:
    """--diff: the unified diff of the fixes `--fix` would write, for the
    findings the run reports (not baselined ones, nor ones outside the
    --new-from change); exit 1 if there is one, 0 if not."""
    shown = fixing.diff(session, result, options.unsafe_fixes)
    texts = shown.texts
    # Like the findings: 1 if there is a fix to make, unless --exit-zero.
    status = EXIT_FINDINGS if texts and not options.exit_zero else EXIT_CLEAN
    pipestatus.announce(EXIT_ERROR if result.internal_errors else status)
    click.echo("".join(texts), nl=False)
    if not options.quiet:
        click.echo(f"cudalint: {shown.fixes} fix{'es' if shown.fixes != 1 else ''} in {len(texts)} file{'s' if len(texts) != 1 else ''}", err=True)
    sys.exit(EXIT_ERROR if result.internal_errors else status)


def check_wants(result: Result, files: list[Path], cwd: Path) -> NoReturn:
    """Compare the findings with the `// want` comments and exit: 0 when
    they agree exactly, 1 with one line per difference, 2 if the analysis
    itself failed."""
    counts, patterns = wanted(files, lambda path: display_path(path, cwd))
    differences = compare(result.findings, counts, patterns)
    pipestatus.announce(EXIT_ERROR if result.internal_errors else EXIT_FINDINGS if differences else EXIT_CLEAN)
    for line in differences:
        click.echo(safe_line(line))
    wanted_total = sum(counts.values())
    click.echo(f"{wanted_total - sum(1 for d in differences if ' missing ' in d)} of {wanted_total} wanted findings reported, "
               f"{len(differences)} difference{'s' if len(differences) != 1 else ''}")
    sys.exit(EXIT_ERROR if result.internal_errors else EXIT_FINDINGS if differences else EXIT_CLEAN)


def clean_cache(options: Options, cwd: Path) -> NoReturn:
    """--clean-cache: remove the caches that carry cudalint's tag; a
    directory named by --cache-dir (or CUDALINT_CACHE_DIR) that is not a
    cudalint cache is an error, another one is only mentioned."""
    pipestatus.announce(EXIT_CLEAN)
    cleaned = cleancache.clean(options.cache_dir, cwd)
    for directory in cleaned.removed:
        click.echo(safe_line(f"cudalint: removed the cache {directory}"), err=True)
    named = {os.path.abspath(options.cache_dir if options.cache_dir.is_absolute() else cwd / options.cache_dir)} if options.cache_dir else set()
    status = EXIT_CLEAN
    for directory, why in cleaned.refused:
        if os.path.abspath(directory) in named:
            click.echo(safe_line(f"cudalint: error: {directory} {why}; left alone"), err=True)
            status = EXIT_ERROR
        elif not options.quiet:
            click.echo(safe_line(f"cudalint: note: {directory} {why}; left alone"), err=True)
    for directory, why in cleaned.failed:
        click.echo(safe_line(f"cudalint: error: cannot remove all of {directory}: {why}"), err=True)
        status = EXIT_ERROR
    if not cleaned.removed and status == EXIT_CLEAN and not options.quiet:
        click.echo(safe_line(f"cudalint: no cache to remove (looked in {', '.join(str(d) for d, _ in cleancache.candidates(options.cache_dir, cwd))})"), err=True)
    sys.exit(status)


def show_settings(options: Options, session: Session) -> NoReturn:
    """--show-settings: for each pattern (a file, a directory, dir/...), the
    configuration that applies and why."""
    pipestatus.announce(EXIT_CLEAN)
    cwd = session.cwd
    targets = []
    for pattern in options.patterns or (".",):
        path = Path(pattern[:-4] or "." if pattern.endswith("/...") else "." if pattern == "..." else pattern)
        path = path if path.is_absolute() else cwd / path
        if not path.exists():
            raise click.BadParameter(f"{pattern!r}: no such file or directory", param_hint="PATTERNS")
        targets.append(path.resolve() if path.resolve() != cwd.resolve() else cwd)
    loaded: dict[Path, Config] = {}

    def load(path: Path) -> Config:
        if path.resolve() not in loaded:
            try:
                loaded[path.resolve()] = session.load_config(path)
            except ConfigError as error:
                raise RunError(str(error)) from None
        return loaded[path.resolve()]

    texts = []
    for path in targets:
        applied, why = showsettings.resolve(path, cwd, session.config, options.config_file, options.isolated, load)
        texts.append(showsettings.render(
            path, cwd, applied, why, all_rules(),
            select=rule_prefixes("--select", (options.select,)) if options.select is not None else None,
            ignore=rule_prefixes("--ignore", (options.ignore,)) if options.ignore is not None else None,
            excludes=options.excludes, preview=options.preview, max_same_issues=options.max_same_issues,
        ))
    click.echo("\n".join(texts), nl=False)
    sys.exit(EXIT_CLEAN)


def add_ignore(options: Options, session: Session, result: Result, digests: dict[Path, str]) -> NoReturn:
    """--add-ignore REASON: a directive above each line with a reported
    finding, written as --fix writes (cudalint.fixes.rewrite); exit 0 (2
    when the analysis failed). What was not written is said, as --fix says
    it."""
    analysed, root = session.writable()
    outcome = addignore.add(result.findings, analysed, root, digests, addignore.check_reason(options.add_ignore))
    if not options.quiet:
        for note in result.notifications:
            click.echo(safe_line(note.render()), err=True)
    for refusal in outcome.refused:
        click.echo(safe_line(f"cudalint: {refusal}: no directive added"), err=True)
    if outcome.tool_findings and not options.quiet:
        count = outcome.tool_findings
        click.echo(f"cudalint: note: {count} CL0xx finding{'s' if count != 1 else ''} left as {'they are' if count != 1 else 'it is'}: "
                   "a directive cannot suppress a tool rule; fix the directive it reports", err=True)
    if not options.quiet:
        count, written = outcome.added, len(outcome.files)
        click.echo(f"cudalint: added {count} suppression{'s' if count != 1 else ''} to {written} file{'s' if written != 1 else ''}", err=True)
    sys.exit(EXIT_ERROR if result.internal_errors else EXIT_CLEAN)  # refusals are said, as --fix says them
