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

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

from tree_sitter import Node

from cudalint import syntax
from cudalint import fixpoint
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex
from cudalint.cfg import CFG, Edge, ExitKind, NodeKind, PackageCFGs
from cudalint.analyses.thread_facts import ThreadEffects, exported_effects
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import LiteralUse, Package, Unit, UnitKind
from cudalint.scope import SymbolKind


class Event(str, Enum):
    LOCK = "lock"
    UNLOCK = "unlock"
    DEFER_UNLOCK = "defer-unlock"
    # A deferred func literal calling functions of the package: a deferred
    # unlock if one of them is an unlock wrapper.
    DEFER_CLOSURE = "defer-closure"
    BOUND = "bound"  # a thread-bound CUDA call
    CALL = "call"  # a call of a function of this package (its entry state matters)


@dataclass(frozen=True)
class Happening:
    event: Event
    call: Node
    target: Unit | None = None  # CALL: the callee
    spawned: bool = False  # CALL through `go`
    deferred: bool = False  # CALL through `defer`: its effect happens at return
    # BOUND by a function of another package of the module that needs the
    # thread locked: the thread-bound call inside it, for messages; LOCK by
    # one that locks only where its error is nil: "on success".
    via: str = ""
    # DEFER_CLOSURE: the functions of the package the literal calls.
    closure: tuple[Unit, ...] = ()


_RUNTIME = "runtime"
# Locks nest (Go counts them); counts above this are all "locked enough".
_CAP = 4


