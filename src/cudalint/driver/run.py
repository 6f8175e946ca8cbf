"""The run: every discovered file, directory by directory.

The run is planned (its packages and the dependencies outside it, every file
read once), then its packages are looked up in the cache bottom-up (an
unchanged tree starts no worker at all) and the misses run in dependency
order, in this process or over a pool of workers. The results are merged, sorted, and cut to one finding per
defect and to the files reported on.
"""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

from cudalint import prefilter, suppressions
from cudalint.checks import CHECKS
from cudalint.discover import printable
from cudalint.driver.dependencies import Node, fact_needles_of, plan
from cudalint.driver.files import FileIndex, Needles
from cudalint.driver.keys import open_cache
from cudalint.driver.package import Context
from cudalint.driver.pool import Pool, default_jobs, prestart, stop_server
from cudalint.driver.schedule import Schedule
from cudalint.driver.settings import Settings
from cudalint.driver.worker import Worker
from cudalint.findings import Finding, Notification, NotificationKind, Result
from cudalint.knowledge import Knowledge
from cudalint.progress import Progress
from cudalint.source import SourceFile, display_path

# Worker start-up costs more than a handful of packages take to analyse.
_PARALLEL_THRESHOLD = 32


def analyze(files: list[Path], settings: Settings, knowledge: Knowledge) -> Result:
    """Analyse these files (and read what their packages need), as the
    settings say: the findings, sorted, one per defect."""
    needles = prefilter.needles_for(CHECKS, knowledge, settings.enabled)
    if suppressions.TOOL_RULE in settings.enabled:
        # A directive in a package without GPU code suppresses nothing: look at it.
        needles += (b"cudalint:",)
    context = Context.of(settings, knowledge, needles)
    directories = [list(group) for _, group in groupby(sorted(files, key=lambda p: (p.parent.as_posix(), p.name)), key=lambda p: p.parent)]
    cache, refused = open_cache(settings, knowledge, needles)
    # Every file is read here, at most once: the jobs analyse these bytes,
    # the keys are made of their digests.
    reads: dict[Path, SourceFile | Notification] = {}
    file_index = FileIndex(
        settings.base, Needles(
            needles, prefilter.needles_for(CHECKS, knowledge, settings.enabled, for_importers=True),
            fact_needles_of(knowledge.fully_described, knowledge.c_call_prefixes),
        ),
        reads, cache, settings.overlay,
    )
    # More workers than CPUs only cost memory.
    jobs = max(1, min(settings.jobs, default_jobs()))
    # A cold run (no cache, or nothing kept from an earlier one) reads every
    # file: its workers start from a server started now, not from the parent;
    # one too small for workers starts none.
    served = jobs > 1 and len(files) >= _PARALLEL_THRESHOLD and not file_index.vouches() and prestart()
    nodes = plan(directories, context.modules, file_index, knowledge.fully_described)
    total = Result()
    unreadable = _unreadable(context.modules.unreadable, knowledge)
    if unreadable is not None:
        total.notifications.append(unreadable)
    if refused is not None:
        total.notifications.append(refused)
    progress = Progress(len(directories), settings.progress_after)

    def trusted(cached: Result, node: Node) -> Result | None:
        return _trusted(cached, node.paths, settings, total) if node.reported else cached

    def done(index: int, part: Result) -> None:
        if nodes[index].reported:  # a dependency's summary served its importers
            total.extend(part)
            progress.tick()

    def may_skip(node: Node) -> bool:
        """The prefilter finds nothing in it (a package a knowledge file
        describes calls its own API unqualified: never skipped)."""
        if not settings.prefilter or node.matches is not False:
            return False
        module = context.modules.of(node.directory)
        return module is None or module.import_path(node.directory) not in knowledge.import_paths

    try:
        schedule = Schedule(nodes, file_index, context.modules, cache, trusted, may_skip, largest_first=jobs > 1)
        # Hits are merged first: an unchanged tree starts no worker at all.
        schedule.look_up()
        for index, part in schedule.hits:
            done(index, part)
        schedule.hits = []
        left = [i for i in range(len(nodes)) if not schedule.done[i]]
        if jobs > 1 and len(left) > 1 and sum(len(nodes[i].paths) for i in left) >= _PARALLEL_THRESHOLD:
            Pool(settings, knowledge, needles, jobs, schedule, done, served).run()
            total.analysed_elsewhere = len(left)
        else:
            worker = Worker(context, cache)
            while (index := schedule.next()) is not None:
                part = worker.work(schedule.start(index))
                schedule.finish(index, part)
                done(index, part)
        for index, part in schedule.hits:
            done(index, part)
        progress.close()
        file_index.save()
        if cache is not None and left:
            cache.evict()
    finally:
        if cache is not None:
            cache.close()
        if served:
            stop_server()
    total.sort()
    total.facts = []  # they served the importers; the report has no use for them
    one_per_defect(total)
    if settings.reported is not None:
        _only_reported(total, {display_path(path, settings.base) for path in settings.reported})
    return total


def _unreadable(modules: set[str], knowledge: Knowledge) -> Notification | None:
    """One note naming the imported modules whose source this machine lacks:
    two machines whose findings differ because one has a module cache and
    the other has not can see why."""
    if not modules:
        return None
    named = sorted(modules)
    listed = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    by_name = [module for module in named if knowledge.named_bindings.word_of(module)]
    except_named = f", except the API calls of {', '.join(by_name)}, read by name" if by_name else ""
    return Notification(
        NotificationKind.DEPENDENCIES, ".",
        f"no source on this machine for {len(named)} imported module{'s' if len(named) != 1 else ''} "
        f"(no vendor/, module cache or replace entry): {listed}; calls into them count as unknown{except_named} "
        f"(`go mod download` lets cudalint read them)",
        level="note",
    )


def _trusted(cached: Result | None, directory: list[Path], settings: Settings, total: Result) -> Result | None:
    """A cached result, unless it names a file other than the directory's
    own (an altered entry: said in a notification) or carries fixes; then
    the directory is analysed again, and its entry replaced. Fixes are never
    read back: a forged entry could otherwise direct --fix, or put its own
    code in the suggested fixes of a JSON or SARIF report."""
    if cached is None:
        return None
    named = {f.path for f in (*cached.findings, *cached.suppressed)}
    own = {display_path(path, settings.base) for path in directory if path.parent == directory[0].parent} if named else set()
    foreign = sorted(named - own)
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


def one_per_defect(result: Result) -> None:
    """One defect is one finding: the same rule, file, span and message is
    kept once, and a rule declared `one_per_span` (a release that can be a
    second release is one defect however many earlier releases can precede
    it) once per span: the first message in sorted order, which names the
    earliest release. `result` must be sorted."""
    per_span = frozenset(rule.id for rule in CHECKS if rule.one_per_span)
    for name in ("findings", "suppressed"):
        seen: set[tuple] = set()
        kept: list[Finding] = []
        for finding in getattr(result, name):
            key: tuple = (finding.rule_id, finding.path, finding.span)
            if finding.rule_id not in per_span:
                key += (finding.message,)
            if key not in seen:
                seen.add(key)
                kept.append(finding)
        setattr(result, name, kept)
