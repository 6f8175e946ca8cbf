"""The driver: runs the pipeline stages over the discovered files.

discover -> prefilter -> parse -> functions -> cfg -> rules (reading the
analyses they require, computed once per package on demand) -> findings
(per-file ignores, inline suppressions, fingerprints). Work is split
per directory (a package is the unit that facts such as "never returns"
are computed over) and spread over worker processes. Every stage's failure on
one input becomes a notification for that input; the run goes on.
"""

from __future__ import annotations

import multiprocessing
import hashlib
import os
import signal
import sys
import threading
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any, TypeVar

from cudalint import prefilter, suppressions
from cudalint.cache import CacheRefused, ResultCache
from cudalint.cfg import PackageCFGs, build_package_cfgs
from cudalint.checks import CHECKS, all_rules
from cudalint.globs import PerFileIgnores
from cudalint.analyses.summaries import ExportedSummary, Summaries, imported_exits, summaries_of, summarise
from cudalint.discover import package_files, printable
from cudalint.findings import Finding, Notification, NotificationKind, Result, assign_fingerprints
from cudalint.module import in_module_imports, module_of
from cudalint.progress import Progress
from cudalint.framework import AnalysisFailure, PackageRun, Pass, requirements
from cudalint.functions import SYNTAX_ERROR, Package, collect_packages
from cudalint.knowledge import Knowledge
from cudalint.parse import ParsedFile, parse
from cudalint.cside import headers_signature, local_c_files, read_c
from cudalint.source import SourceFile, display_path, read_source

T = TypeVar("T")

# Statement nesting is walked recursively (as a compiler does); a thread with a
# large stack lets MAX_NESTING be generous without risking the interpreter.
_STACK_BYTES = 256 * 1024 * 1024
_RECURSION_LIMIT = 20000
_PARALLEL_THRESHOLD = 32


@dataclass(frozen=True)
class Settings:
    base: Path
    enabled: frozenset[str]
    jobs: int = 1
    debug: bool = False
    # Off only in benchmarks and crash checks that must run every stage on every file.
    prefilter: bool = True
    # Rules disabled for some files by the configuration's per-file-ignores.
    per_file: PerFileIgnores | None = None
    # Where results are cached (None: no cache).
    cache_dir: Path | None = None
    # The files to report on, when some files are read only for their
    # package's sake (None: report on every file read).
    reported: frozenset[Path] | None = None
    # Show progress on standard error (a terminal, not CI) after this many
    # seconds; None: never.
    progress_after: float | None = None
    # Directories of C headers besides the usual CUDA locations (configuration).
    c_include: tuple[Path, ...] = ()

    def enabled_for(self, path: Path) -> frozenset[str]:
        return self.per_file.enabled_for(path, self.enabled) if self.per_file else self.enabled


def _in_deep_stack(function: Callable[..., T], *args) -> T:
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


def _internal_error(path: str, what: str, error: BaseException, debug: bool, line: int | None = None) -> Notification:
    message = f"internal error in {what}: {type(error).__name__}: {error}; results are incomplete"
    if debug:
        message += "\n" + "".join(traceback.format_exception(type(error), error, error.__traceback__))
    else:
        message += " (run with --debug for the traceback)"
    return Notification(NotificationKind.INTERNAL_ERROR, path, message, line=line, level="error")


