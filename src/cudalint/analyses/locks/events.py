"""The lock-relevant events of one function: LockOSThread, UnlockOSThread,
deferred unlocks (also through a deferred literal), thread-bound CUDA calls
and calls of the package's own functions, found once per function and kept."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CalleeKind, CallIndex
from cudalint.analyses.thread_facts import ThreadEffects
from cudalint.cfg import NodeKind, PackageCFGs
from cudalint.framework import FactView
from cudalint.functions import Unit, UnitKind


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
CAP = 4


class LockEvents:
    """The happenings of each function of one package, scanned when first asked for."""

    def __init__(self, cfgs: PackageCFGs, calls: CallIndex, imported: FactView):
        self.cfgs = cfgs
        self.calls = calls
        # What the functions of the other packages of the module do to the thread.
        self.imported = imported
        self.events: dict[Unit, dict[int, list[Happening]]] = {}
        self._reaching: frozenset[Unit] | None = None

    def reaching(self) -> frozenset[Unit]:
        """The units whose lock state matters: those with a lock, an unlock or
        a thread-bound call, the functions calling them (their lock state at
        the call is the callee's entry state), transitively, and the
        functions enclosing such literals. No other function is a lock or
        unlock wrapper or needs a lock: its graph need not be built for that."""
        if self._reaching is not None:
            return self._reaching
        graphs = self.cfgs.graphs
        by_node = {u.node: u for u in self.cfgs.package.units}
        pending = []
        for call, fact in self.calls.calls.items():
            function = syntax.enclosing_function(call) if touches_threads(self.calls, self.imported, fact) else None
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
        self._reaching = frozenset(relevant)
        return self._reaching

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
        if fact is not None and fact.api is not None and fact.api.thread_lock == "lock" and statement != "defer_statement":
            return Happening(Event.LOCK, call)  # `ctx.Lock()` of a binding that locks the thread for its context
        if fact is not None and fact.api is not None and fact.api.thread_lock == "unlock":
            return Happening(Event.DEFER_UNLOCK if statement == "defer_statement" else Event.UNLOCK, call)
        if fact is not None and fact.api is not None and fact.api.thread_bound:
            return Happening(Event.BOUND, call)
        summary = imported_effects(self.calls, self.imported, fact)
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


def exported(unit: Unit) -> bool:
    name = unit.name.rsplit(".", 1)[-1]
    return unit.kind is not UnitKind.LITERAL and name[:1].isupper()


def imported_effects(calls: CallIndex, imported: FactView, fact) -> ThreadEffects | None:
    function = calls.module_function(fact)
    return imported.get(*function) if function is not None else None


def touches_threads(calls: CallIndex, imported: FactView, fact) -> bool:
    """A lock, an unlock or a thread-bound call: of runtime, of the API, or
    of another package of the module as its facts say."""
    if fact.import_path == _RUNTIME:
        return fact.name in ("LockOSThread", "UnlockOSThread")
    if fact.api is not None:
        return fact.api.thread_bound or bool(fact.api.thread_lock)
    summary = imported_effects(calls, imported, fact)
    return summary is not None and bool(summary.needs_lock or summary.thread)
