"""Command line: `cudalint [PATTERNS]...` (default `./...`).

Exit status: 0 no findings, 1 findings, 2 usage or tool error (including a
pattern that matches no Go file, an unusable configuration, rules or baseline
file, and an internal error that left the result incomplete).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn

import click

from cudalint import __version__
from cudalint.app import addignore, cleancache, pipestatus, showsettings
from cudalint.fixes import editing as fixes, rewrite
from cudalint.driver import Settings, analyze, default_jobs, dump_cfgs
from cudalint.app.baseline import Baseline, BaselineError
from cudalint.app.baseline import render as render_baseline
from cudalint.cache import DEFAULT_DIRECTORY as DEFAULT_CACHE
from cudalint.catalog import select_rules
from cudalint.app.changes import ChangesError, from_patch, since_merge_base, since_revision
from cudalint.app.gate import Gate, covered
from cudalint.app.wants import compare, wanted
from cudalint.app.config import Config, ConfigError, find_config, load_config
from cudalint.globs import PathGlobs
from cudalint.discover import Discovery, discover
from cudalint.findings import Finding, NotificationKind, Result
from cudalint.knowledge import Knowledge, KnowledgeError, load_knowledge
from cudalint.checks import all_rules, rule_by_id
from cudalint.reporters import FORMATS, RenderOptions, Report, render
from cudalint.reporters.text import safe_line
from cudalint.source import display_path, repository_root
from cudalint.suppressions import is_retired_note, retired_note

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# Inputs cudalint could not analyse: notifications, and exit status 2 under --strict.
_INPUT_TROUBLE = frozenset({
    NotificationKind.SYNTAX_ERROR, NotificationKind.UNREADABLE, NotificationKind.NOT_GO_SOURCE, NotificationKind.TOO_COMPLEX,
})


def _prefixes(option: str, value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    prefixes = tuple(part.strip().upper() for part in value.split(",") if part.strip())
    if not prefixes:
        raise click.BadParameter("expects one or more rule-ID prefixes, e.g. CL3 or CL101,CL201", param_hint=option)
    return prefixes


def _fail(message: str) -> NoReturn:
    click.echo(f"cudalint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _load_config(config_file: Path | None, isolated: bool, cwd: Path) -> Config:
    if isolated:
        return Config()
    try:
        path = config_file if config_file is not None else find_config(cwd)
        if path is None:
            return Config()
        config = load_config(path, [rule.id for rule in all_rules()], display_path(path.resolve(), cwd))
    except ConfigError as error:
        _fail(str(error))
    if config_file is None and not _inside(path, repository_root(cwd)):
        click.echo(
            f"cudalint: note: using the configuration file {display_path(path.resolve(), cwd)}, which is outside "
            f"this repository ({repository_root(cwd)}); --isolated ignores it",
            err=True,
        )
    return config


def _config_groups(
    options: Options, config: Config, files: list[Path], context: list[Path], cwd: Path,
) -> list[tuple[Config, list[Path], list[Path]]]:
    """The files by the configuration that applies to each: the nearest one
    at or above its directory, where that is nested below the configuration
    found from the current directory (pre-commit runs from the repository
    root and names staged files of several modules, each with its own
    configuration, as ruff resolves one per file). Excludes are each
    configuration's own, unless --exclude is given."""
    if options.config_file is not None or options.isolated:
        return [(config, files, context)]
    nearest: dict[Path, Config] = {}
    loaded: dict[Path, Config] = {}

    def config_of(directory: Path) -> Config:
        if directory not in nearest:
            path = find_config(directory)
            if path is None or (config.path is not None and path.resolve() == config.path.resolve()):
                found = config
            elif config.path is not None and config.path.resolve().parent not in path.resolve().parents:
                found = config  # not nested below the configuration in force
            else:
                key = path.resolve()
                if key not in loaded:
                    try:
                        loaded[key] = load_config(path, [rule.id for rule in all_rules()], display_path(key, cwd))
                    except ConfigError as error:
                        _fail(str(error))
                found = loaded[key]
            nearest[directory] = found
        return nearest[directory]

    groups: dict[int, tuple[Config, list[Path], list[Path]]] = {}
    for path, is_context in [(path, False) for path in files] + [(path, True) for path in context]:
        owner = config_of(path.parent)
        if owner is not config and not options.excludes and PathGlobs.compile(owner.root, owner.exclude).match(path) is not None:
            continue
        group = groups.setdefault(id(owner), (owner, [], []))
        group[2 if is_context else 1].append(path)
    return [group for group in groups.values() if group[1]] or [(config, files, context)]


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
        return True
    except (ValueError, OSError):
        return False


