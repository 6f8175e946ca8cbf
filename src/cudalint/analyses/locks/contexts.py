"""The contexts functions run in: each relevant function's lock count on
entry, solved from its in-package callers to a fixpoint (`solve`), and the
counts before each of its statements from there."""

from __future__ import annotations

from collections import deque

from cudalint import syntax
from cudalint.analyses.calls import CallIndex
from cudalint.analyses.locks.events import CAP, Event, Happening, exported
from cudalint.analyses.locks.flows import LockFlows
from cudalint.cfg import ExitKind
from cudalint.framework import FactView
from cudalint.functions import LiteralUse, Unit, UnitKind


class EntryContexts:
    """Entry lock counts, solved once for the package."""

    def __init__(self, flows: LockFlows, calls: CallIndex, imported: FactView):
        # The flows hold the package, its graphs and its events.
        self.flows = flows
        self.calls = calls
        self.imported = imported
        self.entry: dict[Unit, int | None] = {}  # lock count; None: a context we cannot see
        self.locked: dict[Unit, dict[int, int]] = {}
        # In-package calls of each function (recursion left out): (caller, node, call).
        self.call_sites: dict[Unit, list[tuple[Unit, int, Happening]]] = {}

    def solve(self) -> None:
        """Entry states: a function is locked on entry when every call of it in
        the package is made from a locked point; iterate to a fixpoint."""
        units = self._relevant()
        sites: dict[Unit, list[tuple[Unit, int, Happening]]] = {}
        for unit in units:
            for n, happenings in self.flows.happenings(unit).items():
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
            elif unit.name == "main" and self.flows.package.name == "main" and init_locks:
                self.entry[unit] = 1
            elif unit.name == "init" and unit.kind is UnitKind.FUNCTION:
                # runtime.main locks the main goroutine to the main thread
                # while packages initialise: init functions run locked.
                self.entry[unit] = 1
            else:
                self.entry[unit] = CAP if sites.get(unit) else 0
        exported_lock = any(self.flows.wrapper(u) is Event.LOCK and exported(u) for u in units)
        for unit in units:
            # The unlock half of an exported lock/unlock pair runs where the
            # lock half left the thread: locked.
            if exported_lock and self.entry.get(unit) == 0 and exported(unit) and self.flows.wrapper(unit) is Event.UNLOCK:
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
        function is revisited at most CAP + 1 times per caller that changed,
        and a chain of 5,000 calls costs 5,000 updates, not 5,000 rounds."""
        literals: dict[Unit, list[Unit]] = {}
        for unit in units:
            if unit.nested:
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
                self.locked[current] = self.flows.flow(current, entry) if entry is not None else {}
                changed.extend(callees.get(current, ()))
                pending.extend(literals.get(current, ()))
            return changed

        for unit in units:
            entry = self.entry_of(unit)
            self.locked[unit] = self.flows.flow(unit, entry) if entry is not None else {}
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
            if unit.name == "main" and self.flows.package.name == "main" and init_locks:
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
            graph = self.flows.cfgs.graphs.get(unit.parent)
            holder = graph.node_containing(unit.node) if graph is not None else None
            if holder is None:
                return None
            states = self.locked.get(unit.parent) or self.flows.flow(unit.parent, parent_entry)
            return states.get(holder, CAP)
        if use is LiteralUse.STORED and unit.stored_in is not None and unit.stored_in.is_local and unit.parent is not None:
            return self._stored_literal_entry(unit)
        return None  # passed, stored elsewhere or returned: it runs somewhere we cannot see

    def _stored_literal_entry(self, unit: Unit) -> int | None:
        """`run := func() {...}` then `go run()` or `run()`: the literal runs
        where the variable is called; any other use hands it on."""
        parent = unit.parent
        graph = self.flows.cfgs.graphs.get(parent)
        parent_entry = self.entry_of(parent)
        if graph is None or parent_entry is None:
            return None
        states = self.locked.get(parent) or self.flows.flow(parent, parent_entry)
        counts = []
        for node in self.calls.references(unit.stored_in):
            if self.flows.package.resolution.declarations.get(node) is unit.stored_in:
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
            counts.append(states.get(holder, CAP))
        return min(counts) if counts else None

    def _locked_at(self, unit: Unit, n: int, happening: Happening) -> int:
        """The lock count when the call `happening` at node n runs: just
        before it, or, for a deferred call, at the return after the defers
        registered later (they run first) have run."""
        states = self.locked.get(unit)
        if not states:
            entry = self.entry_of(unit)
            return CAP if entry is None else entry
        if happening.deferred:
            # At the returns of the paths that registered it (an early
            # return before the defer runs nothing of it).
            graph = self.flows.cfgs.graphs[unit]
            at_return = self.flows.flow(unit, states.get(n, CAP), n).get(graph.exits[ExitKind.RETURN], CAP)
            later_unlocks = sum(
                1 for m, items in self.flows.happenings(unit).items() if m != n and graph.has_path(n, m)
                for h in items if self.flows.defers_unlock(h)
            )
            return max(min(at_return, states.get(n, CAP)) - later_unlocks, 0)
        locked = states.get(n, CAP)
        for earlier in self.flows.happenings(unit).get(n, ()):
            if earlier is happening:
                break
            locked = self.flows.apply(locked, (earlier,))
        return locked

    def _relevant(self) -> list[Unit]:
        """The units whose lock state matters (`LockEvents.reaching`) that have a graph."""
        graphs = self.flows.cfgs.graphs
        reaching = self.flows.events.reaching()
        return [u for u in self.flows.package.units if u in reaching and u in graphs]

    def _used_as_values(self, units: list[Unit]) -> set[Unit]:
        """Functions and methods referred to other than by calling them
        (callbacks, method values)."""
        found: set[Unit] = set()
        resolution = self.flows.package.resolution
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
                states = self.flows.flow(unit, 0)
                graph = self.flows.cfgs.graphs[unit]
                if graph.exits[ExitKind.RETURN] in graph.live and states.get(graph.exits[ExitKind.RETURN], 0) >= 1:
                    return True
        return False
