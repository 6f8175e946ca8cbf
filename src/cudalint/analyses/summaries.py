"""Summaries of the packages a package imports from its own module.

A run reads, besides the packages it reports on, the packages of the same
module they import (transitively), the way `go vet` loads dependencies. Each
imported package is summarised once: for every exported function, what it
does with each parameter (releases, retains or only borrows it) and which
resources it hands out (result k holds resource R, held where its error is
nil). The importing package's call classification applies a summary at each
call of that function exactly as it applies the API knowledge, so a leak
through `gpu.Alloc` in package `svc` is found, and a `gpu.Fill(d)` that only
borrows `d` is no longer taken for a hand-over. Summaries are plain data, so
that they travel between processes and into the result cache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.gotypes import result_types
from cudalint.analyses.lifetimes import LIFETIMES
from cudalint.analyses.locks import LOCKS, Event, concerns_threads
from cudalint.analyses.owners import owner_type
from cudalint.analyses.wrappers import WRAPPERS
from cudalint.cfg import ExitKind, PackageCFGs
from cudalint.framework import PackageRun, Pass, requirements
from cudalint.functions import Package, Unit, UnitKind
from cudalint.knowledge import Knowledge


@dataclass(frozen=True)
class HandOut:
    """Result `index` of the function holds a `resource` of `family`."""

    index: int
    family: str
    resource: str
    returns_error: bool
    via: str  # the acquisition inside, for messages: "C.cudaMalloc at line 12 of memory.go"
    # A value of an owning type of the package holding the resource (`*Buffer`
    # from NewBuffer), released by any of its `methods`; "" for the bare handle.
    owner: str = ""
    methods: tuple[str, ...] = ()


@dataclass(frozen=True)
class FunctionSummary:
    hands_out: tuple[HandOut, ...] = ()
    params: tuple[str, ...] = ()  # per parameter: "releases", "retains" or "borrows"
    # For an owning type (filed under the type's name, which no function of
    # the package can share): the (family, resource) pairs it holds, and the
    # methods that release them.
    owns: tuple[tuple[str, str], ...] = ()
    methods: tuple[str, ...] = ()
    # Threads: the thread-bound call the function reaches with no lock of its
    # own before it on some path ("C.cudaSetDevice"; its callers must hold
    # the lock), and "lock" for a function that returns with the thread
    # locked on every path, "unlock" for one that only unlocks it.
    needs_lock: str = ""
    thread: str = ""
    # Control: the function never returns (panics, exits or ends the
    # goroutine on every path), and how it ends (ExitKind values; none: it
    # blocks for ever).
    never_returns: bool = False
    exits: tuple[str, ...] = ()
    # A status wrapper: its error comes from this status call ("" if none),
    # a release's where release_wrapper is set.
    status_wrapper: str = ""
    release_wrapper: bool = False
    # Per result, the package's own type it is declared with ("" for others),
    # where that type has summarised methods: `dev, err := gpu.Open(0)`
    # makes dev a gpu.Device in the importer.
    results: tuple[str, ...] = ()
    # The counted (handle-less) kinds it releases on some path, (family,
    # resource): `defer gpu.Shutdown()` in an importer releases NVML's count.
    counted_releases: tuple[tuple[str, str], ...] = ()


# Import path -> exported function name -> summary.
Summaries = dict[str, dict[str, FunctionSummary]]


@dataclass(frozen=True)
class ExportedSummary:
    """One exported function's summary as a package's analysis hands it to
    its importers (plain data: it travels between processes and is cached
    with the package's result)."""

    import_path: str
    name: str
    summary: FunctionSummary


def summarise(package: Package, knowledge: Knowledge, imported: Summaries) -> dict[str, FunctionSummary]:
    """The summaries of a package's exported functions that say something
    (a function that hands nothing out and only borrows says nothing new),
    from a run of their own."""
    graphs = PackageCFGs(package, imported_exits=imported_exits(imported))
    return summaries_of(PackageRun(package, graphs, knowledge, frozenset(), summaries=imported))


def imported_exits(summaries: Summaries) -> dict[tuple[str, str], frozenset[ExitKind]]:
    """(import path, name) -> how it ends, for the imported functions that
    never return: the CFG builder ends a path at their calls."""
    return {
        (path, name): frozenset(ExitKind(kind) for kind in summary.exits)
        for path, functions in summaries.items() for name, summary in functions.items() if summary.never_returns
    }


def summaries_of(run: PackageRun) -> dict[str, FunctionSummary]:
    """The same summaries read off a run that the rules have already made
    (its analyses are computed once per run). Functions of `_test.go` files
    are left out: importers never see them, and a package's summary must
    not depend on whether its tests were read, so that the summary made
    while analysing the package equals the one made from its files alone."""
    lifetimes = Pass(run, requirements((LIFETIMES,))).result_of(LIFETIMES)
    found: dict[str, FunctionSummary] = {}
    # Only a function that calls the API, or a wrapper of it, can hand out,
    # release or use a handle in a way the knowledge describes; any other
    # keeps the conservative default at its callers (a hand-over).
    for unit in lifetimes.units_with_acquisitions():
        name = summary_name(unit)
        if name is None or unit.body is None:
            continue
        hands_out = tuple(
            _hand_out(origin, index, unit.returns_error) for origin, index in lifetimes.handed_out(unit)
            if index >= 0 or unit.returns_error or unit.node.child_by_field_name("result") is None
        )
        params = tuple(lifetimes.effect_of_argument(unit, i).value for i in range(len(unit.params)))
        counted = lifetimes.counted_releases(unit)
        if hands_out or counted or any(effect != "retains" for effect in params):
            found[name] = FunctionSummary(hands_out, params, counted_releases=counted)
    wrappers = Pass(run, requirements((WRAPPERS,))).result_of(WRAPPERS)
    for unit, wrapped in wrappers.found():
        name = summary_name(unit)
        if name is not None:
            found[name] = replace(found.get(name, FunctionSummary()), status_wrapper=wrapped.inner, release_wrapper=wrapped.release)
    for name, exits in _no_return(run).items():
        found[name] = replace(found.get(name, FunctionSummary()), never_returns=True, exits=exits)
    for unit, effects in _thread_effects(run).items():
        found[unit] = replace(found.get(unit, FunctionSummary()), **effects)
    families = {resource: family for family in run.knowledge.families for resource in family.resources}
    typed = {name.split(".", 1)[0] for name in found if "." in name}
    for unit in run.package.units:
        results = result_types(unit) if unit.kind is UnitKind.FUNCTION and summary_name(unit) is not None else ()
        if any(result in typed for result in results):
            found[unit.name] = replace(found.get(unit.name, FunctionSummary()), results=results)
    for owner in lifetimes.owners.exported():
        owns = tuple((families[resource].name, resource.name) for resource in owner.resources if resource in families)
        if owns:
            found[owner.type_name] = FunctionSummary(owns=owns, methods=owner.methods)
    return found


# A function that never returns ends in one of these (or in a call of a
# function that does, which the same words usually name).
_ENDINGS = (b"panic(", b"Exit(", b"Fatal", b"Goexit(", b"FailNow(", b"Skip", b"for {", b"select {}")


def _no_return(run: PackageRun) -> dict[str, tuple[str, ...]]:
    """The exported functions whose body cannot return, and how they end.
    Only bodies that name a way to end are asked (asking builds a graph)."""
    found = {}
    for unit in run.package.units:
        if unit.kind is not UnitKind.FUNCTION or not unit.name[:1].isupper() or unit.body is None or unit.symbol is None:
            continue
        if unit.file.source.path.name.endswith("_test.go"):
            continue
        body = unit.file.source.data[unit.body.start_byte:unit.body.end_byte]
        if not _ends_without_return(unit.body) or not any(ending in body for ending in _ENDINGS):
            continue
        exits = run.cfgs.exits_of_function(unit.symbol)
        if exits is not None:
            found[unit.name] = tuple(sorted(kind.value for kind in exits))
    return found


def summary_name(unit: Unit) -> str | None:
    """The name importers call a function or method by: `Alloc`, and
    `Device.Alloc` for a method of Device or *Device (both exported); None
    for what importers cannot call, and for functions of `_test.go` files."""
    if unit.file.source.path.name.endswith("_test.go") or unit.kind is UnitKind.LITERAL:
        return None
    if unit.kind is UnitKind.FUNCTION:
        return unit.name if unit.name[:1].isupper() else None
    receiver, _, method = unit.name.rpartition(".")
    type_name = receiver.removeprefix("(*").removesuffix(")")
    return f"{type_name}.{method}" if type_name[:1].isupper() and method[:1].isupper() else None


def _ends_without_return(body) -> bool:
    """Whether the body's last statement could be a terminating statement
    that is not a return (a call, `for {}`, `select {}`, an if with an else,
    a switch): a function ending otherwise returns, and its graph is not
    worth building to find out."""
    statements = syntax.statements(body)
    if not statements:
        return False
    last = statements[-1]
    if last.type == "if_statement":
        return last.child_by_field_name("alternative") is not None
    return last.type in (
        "expression_statement", "for_statement", "select_statement", "expression_switch_statement",
        "type_switch_statement", "block", "labeled_statement", "goto_statement",
    )


def _thread_effects(run: PackageRun) -> dict[str, dict[str, str]]:
    """What each exported function does to its caller's OS thread."""
    calls = Pass(run, requirements((CALLS,))).result_of(CALLS)
    if not concerns_threads(calls):
        return {}
    threads = Pass(run, requirements((LOCKS,))).result_of(LOCKS)
    found: dict[str, dict[str, str]] = {}
    for unit in threads.locked:
        name = summary_name(unit)
        if name is None:
            continue
        effects = {}
        need = threads.needs_lock(unit)
        if need is not None:
            inner = threads.chain(need)[-1]
            effects["needs_lock"] = inner.via or syntax.text(inner.call.child_by_field_name("function"))
        wrapper = threads.wrapper(unit)
        if wrapper is Event.UNLOCK or (wrapper is Event.LOCK and threads.locks_always(unit)):
            effects["thread"] = wrapper.value
        if effects:
            found[name] = effects
    return found


def _hand_out(origin, index: int, returns_error: bool) -> HandOut:
    inner = origin.innermost
    resource = origin.resource
    via = f"{inner.written} at line {inner.line} of {inner.unit.file.source.path.name}"
    if resource.owns is None:
        return HandOut(index, inner.api.family.name, resource.name, returns_error, via)
    methods = tuple(role.method for role in resource.release)
    return HandOut(index, inner.api.family.name, resource.owns.name, returns_error, via, owner_type(resource), methods)