def analyze_directory(
    paths: list[Path], settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...],
    reads: list[SourceFile | Notification] | None = None, known: Summaries | None = None, summarise_own: bool = True,
) -> Result:
    """Analyse the Go files of one directory (one or two packages); `reads`:
    the files already read, one per path (else they are read here); `known`:
    summaries of dependencies already made by their own analysis (the others
    are made here from their files). The result carries the summaries of
    the package's own exported functions, for its importers."""
    result = Result()
    sources: list[SourceFile] = []
    dependencies: dict[Path, list[SourceFile]] = {}
    own = paths[0].parent
    for index, path in enumerate(paths):
        read = reads[index] if reads is not None else read_source(path, display_path(path, settings.base))
        if path.parent != own:
            # A package of the module this one imports: read for its summaries.
            if not isinstance(read, Notification):
                dependencies.setdefault(path.parent, []).append(read)
        elif isinstance(read, Notification):
            result.notifications.append(read)
        else:
            sources.append(read)
    if not sources:
        return result
    summaries = _summaries(dependencies, knowledge, known or {}) if dependencies else {}
    # A package that calls a dependency's wrapper is analysed even where no
    # API name occurs in it: the wrapper is the API there.
    wraps = any(summaries.values())
    module = module_of(own)
    import_path = module.import_path(own) if module is not None else None
    # The package a knowledge file describes calls its own API unqualified.
    described = import_path is not None and import_path in knowledge.import_paths
    if settings.prefilter and not wraps and not described and not prefilter.may_match((s.data for s in sources), needles):
        result.files_skipped += len(sources)
        return result
    parsed_files = []
    for source in sources:
        parsed, notes = parse(source)
        parsed_files.append(parsed)
        result.notifications.extend(notes)
    result.files_analysed += len(parsed_files)
    directory = display_path(paths[0].parent, settings.base)
    try:
        packages = collect_packages(parsed_files, directory, knowledge.package_names)
    except Exception as error:  # noqa: BLE001 - isolate one package's crash
        result.notifications.append(_internal_error(directory, "the functions stage", error, settings.debug))
        result.internal_errors += 1
        return result
    result.summarised = summarise_own and import_path is not None
    for package in packages:
        package.c_include = settings.c_include
        package.go_version = module.go_version if module is not None else None
        if not package.name.endswith("_test"):
            package.import_path = import_path
        run = _analyze_package(package, settings, knowledge, result, summaries)
        if run is not None and result.summarised and not package.name.endswith("_test"):
            result.summaries.extend(_exported(run, import_path))
    _findings_stage(result, parsed_files, settings)
    return result


def _exported(run: PackageRun, import_path: str) -> list[ExportedSummary]:
    """The package's summaries, read off the run the rules just made (a
    failure here costs the importers their summaries, nothing else: they
    make them from the files)."""
    try:
        found = summaries_of(run)
    except Exception:  # noqa: BLE001 - the rules' own failures are reported already
        return []
    return [ExportedSummary(import_path, name, summary) for name, summary in sorted(found.items())]


# Summaries of dependency packages computed in this process, by their bytes.
_SUMMARY_CACHE: dict[tuple, dict] = {}


def _summaries(dependencies: dict[Path, list[SourceFile]], knowledge: Knowledge, known: Summaries) -> Summaries:
    """The summaries of the module's packages a package imports: those the
    parent already has from the dependency's own analysis, else computed
    from the dependency's files and its own imports' summaries (dependencies
    come bottom-up), once per process and content. A dependency that cannot
    be summarised says nothing (its calls stay hand-overs, as before
    summaries)."""
    found: Summaries = {}
    for directory, sources in dependencies.items():
        module = module_of(directory)
        import_path = module.import_path(directory) if module is not None else None
        if import_path is None:
            continue
        if import_path in known:
            if known[import_path]:
                found[import_path] = known[import_path]
            continue
        # Its own imports come before it in every importer's list, the same
        # way: its bytes decide its summary.
        key = (directory, tuple((s.path, hashlib.sha256(s.data).hexdigest()) for s in sources))
        if key not in _SUMMARY_CACHE:
            try:
                parsed = [parse(source)[0] for source in sources if not source.path.name.endswith("_test.go")]
                packages = collect_packages(parsed, directory.as_posix(), knowledge.package_names) if parsed else []
                summary: dict = {}
                for package in packages:
                    package.import_path = import_path
                    summary.update(summarise(package, knowledge, found))
            except Exception:  # noqa: BLE001 - a dependency's trouble is reported where it is analysed
                summary = {}
            _SUMMARY_CACHE[key] = summary
        if _SUMMARY_CACHE[key]:
            found[import_path] = _SUMMARY_CACHE[key]
    return found


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


def _unanalysed(package: Package, graphs: PackageCFGs, result: Result) -> None:
    """Functions a rule wanted to analyse but could not (nesting too deep,
    too large): one notification each, for the outermost. Syntax errors were
    reported per file; functions nothing needed are not mentioned."""
    resolution = package.resolution
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