@dataclass
class LockStates:
    """Lock facts of one package, computed once for the three rules."""

    package: Package
    cfgs: PackageCFGs
    calls: CallIndex
    # What the functions of the other packages of the module do to the thread.
    imported: FactView
    events: dict[Unit, dict[int, list[Happening]]] = field(default_factory=dict)
    wrappers: dict[Unit, Event | None] = field(default_factory=dict)
    entry: dict[Unit, int | None] = field(default_factory=dict)  # lock count; None: a context we cannot see
    locked: dict[Unit, dict[int, int]] = field(default_factory=dict)
    # In-package calls of each function (recursion left out): (caller, node, call).
    call_sites: dict[Unit, list[tuple[Unit, int, Happening]]] = field(default_factory=dict)
    _needs: dict[Unit, Happening | None] = field(default_factory=dict)

    # -- events -------------------------------------------------------------------

    def happenings(self, unit: Unit) -> dict[int, list[Happening]]:
        found = self.events.get(unit)
        if found is None:
            found = self.events[unit] = self._scan(unit)
        return found

    def _scan(self, unit: Unit) -> dict[int, list[Happening]]:
        graph = self.cfgs.graphs[unit]
        found: dict[int, list[Happening]] = {}
        for n in graph.statement_nodes():
            for root in graph.evaluated(n):
                for call in syntax.calls_in(root):
                    happening = self._classify(call)
                    if happening is not None:
                        found.setdefault(n, []).append(happening)
            if graph.kind(n) is NodeKind.DEFER:
                found.setdefault(n, []).extend(self._deferred_closure_unlocks(graph.ast(n)))
        return {n: items for n, items in found.items() if items}

    def _deferred_closure_unlocks(self, statement: Node | None) -> list[Happening]:
        """`defer func() { ...; runtime.UnlockOSThread() }()` unlocks when the
        function returns, like a deferred unlock; one that calls functions of
        the package unlocks if one of them is an unlock wrapper, which is
        known only once the callees are solved (see defers_unlock)."""
        inner = syntax.children(statement) if statement is not None else []
        call = syntax.unparen(inner[0]) if inner else None
        function = syntax.unparen(call.child_by_field_name("function")) if call is not None and call.type == "call_expression" else None
        if function is None or function.type != "func_literal":
            return []
        body = function.child_by_field_name("body")
        targets: list[Unit] = []
        for nested in syntax.calls_in(body) if body is not None else ():
            happening = self._classify(nested)
            if happening is None:
                continue
            if happening.event is Event.UNLOCK:
                return [Happening(Event.DEFER_UNLOCK, call)]
            if happening.event is Event.CALL and happening.target is not None and happening.target not in targets:
                targets.append(happening.target)
        return [Happening(Event.DEFER_CLOSURE, call, closure=tuple(targets))] if targets else []

    def _classify(self, call: Node) -> Happening | None:
        fact = self.calls.calls.get(call)
        statement = syntax.statement_of_call(call)
        if fact is not None and fact.import_path == _RUNTIME:
            if fact.name == "LockOSThread" and statement != "defer_statement":
                return Happening(Event.LOCK, call)
            if fact.name == "UnlockOSThread":
                return Happening(Event.DEFER_UNLOCK if statement == "defer_statement" else Event.UNLOCK, call)
            return None
        if fact is not None and fact.api is not None and fact.api.thread_bound:
            return Happening(Event.BOUND, call)
        summary = _imported_effects(self.calls, self.imported, fact)
        if summary is not None:
            if summary.needs_lock:
                return Happening(Event.BOUND, call, via=summary.needs_lock)
            if summary.thread == "lock" and statement != "defer_statement":
                return Happening(Event.LOCK, call)
            if summary.thread == "lock-on-success" and statement != "defer_statement":
                return Happening(Event.LOCK, call, via="on success")
            if summary.thread == "unlock":
                return Happening(Event.DEFER_UNLOCK if statement == "defer_statement" else Event.UNLOCK, call)
        callee = self.calls.callee(call)
        if callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target.kind is not UnitKind.LITERAL:
            return Happening(
                Event.CALL, call, callee.target,
                spawned=statement == "go_statement", deferred=statement == "defer_statement",
            )
        return None

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
            locked = states.get(n, _CAP)
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

    # -- per-function dataflow ----------------------------------------------------

    def callees(self, unit: Unit) -> list[Unit]:
        """The functions of the package whose lock facts this one's depend on:
        those it calls, defers or starts, also from a deferred literal."""
        if unit not in self.cfgs.graphs:
            return []
        found: list[Unit] = []
        for happenings in self.happenings(unit).values():
            for happening in happenings:
                if happening.target is not None:
                    found.append(happening.target)
                found.extend(happening.closure)
        return found

    def wrapper(self, unit: Unit) -> Event | None:
        """LOCK for a function that leaves its caller's thread locked on every
        return, UNLOCK for one that only unlocks it; None for anything else
        (and for a recursive function whose effect does not settle).
        Solved for everything the function reaches, callees first."""
        if unit not in self.wrappers:
            fixpoint.solve([unit], self.callees, self._wrapper_effect, self.wrappers, lambda _: None)
        return self.wrappers[unit]

    def _wrapper_effect(self, unit: Unit) -> Event | None:
        """(Locks nest, so a function that locks and defers the unlock is neither.)"""
        if unit not in self.cfgs.graphs:
            return None
        events = {h.event for hs in self.happenings(unit).values() for h in hs}
        if self.locks_always(unit) or self.locks_on_success(unit):
            return Event.LOCK
        if Event.LOCK not in events and self._locked_on_return(unit, 1) == 0:
            return Event.UNLOCK
        return None

    def locks_always(self, unit: Unit) -> bool:
        """A lock wrapper that returns with the thread locked on every path."""
        on_return = self._locked_on_return(unit, 0)
        return on_return is not None and on_return >= 1

    def locks_on_success(self, unit: Unit) -> bool:
        """A lock wrapper that reports failure: it returns with the thread
        locked exactly where its error result is nil, and unlocked where it
        reports an error (`if err := lockDevice(d); err != nil { return err }`)."""
        if not unit.returns_error:
            return False
        outcomes = _return_outcomes(self, self.cfgs.graphs[unit])
        if not outcomes:
            return False
        success = [locked for statement, locked in outcomes if _returns_nil_error(statement)]
        failure = [locked for statement, locked in outcomes if not _returns_nil_error(statement)]
        return bool(success) and all(success) and not any(failure)

    def lost_token(self, unit: Unit) -> Node | None:
        """A lock handed out with a token (`Init() (*Token, error)` locks,
        and the token's method unlocks): the failing return that keeps the
        thread locked but returns no token to unlock it with, if any. The
        function never unlocks, returns a value besides its error, and the
        package has an unlock wrapper (the token's method)."""
        if not unit.returns_error or unit.result_count < 2 or unlocks_somewhere(self, unit):
            return None
        if not any(self.wrapper(u) is Event.UNLOCK for u in self.package.units if u.kind is UnitKind.METHOD):
            return None
        outcomes = _return_outcomes(self, self.cfgs.graphs[unit])
        handed = [statement for statement, locked in outcomes if locked and _returns_nil_error(statement)]
        lost = [statement for statement, locked in outcomes if locked and statement is not None and not _returns_nil_error(statement)]
        return lost[0] if handed and lost else None

    def _locked_on_return(self, unit: Unit, entry: int) -> int | None:
        graph = self.cfgs.graphs[unit]
        exit_node = graph.exits[ExitKind.RETURN]
        if exit_node not in graph.live:
            return None
        deferred = sum(1 for hs in self.happenings(unit).values() for h in hs if self.defers_unlock(h))
        return max(self.flow(unit, entry).get(exit_node, entry) - deferred, 0)

    def defers_unlock(self, happening: Happening) -> bool:
        """`defer runtime.UnlockOSThread()`, `defer unlockGPU()` of an unlock
        wrapper, or a deferred literal that calls one."""
        if happening.event is Event.DEFER_UNLOCK:
            return True
        if happening.event is Event.DEFER_CLOSURE:
            return any(self.wrapper(target) is Event.UNLOCK for target in happening.closure)
        return (
            happening.event is Event.CALL and happening.deferred and happening.target is not None
            and self.wrapper(happening.target) is Event.UNLOCK
        )

    def unlocks(self, happening: Happening) -> bool:
        if happening.event is Event.UNLOCK:
            return True
        return (
            happening.event is Event.CALL and not happening.deferred and not happening.spawned
            and happening.target is not None and self.wrapper(happening.target) is Event.UNLOCK
        )

    def locks(self, happening: Happening) -> bool:
        if happening.event is Event.LOCK:
            return True
        return (
            happening.event is Event.CALL and not happening.deferred and not happening.spawned
            and happening.target is not None and self.wrapper(happening.target) is Event.LOCK
        )

    def flow(self, unit: Unit, entry: int) -> dict[int, int]:
        """The lock count held on every path before each node (a greatest
        fixpoint: unreachable nodes keep the cap and are never reported)."""
        graph = self.cfgs.graphs[unit]
        happenings = self.happenings(unit)
        before = {n: _CAP for n in graph.nodes()}
        before[graph.entry] = entry
        visited = {graph.entry}
        queue = deque([graph.entry])
        while queue:
            n = queue.popleft()
            after = self.apply(before[n], happenings.get(n, ()))
            for successor in graph.successors(n):
                value = min(before[successor], after)
                if successor == graph.entry:
                    value = min(value, entry)
                if value != before[successor] or successor not in visited:
                    before[successor] = value
                    visited.add(successor)
                    queue.append(successor)
        return before

    def apply(self, count: int, happenings) -> int:
        for happening in happenings:
            effect = happening.event
            if effect is Event.CALL and not (happening.spawned or happening.deferred) and happening.target is not None:
                effect = self.wrapper(happening.target)
            if effect is Event.LOCK:
                count = min(count + 1, _CAP)
            elif effect is Event.UNLOCK:
                count = max(count - 1, 0)
        return count

    # -- contexts -----------------------------------------------------------------

    def solve(self) -> None:
        """Entry states: a function is locked on entry when every call of it in
        the package is made from a locked point; iterate to a fixpoint."""
        units = self._relevant()
        sites: dict[Unit, list[tuple[Unit, int, Happening]]] = {}
        for unit in units:
            for n, happenings in self.happenings(unit).items():
                for happening in happenings:
                    if happening.event is Event.CALL and happening.target is not None:
                        sites.setdefault(happening.target, []).append((unit, n, happening))
        as_values = self._used_as_values(units)
        init_locks = self._main_locked_by_init(units)
        for unit in units:
            if unit.kind is UnitKind.LITERAL:
                continue
            if unit in as_values:
                self.entry[unit] = None
            elif unit.name == "main" and self.package.name == "main" and init_locks:
                self.entry[unit] = 1
            elif unit.name == "init" and unit.kind is UnitKind.FUNCTION:
                # runtime.main locks the main goroutine to the main thread
                # while packages initialise: init functions run locked.
                self.entry[unit] = 1
            else:
                self.entry[unit] = _CAP if sites.get(unit) else 0
        exported_lock = any(self.wrapper(u) is Event.LOCK and exported(u) for u in units)
        for unit in units:
            # The unlock half of an exported lock/unlock pair runs where the
            # lock half left the thread: locked.
            if exported_lock and self.entry.get(unit) == 0 and exported(unit) and self.wrapper(unit) is Event.UNLOCK:
                self.entry[unit] = 1
        for unit in list(sites):
            # A function calling itself is no caller that could have locked for it.
            sites[unit] = [site for site in sites[unit] if site[0] is not unit]
        self.call_sites = sites
        for unit in list(sites):
            if not sites[unit] and self.entry.get(unit) is not None and unit.kind is not UnitKind.LITERAL:
                self.entry[unit] = 0
        self._propagate(units, sites, init_locks)

    def _propagate(self, units: list[Unit], sites: dict[Unit, list[tuple[Unit, int, Happening]]], init_locks: bool) -> None:
        """Lower each function's entry count to the least count at its call
        sites until nothing changes. A worklist, not rounds over every
        function: an entry only ever falls (flow is monotone in it), so each
        function is revisited at most _CAP + 1 times per caller that changed,
        and a chain of 5,000 calls costs 5,000 updates, not 5,000 rounds."""
        literals: dict[Unit, list[Unit]] = {}
        for unit in units:
            if unit.kind is UnitKind.LITERAL and unit.parent is not None:
                literals.setdefault(unit.parent, []).append(unit)
        callees: dict[Unit, set[Unit]] = {}
        for callee, calls in sites.items():
            for caller, _, _ in calls:
                callees.setdefault(caller, set()).add(callee)

        def refresh(unit: Unit) -> list[Unit]:
            """Recompute the counts in unit and in the literals whose entry
            derives from it; the functions whose entry may change then."""
            changed: list[Unit] = []
            pending = [unit]
            while pending:
                current = pending.pop()
                entry = self.entry_of(current)
                self.locked[current] = self.flow(current, entry) if entry is not None else {}
                changed.extend(callees.get(current, ()))
                pending.extend(literals.get(current, ()))
            return changed

        for unit in units:
            entry = self.entry_of(unit)
            self.locked[unit] = self.flow(unit, entry) if entry is not None else {}
        queue = deque(unit for unit in units if sites.get(unit))
        queued = set(queue)
        while queue:
            unit = queue.popleft()
            queued.discard(unit)
            if unit.kind is UnitKind.LITERAL or self.entry.get(unit) is None or not sites.get(unit):
                continue
            value = min(
                0 if happening.spawned else self._locked_at(caller, n, happening)
                for caller, n, happening in sites[unit]
            )
            if unit.name == "main" and self.package.name == "main" and init_locks:
                value = max(value, 1)
            value = min(value, self.entry[unit])  # falls only: the worklist ends
            if value == self.entry[unit]:
                continue
            self.entry[unit] = value
            for callee in refresh(unit):
                if callee not in queued:
                    queued.add(callee)
                    queue.append(callee)

    def entry_of(self, unit: Unit) -> int | None:
        if unit.kind is not UnitKind.LITERAL:
            return self.entry.get(unit)
        use = unit.use
        if use is LiteralUse.GO:
            return 0
        if use in (LiteralUse.CALLED, LiteralUse.DEFERRED) and unit.parent is not None:
            parent_entry = self.entry_of(unit.parent)
            if parent_entry is None:
                return None
            graph = self.cfgs.graphs.get(unit.parent)
            holder = graph.node_containing(unit.node) if graph is not None else None
            if holder is None:
                return None
            states = self.locked.get(unit.parent) or self.flow(unit.parent, parent_entry)
            return states.get(holder, _CAP)
        if use is LiteralUse.STORED and unit.stored_in is not None and unit.stored_in.is_local and unit.parent is not None:
            return self._stored_literal_entry(unit)
        return None  # passed, stored elsewhere or returned: it runs somewhere we cannot see

    def _stored_literal_entry(self, unit: Unit) -> int | None:
        """`run := func() {...}` then `go run()` or `run()`: the literal runs
        where the variable is called; any other use hands it on."""
        parent = unit.parent
        graph = self.cfgs.graphs.get(parent)
        parent_entry = self.entry_of(parent)
        if graph is None or parent_entry is None:
            return None
        states = self.locked.get(parent) or self.flow(parent, parent_entry)
        counts = []
        for node in self.calls.references(unit.stored_in):
            if self.package.resolution.declarations.get(node) is unit.stored_in:
                continue
            call = node.parent
            if call is None or call.type != "call_expression" or call.child_by_field_name("function") != node:
                return None  # used as a value
            if syntax.statement_of_call(call) == "go_statement":
                counts.append(0)
                continue
            holder = graph.node_containing(call)
            if holder is None:
                return None
            counts.append(states.get(holder, _CAP))
        return min(counts) if counts else None

    def _locked_at(self, unit: Unit, n: int, happening: Happening) -> int:
        """The lock count when the call `happening` at node n runs: just
        before it, or, for a deferred call, at the return after the defers
        registered later (they run first) have run."""
        states = self.locked.get(unit)
        if not states:
            entry = self.entry_of(unit)
            return _CAP if entry is None else entry
        if happening.deferred:
            graph = self.cfgs.graphs[unit]
            at_return = states.get(graph.exits[ExitKind.RETURN], _CAP)
            later_unlocks = sum(
                1 for m, items in self.happenings(unit).items() if m != n and graph.has_path(n, m)
                for h in items if self.defers_unlock(h)
            )
            return max(min(at_return, states.get(n, _CAP)) - later_unlocks, 0)
        locked = states.get(n, _CAP)
        for earlier in self.happenings(unit).get(n, ()):
            if earlier is happening:
                break
            locked = self.apply(locked, (earlier,))
        return locked

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
            if parent is not None and parent.type == "unary_expression" and syntax.text(parent.child_by_field_name("operator")) == "&":
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

    def needs_lock(self, unit: Unit) -> Happening | None:
        """The first call by which a function reaches a thread-bound call
        with no lock of its own before it on some path from its entry (a
        thread-bound call, or a call of a function that needs a lock); None
        if it locks first on every path, or reaches none (and for recursion
        that does not settle). Solved callees first."""
        if unit not in self._needs:
            fixpoint.solve([unit], self.callees, self._first_need, self._needs, lambda _: None)
        return self._needs[unit]

    def _first_need(self, unit: Unit) -> Happening | None:
        if unit not in self.cfgs.graphs or self.hands_context_to_own_goroutine(unit):
            return None
        graph = self.cfgs.graphs[unit]
        states = self.flow(unit, 0)
        for n, items in sorted(self.happenings(unit).items()):
            if not graph.reachable(n):
                continue
            locked = states.get(n, _CAP)
            for happening in items:
                if locked == 0 and self.unlocked_need(happening):
                    return happening
                locked = self.apply(locked, (happening,))
        return None

    def hands_context_to_own_goroutine(self, unit: Unit) -> bool:
        """A context constructor that starts the goroutine which will use
        the context, locked to its own thread and making the context current
        there (gorgonia's `go ctx.Run()`): the thread the constructor ran on
        never uses it, so its callers need no lock."""
        happenings = self.happenings(unit)
        if not any(h.event is Event.BOUND or self.unlocked_need(h) for items in happenings.values() for h in items):
            return False
        goroutines = [
            literal for literal in self.package.units
            if literal.kind is UnitKind.LITERAL and literal.parent is unit and literal.use is LiteralUse.GO
        ]
        for statement in syntax.walk(unit.body) if unit.body is not None else ():
            if statement.type == "go_statement" and syntax.enclosing_function(statement) == unit.node:
                call = syntax.unparen(statement.named_children[0]) if statement.named_children else None
                target = self.calls.local_target(call) if call is not None and call.type == "call_expression" else None
                if target is not None:
                    goroutines.append(target)
        return any(self._sets_context_locked(goroutine) for goroutine in goroutines if goroutine is not unit)

    def _sets_context_locked(self, goroutine: Unit) -> bool:
        """The goroutine locks its thread before any thread-bound call and
        makes a context current (directly or through the package's functions)."""
        if goroutine not in self.cfgs.graphs or self.needs_lock(goroutine) is not None:
            return False
        for items in self.happenings(goroutine).values():
            for happening in items:
                if happening.event not in (Event.BOUND, Event.CALL):
                    continue
                last = self.chain(happening)[-1] if happening.event is Event.CALL else happening
                fact = self.calls.calls.get(last.call) if last.event is Event.BOUND else None
                if fact is not None and fact.api is not None and fact.api.context_setter:
                    return True
        return False

    def unlocked_need(self, happening: Happening) -> bool:
        """Whether this happening needs the thread locked when it runs: a
        thread-bound call, or a direct call of a function that needs it."""
        if happening.event is Event.BOUND:
            return True
        return (
            happening.event is Event.CALL and not happening.spawned and not happening.deferred
            and happening.target is not None and self.needs_lock(happening.target) is not None
        )

    def chain(self, happening: Happening) -> list[Happening]:
        """The calls from this happening down to the thread-bound call."""
        found = [happening]
        seen: set[Unit] = set()
        while found[-1].event is Event.CALL and found[-1].target is not None and found[-1].target not in seen:
            seen.add(found[-1].target)
            below = self.needs_lock(found[-1].target)
            if below is None:
                break
            found.append(below)
        return found

    def reported_by_callers(self, unit: Unit) -> bool:
        """A function its in-package callers call directly: a missing lock
        is theirs to add, and is reported at their calls."""
        sites = self.call_sites.get(unit, [])
        return unit.kind is not UnitKind.LITERAL and bool(sites) and not any(h.spawned or h.deferred for _, _, h in sites)

    def callers_own_the_thread(self, unit: Unit) -> bool:
        """An exported function or a method that nothing in the package calls
        is an edge of the package: its callers, outside, decide the thread
        (a binding's one-line wrapper of cudaSetDevice is theirs to lock)."""
        if unit.kind is UnitKind.LITERAL or _test_entry(unit):
            return False
        if not (unit.kind is UnitKind.METHOD or self._callable_outside(unit)):
            return False
        return not self.call_sites.get(unit)

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

    def _relevant(self) -> list[Unit]:
        """The units whose lock state matters: those with a lock, an unlock or
        a thread-bound call, the functions calling them (their lock state at
        the call is the callee's entry state), transitively, and the
        functions enclosing relevant literals."""
        graphs = self.cfgs.graphs
        by_node = {u.node: u for u in self.package.units}
        pending = []
        for call, fact in self.calls.calls.items():
            function = syntax.enclosing_function(call) if _touches_threads(self.calls, self.imported, fact) else None
            if function is not None and function in by_node:
                pending.append(by_node[function])
        relevant: set[Unit] = set()
        while pending:
            unit = pending.pop()
            if unit in relevant or not self.cfgs.analysable(unit):
                continue
            relevant.add(unit)
            if unit.parent is not None and unit.parent in graphs:
                pending.append(unit.parent)
            if unit.kind is not UnitKind.LITERAL:
                for call in self.calls.calls_of(unit):
                    function = syntax.enclosing_function(call)
                    if function in by_node:
                        pending.append(by_node[function])
            elif unit.stored_in is not None:
                for node in self.calls.references(unit.stored_in):
                    function = syntax.enclosing_function(node)
                    if function in by_node:
                        pending.append(by_node[function])
        return [u for u in self.package.units if u in relevant and u in graphs]

    def _used_as_values(self, units: list[Unit]) -> set[Unit]:
        """Functions and methods referred to other than by calling them
        (callbacks, method values)."""
        found: set[Unit] = set()
        resolution = self.package.resolution
        for unit in units:
            if unit.kind is UnitKind.METHOD and self.calls.method_values(unit):
                found.add(unit)
            if unit.symbol is None:
                continue
            for node in self.calls.references(unit.symbol):
                if resolution.declarations.get(node) is unit.symbol:
                    continue
                parent = node.parent
                if parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == node:
                    continue
                found.add(unit)
        return found

    def _main_locked_by_init(self, units: list[Unit]) -> bool:
        """A process-lifetime lock: `func init() { runtime.LockOSThread() }`
        pins the main goroutine, in which main then runs."""
        for unit in units:
            if unit.name == "init" and unit.kind is UnitKind.FUNCTION:
                states = self.flow(unit, 0)
                graph = self.cfgs.graphs[unit]
                if graph.exits[ExitKind.RETURN] in graph.live and states.get(graph.exits[ExitKind.RETURN], 0) >= 1:
                    return True
        return False


