"""The end of a run on the command line: the reports in their formats, to
standard output or to files (a regular file replaced atomically), the
Markdown step summary on GitHub Actions, and the notes around them on
standard error (notifications, directives naming a retired rule, stale
baseline entries)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from cudalint import __version__
from cudalint.app.config import Config
from cudalint.app.errors import RunError
from cudalint.app.options import Options
from cudalint.catalog import Rule
from cudalint.findings import Finding, Result
from cudalint.reporters import RenderOptions, Report, render
from cudalint.reporters.text import safe_line
from cudalint.source import repository_root


def write_reports(
    options: Options, config: Config, rules: list[Rule], result: Result, stale: int, cwd: Path, retired_notes: list[Finding],
) -> None:
    """Each report the options ask for (FORMAT:FILE ones, then standard
    output or --output), after the notes on standard error: notifications,
    directives naming a retired rule, stale baseline entries (none with
    --quiet). Levels are the configuration's."""
    levels = {rule.id: config.level_for(rule.id, rule.level) for rule in rules}
    report = Report(
        result, {r.id: r for r in rules}, __version__, cwd, repository_root(cwd),
        levels={r.id: levels[r.id].value for r in rules if levels[r.id] is not r.level},
        show_suppressed=options.show_suppressed,
        baseline=str(options.baseline_file) if options.baseline_file is not None else None,
        stale_baseline_entries=stale,
        category=options.sarif_category,
    )
    outputs = [(fmt, path) for fmt, path in options.extra_outputs] + [(options.fmt, options.output)]
    texts = []
    for fmt, path in outputs:
        color = _use_color(options.color_mode, fmt, path)
        if options.statistics and fmt == "text":
            texts.append((fmt, path, color, _statistics(report)))
        else:
            texts.append((fmt, path, color, render(report, fmt, RenderOptions(
                color=color, quiet=options.quiet, show_paths=options.show_paths, show_source=options.show_source,
                statistics=options.statistics,
            ))))
    if not options.quiet:
        for note in result.notifications:
            click.echo(safe_line(note.render()), err=True)
        for note in retired_notes:  # about directives naming a retired rule: never findings
            start = note.span.start
            click.echo(safe_line(f"{note.path}:{start.line}:{start.column}: {note.rule_id} {note.message}"), err=True)
        if stale:
            click.echo(
                f"cudalint: note: {stale} entr{'ies' if stale != 1 else 'y'} of the baseline {options.baseline_file} match no "
                f"finding any more (fixed, or the reported line changed); to drop them, run the same command with "
                f"--write-baseline {options.baseline_file} in place of --baseline {options.baseline_file} (it keeps the entries "
                f"of files and rules the run did not cover, and also accepts any finding reported now)",
                err=True,
            )
    for fmt, path, color, text in texts:
        _emit(options, result, fmt, path, color, text)
    if any(fmt == "github" for fmt, _ in outputs):
        _step_summary(report)


def _step_summary(report: Report) -> None:
    """With the github format on GitHub Actions: the findings as Markdown,
    appended to $GITHUB_STEP_SUMMARY (the run's summary page). A summary that
    cannot be written is a warning: the reports are written, the status stands."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    from cudalint.reporters.github import step_summary

    try:
        with open(target, "a", encoding="utf-8", errors="replace") as stream:
            stream.write(step_summary(report, os.environ))
    except OSError as error:
        click.echo(safe_line(f"cudalint: warning: cannot write the step summary to {target}: {error.strerror or error}"), err=True)


def _emit(options: Options, result: Result, fmt: str, path: Path | None, color: bool, text: str) -> None:
    """One report: to its file (announced on stderr with its counts) or to
    standard output (no path, or `-`)."""
    if path is None or str(path) == "-":
        click.echo(text, nl=False, color=color)
        return
    try:
        write_atomically(path, text)
    except OSError as error:
        raise RunError(f"cannot write {path}: {error.strerror or error}") from None
    if not options.quiet:
        count = len(result.findings)
        click.echo(
            f"cudalint: wrote the {fmt} report to {path}: {count} finding{'s' if count != 1 else ''}, "
            f"{len(result.notifications)} notification{'s' if len(result.notifications) != 1 else ''}",
            err=True,
        )


def write_atomically(path: Path, text: str) -> None:
    """A regular file (or a new one) is replaced atomically, so a reader never
    sees half a report; anything else (a symlink, /dev/stdout, a FIFO) is
    written into, never replaced."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return
    directory = path.parent if str(path.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)  # --format sarif:out/x.sarif in a fresh checkout
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _use_color(mode: str, fmt: str, output: Path | None) -> bool:
    if fmt != "text" or mode == "never":
        return False
    if mode == "always":
        return True
    if output is not None and str(output) != "-":
        return False  # a report file never gets colour codes
    if os.environ.get("NO_COLOR"):
        return False  # NO_COLOR wins over everything but --color always
    if _forced(os.environ.get("FORCE_COLOR")) or _forced(os.environ.get("CLICOLOR_FORCE")):
        return True  # CI logs that render colour (force-color.org, bixense.com/clicolors)
    return sys.stdout.isatty()


def _forced(value: str | None) -> bool:
    """FORCE_COLOR / CLICOLOR_FORCE set to anything but "", "0" or "false"."""
    return value is not None and value.strip().lower() not in ("", "0", "false")


def _statistics(report: Report) -> str:
    """Findings per rule, most frequent first (as ruff --statistics)."""
    counts = report.counts()
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    width = max((len(str(count)) for _, count in rows), default=1)
    lines = [
        f"{count:>{width}}  {rule_id}  {report.rules[rule_id].name if rule_id in report.rules else ''}  [{report.level(rule_id)}]"
        for rule_id, count in rows
    ]
    return "\n".join(lines) + ("\n" if lines else "")
