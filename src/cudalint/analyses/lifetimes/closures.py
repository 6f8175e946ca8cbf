"""Closures and defers met by the path walk.

A func literal that refers to the followed variable shares it: deferred, it
may release it at exit (whatever the variable holds then, so it covers the
handle even when registered before the acquisition); called in place, its
effect on the variable applies there; stored in a local variable, the calls
of that variable decide (`cleanup()`, `defer cleanup()`); escaping (stored
elsewhere, passed on, returned), it takes the handle with it. What a literal
does with a captured variable is its summary, as for a parameter.
"""

from __future__ import annotations

from dataclasses import replace

from cudalint import syntax
from cudalint.analyses.calls import CalleeKind, CallIndex
from cudalint.analyses.lifetimes.effects import Effects
from cudalint.analyses.lifetimes.outcomes import Effect, Origin
from cudalint.analyses.lifetimes.states import LeftControl, Phase, State, WalkRecord, release
from cudalint.analyses.uses import Use, UseKind, VariableUses, calls_parameter, registers_cleanup
from cudalint.cfg import CFG, NodeKind
from cudalint.functions import LiteralUse, Unit
from cudalint.scope import Symbol

# Uses of a local closure that hand it (and what it captured) on.
_ESCAPES = (UseKind.RETURN, UseKind.STORE, UseKind.PASS_UNKNOWN, UseKind.PASS_LOCAL, UseKind.CAPTURE)
_PASSES = (UseKind.PASS_UNKNOWN, UseKind.PASS_LOCAL)