def _returns_nil_error(statement: Node | None) -> bool:
    values = next((c for c in statement.named_children if c.type == "expression_list"), None) if statement is not None else None
    expressions = syntax.expressions(values) if values is not None else []
    return bool(expressions) and syntax.text(expressions[-1]) == "nil"


def _return_outcomes(threads: LockStates, graph: CFG) -> list[tuple[Node | None, bool]]:
    """(return statement, locked when it returns) on each path from the entry,
    with the thread unlocked at entry (deferred unlocks applied)."""
    found: list[tuple[Node | None, bool]] = []
    happenings = threads.happenings(graph.unit)

    def step(n: int, state: tuple[int, int]):
        count, deferred = state
        for happening in happenings.get(n, ()):
            if threads.defers_unlock(happening):
                deferred = min(deferred + 1, _CAP)
            else:
                count = threads.apply(count, (happening,))
        for successor in graph.successors(n):
            if graph.kind(successor) is not NodeKind.EXIT:
                yield successor, (count, deferred)
            elif graph.exit_kind(successor) is ExitKind.RETURN:
                statement = graph.ast(n) if graph.kind(n) is NodeKind.RETURN else None
                found.append((statement, count - deferred > 0))

    for _ in graph.walk(graph.entry, (0, 0), step):
        pass
    return found





