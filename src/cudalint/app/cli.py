"""Command line: `cudalint [PATTERNS]...` (default `./...`).

The click command and what it checks of its options before anything is
read; the run itself is a `Session` (shared with `cudalint.check`), and
what only the command line does lives beside it: `reporting` (the reports),
`fixing` (--fix, --diff), `commands` (the runs of their own). Exit status:
see `options`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import click

from cudalint import __version__
from cudalint.app import addignore, commands, fixing, pipestatus, reporting
from cudalint.app.config import Config
from cudalint.app.errors import OptionError, RunError, Unmatched
from cudalint.app.inputs import unmatched_lines
from cudalint.app.options import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, Options
from cudalint.app.request import Request
from cudalint.app.session import Session
from cudalint.cache import DEFAULT_DIRECTORY as DEFAULT_CACHE
from cudalint.checks import rule_by_id
from cudalint.driver import dump_cfgs
from cudalint.findings import NotificationKind, Result
from cudalint.reporters import FORMATS
from cudalint.suppressions import is_retired_note

# Inputs cudalint could not analyse: notifications, and exit status 2 under --strict.
_INPUT_TROUBLE = frozenset({
    NotificationKind.SYNTAX_ERROR, NotificationKind.UNREADABLE, NotificationKind.NOT_GO_SOURCE, NotificationKind.TOO_COMPLEX,
})


def _fail(message: str) -> NoReturn:
    click.echo(f"cudalint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _say(line: str) -> None:
    """A session's notes and warnings: one line each on standard error."""
    click.echo(line, err=True)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("patterns", nargs=-1)
@click.option("--format", "fmt", multiple=True, metavar="FORMAT[:FILE]",
              help=f"Output format, one of {', '.join(FORMATS)} (default text): text for people, json for scripts, sarif for "
                   "code scanning, github for workflow annotations, gitlab for GitLab code quality, checkstyle or junit for "
                   "other CI systems. Repeatable: FORMAT:FILE writes that format to FILE, e.g. "
                   "--format sarif:cudalint.sarif --format text.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the report to FILE instead of stdout (a regular file is replaced atomically, missing directories are created).")
@click.option("--sarif-category", default="cudalint", show_default=True, metavar="CATEGORY", callback=lambda _c, _p, value: _category(value),
              help="The code scanning category the SARIF report names (runs[].automationDetails.id); "
                   "upload-sarif keeps it and ignores its own category input, so tell several cudalint runs apart here.")
@click.option("--select", metavar="PREFIXES", multiple=True,
              help="Comma-separated rule-ID prefixes to enable (default: all), e.g. CL1,CL301; repeatable (the lists add up). Replaces the configuration's select.")
@click.option("--preview", is_flag=True, help="Enable preview rules (new rules that run only when asked for) with the selected ones.")
@click.option("--ignore", metavar="PREFIXES", multiple=True,
              help="Comma-separated rule-ID prefixes to disable, e.g. CL302; repeatable. Replaces the configuration's ignore.")
@click.option("--exclude", "excludes", multiple=True, metavar="GLOB",
              help="Skip files matching GLOB (relative to the current directory); repeatable. Replaces the configuration's exclude.")
@click.option(
    "--knowledge", "--rules", "knowledge_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
    help="An extra API knowledge file (TOML, schema in rules/README.md), loaded in addition to the configuration's; "
         "repeatable. (--rules is the older spelling.)",
)
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read this configuration file instead of the nearest .cudalint.toml or pyproject.toml [tool.cudalint].")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option("--all-modules", is_flag=True,
              help="Walk into subdirectories that hold their own go.mod too: every module of the tree in one run "
                   "(for code scanning of a whole repository). Without it, ./... keeps the go command's meaning.")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Report only findings that are not in this baseline file (matched by fingerprint, not line).")
@click.option("--write-baseline", "write_baseline", type=click.Path(dir_okay=False, path_type=Path),
              help="Record every current finding in this baseline file and exit 0.")
@click.option("--show-suppressed", is_flag=True, help="Include findings suppressed by directives or the baseline, marked as such.")
@click.option("--show-source", is_flag=True, help="Under each finding, show its line with the reported code underlined (text format).")
@click.option("--show-paths", is_flag=True, help="Under each path finding, show the path: acquisition, branches taken, leaking exit.")
@click.option("--color", "color_mode", type=click.Choice(("auto", "always", "never")), default="auto", show_default=True,
              help="Colour the text format: auto is only on a terminal, and never with NO_COLOR set.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: the number of CPUs).")
