"""Lock states: which OS-thread lock count holds before each statement.

CUDA keeps the current device and the driver's context stack per OS thread,
while the Go scheduler moves goroutines between threads. This analysis finds
the lock-relevant events of a package (LockOSThread, UnlockOSThread, deferred
unlocks, thread-bound CUDA calls, calls of the package's own functions),
recognises lock and unlock wrappers, solves every relevant function's entry
state from its in-package callers to a fixpoint, and answers the path
questions the CL4xx rules ask. It reports nothing.

What an exported function does to its caller's thread is its fact
(`thread_facts.ThreadEffects`).
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CallIndex
from cudalint.analyses.locks.contexts import EntryContexts
from cudalint.analyses.locks.events import CAP, Event, Happening, LockEvents, exported, touches_threads
from cudalint.analyses.locks.flows import LockFlows
from cudalint.analyses.locks.needs import LockNeeds
from cudalint.analyses.locks.paths import lock_follows, lock_outcomes, unlocked_before
from cudalint.analyses.thread_facts import ThreadEffects, exported_effects
from cudalint.cfg import CFG, PackageCFGs
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import LiteralUse, Package, Unit, UnitKind
from cudalint.scope import SymbolKind

__all__ = [
    "LOCKS", "Event", "Happening", "LockStates", "concerns_threads", "exported",
    "lock_follows", "lock_outcomes", "unlocked_before", "unlocks_somewhere",
]


class LockStates:
    """Lock facts of one package, computed once for the three rules: the
    facade the rules and the thread facts read, over the events of each
    function (events.py), their flows and wrappers (flows.py), the entry
    contexts (contexts.py) and the needs (needs.py)."""

    def __init__(self, package: Package, cfgs: PackageCFGs, calls: CallIndex, imported: FactView):
        self.package = package
        self.cfgs = cfgs
        self.calls = calls
        # What the functions of the other packages of the module do to the thread.
        self.imported = imported
        self.events = LockEvents(cfgs, calls, imported)
        self.flows = LockFlows(package, cfgs, self.events)
        self.contexts = EntryContexts(self.flows, calls, imported)
        self.needs = LockNeeds(self.flows, calls)

    @property
    def locked(self) -> dict[Unit, dict[int, int]]:
        """Each solved function's lock count before each of its nodes."""
        return self.contexts.locked

    def solve(self) -> None:
        self.contexts.solve()

    def entry_of(self, unit: Unit) -> int | None:
        return self.contexts.entry_of(unit)

    def happenings(self, unit: Unit) -> dict[int, list[Happening]]:
        return self.events.happenings(unit)

    def wrapper(self, unit: Unit) -> Event | None:
        return self.flows.wrapper(unit)

    def locks_always(self, unit: Unit) -> bool:
        return self.flows.locks_always(unit)

    def locks_on_success(self, unit: Unit) -> bool:
        return self.flows.locks_on_success(unit)

    def lost_token(self, unit: Unit) -> Node | None:
        return self.flows.lost_token(unit)

    def defers_unlock(self, happening: Happening) -> bool:
        return self.flows.defers_unlock(happening)

    def unlocks(self, happening: Happening) -> bool:
        return self.flows.unlocks(happening)

    def locks(self, happening: Happening) -> bool:
        return self.flows.locks(happening)

    def apply(self, count: int, happenings) -> int:
        return self.flows.apply(count, happenings)

    def needs_lock(self, unit: Unit) -> Happening | None:
        return self.needs.needs_lock(unit)

    def unlocked_need(self, happening: Happening) -> bool:
        return self.needs.unlocked_need(happening)

    def chain(self, happening: Happening) -> list[Happening]:
        return self.needs.chain(happening)

    def hands_context_to_own_goroutine(self, unit: Unit) -> bool:
        return self.needs.hands_context_to_own_goroutine(unit)

    def visits(self, unit: Unit, graph: CFG) -> Iterator[tuple[int, Happening, int]]:
        """(node, happening, lock count just before it) for every happening
        at a reachable node, in node order; nothing for a function whose
        entry state cannot be known (a callback, a literal handed on)."""
        happenings = self.happenings(unit)
        entry = self.entry_of(unit)
        if not happenings or not graph.created or entry is None:
            return
        states = self.locked.get(unit, {})
        for n, items in sorted(happenings.items()):
            if not graph.reachable(n):
                continue
            locked = states.get(n, CAP)
            for happening in items:
                yield n, happening, locked
                locked = self.apply(locked, (happening,))

    def solved_units(self) -> list[Unit]:
        """The functions whose lock states were solved: those a lock, an
        unlock or a thread-bound call concerns, and their callers."""
        return list(self.locked)

    @property
    def has_exported_lock(self) -> bool:
        """An exported lock wrapper: with its unlock half, an API for callers
        outside the package."""
        return any(self.wrapper(u) is Event.LOCK and exported(u) for u in self.locked)

    def stable(self, symbol) -> bool:
        """A local flag the function never assigns after declaring it."""
        if symbol.kind is not SymbolKind.VAR or not symbol.is_local:
            return False
        declarations = self.package.resolution.declarations
        for node in self.calls.references(symbol):
            if declarations.get(node) is symbol:
                continue
            parent = node.parent
            if parent is not None and parent.type in ("inc_statement", "dec_statement"):
                return False
            if parent is not None and parent.type == "expression_list" and parent.parent is not None and (
                parent.parent.type in ("assignment_statement", "short_var_declaration")
                and parent.parent.child_by_field_name("left") == parent
            ):
                return False
            if syntax.is_address_of(parent):
                return False
        return True

    def goroutine_body(self, unit: Unit) -> bool:
        """A function that only ever runs as a goroutine: returning from it
        locked is how Go disposes of a thread (it terminates it)."""
        if unit.kind is UnitKind.LITERAL:
            if unit.use is LiteralUse.GO:
                return True
            variable = unit.stored_in
            if unit.use is not LiteralUse.STORED or variable is None or not variable.is_local:
                return False
            calls = self._calls_of_variable(unit, variable)
            return bool(calls) and all(spawned for spawned in calls)
        if self._callable_outside(unit):
            return False  # callers outside the package may call it directly
        calls = self.calls.calls_of(unit)
        return bool(calls) and all(syntax.statement_of_call(call) == "go_statement" for call in calls)

    def reported_by_callers(self, unit: Unit) -> bool:
        """A function its in-package callers call directly: a missing lock
        is theirs to add, and is reported at their calls."""
        sites = self.contexts.call_sites.get(unit, [])
        return unit.kind is not UnitKind.LITERAL and bool(sites) and not any(h.spawned or h.deferred for _, _, h in sites)

    def callers_own_the_thread(self, unit: Unit) -> bool:
        """An exported function or a method that nothing in the package calls
        is an edge of the package: its callers, outside, decide the thread
        (a binding's one-line wrapper of cudaSetDevice is theirs to lock).
        Test entry points (`TestX`, `BenchmarkX`) are exported functions too,
        as DESIGN.md has them: a test that calls the package's constructor
        unlocked says nothing the constructor's other callers do not, and one
        finding per test (140 on one service) buries the ones in `main`.
        A literal called in place or deferred runs in its function's
        goroutine, on its function's thread: at the edge with it."""
        if unit.kind is UnitKind.LITERAL:
            parent = unit.parent
            return unit.use in (LiteralUse.CALLED, LiteralUse.DEFERRED) and parent is not None and self.callers_own_the_thread(parent)
        if not (unit.kind is UnitKind.METHOD or self._callable_outside(unit)):
            return False
        return not self.contexts.call_sites.get(unit)

    def _callable_outside(self, unit: Unit) -> bool:
        """An exported function of a package others can import: package
        main is imported by nobody, so its exported functions are called
        from inside or not at all."""
        return exported(unit) and self.package.name != "main"

    def _calls_of_variable(self, literal: Unit, variable) -> list[bool]:
        """For each call through a local variable bound to a literal: is it `go v(...)`?"""
        spawned = []
        scope = literal.parent.node if literal.parent is not None else literal.node
        resolution = self.package.resolution
        for node in syntax.walk(scope):
            if node.type == "call_expression":
                function = syntax.unparen(node.child_by_field_name("function"))
                if function is not None and function.type == "identifier" and resolution.symbol(function) is variable:
                    spawned.append(syntax.statement_of_call(node) == "go_statement")
        return spawned


def _solved(p: Pass) -> LockStates:
    threads = LockStates(p.package, p.cfgs, p.result_of(CALLS), p.imported_facts(LOCKS))
    threads.solve()
    return threads


LOCKS: Analysis[LockStates] = Analysis(
    "locks", __doc__ or "", _solved, requires=(CALLS,),
    facts=lambda p: exported_effects(p.result_of(LOCKS)) if concerns_threads(p) else {}, fact_type=ThreadEffects,
)


def concerns_threads(p: Pass) -> bool:
    """Whether the package locks, unlocks or makes a thread-bound call at
    all (else there is nothing to solve). `p` must require LOCKS."""
    calls = p.result_of(CALLS)
    imported = p.imported_facts(LOCKS)
    return any(touches_threads(calls, imported, fact) for fact in calls.calls.values())


def unlocks_somewhere(threads: LockStates, unit: Unit) -> bool:
    return threads.flows.unlocks_somewhere(unit)