def unlocks_somewhere(threads: LockStates, unit: Unit) -> bool:
    return any(
        threads.unlocks(h) or threads.defers_unlock(h) for hs in threads.happenings(unit).values() for h in hs
    )


def lock_follows(threads: LockStates, graph: CFG, start: int) -> bool:
    """Whether every path from start to a return passes a lock: then a
    deferred unlock registered at start runs on a locked thread."""
    happenings = threads.happenings(graph.unit)
    returns: list[int] = []

    def step(n: int, _: None):
        for successor in graph.successors(n):
            if graph.kind(successor) is NodeKind.EXIT:
                if graph.exit_kind(successor) is ExitKind.RETURN:
                    returns.append(successor)
            elif not any(threads.locks(h) for h in happenings.get(successor, ())):
                yield successor, None

    for _ in graph.walk(start, None, step):
        if returns:
            return False
    return not returns


def _branch(threads: LockStates, edge: Edge, known: frozenset) -> frozenset | None:
    """Follow a branch, remembering the value of a flag it tests: a boolean
    that the function never assigns (`if pin { Lock }` ... `if pin { Unlock }`
    takes the same side twice). None: the branch contradicts what is known."""
    condition = syntax.unparen(edge.condition)
    if condition is None or condition.type != "identifier":
        return known
    symbol = threads.package.resolution.symbol(condition)
    if symbol is None or not threads.stable(symbol):
        return known
    value = edge.polarity
    if (symbol, not value) in known:
        return None
    return known | {(symbol, value)}


