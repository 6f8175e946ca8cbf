"""What each function does to its caller's lock count: the counts held
before each statement for a given entry count (`flow`), and the lock and
unlock wrappers (`wrapper`), solved callees first."""

from __future__ import annotations

from collections import deque

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.locks.events import CAP, Event, Happening, LockEvents
from cudalint.cfg import CFG, ExitKind, NodeKind, PackageCFGs
from cudalint.functions import Package, Unit, UnitKind


class LockFlows:
    """The lock counts and wrapper effects of the functions of one package."""

    def __init__(self, package: Package, cfgs: PackageCFGs, events: LockEvents):
        self.package = package
        self.cfgs = cfgs
        self.events = events
        self.wrappers: dict[Unit, Event | None] = {}

    def happenings(self, unit: Unit) -> dict[int, list[Happening]]:
        return self.events.happenings(unit)

    def callees(self, unit: Unit) -> list[Unit]:
        """The functions of the package whose lock facts this one's depend on:
        those it calls, defers or starts, also from a deferred literal."""
        if unit not in self.cfgs.graphs:
            return []
        found: list[Unit] = []
        reaching = self.events.reaching()
        for happenings in self.happenings(unit).values():
            for happening in happenings:
                if happening.target is not None:
                    found.append(happening.target)
                found.extend(happening.closure)
        return [callee for callee in found if callee in reaching]

    def wrapper(self, unit: Unit) -> Event | None:
        """LOCK for a function that leaves its caller's thread locked on every
        return, UNLOCK for one that only unlocks it; None for anything else
        (and for a recursive function whose effect does not settle).
        Solved for everything the function reaches, callees first."""
        if unit not in self.wrappers and unit not in self.events.reaching():
            self.wrappers[unit] = None  # it reaches no lock or unlock
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
        if Event.LOCK not in events and self._unlocks_on_some_return(unit):
            return Event.UNLOCK
        return None

    def _unlocks_on_some_return(self, unit: Unit) -> bool:
        """Entered locked, the function returns unlocked on some path (`if
        p.released { return }` first is still a release), the deferred
        unlocks counted only on the paths that registered them: `if
        len(devs) == 0 { return errEmpty }` before `t, err := acquire(d)`
        and `defer t.Release()` undoes nothing of its caller's."""
        outcomes = _return_outcomes(self, self.cfgs.graphs[unit], entry=1)
        return any(not locked for _, locked in outcomes)

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
        if not unit.returns_error or unit.result_count < 2 or self.unlocks_somewhere(unit):
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
        return self._does(happening, Event.UNLOCK)

    def locks(self, happening: Happening) -> bool:
        return self._does(happening, Event.LOCK)

    def _does(self, happening: Happening, event: Event) -> bool:
        """The happening is `event` itself, or a call that does it now: a
        wrapper of it called in place (a deferred or spawned call does it
        later, or on another thread)."""
        if happening.event is event:
            return True
        return (
            happening.event is Event.CALL and not happening.deferred and not happening.spawned
            and happening.target is not None and self.wrapper(happening.target) is event
        )

    def flow(self, unit: Unit, entry: int, start: int | None = None) -> dict[int, int]:
        """The lock count held on every path before each node (a greatest
        fixpoint: unreachable nodes keep the cap and are never reported);
        from `start` instead of the entry, on the paths through it."""
        graph = self.cfgs.graphs[unit]
        happenings = self.happenings(unit)
        start = graph.entry if start is None else start
        before = {n: CAP for n in graph.nodes()}
        before[start] = entry
        visited = {start}
        queue = deque([start])
        while queue:
            n = queue.popleft()
            after = self.apply(before[n], happenings.get(n, ()))
            for successor in graph.successors(n):
                value = min(before[successor], after)
                if successor == start:
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
                count = min(count + 1, CAP)
            elif effect is Event.UNLOCK:
                count = max(count - 1, 0)
        return count


    def unlocks_somewhere(self, unit: Unit) -> bool:
        return any(self.unlocks(h) or self.defers_unlock(h) for hs in self.happenings(unit).values() for h in hs)


def _returns_nil_error(statement: Node | None) -> bool:
    expressions = syntax.returned(statement)
    return bool(expressions) and syntax.text(expressions[-1]) == "nil"


def _return_outcomes(flows: LockFlows, graph: CFG, entry: int = 0) -> list[tuple[Node | None, bool]]:
    """(return statement, locked when it returns) on each path from the entry,
    with the thread locked `entry` times at entry (deferred unlocks applied). A lock
    taken only on success (`lk, err := cuda.LockThread(dev)`) is not held on
    the side of its error's test where the error is not nil."""
    found: list[tuple[Node | None, bool]] = []
    happenings = flows.happenings(graph.unit)

    def step(n: int, state: tuple[int, int, frozenset[str]]):
        count, deferred, on_success = state
        if on_success and (statement := graph.ast(n)) is not None:
            # `ctx, err := cuda.CreateContext(dev)`: err says something else from here on.
            on_success = on_success - {syntax.text(t) for left, _ in syntax.assignment_sides(statement) for t in left}
        for happening in happenings.get(n, ()):
            if flows.defers_unlock(happening):
                deferred = min(deferred + 1, CAP)
                continue
            before = count
            count = flows.apply(count, (happening,))
            if count > before and (error := _error_of_lock_on_success(flows, happening)):
                on_success = on_success | {error}
        for edge in graph.out_edges(n):
            successor, held, pending = edge.target, count, on_success
            failed = _failed_error(edge.condition, edge.polarity) if edge.condition is not None else None
            if failed is not None and failed in pending:
                held, pending = max(held - 1, 0), pending - {failed}
            if graph.kind(successor) is not NodeKind.EXIT:
                yield successor, (held, deferred, pending)
            elif graph.exit_kind(successor) is ExitKind.RETURN:
                statement = graph.ast(n) if graph.kind(n) is NodeKind.RETURN else None
                found.append((statement, held - deferred > 0))

    for _ in graph.walk(graph.entry, (entry, 0, frozenset()), step):
        pass
    return found


def _error_of_lock_on_success(flows: LockFlows, happening: Happening) -> str | None:
    """The error variable of a call that locks only where it succeeds (an
    imported `lock-on-success` function, or one of the package)."""
    on_success = happening.via == "on success" or (
        happening.event is Event.CALL and happening.target is not None and flows.locks_on_success(happening.target)
    )
    left = syntax.assigned_from(happening.call) if on_success else []
    error = syntax.unparen(left[-1]) if left else None
    return syntax.text(error) if error is not None and error.type == "identifier" and syntax.text(error) != "_" else None


def _failed_error(condition: Node, polarity: bool | None) -> str | None:
    """The variable an edge's condition finds a non-nil error in
    (`err != nil` taken, `err == nil` not taken)."""
    condition = syntax.unparen(condition)
    if condition is None or condition.type != "binary_expression":
        return None
    operator = syntax.text(condition.child_by_field_name("operator"))
    left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
    if syntax.text(right) != "nil" or left is None or left.type != "identifier":
        return None
    return syntax.text(left) if (operator == "!=" and polarity) or (operator == "==" and polarity is False) else None