@click.option("--new-from-rev", metavar="REF",
              help="Report only findings on lines added or changed since the git revision REF (the working tree against REF, untracked files included).")
@click.option("--new-from-merge-base", metavar="REF",
              help="Report only findings on lines added or changed since the merge base of REF and HEAD (what a branch adds to REF).")
@click.option("--new-from-patch", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Report only findings on lines this unified diff (git diff, diff -u) adds; its paths are relative to the repository root.")
@click.option("--whole-files", is_flag=True,
              help="With --new-from-rev, --new-from-merge-base or --new-from-patch: report findings anywhere in the files the change touched.")
@click.option("--check-wants", is_flag=True,
              help='Test knowledge files against annotated code: compare the findings with the `// want "CL101"` comments of '
                   'the analysed files, print every difference and exit 1 if there is one (see rules/README.md).')
@click.option("--diff", is_flag=True, help="Print the unified diff of the fixes --fix would make, and exit (1 if there is any).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes ([*] in the text format), analyse again and report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, also the fixes that need a human look.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings (text and json formats; refused with only others).")
@click.option("--quiet", "-q", is_flag=True, help="Print findings only: no summary, no notifications.")
@click.option("--list-rules", is_flag=True, help="List the rules and exit.")
@click.option("--explain", metavar="RULE", help="Print the documentation of RULE (e.g. CL301) and exit.")
@click.option(
    "--no-cache", is_flag=True, envvar="CUDALINT_NO_CACHE",
    help="Analyse everything afresh, without reading or writing the result cache (or set CUDALINT_NO_CACHE=1).",
)
@click.option(
    "--cache-dir", type=click.Path(file_okay=False, path_type=Path), envvar="CUDALINT_CACHE_DIR",
    help=f"Where to keep the result cache (default: ./{DEFAULT_CACHE}; or set CUDALINT_CACHE_DIR).",
)
@click.option(
    "--strict", is_flag=True,
    help="Exit with status 2 when a file could not be read or parsed (by default that is a notification only).",
)
@click.option(
    "--fail-on", type=click.Choice(("error", "warning", "note")), default="note", show_default=True,
    help="Exit with status 1 only for findings at this level or above (levels after the configuration): "
         "--fail-on error shows warnings and notes without failing CI.",
)
@click.option("--show-fixes", is_flag=True,
              help="With --fix, list what was fixed, by file and rule (or set show-fixes = true in the configuration).")
@click.option("--add-ignore", metavar="REASON",
              help="Insert //cudalint:ignore RULES REASON above every line with a finding the run reports, and exit "
                   "(as ruff's --add-noqa): adopt cudalint on a legacy tree. Written as --fix writes.")
@click.option("--max-same-issues", type=click.IntRange(min=0), metavar="N",
              help="Report at most N findings of one rule with the same message (0: no cap, the default; "
                   "or max-same-issues in the configuration). The rest are counted in a note.")
@click.option("--clean-cache", is_flag=True,
              help="Remove cudalint's caches (the result cache here or at --cache-dir, and the user-level cache) "
                   "and exit; only directories that carry cudalint's CACHEDIR.TAG are removed.")
@click.option("--show-settings", is_flag=True,
              help="Print the configuration that applies to each PATTERN (a file or directory; default .), "
                   "which file it comes from and why, and exit.")
@click.option("--server", is_flag=True,
              help="Speak the Language Server Protocol on standard input and output: findings in the editor while you type "
                   "(see docs/editors.md). A flag, since a bare word is a pattern.")
@click.option("--stdin-filename", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
              help="Analyse standard input as the file PATH (its package read from disk), for editors that pipe buffers: "
                   "cudalint --stdin-filename PATH -")
@click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when there are findings (2 still means cudalint failed).")
@click.option("--debug", is_flag=True, help="Include tracebacks in internal-error notifications.")
@click.option("--dump-cfg", metavar="FUNCTION", hidden=True,
              help="Print the control-flow graph of every function so named (Go toolchain names, e.g. (*T).M) and exit.")
@click.version_option(__version__, "--version", prog_name="cudalint")
def main(**values) -> None:
    """Find leaked device memory, double frees, misplaced defers and dropped
    CUDA status codes in Go code that drives NVIDIA GPUs through cgo.

    PATTERNS are Go-style package patterns: ./... (the default), dir/..., a
    directory (that package only) or .go files (analysed as one package, as
    the pre-commit hook passes them). Build constraints select no files:
    every .go file is read, so that cgo files behind tags are analysed too;
    they only tell which variant of a function a file can call.

    Configuration comes from the nearest .cudalint.toml or pyproject.toml
    with a [tool.cudalint] table at or above the current directory; the
    options below override it. Suppress a finding with a comment:
    //cudalint:ignore CL301 <reason> (this line or the next) or
    //cudalint:file-ignore CL3 <reason> (the whole file).
    """
    values["fmt"], values["extra_outputs"] = _formats(values["fmt"])
    # --select CL3 --select CL1 means both, as --select CL3,CL1 does.
    for name in ("select", "ignore"):
        values[name] = ",".join(values[name]) if values[name] else None
    options = Options(**values)
    if options.server:
        _serve(options)
    _answer_questions(options)
    _check_combinations(options)
    _check_statistics(options)
    _check_peer_options(options)
    cwd = Path.cwd()
    overlay = _standard_input(options, cwd)
    if overlay is not None:
        options = replace(options, patterns=(str(options.stdin_filename),))
    try:
        _run(options, cwd, overlay)
    except Unmatched as error:
        for line in unmatched_lines(error.discovery, cwd):
            click.echo(line, err=True)
        sys.exit(EXIT_ERROR)
    except OptionError as error:
        if error.option is None:
            raise click.UsageError(str(error)) from None
        raise click.BadParameter(str(error), param_hint=error.option) from None
    except RunError as error:
        _fail(str(error))


def _run(options: Options, cwd: Path, overlay: dict[Path, bytes] | None = None) -> NoReturn:
    """The run, step by step; the options that are runs of their own exit
    where they have what they need. `overlay`: standard input, as the file
    --stdin-filename names."""
    if options.clean_cache:
        commands.clean_cache(options, cwd)
    session = Session(replace(_request(options), overlay=overlay), cwd, _say)
    if options.show_settings:
        commands.show_settings(options, session)
    files = session.read_inputs().files
    digests = addignore.snapshot(files) if options.add_ignore is not None else {}
    _check_outputs(options, files + session.inputs.context)
    session.group()
    session.open_gate()
    if options.dump_cfg:
        click.echo(dump_cfgs(files, cwd, session.knowledge(session.config), options.dump_cfg), nl=False)
        sys.exit(EXIT_CLEAN)
    if session.config.show_fixes and not options.show_fixes:
        options = replace(options, show_fixes=True)  # show-fixes = true in the configuration
    if session.config.unsafe_fixes and not options.unsafe_fixes:
        options = replace(options, unsafe_fixes=True)  # unsafe-fixes = true in the configuration
    result = session.analyse()
    if options.diff:
        commands.show_diff(options, session, result)
    if options.fix:
        result = fixing.fix(session, result, options.unsafe_fixes, options.show_fixes)
    session.complete(result)
    # Notes on directives that name a retired rule: printed, neither findings nor suppressed ones.
    retired_notes = [finding for finding in result.suppressed if is_retired_note(finding)]
    result.suppressed = [finding for finding in result.suppressed if not is_retired_note(finding)]
    if options.write_baseline is not None:
        commands.write_baseline(options, session, result)
    if options.check_wants:
        commands.check_wants(result, files, cwd)
    outcome = session.gate_result(result)  # the baseline, then the new-from options
    if options.add_ignore is not None:
        commands.add_ignore(options, session, result, digests)
    session.cap_same_issues(result)
    status = _exit_status(options, result, _levels(session.config, session.rules))
    pipestatus.announce(status)  # `| head -1`: the findings' status, quietly
    reporting.write_reports(options, session.config, session.rules, result, outcome.stale, cwd, retired_notes)
    sys.exit(status)


def _request(options: Options) -> Request:
    """What the options ask of the session."""
    return Request(
        patterns=options.patterns,
        select=(options.select,) if options.select is not None else None,
        ignore=(options.ignore,) if options.ignore is not None else None,
        preview=options.preview, excludes=options.excludes, knowledge_files=options.knowledge_files,
        config_file=options.config_file, isolated=options.isolated, all_modules=options.all_modules,
        baseline_file=options.baseline_file, new_from_rev=options.new_from_rev,
        new_from_merge_base=options.new_from_merge_base, new_from_patch=options.new_from_patch,
        whole_files=options.whole_files, jobs=options.jobs, no_cache=options.no_cache, cache_dir=options.cache_dir,
        debug=options.debug, quiet=options.quiet, progress_after=_progress_after(options),
        max_same_issues=options.max_same_issues,
    )


def _serve(options: Options) -> NoReturn:
    """--server: the language server, until the client says exit."""
    if options.patterns:
        raise click.UsageError("--server takes no patterns: the editor names the files (a bare word is a pattern)")
    from cudalint.app.server import serve

    sys.exit(serve())


# What --stdin-filename cannot do: write to the file, or stand for several.
_NOT_WITH_STDIN = ("fix", "diff", "add_ignore", "write_baseline", "check_wants", "show_settings", "clean_cache", "dump_cfg")


def _standard_input(options: Options, cwd: Path) -> dict[Path, bytes] | None:
    """`--stdin-filename PATH -`: standard input's bytes, as the file PATH
    (None without the option). `-` alone is a usage error that says so."""
    if options.stdin_filename is None:
        if "-" in options.patterns:
            raise click.BadParameter("'-' reads standard input, as the file --stdin-filename PATH names", param_hint="PATTERNS")
        return None
    if options.patterns not in ((), ("-",)):
        raise click.UsageError("--stdin-filename analyses standard input as one file: give '-' as the only pattern, or none")
    refused = [name for name in _NOT_WITH_STDIN if getattr(options, name) not in (None, False)]
    if refused:
        raise click.UsageError(f"--stdin-filename and --{refused[0].replace('_', '-')} exclude each other (the file is standard input)")
    if not str(options.stdin_filename).endswith(".go"):
        raise click.BadParameter(f"{options.stdin_filename} is not a .go file", param_hint="--stdin-filename")
    data = sys.stdin.buffer.read() if sys.stdin is not None else b""
    return {Path(os.path.normpath(cwd.resolve() / options.stdin_filename)): data}


def _formats(values: tuple[str, ...]) -> tuple[str, tuple[tuple[str, Path], ...]]:
    """The format for standard output (or --output), and FORMAT:FILE pairs."""
    plain: list[str] = []
    to_files: list[tuple[str, Path]] = []
    for value in values or ("text",):
        name, _, file = value.partition(":")
        if name not in FORMATS:
            raise click.BadParameter(f"{name!r} is not one of {', '.join(FORMATS)}", param_hint="--format")
        if file:
            to_files.append((name, Path(file)))
        else:
            plain.append(name)
    if len(plain) > 1:
        raise click.BadParameter("only one format can go to standard output (or --output); give the others a file: FORMAT:FILE", param_hint="--format")
    return (plain[0] if plain else "text"), tuple(to_files)


# The formats --statistics has a form in (counts per rule instead of the findings).
_STATISTICS_FORMATS = ("text", "json")


def _category(value: str) -> str:
    """A --sarif-category that names something (GitHub takes what precedes
    the id's last slash as the category)."""
    if not value.strip().strip("/"):
        raise click.BadParameter("names no category, e.g. cudalint or cudalint/gpu", param_hint="--sarif-category")
    return value.strip()


def _check_statistics(options: Options) -> None:
    """--statistics changes the text and json reports; a run with neither
    would ignore it, so it is refused (another format may go to a file
    alongside: --statistics --format sarif:x.sarif --format text)."""
    formats = [options.fmt] + [fmt for fmt, _ in options.extra_outputs]
    if options.statistics and not any(fmt in _STATISTICS_FORMATS for fmt in formats):
        raise click.UsageError(
            f"--statistics prints the counts per rule in the text or json format, and {', '.join(dict.fromkeys(formats))} "
            f"has no such form: add --format text or --format json for the counts (other formats can go to files: "
            f"--format {formats[0]}:FILE), or drop --statistics"
        )


def _check_outputs(options: Options, analysed: list[Path]) -> None:
    """A report or a baseline never replaces a Go source file the run
    analyses (`-o x.go` where `-o x.json` was meant, or an argument that
    slipped in): a usage error, before anything is written."""
    outputs = [(f"--output {options.output}", options.output), (f"--write-baseline {options.write_baseline}", options.write_baseline)]
    outputs += [(f"--format {fmt}:{path}", path) for fmt, path in options.extra_outputs]
    if "github" in [options.fmt] + [fmt for fmt, _ in options.extra_outputs] and os.environ.get("GITHUB_STEP_SUMMARY"):
        outputs.append(("GITHUB_STEP_SUMMARY", Path(os.environ["GITHUB_STEP_SUMMARY"])))
    written = {os.path.realpath(path): given for given, path in outputs if path is not None and str(path) != "-"}
    if not written:
        return  # nothing is written to a file: no source to protect (and 3,000 paths not resolved)
    for path in analysed:
        given = written.get(os.path.realpath(path))
        if given is not None:
            raise click.UsageError(f"{given} names a Go source file this run analyses; cudalint never replaces one with a report")


def _answer_questions(options: Options) -> None:
    """--list-rules and --explain answer and exit before anything is read."""
    pipestatus.announce(EXIT_CLEAN)
    if options.list_rules:
        click.echo(commands.rule_table())
        sys.exit(EXIT_CLEAN)
    if options.explain:
        rule = rule_by_id(options.explain)
        if rule is None:
            raise click.BadParameter(f"no rule {options.explain!r} (see --list-rules)", param_hint="--explain")
        click.echo(rule.markdown(), nl=False)
        sys.exit(EXIT_CLEAN)


def _check_combinations(options: Options) -> None:
    new_from = [name for name, value in (
        ("--new-from-rev", options.new_from_rev), ("--new-from-merge-base", options.new_from_merge_base),
        ("--new-from-patch", options.new_from_patch),
    ) if value is not None]
    if len(new_from) > 1:
        raise click.UsageError(f"{' and '.join(new_from)} exclude each other")
    if options.whole_files and not new_from:
        raise click.UsageError("--whole-files needs --new-from-rev, --new-from-merge-base or --new-from-patch")
    if options.baseline_file is not None and options.write_baseline is not None:
        raise click.UsageError("--baseline and --write-baseline exclude each other (--write-baseline replaces the file)")
    if options.config_file is not None and options.isolated:
        raise click.UsageError("--config and --isolated exclude each other")
    if any(not pattern.strip() for pattern in options.patterns):
        raise click.BadParameter("an empty pattern names nothing (use . for this directory)", param_hint="PATTERNS")


def _check_peer_options(options: Options) -> None:
    """--clean-cache, --show-settings and --add-ignore are runs of their own."""
    if options.clean_cache and options.patterns:
        raise click.UsageError("--clean-cache takes no patterns (a bare word is a pattern: it removes the caches and exits)")
    modes = [name for name, on in (
        ("--add-ignore", options.add_ignore is not None), ("--fix", options.fix), ("--diff", options.diff),
        ("--write-baseline", options.write_baseline is not None), ("--check-wants", options.check_wants),
    ) if on]
    if options.add_ignore is not None and len(modes) > 1:
        raise click.UsageError(f"{' and '.join(modes)} exclude each other")
    if options.add_ignore is not None:
        try:
            addignore.check_reason(options.add_ignore)
        except addignore.ReasonError as error:
            raise click.BadParameter(str(error), param_hint="--add-ignore") from None


def _progress_after(options: Options) -> float | None:
    """Progress only for a person at a terminal: never in CI logs, pipes,
    with --quiet or on a dumb terminal; after a second of work."""
    if options.quiet or os.environ.get("CI") or os.environ.get("TERM") == "dumb" or not sys.stderr.isatty():
        return None
    return float(os.environ.get("CUDALINT_PROGRESS_AFTER", "1"))


def _exit_status(options: Options, result: Result, levels: dict[str, str]) -> int:
    """0 clean, 1 findings (at or above --fail-on, unless --exit-zero), 2
    anything else."""
    if result.internal_errors:
        return EXIT_ERROR
    if options.strict and any(note.kind in _INPUT_TROUBLE for note in result.notifications):
        return EXIT_ERROR
    floor = _RANK[options.fail_on]
    failing = [f for f in result.findings if _RANK.get(levels.get(f.rule_id, "warning"), 1) >= floor]
    return EXIT_FINDINGS if failing and not options.exit_zero else EXIT_CLEAN


_RANK = {"note": 0, "warning": 1, "error": 2}


def _levels(config: Config, rules: list) -> dict[str, str]:
    """Each rule's level after the configuration."""
    return {rule.id: config.level_for(rule.id, rule.level).value for rule in rules}