def lock_outcomes(threads: LockStates, graph: CFG, lock_node: int, lock: Happening) -> dict[str, list[int]]:
    """From the entry, along feasible paths through the lock: is it undone
    (or a deferred unlock registered) by each return? The
    return nodes (before the exit), by outcome ("locked", "unlocked")."""
    outcomes: dict[str, list[int]] = {"locked": [], "unlocked": []}
    happenings = threads.happenings(graph.unit)

    def step(n: int, state: tuple[int, int, bool, frozenset]):
        locked, deferred, active, known = state
        for happening in happenings.get(n, ()):
            if happening is lock and n == lock_node:
                active, locked, deferred = True, 1, 0
                continue
            if not active:
                continue
            if threads.unlocks(happening):
                locked = max(locked - 1, 0)
            elif threads.defers_unlock(happening):
                deferred = min(deferred + 1, _CAP)
            elif threads.locks(happening):
                locked = min(locked + 1, _CAP)
        for edge in graph.out_edges(n):
            if graph.kind(edge.target) is NodeKind.EXIT:
                if active and graph.exit_kind(edge.target) is ExitKind.RETURN:
                    outcomes["unlocked" if locked - deferred <= 0 else "locked"].append(n)
                continue
            facts = _branch(threads, edge, known)
            if facts is not None:
                yield edge.target, (locked, deferred, active, facts)

    for _ in graph.walk(graph.entry, (0, 0, False, frozenset()), step):
        pass
    return outcomes


