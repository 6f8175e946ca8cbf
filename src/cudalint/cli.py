"""Command line: `cudalint [PATTERNS]...` (default `./...`).

Exit status: 0 no findings, 1 findings, 2 usage or tool error (including a
pattern that matches no Go file and an internal error that left the result
incomplete).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from cudalint import __version__
from cudalint.analysis import Settings, analyze, default_jobs
from cudalint.catalog import select_rules
from cudalint.discover import discover
from cudalint.knowledge import KnowledgeError, load_knowledge
from cudalint.passes import all_rules, rule_by_id
from cudalint.reporters import FORMATS, Report, render
from cudalint.source import display_path

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _prefixes(option: str, value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    prefixes = tuple(part.strip().upper() for part in value.split(",") if part.strip())
    if not prefixes:
        raise click.BadParameter("expects one or more rule-ID prefixes, e.g. CL3 or CL101,CL201", param_hint=option)
    return prefixes


def _check_prefixes(option: str, prefixes: tuple[str, ...]) -> None:
    known = [rule.id for rule in all_rules()]
    for prefix in prefixes:
        if not any(rule_id.startswith(prefix) for rule_id in known):
            raise click.BadParameter(f"{prefix!r} matches no rule (see --list-rules)", param_hint=option)


def _list_rules() -> str:
    rows = [(r.id, r.name, r.level.value, r.summary) for r in all_rules()]
    widths = [max(len(row[i]) for row in rows + [("ID", "NAME", "LEVEL", "")]) for i in range(3)]
    lines = [f"{'ID':<{widths[0]}}  {'NAME':<{widths[1]}}  {'LEVEL':<{widths[2]}}  SUMMARY"]
    lines += [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}" for a, b, c, d in rows]
    return "\n".join(lines)


def _write_report(path: Path, text: str) -> None:
    """A regular file (or a new one) is replaced atomically, so a reader never
    sees half a report; anything else (a symlink, /dev/stdout, a FIFO) is
    written into, never replaced."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return
    directory = path.parent if str(path.parent) else Path(".")
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


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("patterns", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Output format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the report to FILE instead of stdout (a regular file is replaced atomically).")
@click.option("--select", help="Comma-separated rule-ID prefixes to enable (default: all), e.g. CL1,CL301.")
@click.option("--ignore", help="Comma-separated rule-ID prefixes to disable, e.g. CL302.")
@click.option(
    "--rules", "rules_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
    help="An extra API knowledge file (TOML, schema in rules/README.md); repeatable.",
)
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: the number of CPUs).")
@click.option("--show-paths", is_flag=True, help="Under each path finding, show the path: acquisition, branches taken, leaking exit.")
@click.option("--quiet", "-q", is_flag=True, help="Print findings only: no summary, no notifications.")
@click.option("--list-rules", is_flag=True, help="List the rules and exit.")
@click.option("--explain", metavar="RULE", help="Print the documentation of RULE (e.g. CL301) and exit.")
@click.option("--debug", is_flag=True, help="Include tracebacks in internal-error notifications.")
@click.version_option(__version__, "--version", prog_name="cudalint")
def main(patterns, fmt, output, select, ignore, rules_files, jobs, show_paths, quiet, list_rules, explain, debug) -> None:
    """Find leaked device memory, double frees, misplaced defers and dropped
    CUDA status codes in Go code that drives NVIDIA GPUs through cgo.

    PATTERNS are Go-style package patterns: ./... (the default), dir/..., a
    directory (that package only) or a .go file. Build constraints are
    ignored: every .go file is read, so that cgo files behind tags are
    analysed too.
    """
    if list_rules:
        click.echo(_list_rules())
        sys.exit(EXIT_CLEAN)
    if explain:
        rule = rule_by_id(explain)
        if rule is None:
            raise click.BadParameter(f"no rule {explain!r} (see --list-rules)", param_hint="--explain")
        click.echo(rule.markdown(), nl=False)
        sys.exit(EXIT_CLEAN)

    selected, ignored = _prefixes("--select", select) or ("CL",), _prefixes("--ignore", ignore)
    _check_prefixes("--select", selected)
    _check_prefixes("--ignore", ignored)
    enabled = select_rules(all_rules(), selected, ignored)
    if not enabled:
        raise click.UsageError("--select and --ignore leave no rule enabled")
    if any(not pattern.strip() for pattern in patterns):
        raise click.BadParameter("an empty pattern names nothing (use . for this directory)", param_hint="PATTERNS")
    try:
        knowledge = load_knowledge(tuple(rules_files))
    except KnowledgeError as error:
        click.echo(f"cudalint: error: {error}", err=True)
        sys.exit(EXIT_ERROR)

    cwd = Path.cwd()
    discovery = discover(list(patterns) or ["./..."], cwd)
    for note in discovery.notifications if discovery.unmatched else ():
        click.echo(note.render(), err=True)
    for pattern in discovery.unmatched:
        click.echo(f"cudalint: error: pattern {pattern!r} matches no Go files", err=True)
    if discovery.unmatched and discovery.nested_modules:
        names = ", ".join(display_path(m, cwd) for m in discovery.nested_modules[:5])
        click.echo(
            f"cudalint: note: directories with their own go.mod are separate modules and are not walked "
            f"({names}); run cudalint inside them or name them, e.g. cudalint {names.split(', ')[0]}/...",
            err=True,
        )
    if discovery.unmatched:
        sys.exit(EXIT_ERROR)

    rules = all_rules()
    settings = Settings(base=cwd, enabled=enabled, jobs=jobs or default_jobs(), debug=debug)
    result = analyze(discovery.files, settings, knowledge)
    result.notifications[:0] = discovery.notifications
    result.sort()

    report = Report(result, {r.id: r for r in rules}, cwd.as_uri() + "/", __version__)
    color = output is None and fmt == "text" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    text = render(report, fmt, color=color, quiet=quiet, show_paths=show_paths)
    if not quiet:
        for note in result.notifications:
            click.echo(note.render(), err=True)
    if output is not None:
        try:
            _write_report(output, text)
        except OSError as error:
            click.echo(f"cudalint: error: cannot write {output}: {error.strerror or error}", err=True)
            sys.exit(EXIT_ERROR)
    else:
        click.echo(text, nl=False)
    if result.internal_errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if result.findings else EXIT_CLEAN)
