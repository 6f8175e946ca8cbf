"""The path questions the CL4xx rules ask of one function's graph: is a
lock undone by each return, does a lock follow a deferred unlock, can an
unlock run with nothing locked. Feasible paths only: a flag the function
never assigns takes the same side at each test."""

from __future__ import annotations

from typing import Protocol

from cudalint import syntax
from cudalint.analyses.locks.events import CAP, Happening
from cudalint.cfg import CFG, Edge, ExitKind, NodeKind
from cudalint.functions import Package, Unit
from cudalint.scope import Symbol


class LockStates(Protocol):
    """What the path questions read of the package's lock states (the
    facade, `cudalint.analyses.locks.LockStates`)."""

    package: Package

    def happenings(self, unit: Unit) -> dict[int, list[Happening]]: ...
    def locks(self, happening: Happening) -> bool: ...
    def unlocks(self, happening: Happening) -> bool: ...
    def defers_unlock(self, happening: Happening) -> bool: ...
    def apply(self, count: int, happenings) -> int: ...
    def stable(self, symbol: Symbol) -> bool: ...


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
                deferred = min(deferred + 1, CAP)
            elif threads.locks(happening):
                locked = min(locked + 1, CAP)
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