def unlocked_before(threads: LockStates, graph: CFG, entry: int, target: int, target_happening: Happening) -> bool:
    """Whether some feasible path reaches the unlock at target with nothing locked."""
    happenings = threads.happenings(graph.unit)

    def count_before(n: int, count: int) -> int:
        for happening in happenings.get(n, ()):
            if n == target and happening is target_happening:
                break
            count = threads.apply(count, (happening,))
        return count

    def step(n: int, state: tuple[int, frozenset]):
        if n == target:
            return
        count, known = state
        count = count_before(n, count)
        for edge in graph.out_edges(n):
            if graph.kind(edge.target) is NodeKind.EXIT:
                continue
            facts = _branch(threads, edge, known)
            if facts is not None:
                yield edge.target, (count, facts)

    return any(
        n == target and count_before(n, count) == 0
        for n, (count, _) in graph.walk(graph.entry, (entry, frozenset()), step)
    )


def _test_entry(unit: Unit) -> bool:
    """TestX, BenchmarkX, FuzzX and ExampleX of a _test.go file: `go test`
    calls them on goroutines of its own, unlocked."""
    name = unit.name
    return unit.kind is UnitKind.FUNCTION and unit.file.display.endswith("_test.go") and name.startswith(
        ("Test", "Benchmark", "Fuzz", "Example"),
    )


def exported(unit: Unit) -> bool:
    name = unit.name.rsplit(".", 1)[-1]
    return unit.kind is not UnitKind.LITERAL and name[:1].isupper()



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
    return any(_touches_threads(calls, imported, fact) for fact in calls.calls.values())


def _imported_effects(calls: CallIndex, imported: FactView, fact) -> ThreadEffects | None:
    function = calls.module_function(fact)
    return imported.get(*function) if function is not None else None


def _touches_threads(calls: CallIndex, imported: FactView, fact) -> bool:
    """A lock, an unlock or a thread-bound call: of runtime, of the API, or
    of another package of the module as its facts say."""
    if fact.import_path == _RUNTIME:
        return fact.name in ("LockOSThread", "UnlockOSThread")
    if fact.api is not None:
        return fact.api.thread_bound
    summary = _imported_effects(calls, imported, fact)
    return summary is not None and bool(summary.needs_lock or summary.thread)