def _analyze_package(
    package: Package, settings: Settings, knowledge: Knowledge, result: Result, summaries: Summaries | None = None,
) -> PackageRun | None:
    """Run the enabled rules over one package; returns the run (its
    analyses' results) unless the package's graphs could not be built."""
    where = package.files[0].display
    try:
        graphs = build_package_cfgs(package, imported_exits(summaries or {}))
    except Exception as error:  # noqa: BLE001
        result.notifications.append(_internal_error(where, f"package {package.name}", error, settings.debug))
        result.internal_errors += 1
        return None
    run = PackageRun(package, graphs, knowledge, settings.enabled, summaries=summaries or {})
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
    _unanalysed(package, graphs, result)
    return run


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
    result.notifications.append(_internal_error(path, f"{culprit} on {where}", error, settings.debug, line=line))
    result.internal_errors += 1


# -- parallel execution ------------------------------------------------------

# In each process: the settings, knowledge, needles, the open cache (or None)
# and, in pool workers, the shared array of job states.
_worker_state: tuple[Settings, Knowledge, tuple[bytes, ...], ResultCache | None, Any] | None = None
# A job's state in the shared array, so that after a worker dies the parent
# knows which jobs it was running (suspects) and which merely waited.
_QUEUED, _STARTED, _DONE = 0, 1, 2
_PARENT_POLL_SECONDS = 0.5


def _salt(settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...]) -> str:
    """Everything else a result depends on: rules, configuration, knowledge."""
    return repr((
        settings.base, sorted(settings.enabled), settings.prefilter, settings.per_file, knowledge.families, needles,
        headers_signature(settings.c_include),
    ))


def _open_cache(settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...]) -> tuple[ResultCache | None, Notification | None]:
    if settings.cache_dir is None:
        return None, None
    try:
        return ResultCache(settings.cache_dir, _salt(settings, knowledge, needles)), None
    except CacheRefused as error:
        return None, Notification(
            NotificationKind.CACHE, printable(display_path(settings.cache_dir, settings.base)),
            f"cache directory not used: {error}; analysing without the cache",
        )


