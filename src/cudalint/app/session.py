"""One run of cudalint over a tree, as the command line and the library
(`cudalint.check`) both make it, so that the two cannot disagree:

- the configuration found from the working directory (or named, or none),
  and the nested configurations that own some of the files (pre-commit
  names staged files of several modules, each with its own, as ruff
  resolves one per file);
- the files the patterns name, less the excluded ones, and the other files
  of the packages of files named one by one (read, not reported);
- per group of files, the rules its configuration enables and the API
  knowledge it loads; then the analysis, with the configuration's
  `fixable` / `unfixable`;
- the gate: the baseline and the `--new-from-*` change, which decide what
  the run reports (and so what it fixes);
- the configuration's cap on findings of one rule with one message.

What only the command line does (reports in formats and files, colour,
`--fix` rounds, the runs of their own such as `--write-baseline`, the exit
status) lives beside it in `cudalint.app`. A session says its notes and
warnings through `say`, one line each (the command line writes them to
standard error, the library drops them), and raises `RunError` where the
run cannot go on.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from cudalint.app import replay
from cudalint.app.baseline import Baseline, BaselineError
from cudalint.app.changes import ChangesError, from_patch, since_merge_base, since_revision
from cudalint.app.config import Config, ConfigError, find_config, load_config
from cudalint.app.errors import OptionError, RunError
from cudalint.app.gate import Gate, Outcome, covered
from cudalint.app.inputs import Inputs, read_inputs
from cudalint.app.request import Request
from cudalint.cache import DEFAULT_DIRECTORY as DEFAULT_CACHE
from cudalint.catalog import Rule, select_rules
from cudalint.checks import all_rules
from cudalint.driver import Settings, analyze, default_jobs
from cudalint.findings import Result
from cudalint.fixes import editing
from cudalint.globs import PathGlobs
from cudalint.knowledge import Knowledge, KnowledgeError, load_knowledge
from cudalint.source import display_path, repository_root
from cudalint.suppressions import retired_note


@dataclass(frozen=True)
class Group:
    """Files that share a configuration: those reported, and those read
    only for their package's sake."""

    config: Config
    files: list[Path]
    context: list[Path]