def _nothing_analysed(
    discovery: Discovery, exclude: PathGlobs, config: Config, excludes: tuple[str, ...], cwd: Path,
) -> None:
    """No file is left to analyse: say why, naming each cause that left
    files out (git's ignore rules, the exclude list) and the rule or glob
    behind it, or that there was no Go file to begin with."""
    causes: list[tuple[int, str]] = []
    if discovery.ignored:
        rules = Counter(
            f"{display_path(ignored.rule.source, cwd)}:{ignored.rule.line}:{ignored.rule.pattern}"
            for ignored in discovery.ignored
        )
        causes.append((len(discovery.ignored), f"untracked and ignored by git ({_tally(rules)})"))
    if discovery.files:
        globs = Counter(exclude.match(path) or "" for path in discovery.files)
        causes.append((len(discovery.files), f"excluded by {_exclude_source(config, excludes, cwd)} ({_tally(globs)})"))
    found = sum(count for count, _ in causes)
    if not causes:
        why = "no Go files found"
    elif len(causes) == 1:
        why = f"all {found} Go file{'s' if found != 1 else ''} found {_verb(found)} {causes[0][1]}"
    else:
        why = f"of the {found} Go files found, " + " and ".join(f"{_are(count)} {text}" for count, text in causes)
    if discovery.ignored:
        why += "; tracked files, and files named one by one, are always analysed"
    click.echo(safe_line(f"cudalint: warning: nothing analysed: {why}"), err=True)


def _exclude_source(config: Config, excludes: tuple[str, ...], cwd: Path) -> str:
    if excludes:
        return "--exclude"
    if config.path is not None:
        return f"the exclude list of {display_path(config.path, cwd)}"
    return "the exclude list"  # pragma: no cover - nothing else excludes


def _are(count: int) -> str:
    return f"{count} {_verb(count)}"


def _verb(count: int) -> str:
    return "is" if count == 1 else "are"