class Closures:
    def __init__(self, calls: CallIndex, uses: VariableUses, effects: Effects):
        self._calls = calls
        self._uses = uses
        self._effects = effects
        self._defer_nodes: dict[Unit, list[int]] = {}

    def defers(self, graph: CFG) -> list[int]:
        """The function's defer statements (its nodes), in node order, and a
        test's `t.Cleanup(func() {...})`, which runs when the test ends."""
        found = self._defer_nodes.get(graph.unit)
        if found is None:
            resolution = self._calls.package.resolution
            found = self._defer_nodes[graph.unit] = [
                n for n in graph.statement_nodes() if graph.kind(n) is NodeKind.DEFER or (
                    (statement := graph.ast(n)) is not None and statement.type == "expression_statement"
                    and registers_cleanup(syntax.unparen(statement.named_children[0]), resolution)
                )
            ]
        return found

    def closure_release(self, state: State, literal: Unit, symbol: Symbol, defer_node: int) -> State:
        """A deferred closure (or deferred call of a local closure) that may
        release the variable at exit."""
        summary = self._effects.summary(literal, symbol)
        if summary.effect is Effect.BORROWS:
            return state
        state = replace(state, closure_released=state.closure_released | {symbol})
        if summary.releases_on_every_path:
            state = replace(state, closure_always=state.closure_always | {(symbol, defer_node)})
        return state

    def literal(self, origin: Origin | None, state: State, n: int, literal: Unit, symbol: Symbol, record: WalkRecord) -> State:
        """A func literal that refers to the handle's variable."""
        use = literal.use
        if use is LiteralUse.DEFERRED:
            return self.closure_release(state, literal, symbol, n)
        if use is LiteralUse.CALLED or (use is LiteralUse.PASSED and self._called_in_place(literal)):
            effect = self._effects.effect(literal, symbol)
            if effect is Effect.RELEASES:
                return release(origin, state, n, False, record, None)
            if effect is Effect.BORROWS:
                return state
        if use is LiteralUse.STORED and literal.stored_in is not None and literal.stored_in.is_local:
            return state  # a local closure: its calls (`cleanup()`, `defer cleanup()`) decide
        if use is LiteralUse.PASSED and self._effects.effect(literal, symbol) is Effect.BORROWS:
            # `w.Do(func() { C.use(cs) })`: wherever the closure goes, it only
            # reads the handle; releasing it is still this function's job.
            return state
        if state.phase is Phase.RELEASED:
            return state
        collection = self._appended_to(literal)
        if collection is not None and self._effects.effect(literal, symbol) is Effect.RELEASES:
            # `cleanups = append(cleanups, func() { destroy(h) })`: the slice
            # holds the release; what the function does with it decides.
            return replace(state, names=state.names | {collection}, collections=state.collections | {collection})
        record.transferred += 1
        raise LeftControl

    def releases_in_place(self, use: Use) -> bool:
        """A variable captured by a literal that a function of the package
        runs in place and that releases it on some path (`visit(gi,
        func(...) error { return gi.Destroy() })`): what follows the call
        may run released."""
        literal = use.unit
        if use.kind is not UseKind.CAPTURE or literal is None or literal.use is not LiteralUse.PASSED or not self._called_in_place(literal):
            return False
        # The value itself, not a field of it (`t.withContext(func() C.CUresult { return
        # C.cuMemFree(t.ptr) })` frees t's memory; t is still used for its other fields).
        whole = any(
            inner.symbol is use.symbol and (inner.kind is UseKind.RELEASE or (inner.kind is UseKind.METHOD and "." not in inner.method))
            for inner in self._uses.uses([literal.body])
        ) if literal.body is not None else False
        summary = self._effects.summary(literal, use.symbol)
        return whole and summary.releases_on_some_path and not summary.hands_over  # (a path of it that releases: a second release after it is one)

    def _called_in_place(self, literal: Unit) -> bool:
        """`visit(gi, func(ci nvml.ComputeInstance) error { return gi.Destroy() })`
        where visit, a function of the package, calls that parameter itself:
        the literal runs there, as a call of it would."""
        arguments = literal.node.parent
        call = arguments.parent if arguments is not None and arguments.type == "argument_list" else None
        callee = self._calls.callee(call) if call is not None else None
        if callee is None or callee.kind is not CalleeKind.LOCAL or callee.target is None:
            return False
        index = next((i for i, argument in enumerate(syntax.children(arguments)) if argument.id == literal.node.id), None)
        return index is not None and calls_parameter(callee.target, index)

    def _appended_to(self, literal: Unit) -> Symbol | None:
        """The local slice a func literal is appended to, if it is an
        argument of `xs = append(xs, ...)`."""
        arguments = literal.node.parent
        call = arguments.parent if arguments is not None and arguments.type == "argument_list" else None
        if call is None or syntax.text(call.child_by_field_name("function")) != "append":
            return None
        return self._uses.appended_to(call)

    def bound_closures(self, origin: Origin | None, state: State, n: int, uses: list[Use], record: WalkRecord) -> State:
        """`defer cleanup()` / `cleanup()` / `return cleanup` where cleanup is a
        local variable bound to a func literal that refers to the handle."""
        for use in uses:
            literal = self._calls.unit_of(use.symbol)
            if literal is None or literal.stored_in is not use.symbol:
                continue
            captured = self._uses.captures(literal) & state.names
            if not captured:
                continue
            if use.kind is UseKind.CALLED:
                for symbol in captured:
                    effect = self._effects.effect(literal, symbol)
                    if use.deferred:
                        state = self.closure_release(state, literal, symbol, n)
                    elif effect is Effect.RELEASES:
                        state = release(origin, state, n, False, record, None)
                    elif effect in (Effect.RETAINS, Effect.KEEPS_ON_SUCCESS) and state.phase is Phase.HELD:
                        record.transferred += 1
                        raise LeftControl
            elif use.kind in _ESCAPES:
                if use.kind in _PASSES and all(self._effects.effect(literal, symbol) is Effect.BORROWS for symbol in captured):
                    # `f := func() error { return C.use(cs) }; ctx.Do(f)`: as a
                    # literal passed in place, the closure only reads the handle.
                    continue
                if state.phase is Phase.HELD:
                    record.transferred += 1
                    raise LeftControl
        return state

    def registered_before(self, graph: CFG, start: int, state: State) -> State:
        """Deferred closures that release a variable at exit cover it even
        when registered before the acquisition (they read it at exit)."""
        if not state.names:
            return state
        for n in self.defers(graph):
            if n == start or not graph.has_path(n, start):
                continue
            for use in self._uses.uses(graph.evaluated(n)):
                if use.symbol in state.names and use.kind is UseKind.CAPTURE and use.deferred and use.unit is not None:
                    state = self.closure_release(state, use.unit, use.symbol, n)
                literal = self._calls.unit_of(use.symbol)
                if use.kind is UseKind.CALLED and use.deferred and literal is not None and literal.stored_in is use.symbol:
                    for symbol in self._uses.captures(literal) & state.names:
                        state = self.closure_release(state, literal, symbol, n)
        return state
