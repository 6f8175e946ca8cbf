"""One package: the pipeline over the Go files of one directory.

read -> prefilter -> parse -> functions -> cfg -> rules (reading the
analyses they require, computed once per package on demand) -> findings
(per-file ignores, inline suppressions, fingerprints), and the facts the
package exports for its importers. Every stage's failure on one input
becomes a notification for that input; the run goes on.
"""

from __future__ import annotations

import threading
import traceback
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import TypeVar

from cudalint import prefilter, suppressions
from cudalint.cfg import build_package_cfgs
from cudalint.checks import CHECKS, FACT_ANALYSES, all_rules
from cudalint.driver.dependencies import Dependency, DependencyFacts
from cudalint.driver.settings import Settings
from cudalint.findings import Finding, Notification, NotificationKind, Result, assign_fingerprints
from cudalint.framework import AnalysisFailure, ImportedFacts, ObjectFact, PackageRun, Pass, export_facts, requirements, start_run
from cudalint.functions import SYNTAX_ERROR, Package, collect_packages
from cudalint.knowledge import Knowledge
from cudalint.module import Modules, imports
from cudalint.parse import ParsedFile, parse
from cudalint.source import SourceFile, display_path, read_source

T = TypeVar("T")

# Statement nesting is walked recursively (as a compiler does); a thread with a
# large stack lets MAX_NESTING be generous without risking the interpreter.
_STACK_BYTES = 256 * 1024 * 1024


@dataclass
class Context:
    """What the jobs of one process share: the run's settings and
    knowledge, the prefilter's needles, the modules of directories and the
    facts of dependencies made from their files."""

    settings: Settings
    knowledge: Knowledge
    needles: tuple[bytes, ...]
    modules: Modules
    dependencies: DependencyFacts

    @classmethod
    def of(cls, settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...]) -> Context:
        modules = Modules()
        return cls(settings, knowledge, needles, modules, DependencyFacts(knowledge, modules))


def in_deep_stack(function: Callable[..., T], *args) -> T:
    """function(*args) in a thread with a large stack."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, function(*args)))
        except BaseException as error:  # re-raised in the calling thread
            outcome.append((False, error))

    previous = threading.stack_size()
    threading.stack_size(_STACK_BYTES)
    try:
        thread = threading.Thread(target=target, name="cudalint-analysis")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def internal_error(path: str, what: str, error: BaseException, debug: bool, line: int | None = None) -> Notification:
    message = f"internal error in {what}: {type(error).__name__}: {error}; results are incomplete"
    if debug:
        message += "\n" + "".join(traceback.format_exception(type(error), error, error.__traceback__))
    else:
        message += " (run with --debug for the traceback)"
    return Notification(NotificationKind.INTERNAL_ERROR, path, message, line=line, level="error")


def guarded(
    paths: list[Path], context: Context, reads: list[SourceFile | Notification] | None = None,
    dependencies: list[Dependency] | None = None, export: bool = True, matches: bool | None = None,
    lend: Callable[[list[ObjectFact]], None] | None = None,
) -> Result:
    """analyze_directory, with its crash as the directory's internal error."""
    try:
        return analyze_directory(paths, context, reads, dependencies, export, matches, lend)
    except Exception as error:  # noqa: BLE001 - last line of defence for one directory
        result = Result(internal_errors=1)
        where = display_path(paths[0].parent, context.settings.base)
        result.notifications.append(internal_error(where, "the analysis of this directory", error, context.settings.debug))
        return result