def rule_prefixes(option: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """`--select CL1,CL301 --select CL5` as prefixes."""
    prefixes = tuple(part.strip().upper() for value in values for part in value.split(",") if part.strip())
    if not prefixes:
        raise OptionError("expects one or more rule-ID prefixes, e.g. CL3 or CL101,CL201", option)
    return prefixes


def _check_prefixes(option: str, prefixes: tuple[str, ...], rules: list[Rule]) -> None:
    known = [rule.id for rule in rules]
    for prefix in prefixes:
        if not any(rule_id.startswith(prefix) for rule_id in known):
            raise OptionError(f"{prefix!r} matches no rule (see --list-rules)", option)


def _silent(line: str) -> None:
    """The library's `say`: notes and warnings are the command line's."""


class Session:
    """A run, step by step: `Session(...)` reads the configuration; then
    `read_inputs`, `group`, `open_gate`, `analyse`, `complete`, `gate_result`
    and `cap_same_issues`, in this order (`check` makes them all). The
    command line does its own work between the steps (it checks that no
    report replaces an analysed file before anything is analysed)."""

    def __init__(self, request: Request, cwd: Path, say: Callable[[str], None] = _silent):
        self.request = request
        self.cwd = cwd
        self.say = say
        self.rules = all_rules()
        self.config = self._load_config()
        self.inputs = Inputs()
        self.groups: list[Group] = []
        self.gate = Gate()
        # Each reported file: the rules that ran on it (what a baseline can say about it).
        self.ran: dict[Path, frozenset[str]] = {}

    def check(self) -> Result:
        """Every step, as `cudalint ./...` takes them: what the run reports."""
        self.read_inputs()
        self.group()
        self.open_gate()
        result = self.complete(self.analyse())
        self.gate_result(result)
        self.cap_same_issues(result)
        return result

    # -- the configuration ----------------------------------------------------

    def _load_config(self) -> Config:
        request, cwd = self.request, self.cwd
        if request.isolated:
            return Config()
        try:
            path = request.config_file if request.config_file is not None else find_config(cwd)
            if path is None:
                return Config()
            config = self.load_config(path)
        except ConfigError as error:
            raise RunError(str(error)) from None
        if request.config_file is None and not _inside(path, repository_root(cwd)):
            self.say(
                f"cudalint: note: using the configuration file {display_path(path.resolve(), cwd)}, which is outside "
                f"this repository ({repository_root(cwd)}); --isolated ignores it"
            )
        return config

    def load_config(self, path: Path) -> Config:
        """One configuration file, checked against the rules (ConfigError)."""
        return load_config(path, [rule.id for rule in self.rules], display_path(path.resolve(), self.cwd))

    # -- the files ------------------------------------------------------------

    def read_inputs(self) -> Inputs:
        """The files the patterns name (Unmatched where one names none)."""
        self.inputs = read_inputs(self.request, self.config, self.cwd, self.say)
        return self.inputs

    def group(self) -> list[Group]:
        """The files by the configuration that applies to each: the nearest
        one at or above its directory, where that is nested below the
        configuration found from the current directory. Excludes are each
        configuration's own, unless the request names some. With one group,
        its configuration is the run's."""
        request, config, inputs = self.request, self.config, self.inputs
        whole = [Group(config, inputs.files, inputs.context)]
        if request.config_file is not None or request.isolated:
            self.groups = whole
            return self.groups
        nearest: dict[Path, Config] = {}
        loaded: dict[Path, Config] = {}
        located: dict[Path, Path | None] = {}

        def config_of(directory: Path) -> Config:
            if directory not in nearest:
                path = find_config(directory, located)
                if path is None or (config.path is not None and path.resolve() == config.path.resolve()):
                    found = config
                elif config.path is not None and config.path.resolve().parent not in path.resolve().parents:
                    found = config  # not nested below the configuration in force
                else:
                    key = path.resolve()
                    if key not in loaded:
                        try:
                            loaded[key] = self.load_config(path)
                        except ConfigError as error:
                            raise RunError(str(error)) from None
                    found = loaded[key]
                nearest[directory] = found
            return nearest[directory]

        groups: dict[int, Group] = {}
        for path, is_context in [(path, False) for path in inputs.files] + [(path, True) for path in inputs.context]:
            owner = config_of(path.parent)
            if owner is not config and not request.excludes and PathGlobs.compile(owner.root, owner.exclude).match(path) is not None:
                continue
            group = groups.setdefault(id(owner), Group(owner, [], []))
            (group.context if is_context else group.files).append(path)
        self.groups = [group for group in groups.values() if group.files] or whole
        if len(self.groups) == 1:
            self.config = self.groups[0].config  # the files' own configuration (one nested module), or the one found here
        return self.groups

    # -- what is reported -------------------------------------------------------

    def open_gate(self) -> Gate:
        """The baseline and the --new-from change, read now so that an
        unknown revision fails before the analysis."""
        request, cwd = self.request, self.cwd
        baseline = None
        if request.baseline_file is not None:
            try:
                baseline = Baseline.load(request.baseline_file, str(request.baseline_file))
            except BaselineError as error:
                raise RunError(str(error)) from None
        whole = request.whole_files
        if request.new_from_rev is not None:
            load = lambda: since_revision(request.new_from_rev, cwd, whole)  # noqa: E731
        elif request.new_from_merge_base is not None:
            load = lambda: since_merge_base(request.new_from_merge_base, cwd, whole)  # noqa: E731
        elif request.new_from_patch is not None:
            load = lambda: from_patch(request.new_from_patch, cwd, whole)  # noqa: E731
        else:
            self.gate = Gate(baseline)
            return self.gate

        def checked():
            try:
                return load()
            except ChangesError as error:
                raise RunError(str(error)) from None

        self.gate = Gate(baseline, checked)
        self.gate.changes  # noqa: B018 - fail now, not after the analysis
        return self.gate

    def gate_result(self, result: Result) -> Outcome:
        """Filter the result in place: baselined findings become suppressed
        ones, findings outside the change are left out (and counted in a
        note)."""
        outcome = self.gate.apply(result, self.cwd, self.ran)
        left_out = self.gate.left_out_note(outcome)
        if left_out and not self.request.quiet:
            self.say(left_out)
        return outcome

    def covered(self, result: Result) -> dict[Path, Collection[str]]:
        """The reported files with the rules that ran on each, less those
        the run could not analyse: what a baseline written now speaks for."""
        return covered(self.ran, result, self.cwd)

    def cap_same_issues(self, result: Result) -> None:
        """max-same-issues (golangci-lint's): at most N findings of one rule
        with the same message, the first ones in path order; off (0) by
        default. The findings left out are counted in a note; the exit
        status is that of the findings kept (the same as without the cap,
        since N >= 1 remain)."""
        request = self.request
        limit = request.max_same_issues if request.max_same_issues is not None else self.config.max_same_issues
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
        if dropped and not request.quiet:
            rules = sorted({key[0] for key, count in seen.items() if count > limit})
            self.say(
                f"cudalint: note: {dropped} more finding{'s' if dropped != 1 else ''} with the same rule and message left out "
                f"by max-same-issues = {limit} ({', '.join(rules)}); --max-same-issues 0 shows them all"
            )

    # -- the analysis -------------------------------------------------------------

    def analyse(self) -> Result:
        """Each group analysed with its configuration (rules, per-file
        ignores, knowledge, C headers, fixable rules); the findings sorted.
        Again after --fix wrote files."""
        request = self.request
        found = Result()
        for group in self.groups:
            settings = Settings(
                base=self.cwd, enabled=self.enabled_rules(group.config), jobs=request.jobs or default_jobs(),
                debug=request.debug, per_file=group.config.per_file(),
                cache_dir=None if request.no_cache else (request.cache_dir or self.analysed_root() / DEFAULT_CACHE),
                reported=frozenset(group.files) if group.context else None,
                progress_after=request.progress_after, c_include=group.config.c_include, overlay=request.overlay,
            )
            self.ran.update((path, settings.enabled_for(path)) for path in group.files)
            analysed = analyze(group.files + group.context, settings, self.knowledge(group.config))
            if analysed.analysed_elsewhere:
                replay.not_replayable("worker processes analysed packages")
            if any(finding.fixes for finding in analysed.findings):
                # As the cache never serves fixes, no record does (`_trusted`).
                replay.not_replayable("its findings carry fixes")
            found.extend(editing.restrict(analysed, group.config.is_fixable))  # fixable / unfixable
        found.sort()
        return found

    def complete(self, result: Result) -> Result:
        """What discovery had to say goes first among the notifications."""
        result.notifications[:0] = self.inputs.notifications
        result.sort()
        return result

    def enabled_rules(self, config: Config) -> frozenset[str]:
        """The rules a configuration enables after the request's --select
        and --ignore (which replace its lists), with a note for a retired
        rule either names."""
        request = self.request
        selected = rule_prefixes("--select", request.select) if request.select is not None else config.select or ("CL",)
        ignored = rule_prefixes("--ignore", request.ignore) if request.ignore is not None else config.ignore or ()
        _check_prefixes("--select", selected, self.rules)
        _check_prefixes("--ignore", ignored, self.rules)
        self._note_retired(config, selected, ignored)
        enabled = select_rules(self.rules, selected, ignored, preview=request.preview or config.preview)
        if not enabled and all(retired_note(prefix) is not None for prefix in selected):
            return enabled  # only retired rules selected: a clean run, with the note above
        if not enabled:
            where = f" (with {display_path(config.path, self.cwd)})" if config.path else ""
            raise OptionError("--select and --ignore leave no rule enabled" + where)
        return enabled

    def _note_retired(self, config: Config, selected: tuple[str, ...], ignored: tuple[str, ...]) -> None:
        """A note, never an error, for a retired rule named in --select or
        --ignore (or the configuration's select or ignore)."""
        request = self.request
        if request.quiet:
            return
        for option, prefixes, given in (("--select", selected, request.select), ("--ignore", ignored, request.ignore)):
            where = option if given is not None else f"{option[2:]} in {display_path(config.path, self.cwd) if config.path else 'the configuration'}"
            for prefix in prefixes:
                note = retired_note(prefix)
                if note is not None:
                    self.say(f"cudalint: {where}: {note}")

    def knowledge(self, config: Config) -> Knowledge:
        """The shipped knowledge, the configuration's files and the request's."""
        try:
            return load_knowledge(config.rules + tuple(self.request.knowledge_files))
        except KnowledgeError as error:
            raise RunError(str(error)) from None

    # -- where things are -------------------------------------------------------

    def analysed_root(self) -> Path:
        """The tree a run is about: the current directory when the files are
        below it, else the root of the repository (or the common directory)
        that holds them. The cache lives there, and fixes stay inside it."""
        files, cwd = self.inputs.files, self.cwd
        if all(cwd in path.parents for path in files):
            return cwd
        common = Path(os.path.commonpath([str(path.parent) for path in files]))
        return repository_root(common)

    def writable(self) -> tuple[dict[str, Path], Path]:
        """The files a fix may name, by the path findings display, and the
        root they must lie under."""
        return {display_path(path, self.cwd): path for path in self.inputs.files}, self.analysed_root()


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
        return True
    except (ValueError, OSError):
        return False