def _die_with_parent(parent: int) -> None:
    """A worker must not outlive the run: killed with SIGKILL when its parent
    dies (Linux), and everywhere a watchdog thread exits when the parent is
    gone (the worker is then re-parented)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:  # noqa: BLE001 - the watchdog below still works
            pass
    if os.getppid() != parent:  # died before prctl took effect
        os._exit(EXIT_WORKER_ORPHANED)

    def watch() -> None:
        while True:
            time.sleep(_PARENT_POLL_SECONDS)
            if os.getppid() != parent:
                os._exit(EXIT_WORKER_ORPHANED)

    threading.Thread(target=watch, name="cudalint-parent-watch", daemon=True).start()


EXIT_WORKER_ORPHANED = 3


def _init_worker(settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...], states: Any, parent: int) -> None:
    _die_with_parent(parent)
    # Ctrl-C reaches the whole process group: the parent handles it and stops
    # the workers; SIGTERM kills a worker outright.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    cache = None
    if settings.cache_dir is not None:
        try:
            cache = ResultCache(settings.cache_dir, _salt(settings, knowledge, needles))
        except CacheRefused:  # the parent checked it; changed since: no cache
            cache = None
    _set_state(settings, knowledge, needles, cache, states)


def _set_state(settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...], cache: ResultCache | None, states: Any) -> None:
    global _worker_state
    _worker_state = (settings, knowledge, needles, cache, states)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), _RECURSION_LIMIT))


def _read(paths: list[Path], settings: Settings) -> list[SourceFile | Notification]:
    return [read_source(path, display_path(path, settings.base)) for path in paths]


def _key(cache: ResultCache, paths: list[Path], reads: list[SourceFile | Notification]) -> str:
    """The key of a directory's result: the bytes of its Go files and of the
    packages it imports, of the C files beside them (the C side of cgo
    reads them), and its module's path and go version (fixes use no newer
    Go)."""
    entries = [(path, read.data if isinstance(read, SourceFile) else read) for path, read in zip(paths, reads)]
    return cache.key(entries + _c_files(paths[0].parent) + _module_entry(paths[0].parent))


def _module_entry(directory: Path) -> list[tuple[Path, bytes]]:
    """What a result takes from the module's go.mod: its path (import
    paths) and go version (which fixes are offered)."""
    module = module_of(directory)
    if module is None:
        return []
    return [(module.root / "go.mod", f"module {module.path}\ngo {module.go_version}".encode())]


def _c_files(directory: Path) -> list[tuple[Path, bytes]]:
    """The bytes of the C files the C side reads in the directory."""
    found = []
    for path in local_c_files(directory):
        data = read_c(path)
        found.append((path, data if data is not None else b"\0unreadable"))
    return found


def _work(job: tuple[int, list[Path], Summaries, bool]) -> Result:
    """Analyse one directory (a cache miss): read its files once, analyse
    those bytes, and store the result under the key of those same bytes (a
    file edited during the run can then never lend its result to another
    content)."""
    assert _worker_state is not None
    settings, knowledge, needles, cache, states = _worker_state
    index, paths, known, summarise_own = job
    if states is not None:
        states[index] = _STARTED
    reads = _read(paths, settings)
    result = _in_deep_stack(_guarded, paths, settings, knowledge, needles, reads, known, summarise_own)
    if cache is not None and result.internal_errors == 0:
        cache.put(_key(cache, paths, reads), result)
    if states is not None:
        states[index] = _DONE
    return result


def _guarded(
    paths: list[Path], settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...], reads=None, known=None,
    summarise_own: bool = True,
) -> Result:
    try:
        return analyze_directory(paths, settings, knowledge, needles, reads, known, summarise_own)
    except Exception as error:  # noqa: BLE001 - last line of defence for one directory
        result = Result(internal_errors=1)
        where = display_path(paths[0].parent, settings.base)
        result.notifications.append(_internal_error(where, "the analysis of this directory", error, settings.debug))
        return result


def _directory_bytes(paths: list[Path]) -> int:
    size = 0
    for path in paths:
        try:
            size += path.stat().st_size
        except OSError:
            pass
    return size


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop a pool at once (interrupted run): cancel what waits, kill what runs."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        try:
            process.kill()
        except Exception:  # noqa: BLE001
            pass


def _failed(paths: list[Path], settings: Settings, what: str) -> Result:
    where = display_path(paths[0].parent, settings.base)
    return Result(internal_errors=1, notifications=[Notification(
        NotificationKind.INTERNAL_ERROR, where, f"internal error: {what}; not analysed, results are incomplete", level="error",
    )])


class _Progress(Progress):
    """`cudalint: 120/3000 packages analysed (14 s)` on standard error,
    redrawn on a timer as well as per package (cudalint.progress)."""


_progress = _Progress(0, None)


class _Schedule:
    """Directories in dependency order. A directory whose package imports
    packages analysed in this run waits until their jobs are done: their
    results carry the summaries of their exported functions, which it then
    receives instead of summarising those packages again (once per worker,
    as it would otherwise). Jobs that could not finish, or an import cycle,
    leave the waiting jobs to summarise from the files: the summaries are
    the same either way, only the time differs."""

    def __init__(self, misses: list[list[Path]], known: Summaries):
        self.known = known
        self.pending = set(range(len(misses)))
        self.running: set[int] = set()
        own = [paths[0].parent for paths in misses]
        job_of = {directory: i for i, directory in enumerate(own)}
        self.imports = [
            sorted({p.parent for p in paths if p.parent != own[i]}, key=lambda d: d.as_posix()) for i, paths in enumerate(misses)
        ]
        self.waits_for = [{job_of[d] for d in self.imports[i] if d in job_of} for i in range(len(misses))]
        # Only a package some job imports needs its summaries made.
        self.imported = {job for waits in self.waits_for for job in waits}
        self.size = [_directory_bytes(paths) for paths in misses]

    def ready(self) -> list[int]:
        """The jobs that may start now, largest first (the run lasts at least
        as long as its biggest package, so that one must not start last)."""
        ready = [i for i in self.pending if not (self.waits_for[i] & (self.pending | self.running))]
        if not ready and not self.running:
            ready = list(self.pending)  # a cycle: nothing to wait for any more
        return sorted(ready, key=lambda i: (-self.size[i], i))

    def start(self, i: int) -> tuple[Summaries, bool]:
        """The job's dependencies' summaries, and whether to make its own."""
        self.pending.discard(i)
        self.running.add(i)
        return self.summaries_for(i), i in self.imported

    def summaries_for(self, i: int) -> Summaries:
        found: Summaries = {}
        for directory in self.imports[i]:
            path = _import_path(directory)
            if path is not None and path in self.known:
                found[path] = self.known[path]
        return found

    def finish(self, i: int, result: Result | None, directory: Path) -> None:
        self.running.discard(i)
        self.pending.discard(i)
        if result is not None and result.internal_errors == 0:
            record(self.known, directory, result)

    def give_back(self, i: int) -> None:
        self.running.discard(i)
        self.pending.add(i)


def _import_path(directory: Path) -> str | None:
    module = module_of(directory)
    return module.import_path(directory) if module is not None else None


def record(known: Summaries, directory: Path, result: Result) -> None:
    """File a directory's exported summaries (none is an answer too: the
    package hands nothing out) under its import path."""
    path = _import_path(directory)
    if path is None or not result.summarised:
        return
    functions = known.setdefault(path, {})
    for exported in result.summaries:
        if exported.import_path == path:
            functions[exported.name] = exported.summary


def _run_pool(
    indices: list[int], misses: list[list[Path]], settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...],
    jobs: int, results: dict[int, Result], schedule: _Schedule,
) -> tuple[list[int], list[int]]:
    """Run `indices` over a pool, each as soon as the jobs it waits for are
    done. Returns the jobs left unfinished because a worker died, and among
    them those a dead worker was running."""
    context = multiprocessing.get_context()
    states = context.Array("b", len(misses), lock=False)
    workers = min(jobs, len(indices))
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=context,
        initializer=_init_worker, initargs=(settings, knowledge, needles, states, os.getpid()),
    )
    futures: dict[Any, int] = {}
    wanted = set(indices)
    broken = False
    try:
        while not broken:
            # Jobs whose dependencies are done first; a worker that would
            # otherwise idle takes a waiting job, which then summarises its
            # dependencies from their files (the same summaries, made twice).
            # Every job whose dependencies are done is queued at once. A job
            # that waits is not started early to keep a worker busy: it would
            # summarise its dependencies again, and on real trees (a large
            # generated binding imported by a large package) that cost more
            # CPU than the idle worker saved.
            for i in [i for i in schedule.ready() if i in wanted]:
                futures[pool.submit(_work, (i, misses[i], *schedule.start(i)))] = i
            if not futures:
                break
            finished, _ = wait(futures, return_when=FIRST_COMPLETED)
            for future in finished:
                i = futures.pop(future)
                try:
                    results[i] = future.result()
                    _progress.tick()
                except BrokenProcessPool:
                    broken = True  # retried below
                    schedule.give_back(i)
                    continue
                except Exception as error:  # noqa: BLE001 - e.g. a result that could not be sent back
                    results[i] = _failed(misses[i], settings, f"{type(error).__name__}: {error}")
                schedule.finish(i, results[i], misses[i][0].parent)
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True, cancel_futures=True)
    for i in futures.values():
        schedule.give_back(i)
    unfinished = [i for i in indices if i not in results]
    running = [i for i in unfinished if states[i] == _STARTED]
    return unfinished, running or unfinished


def _run_alone(
    index: int, paths: list[Path], settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...], known: Summaries,
    summarise_own: bool,
) -> Result | None:
    """One job in a worker of its own: None if that worker died too."""
    pool = ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context(),
        initializer=_init_worker, initargs=(settings, knowledge, needles, None, os.getpid()),
    )
    try:
        return pool.submit(_work, (index, paths, known, summarise_own)).result()
    except BrokenProcessPool:
        return None
    except Exception as error:  # noqa: BLE001
        return _failed(paths, settings, f"{type(error).__name__}: {error}")
    except BaseException:
        _stop(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_parallel(
    misses: list[list[Path]], settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...], jobs: int,
    schedule: _Schedule,
) -> list[Result]:
    """Run every job over worker processes. A worker that dies (killed, out
    of memory, a crash in native code) takes the pool down with it: the jobs
    it was running are retried once, each in a worker of its own, and a job
    that kills that worker too is reported as an internal error; the jobs
    that merely waited go to a new pool. The run never hangs on a dead
    worker."""
    results: dict[int, Result] = {}
    deaths: dict[int, int] = {}
    queue = list(range(len(misses)))
    while queue:
        for i in [i for i in queue if deaths.get(i)]:
            outcome = _run_alone(i, misses[i], settings, knowledge, needles, *schedule.start(i))
            results[i] = outcome if outcome is not None else _failed(
                misses[i], settings,
                "the worker process analysing this directory died twice (killed by a signal, out of memory, or a "
                "crash in native code)",
            )
            schedule.finish(i, results[i], misses[i][0].parent)
        waiting = [i for i in queue if not deaths.get(i)]
        queue = []
        if waiting:
            unfinished, running = _run_pool(waiting, misses, settings, knowledge, needles, jobs, results, schedule)
            for i in running:
                deaths[i] = deaths.get(i, 0) + 1
            queue = unfinished
    return [results[i] for i in range(len(misses))]


def analyze(files: list[Path], settings: Settings, knowledge: Knowledge) -> Result:
    needles = prefilter.needles_for(CHECKS, knowledge, settings.enabled)
    if suppressions.TOOL_RULE in settings.enabled:
        # A directive in a package without GPU code suppresses nothing: look at it.
        needles += (b"cudalint:",)
    directories = [list(group) for _, group in groupby(sorted(files, key=lambda p: (p.parent.as_posix(), p.name)), key=lambda p: p.parent)]
    # What the parent reads to find imports, it reuses for cache keys.
    reads: dict[Path, SourceFile | Notification] = {}
    directories = _with_dependencies(directories, settings, needles, reads)
    total = Result()
    # Hits are read here: an unchanged tree starts no worker at all.
    cache, refused = _open_cache(settings, knowledge, needles)
    if refused is not None:
        total.notifications.append(refused)
    try:
        misses: list[list[Path]] = []
        summaries: Summaries = {}
        for directory in directories:
            if cache is not None:
                contents = [reads.get(path) for path in directory]
                if None in contents:
                    contents = _read(directory, settings)
                cached = _trusted(cache.get(_key(cache, directory, contents)), directory, settings, total)
                if cached is not None:
                    total.extend(cached)
                    record(summaries, directory[0].parent, cached)
                    continue
            misses.append(directory)
        schedule = _Schedule(misses, summaries)
        # More workers than CPUs only cost memory.
        jobs = max(1, min(settings.jobs, default_jobs()))
        missed_files = sum(len(directory) for directory in misses)
        # Worker start-up costs more than a handful of packages take to analyse.
        global _progress
        _progress = _Progress(len(misses), settings.progress_after)
        if jobs > 1 and len(misses) > 1 and missed_files >= _PARALLEL_THRESHOLD:
            for part in _run_parallel(misses, settings, knowledge, needles, jobs, schedule):
                total.extend(part)
        else:
            _set_state(settings, knowledge, needles, cache, None)
            while ready := schedule.ready():
                index = ready[0]
                part = _work((index, misses[index], *schedule.start(index)))
                schedule.finish(index, part, misses[index][0].parent)
                total.extend(part)
                _progress.tick()
        _progress.close()
        if cache is not None and misses:
            cache.evict()
    finally:
        if cache is not None:
            cache.close()
    total.sort()
    total.summaries = []  # they served the importers; the report has no use for them
    _one_per_defect(total)
    if settings.reported is not None:
        _only_reported(total, {display_path(path, settings.base) for path in settings.reported})
    return total


def _trusted(cached: Result | None, directory: list[Path], settings: Settings, total: Result) -> Result | None:
    """A cached result, unless it names a file other than the directory's
    own (an altered entry: said in a notification) or carries fixes; then
    the directory is analysed again, and its entry replaced. Fixes are never
    read back: a forged entry could otherwise direct --fix, or put its own
    code in the suggested fixes of a JSON or SARIF report."""
    if cached is None:
        return None
    own = {display_path(path, settings.base) for path in directory if path.parent == directory[0].parent}
    foreign = sorted({f.path for f in (*cached.findings, *cached.suppressed)} - own)
    if foreign:
        total.notifications.append(Notification(
            NotificationKind.CACHE, display_path(directory[0].parent, settings.base),
            f"a cached result names {printable(foreign[0])}, which is not a file of this directory; "
            "the entry was dropped and the directory analysed again",
        ))
        return None
    if any(finding.fixes for finding in cached.findings):
        return None
    return cached


def _with_dependencies(
    directories: list[list[Path]], settings: Settings, needles: tuple[bytes, ...], reads: dict[Path, SourceFile | Notification],
) -> list[list[Path]]:
    """Each directory's files followed by the files of the packages of its
    module it imports, transitively and bottom-up, where those can matter
    (their files mention something the rules look for). They are read for
    their summaries, not reported, and they are part of the directory's
    cache key: editing a dependency re-analyses its importers."""
    imports: dict[Path, list[Path]] = {}
    files_of: dict[Path, list[Path]] = {paths[0].parent: paths for paths in directories}
    relevant: dict[Path, bool] = {}
    matches: dict[Path, bool] = {}

    def contents(directory: Path) -> list[bytes]:
        found = []
        if directory not in files_of:
            files_of[directory] = package_files(directory)
        for path in files_of[directory]:
            read = reads[path] = read_source(path, display_path(path, settings.base))
            if isinstance(read, SourceFile):
                found.append(read.data)
        return found

    def scan(directory: Path) -> list[Path]:
        if directory not in imports:
            data = contents(directory)
            imports[directory] = in_module_imports(directory, data)
            matches[directory] = prefilter.may_match(data, needles)
        return imports[directory]

    def matters(directory: Path, stack: frozenset[Path] = frozenset()) -> bool:
        """A dependency can hand something out only if it, or a package it
        imports, calls something the rules look for."""
        if directory not in relevant:
            relevant[directory] = matches.get(directory, False) or any(
                matters(d, stack | {directory}) for d in imports.get(directory, ()) if d not in stack
            )
        return relevant[directory]

    out = []
    for paths in directories:
        own = paths[0].parent
        order: list[Path] = []
        seen = {own}

        def visit(directory: Path, depth: int) -> None:
            for dependency in scan(directory):
                if dependency not in seen and depth < _MAX_IMPORT_DEPTH:
                    seen.add(dependency)
                    visit(dependency, depth + 1)
                    order.append(dependency)

        visit(own, 0)
        extra = [path for directory in order if matters(directory) for path in files_of[directory] if not path.name.endswith("_test.go")]
        out.append(paths + extra)
    return out


# Import chains deeper than this are not followed (a guard, not a limit real modules reach).
_MAX_IMPORT_DEPTH = 64


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


# A release that can be a second release is one defect however many earlier
# releases can precede it: one finding per (rule, file, span) for these.
_ONE_PER_SPAN = frozenset({"CL102", "CL104"})


_ABOUT_INPUT = frozenset({
    NotificationKind.SYNTAX_ERROR, NotificationKind.UNREADABLE, NotificationKind.NOT_GO_SOURCE, NotificationKind.TOO_COMPLEX,
})


def _only_reported(result: Result, reported: set[str]) -> None:
    """Drop what concerns the files read only as context (the rest of a
    package whose staged files are checked): their findings, suppressed
    findings and input notifications. Internal errors stay: the result is
    incomplete whichever file they concern."""
    result.findings = [f for f in result.findings if f.path in reported]
    result.suppressed = [f for f in result.suppressed if f.path in reported]
    result.notifications = [n for n in result.notifications if n.kind not in _ABOUT_INPUT or n.path in reported]


def _one_per_defect(result: Result) -> None:
    """One defect is one finding: the same rule, file, span and message is
    kept once, and CL102/CL104 once per span (the first message in sorted
    order, which names the earliest release). `result` must be sorted."""
    for name in ("findings", "suppressed"):
        seen: set[tuple] = set()
        kept: list[Finding] = []
        for finding in getattr(result, name):
            key: tuple = (finding.rule_id, finding.path, finding.span)
            if finding.rule_id not in _ONE_PER_SPAN:
                key += (finding.message,)
            if key not in seen:
                seen.add(key)
                kept.append(finding)
        setattr(result, name, kept)