def analyze_directory(
    paths: list[Path], context: Context, reads: list[SourceFile | Notification] | None = None,
    dependencies: list[Dependency] | None = None, export: bool = True, matches: bool | None = None,
    lend: Callable[[list[ObjectFact]], None] | None = None,
) -> Result:
    """Analyse the Go files of one directory (one or two packages); `reads`:
    the files as read, one per path (else they are read here);
    `dependencies`: what the packages it imports lend it, bottom-up (their
    facts, or where those are unknown their files, from which the facts
    are made here). With `export`, the result carries the facts of the
    package, for its importers. `matches`: the prefilter's verdict on these
    files, where the caller made it already. `lend` receives the package's
    exported facts as soon as they are made, before its rules run (its
    importers need nothing else from it)."""
    settings, knowledge = context.settings, context.knowledge
    result = Result()
    sources: list[SourceFile] = []
    for index, path in enumerate(paths):
        read = reads[index] if reads is not None else read_source(path, display_path(path, settings.base), settings.overlay)
        if isinstance(read, Notification):
            result.notifications.append(read)
        else:
            sources.append(read)
    if not sources:
        return result
    imported = context.dependencies.imported_by(dependencies) if dependencies else ImportedFacts()
    # A package that calls a dependency's wrapper is analysed even where no
    # API name occurs in it: the wrapper is the API there.
    wraps = imported.concern_callers((s.data for s in sources), imports)
    own = paths[0].parent
    module = context.modules.of(own)
    import_path = module.import_path(own) if module is not None else None
    # The package a knowledge file describes calls its own API unqualified.
    described = import_path is not None and import_path in knowledge.import_paths
    if settings.prefilter and not wraps and not described and not (
        matches if matches is not None else prefilter.may_match((s.data for s in sources), context.needles)
    ):
        result.files_skipped += len(sources)
        if export and import_path is not None:
            # Nothing to report here, but its importers need its summary (a
            # function that never returns needs no API name): made once, here.
            result.facts = context.dependencies.summary(own, sources, imported)
            result.exports_facts = True
        return result
    parsed_files = []
    for source in sources:
        parsed, notes = parse(source)
        parsed_files.append(parsed)
        result.notifications.extend(notes)
    result.files_analysed += len(parsed_files)
    directory = display_path(paths[0].parent, settings.base)
    named = {i.path for parsed in parsed_files for i in parsed.imports if knowledge.named_bindings.word_of(i.path)}
    try:
        package_names = {**context.modules.declared_names(own, {i.path for parsed in parsed_files for i in parsed.imports}), **knowledge.package_names}
        packages = collect_packages(
            parsed_files, directory, package_names, import_path=import_path, c_include=settings.c_include,
            go_version=module.go_version if module is not None else None,
            named_bindings=context.modules.without_source(own, named) if named else frozenset(),
        )
    except Exception as error:  # noqa: BLE001 - isolate one package's crash
        result.notifications.append(internal_error(directory, "the functions stage", error, settings.debug))
        result.internal_errors += 1
        return result
    result.exports_facts = export and import_path is not None
    # The summary first: the importers wait for it, not for this package's rules.
    runs: list[tuple[Package, PackageRun | None]] = []
    # The facts of each package of the directory by name, for its external
    # test package (`x_test` imports `x`, analysed here first: by name).
    facts_by_name: dict[str, list[ObjectFact]] = {}
    has_external_tests = any(package.import_path is None and package.name.endswith("_test") for package in packages)
    for package in packages:
        tested = facts_by_name.get(package.name.removesuffix("_test")) if package.import_path is None else None
        run = start_package(package, settings, knowledge, result, imported.with_facts(tested) if tested else imported)
        runs.append((package, run))
        if run is not None and package.import_path is not None and (result.exports_facts or has_external_tests):
            facts = facts_by_name[package.name] = _exported(run)
            if result.exports_facts:
                result.facts.extend(facts)
    if lend is not None and result.exports_facts and result.internal_errors == 0:
        lend(list(result.facts))
    for package, run in runs:
        if run is not None:
            check_package(package, run, settings, result)
    _findings_stage(result, parsed_files, settings)
    return result


def _exported(run: PackageRun) -> list[ObjectFact]:
    """The package's facts, read off the run the rules just made (a
    failure here costs the importers its facts, nothing else: they make
    them from the files)."""
    try:
        return export_facts(run, FACT_ANALYSES)
    except Exception:  # noqa: BLE001 - the rules' own failures are reported already
        return []


_TROUBLE = frozenset({NotificationKind.SYNTAX_ERROR, NotificationKind.TOO_COMPLEX, NotificationKind.INTERNAL_ERROR})


