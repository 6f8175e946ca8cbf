"""Which functions need the thread locked: those that reach a thread-bound
call with no lock of their own before it (`needs_lock`), the chain of calls
down to it, and the context constructors whose callers need no lock."""

from __future__ import annotations

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CallIndex
from cudalint.analyses.locks.events import CAP, Event, Happening
from cudalint.analyses.locks.flows import LockFlows
from cudalint.functions import LiteralUse, Unit, UnitKind


class LockNeeds:
    """The first unlocked need of each function, solved callees first."""

    def __init__(self, flows: LockFlows, calls: CallIndex):
        # The flows hold the package, its graphs and its events.
        self.flows = flows
        self.calls = calls
        self.needs: dict[Unit, Happening | None] = {}

    def needs_lock(self, unit: Unit) -> Happening | None:
        """The first call by which a function reaches a thread-bound call
        with no lock of its own before it on some path from its entry (a
        thread-bound call, or a call of a function that needs a lock); None
        if it locks first on every path, or reaches none (and for recursion
        that does not settle). Solved callees first."""
        if unit not in self.needs and unit not in self.flows.events.reaching():
            self.needs[unit] = None  # it reaches no thread-bound call
        if unit not in self.needs:
            fixpoint.solve([unit], self.flows.callees, self._first_need, self.needs, lambda _: None)
        return self.needs[unit]

    def _first_need(self, unit: Unit) -> Happening | None:
        if unit not in self.flows.cfgs.graphs or self.hands_context_to_own_goroutine(unit):
            return None
        graph = self.flows.cfgs.graphs[unit]
        states = self.flows.flow(unit, 0)
        for n, items in sorted(self.flows.happenings(unit).items()):
            if not graph.reachable(n):
                continue
            locked = states.get(n, CAP)
            for happening in items:
                if locked == 0 and self.unlocked_need(happening):
                    return happening
                locked = self.flows.apply(locked, (happening,))
        return None

    def hands_context_to_own_goroutine(self, unit: Unit) -> bool:
        """A context constructor that starts the goroutine which will use
        the context, locked to its own thread and making the context current
        there (gorgonia's `go ctx.Run()`): the thread the constructor ran on
        never uses it, so its callers need no lock."""
        happenings = self.flows.happenings(unit)
        if not any(h.event is Event.BOUND or self.unlocked_need(h) for items in happenings.values() for h in items):
            return False
        goroutines = [
            literal for literal in self.flows.package.units
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
        if goroutine not in self.flows.cfgs.graphs or self.needs_lock(goroutine) is not None:
            return False
        for items in self.flows.happenings(goroutine).values():
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