def _tally(counts: Counter[str], shown: int = 3) -> str:
    """'2 by A, 1 by B', the most frequent first, with how many more."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    text = ", ".join(f"{count} by {what}" for what, count in ranked[:shown])
    more = len(ranked) - shown
    return text + (f" and {more} more" if more > 0 else "")


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


def _check_prefixes(option: str, prefixes: tuple[str, ...]) -> None:
    known = [rule.id for rule in all_rules()]
    for prefix in prefixes:
        if not any(rule_id.startswith(prefix) for rule_id in known):
            raise click.BadParameter(f"{prefix!r} matches no rule (see --list-rules)", param_hint=option)


def _list_rules() -> str:
    """The rule table; a preview rule's summary starts with `[preview since
    X]` (it runs only with --preview or when selected by its full ID)."""
    rows = [(r.id, r.name, r.level.value, f"[preview since {r.since}] {r.summary}" if r.preview else r.summary) for r in all_rules()]
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
    the pre-commit hook passes them). Build constraints are ignored: every
    .go file is read, so that cgo files behind tags are analysed too.

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
    _answer_questions(options)
    _check_combinations(options)
    _check_statistics(options)
    _check_peer_options(options)
    cwd = Path.cwd()
    if options.clean_cache:
        _clean_cache(options, cwd)
    config = _load_config(options.config_file, options.isolated, cwd)
    if options.show_settings:
        _show_settings(options, config, cwd)
    files, context, notifications = _inputs(options, config, cwd)
    digests = addignore.snapshot(files) if options.add_ignore is not None else {}
    _check_outputs(options, files + context)
    groups = _config_groups(options, config, files, context, cwd)
    if len(groups) == 1:
        config = groups[0][0]  # the files' own configuration (one nested module), or the one found here
    rules = all_rules()
    gate = _gate(options, _load_baseline(options.baseline_file), cwd)
    if options.dump_cfg:
        knowledge = _load_knowledge(config, options)
        click.echo(dump_cfgs(files, cwd, knowledge, options.dump_cfg), nl=False)
        sys.exit(EXIT_CLEAN)
    ran: dict[Path, frozenset[str]] = {}  # each reported file: the rules that ran on it

    def run_analysis() -> Result:
        found = Result()
        for group_config, group_files, group_context in groups:
            settings = Settings(
                base=cwd, enabled=_enabled_rules(options, group_config, rules, cwd), jobs=options.jobs or default_jobs(),
                debug=options.debug, per_file=group_config.per_file(),
                cache_dir=None if options.no_cache else (options.cache_dir or _default_cache(files, cwd)),
                reported=frozenset(group_files) if group_context else None,
                progress_after=_progress_after(options), c_include=group_config.c_include,
            )
            ran.update((path, settings.enabled_for(path)) for path in group_files)
            analysed = analyze(group_files + group_context, settings, _load_knowledge(group_config, options))
            found.extend(fixes.restrict(analysed, group_config.is_fixable))  # fixable / unfixable
        found.sort()
        return found

    if config.show_fixes and not options.show_fixes:
        options = replace(options, show_fixes=True)  # show-fixes = true in the configuration
    result = run_analysis()
    if options.diff:
        _show_diff(options, result, cwd, files, gate)
    if options.fix:
        result = _fix(options, result, cwd, files, run_analysis, gate)
    result.notifications[:0] = notifications
    result.sort()
    # Notes on directives that name a retired rule: printed, neither findings nor suppressed ones.
    retired_notes = [finding for finding in result.suppressed if is_retired_note(finding)]
    result.suppressed = [finding for finding in result.suppressed if not is_retired_note(finding)]
    if options.write_baseline is not None:
        _write_baseline(options, result, cwd, covered(ran, result, cwd))
    if options.check_wants:
        _check_wants(result, files, cwd)
    outcome = gate.apply(result, cwd, ran)  # the baseline, then the new-from options
    left_out = gate.left_out_note(outcome)
    if left_out and not options.quiet:
        click.echo(left_out, err=True)
    stale = outcome.stale
    if options.add_ignore is not None:
        _add_ignore(options, result, cwd, files, digests)
    _cap_same_issues(options, config, result)
    status = _exit_status(options, result, _levels(config, rules))
    pipestatus.announce(status)  # `| head -1`: the findings' status, quietly
    _report(options, config, rules, result, stale, cwd, retired_notes)
    sys.exit(status)


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
    sources = {os.path.realpath(path) for path in analysed}
    outputs = [(f"--output {options.output}", options.output), (f"--write-baseline {options.write_baseline}", options.write_baseline)]
    outputs += [(f"--format {fmt}:{path}", path) for fmt, path in options.extra_outputs]
    if "github" in [options.fmt] + [fmt for fmt, _ in options.extra_outputs] and os.environ.get("GITHUB_STEP_SUMMARY"):
        outputs.append(("GITHUB_STEP_SUMMARY", Path(os.environ["GITHUB_STEP_SUMMARY"])))
    for given, path in outputs:
        if path is not None and str(path) != "-" and os.path.realpath(path) in sources:
            raise click.UsageError(f"{given} names a Go source file this run analyses; cudalint never replaces one with a report")


def _answer_questions(options: Options) -> None:
    """--list-rules and --explain answer and exit before anything is read."""
    pipestatus.announce(EXIT_CLEAN)
    if options.list_rules:
        click.echo(_list_rules())
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


def _enabled_rules(options: Options, config: Config, rules: list, cwd: Path) -> frozenset[str]:
    selected = _prefixes("--select", options.select) if options.select is not None else config.select or ("CL",)
    ignored = _prefixes("--ignore", options.ignore) if options.ignore is not None else config.ignore or ()
    _check_prefixes("--select", selected)
    _check_prefixes("--ignore", ignored)
    _note_retired(options, config, selected, ignored, cwd)
    enabled = select_rules(rules, selected, ignored, preview=options.preview or config.preview)
    if not enabled and all(retired_note(prefix) is not None for prefix in selected):
        return enabled  # only retired rules selected: a clean run, with the note above
    if not enabled:
        where = f" (with {display_path(config.path, cwd)})" if config.path else ""
        raise click.UsageError("--select and --ignore leave no rule enabled" + where)
    return enabled


def _note_retired(options: Options, config: Config, selected: tuple[str, ...], ignored: tuple[str, ...], cwd: Path) -> None:
    """A note, never an error, for a retired rule named in --select or
    --ignore (or the configuration's select or ignore)."""
    if options.quiet:
        return
    for option, prefixes, given in (("--select", selected, options.select), ("--ignore", ignored, options.ignore)):
        where = option if given is not None else f"{option[2:]} in {display_path(config.path, cwd) if config.path else 'the configuration'}"
        for prefix in prefixes:
            note = retired_note(prefix)
            if note is not None:
                click.echo(f"cudalint: {where}: {note}", err=True)


def _load_knowledge(config: Config, options: Options) -> Knowledge:
    try:
        return load_knowledge(config.rules + tuple(options.knowledge_files))
    except KnowledgeError as error:
        _fail(str(error))


def _load_baseline(path: Path | None) -> Baseline | None:
    if path is None:
        return None
    try:
        return Baseline.load(path, str(path))
    except BaselineError as error:
        _fail(str(error))


def _inputs(options: Options, config: Config, cwd: Path) -> tuple[list[Path], list[Path], list]:
    """The files the patterns name, less the excluded ones; the other files
    of the packages of files named one by one (read, not reported: a staged
    file is judged with its whole package, as a full run judges it); and
    what discovery had to say. A pattern that matches nothing ends the run."""
    try:
        exclude = PathGlobs.compile(cwd, options.excludes) if options.excludes else PathGlobs.compile(config.root, config.exclude)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--exclude") from None
    discovery = discover(list(options.patterns) or ["./..."], cwd, all_modules=options.all_modules)
    if discovery.unmatched:
        for note in discovery.notifications:
            click.echo(safe_line(note.render()), err=True)
        for pattern in discovery.unmatched:
            click.echo(f"cudalint: error: pattern {pattern!r} matches no Go files", err=True)
        if discovery.nested_modules:
            names = ", ".join(display_path(m, cwd) for m in discovery.nested_modules[:5])
            click.echo(
                f"cudalint: note: directories with their own go.mod are separate modules and are not walked "
                f"({names}); run cudalint inside them, name them (cudalint {names.split(', ')[0]}/...), "
                f"or analyse every module of the tree with --all-modules",
                err=True,
            )
        sys.exit(EXIT_ERROR)
    # Excluded files are dropped even when named: the pre-commit hook names
    # every staged file, and a pattern whose files are all excluded is fine.
    files = [path for path in discovery.files if exclude.match(path) is None]
    if not files and not options.quiet:
        _nothing_analysed(discovery, exclude, config, options.excludes, cwd)
    if discovery.nested_modules and not options.all_modules and not options.quiet:
        _note_nested_modules(discovery.nested_modules, cwd)
    context = [path for path in discovery.context if exclude.match(path) is None]
    return files, context, list(discovery.notifications)


def _note_nested_modules(modules: list[Path], cwd: Path) -> None:
    """Once per run: the directories ./... left out because they hold their
    own go.mod (the go command's meaning), and how to include them."""
    names = [display_path(module, cwd) for module in modules]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    count = len(names)
    click.echo(safe_line(
        f"cudalint: note: {count} director{'ies' if count != 1 else 'y'} with {'their' if count != 1 else 'its'} own go.mod "
        f"{'are' if count != 1 else 'is a'} separate module{'s' if count != 1 else ''}, not analysed ({shown}); "
        f"--all-modules analyses every module of the tree"
    ), err=True)


def _write_baseline(options: Options, result: Result, cwd: Path, ran: dict[Path, frozenset[str]]) -> NoReturn:
    """Record the findings; an existing baseline's entries this run could not
    have reproduced (about files it did not analyse, or rules that did not run
    on them) are kept, so a run over some files or rules never shrinks it."""
    target = options.write_baseline
    kept: list[dict] = []
    if target.is_file():
        try:
            kept = Baseline.load(target, str(target)).entries_outside(ran, cwd)
        except BaselineError:
            kept = []  # not a baseline: replaced whole
    try:
        _write_report(target, render_baseline(result.findings, target, cwd, __version__, kept))
    except OSError as error:
        _fail(f"cannot write {target}: {error.strerror or error}")
    if not options.quiet:
        for note in result.notifications:
            click.echo(safe_line(note.render()), err=True)
        count = len(result.findings)
        click.echo(f"cudalint: wrote {count} finding{'s' if count != 1 else ''} to the baseline {target}", err=True)
    sys.exit(EXIT_ERROR if result.internal_errors else EXIT_CLEAN)


def _report(
    options: Options, config: Config, rules: list, result: Result, stale: int, cwd: Path, retired_notes: list[Finding],
) -> None:
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
        _write_report(path, text)
    except OSError as error:
        _fail(f"cannot write {path}: {error.strerror or error}")
    if not options.quiet:
        count = len(result.findings)
        click.echo(
            f"cudalint: wrote the {fmt} report to {path}: {count} finding{'s' if count != 1 else ''}, "
            f"{len(result.notifications)} notification{'s' if len(result.notifications) != 1 else ''}",
            err=True,
        )


_RANK = {"note": 0, "warning": 1, "error": 2}


def _levels(config: Config, rules: list) -> dict[str, str]:
    """Each rule's level after the configuration."""
    return {rule.id: config.level_for(rule.id, rule.level).value for rule in rules}


def _show_diff(options: Options, result: Result, cwd: Path, files: list[Path], gate: Gate) -> NoReturn:
    """--diff: the unified diff of the fixes `--fix` would write, for the
    findings the run reports (not baselined ones, nor ones outside the
    --new-from change); exit 1 if there is one, 0 if not. A fix for a file
    --fix would not write is left out, with the reason."""
    plan = fixes.plan(gate.reported(result.findings, cwd), options.unsafe_fixes)
    analysed, root = _fixable(files, cwd)
    texts = []
    for path, edits in sorted(plan.edits.items()):
        try:
            target = rewrite.target(path, analysed, root)
            old = target.read_bytes()
        except rewrite.Refused as why:
            click.echo(safe_line(f"cudalint: {path} {why}: no fix shown"), err=True)
            continue
        except OSError as error:
            _fail(f"cannot read {path}: {error.strerror or error}")
        new = fixes.apply(old, edits)
        if new is not None and new != old:
            texts.append(fixes.unified_diff(path, old, new))
    # Like the findings: 1 if there is a fix to make, unless --exit-zero.
    status = EXIT_FINDINGS if texts and not options.exit_zero else EXIT_CLEAN
    pipestatus.announce(EXIT_ERROR if result.internal_errors else status)
    click.echo("".join(texts), nl=False)
    if not options.quiet:
        click.echo(f"cudalint: {plan.fixes} fix{'es' if plan.fixes != 1 else ''} in {len(texts)} file{'s' if len(texts) != 1 else ''}", err=True)
    sys.exit(EXIT_ERROR if result.internal_errors else status)


# Rounds of --fix: fixes that overlapped wait for the next round.
_FIX_ROUNDS = 4


def _fixable(files: list[Path], cwd: Path) -> tuple[dict[str, Path], Path]:
    """The files a fix may name, by the path findings display, and the root
    they must lie under."""
    return {display_path(path, cwd): path for path in files}, _analysed_root(files, cwd)


def _fix(
    options: Options, result: Result, cwd: Path, files: list[Path], run_analysis: Callable[[], Result], gate: Gate,
) -> Result:
    """--fix: write the fixes, re-analyse, and again while fixes applied
    (overlapping ones wait a round), up to a bound; what remains is reported.
    A file is written only as rewrite.py allows (one of the analysed files,
    under the root, unchanged since it was read...); if the run stops after
    writing, it says which files it rewrote. Only the findings the run
    reports are fixed (the baseline and the --new-from change apply; the
    change is read again after each round, since fixes move lines)."""
    analysed, root = _fixable(files, cwd)
    rewritten: list[str] = []
    total = 0
    fixed: list[Finding] = []  # for --show-fixes
    writing: tuple[str, list] | None = None  # the file being written, and its edits
    try:
        for _ in range(_FIX_ROUNDS):
            plan = fixes.plan(gate.reported(result.findings, cwd), options.unsafe_fixes)
            written = 0
            for path, edits in sorted(plan.edits.items()):
                writing = (path, edits)
                if _rewrite(path, edits, analysed, root):
                    written += 1
                    fixed += [finding for finding in plan.fixed if finding.path == path]
                    if path not in rewritten:
                        rewritten.append(path)
                writing = None
            if not written:
                if any(fixes.changed_since_analysed(cwd / path, edits) for path, edits in plan.edits.items()):
                    # Another run or an editor changed a file meanwhile (it
                    # was not written): report what the files hold now.
                    result = run_analysis()
                    gate.refresh()
                break
            total += plan.fixes
            # What the cache had to say (an entry dropped) stays said.
            said = [note for note in result.notifications if note.kind is NotificationKind.CACHE]
            result = run_analysis()
            gate.refresh()
            result.notifications += [note for note in said if note not in result.notifications]
    except BaseException:
        # Stopped inside a write: the file may be replaced already although
        # _rewrite never returned (a signal after the rename).
        if writing is not None and writing[0] not in rewritten and fixes.changed_since_analysed(cwd / writing[0], writing[1]):
            rewritten.append(writing[0])
        _say_rewritten(rewritten)
        raise
    if not options.quiet:
        click.echo(f"cudalint: fixed {total} finding{'s' if total != 1 else ''}", err=True)
        if options.show_fixes:
            for line in fixes.summary(fixed, {rule.id: rule.name for rule in all_rules()}).splitlines():
                click.echo(safe_line(line), err=True)
    return result


def _rewrite(path: str, edits: list, analysed: dict[str, Path], root: Path) -> bool:
    """One file's edits: True if it was written; a refusal is said, an I/O
    error ends the run."""
    try:
        return rewrite.rewrite(rewrite.target(path, analysed, root), edits)
    except rewrite.Refused as why:
        click.echo(safe_line(f"cudalint: {path} {why}: not fixed"), err=True)
        return False
    except OSError as error:
        _fail(f"cannot write {path}: {error.strerror or error}")


def _say_rewritten(rewritten: list[str]) -> None:
    """Before a run that wrote fixes stops without a report: what it wrote."""
    if rewritten:
        count = len(rewritten)
        click.echo(safe_line(
            f"cudalint: --fix rewrote {count} file{'s' if count != 1 else ''} before it stopped: {', '.join(rewritten)}"
        ), err=True)


def _check_wants(result: Result, files: list[Path], cwd: Path) -> NoReturn:
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


def _progress_after(options: Options) -> float | None:
    """Progress only for a person at a terminal: never in CI logs, pipes,
    with --quiet or on a dumb terminal; after a second of work."""
    if options.quiet or os.environ.get("CI") or os.environ.get("TERM") == "dumb" or not sys.stderr.isatty():
        return None
    return float(os.environ.get("CUDALINT_PROGRESS_AFTER", "1"))


def _analysed_root(files: list[Path], cwd: Path) -> Path:
    """The tree a run is about: the current directory when the files are
    below it, else the root of the repository (or the common directory)
    that holds them."""
    if all(cwd in path.parents for path in files):
        return cwd
    common = Path(os.path.commonpath([str(path.parent) for path in files]))
    return repository_root(common)


def _default_cache(files: list[Path], cwd: Path) -> Path:
    """The cache lives with the analysed tree."""
    return _analysed_root(files, cwd) / DEFAULT_CACHE


def _gate(options: Options, baseline: Baseline | None, cwd: Path) -> Gate:
    """What the run reports (and fixes): the baseline and the --new-from
    change, read now so that an unknown revision fails before the analysis."""
    whole = options.whole_files
    if options.new_from_rev is not None:
        load = lambda: since_revision(options.new_from_rev, cwd, whole)  # noqa: E731
    elif options.new_from_merge_base is not None:
        load = lambda: since_merge_base(options.new_from_merge_base, cwd, whole)  # noqa: E731
    elif options.new_from_patch is not None:
        load = lambda: from_patch(options.new_from_patch, cwd, whole)  # noqa: E731
    else:
        return Gate(baseline)

    def checked():
        try:
            return load()
        except ChangesError as error:
            _fail(str(error))

    gate = Gate(baseline, checked)
    gate.changes  # noqa: B018 - fail now, not after the analysis
    return gate


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


# -- what users of the peers expect (issue 24) ---------------------------------


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


def _clean_cache(options: Options, cwd: Path) -> NoReturn:
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


def _show_settings(options: Options, config: Config, cwd: Path) -> NoReturn:
    """--show-settings: for each pattern (a file, a directory, dir/...), the
    configuration that applies and why."""
    pipestatus.announce(EXIT_CLEAN)
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
                loaded[path.resolve()] = load_config(path, [rule.id for rule in all_rules()], display_path(path.resolve(), cwd))
            except ConfigError as error:
                _fail(str(error))
        return loaded[path.resolve()]

    texts = []
    for path in targets:
        applied, why = showsettings.resolve(path, cwd, config, options.config_file, options.isolated, load)
        texts.append(showsettings.render(
            path, cwd, applied, why, all_rules(),
            select=_prefixes("--select", options.select) if options.select is not None else None,
            ignore=_prefixes("--ignore", options.ignore) if options.ignore is not None else None,
            excludes=options.excludes, preview=options.preview, max_same_issues=options.max_same_issues,
        ))
    click.echo("\n".join(texts), nl=False)
    sys.exit(EXIT_CLEAN)


def _add_ignore(options: Options, result: Result, cwd: Path, files: list[Path], digests: dict[Path, str]) -> NoReturn:
    """--add-ignore REASON: a directive above each line with a reported
    finding, written as --fix writes (rewrite.py); exit 0 (2 when the
    analysis failed). What was not written is said, as --fix says it."""
    analysed, root = _fixable(files, cwd)
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


def _cap_same_issues(options: Options, config: Config, result: Result) -> None:
    """max-same-issues (golangci-lint's): at most N findings of one rule
    with the same message, the first ones in path order; off (0) by default.
    The findings left out are counted in a note; the exit status is that of
    the findings kept (the same as without the cap, since N >= 1 remain)."""
    limit = options.max_same_issues if options.max_same_issues is not None else config.max_same_issues
    if not limit:
        return
    seen: Counter[tuple[str, str]] = Counter()
    kept = []
    for finding in result.findings:
        key = (finding.rule_id, finding.template or finding.message)
        seen[key] += 1
        if seen[key] <= limit:
            kept.append(finding)
    dropped = len(result.findings) - len(kept)
    result.findings = kept
    if dropped and not options.quiet:
        rules = sorted({key[0] for key, count in seen.items() if count > limit})
        click.echo(
            f"cudalint: note: {dropped} more finding{'s' if dropped != 1 else ''} with the same rule and message left out "
            f"by max-same-issues = {limit} ({', '.join(rules)}); --max-same-issues 0 shows them all",
            err=True,
        )