def _findings_stage(result: Result, parsed_files: list[ParsedFile], settings: Settings) -> None:
    """Per file: drop the rules its per-file-ignores disable, apply its
    suppression directives (reporting bad ones as CL001) and fingerprint
    what is left, suppressed findings included, so that a fingerprint does
    not depend on which findings are shown."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in result.findings:
        by_path[finding.path].append(finding)
    # Where the analysis was incomplete, a directive may look unused when
    # its finding was simply not computed.
    troubled = {note.path for note in result.notifications if note.kind in _TROUBLE}
    complete = result.internal_errors == 0
    rule_ids = [rule.id for rule in all_rules()]
    findings: list[Finding] = []
    for parsed in parsed_files:
        enabled = settings.enabled_for(parsed.source.path)
        mine = [finding for finding in by_path.pop(parsed.display, []) if finding.rule_id in enabled]
        reported, suppressed = suppressions.apply(
            mine, parsed, rule_ids, enabled, report_unused=complete and parsed.display not in troubled,
        )
        findings += assign_fingerprints(reported + suppressed)
    for rest in by_path.values():  # not expected: every finding is in a parsed file
        findings += assign_fingerprints(rest)
    result.findings = [finding for finding in findings if finding.suppression is None]
    result.suppressed = [finding for finding in findings if finding.suppression is not None]


def _unanalysed(package: Package, run: PackageRun, result: Result) -> None:
    """Functions a rule wanted to analyse but could not (nesting too deep,
    too large): one notification each, for the outermost. Syntax errors were
    reported per file; functions nothing needed are not mentioned."""
    resolution = package.resolution
    graphs = run.cfgs
    for unit in package.units:
        if unit.syntax_problem is not None and unit.syntax_problem != SYNTAX_ERROR:
            problem = unit.syntax_problem
        elif unit.node in resolution.failed:
            problem = resolution.failed[unit.node]
        else:
            problem = graphs.failures.get(unit)
        if problem is None:
            continue
        if unit.parent is not None and (unit.parent.node in resolution.failed or unit.parent in graphs.failures):
            continue
        result.notifications.append(Notification(
            NotificationKind.TOO_COMPLEX, unit.file.display,
            f"function {unit.name} {problem}; not analysed", unit.node.start_point[0] + 1, unit.node.start_point[1] + 1,
        ))


def start_package(
    package: Package, settings: Settings, knowledge: Knowledge, result: Result, imported: ImportedFacts,
) -> PackageRun | None:
    """The package's run (its analyses, computed on demand), unless its
    graphs could not be built (an internal error in `result`)."""
    try:
        return start_run(package, knowledge, settings.enabled, imported)
    except Exception as error:  # noqa: BLE001
        result.notifications.append(internal_error(package.files[0].display, f"package {package.name}", error, settings.debug))
        result.internal_errors += 1
        return None


def check_package(package: Package, run: PackageRun, settings: Settings, result: Result) -> None:
    """Run the enabled rules over one package's run."""
    where = package.files[0].display
    crashed: set[tuple[str, object]] = set()
    for rule in CHECKS:
        if rule.id not in settings.enabled or rule.check is None:
            continue
        pass_ = Pass(run, requirements(rule.requires), rule.id)
        try:
            rule.check(pass_)
        except Exception as error:  # noqa: BLE001
            _crash(result, settings, crashed, rule.id, where, f"package {package.name}", None, error)
            continue
        for unit, error in pass_.crashes:
            _crash(result, settings, crashed, rule.id, unit.file.display, f"function {unit.name}", unit.node.start_point[0] + 1, error)
        result.findings.extend(pass_.findings)
    _unanalysed(package, run, result)


def _crash(
    result: Result, settings: Settings, crashed: set, rule_id: str, path: str, where: str, line: int | None, error: BaseException,
) -> None:
    """One notification per crash: an analysis that failed is named once,
    however many rules read its result."""
    if isinstance(error, AnalysisFailure):
        culprit, error = f"analysis {error.analysis.name}", error.error
    else:
        culprit = f"rule {rule_id}"
    # Several rules reading one analysis that crashed on one function crash alike.
    key = (path, where, type(error).__name__, str(error))
    if key in crashed:
        return
    crashed.add(key)
    result.notifications.append(internal_error(path, f"{culprit} on {where}", error, settings.debug, line=line))
    result.internal_errors += 1


def dump_cfgs(files: list[Path], base: Path, knowledge: Knowledge, function: str) -> str:
    """The control-flow graphs of the functions named `function` in these
    files, as text (`cudalint --dump-cfg NAME`): what the rules saw."""
    out: list[str] = []
    for _, group in groupby(sorted(files, key=lambda p: (p.parent.as_posix(), p.name)), key=lambda p: p.parent):
        parsed_files = []
        for path in group:
            read = read_source(path, display_path(path, base))
            if not isinstance(read, Notification):
                parsed_files.append(parse(read)[0])
        if not parsed_files:
            continue
        directory = display_path(parsed_files[0].source.path.parent, base)
        for package in collect_packages(parsed_files, directory, knowledge.package_names):
            graphs = build_package_cfgs(package)
            for unit in package.units:
                graph = graphs.graphs.get(unit) if unit.name == function else None
                if graph is not None:
                    out.append(f"# {unit.file.display}:{unit.node.start_point[0] + 1}\n{graph.format()}")
    return "\n".join(out) if out else f"no function named {function}\n"
