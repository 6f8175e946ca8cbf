"""Deferred releases: which `defer` statements release something, and what.

CL201, CL202 and CL203 all start from the same question, asked of every
defer in a function that may release anything: does this defer release a
handle (an API release, a method the knowledge names as a release, a call of
a variable whose every use releases it, a function or literal of the package
that releases its argument or a captured variable), and how is that said in
a message? Reports nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex
from cudalint.analyses.lifetimes import LIFETIMES, Effect, Engine
from cudalint.analyses.uses import USES, Use, UseKind, VariableUses
from cudalint.cfg import CFG
from cudalint.framework import Analysis
from cudalint.functions import Unit
from cudalint.knowledge import Knowledge
from cudalint.scope import Symbol


class DeferredReleases:
    def __init__(self, lifetimes: Engine, calls: CallIndex, uses: VariableUses, knowledge: Knowledge):
        self._lifetimes = lifetimes
        self._calls = calls
        self._uses = uses
        self._knowledge = knowledge
        self._units: list[Unit] | None = None

    def units(self) -> list[Unit]:
        """Functions with a defer that may release something: of an API
        release, of a function or literal of the package, or of a method the
        knowledge names as a release. `defer mu.Unlock()` needs no graph, and
        a package that calls no API function acquires nothing a defer could
        release."""
        if self._units is None:
            self._units = self._find_units()
        return self._units

    def _find_units(self) -> list[Unit]:
        calls = self._calls
        package = calls.package
        if not calls.api_calls and not self._lifetimes.units_with_acquisitions():
            return []  # acquires nothing, directly or through the module's wrappers
        release_methods = {
            role.method for family in self._knowledge.families for resource in family.resources
            for role in resource.release if role.handle == "receiver"
        }
        by_node = {unit.node: unit for unit in package.units}
        found = {unit for unit in package.units if unit.node in calls.api_calls}
        # A function that acquires through a wrapper may defer the release
        # method of what it got (`defer conv.Close()` of another package's owning type).
        acquiring = set(self._lifetimes.units_with_acquisitions())
        for parsed in package.files:
            for statement in parsed.index.defer_statements:
                call = _deferred_call(statement)
                if call is None:
                    continue
                callee = calls.callee(call)
                function = syntax.unparen(call.child_by_field_name("function"))
                method = syntax.text(function.child_by_field_name("field")) if function is not None and function.type == "selector_expression" else ""
                unit = by_node.get(syntax.enclosing_function(statement))
                if unit in acquiring:
                    found.add(unit)
                if callee.kind in (CalleeKind.LOCAL, CalleeKind.VALUE, CalleeKind.API, CalleeKind.MODULE) or method in release_methods:
                    if unit is not None:
                        found.add(unit)
        return [unit for unit in package.units if unit in found]

    def releasing_uses(self, graph: CFG, n: int) -> Iterator[tuple[Use, Symbol]]:
        """The deferred uses at a defer statement that release something,
        with the variable released."""
        lifetimes = self._lifetimes
        unit = graph.unit
        for use in self._uses.uses(graph.evaluated(n)):
            if not use.deferred:
                continue
            if use.kind is UseKind.RELEASE:
                yield use, use.symbol
            elif use.kind is UseKind.METHOD and any(
                r.release_method(use.method) for r in self._resources_of(unit, use.symbol)
            ):
                yield use, use.symbol
            elif use.kind is UseKind.CALLED and any(r.any_use_releases for r in self._resources_of(unit, use.symbol)):
                yield use, use.symbol
            elif use.kind is UseKind.PASS_LOCAL and lifetimes.effect_of_use(use) is Effect.RELEASES:
                yield use, use.symbol

    def described(self, graph: CFG, n: int) -> str | None:
        """What a defer statement releases, described for a message, or None
        if it releases nothing."""
        call = _deferred_call(graph.ast(n))
        if call is None:
            return None
        written = syntax.text(call)
        callee = self._calls.callee(call)
        if callee.kind is CalleeKind.API and callee.api is not None and callee.api.is_release:
            return written
        if any(True for _ in self.releasing_uses(graph, n)):
            return written
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is not None and function.type == "func_literal":
            released = sorted(s.name for s in self._released_by(callee.target)) + self._counts_released_by(callee.target)
            return f"of a closure that releases {', '.join(released)}" if released else None
        if callee.symbol is not None and callee.target is not None and callee.target.stored_in is callee.symbol:
            released = self._released_by(callee.target)
            return f"{callee.written}() (which releases {', '.join(sorted(s.name for s in released))})" if released else None
        return None

    def constant_guard(self, statement: Node, body: Node | None) -> str | None:
        """The condition of an enclosing `if` (or `for`) that keeps the statement
        from ever running because it is a constant: false for the body, true for
        the else branch. (The CFG does not fold conditions; CL2xx do.)"""
        resolution = self._calls.package.resolution
        child, parent = statement, statement.parent
        while parent is not None and parent != body:
            if parent.type == "if_statement":
                condition = parent.child_by_field_name("condition")
                value = resolution.constant_bool(condition)
                if value is False and parent.child_by_field_name("consequence") == child:
                    return f"`{syntax.text(condition)}` is true, which it never is"
                if value is True and parent.child_by_field_name("alternative") == child:
                    return f"`{syntax.text(condition)}` is false, which it never is"
            if parent.type == "for_statement" and parent.child_by_field_name("body") == child:
                header = next((c for c in syntax.children(parent) if c.type != "block"), None)
                if header is not None and header.type not in ("for_clause", "range_clause") and resolution.constant_bool(header) is False:
                    return f"`{syntax.text(header)}` is true, which it never is"
            child, parent = parent, parent.parent
        return None

    def _resources_of(self, unit: Unit, symbol: Symbol) -> list:
        return self._lifetimes.resources_of(symbol) + [
            o.resource for o in self._lifetimes.lifetimes(unit).origins if o.handle == symbol.name
        ]

    def _counts_released_by(self, literal: Unit | None) -> list[str]:
        """The counted kinds (no handle: NVML initialisation) a func literal
        gives back (`_ = lib.Shutdown()`), as the resource engine tells them."""
        if literal is None or literal.body is None:
            return []
        return list(dict.fromkeys(name for _, name in self._lifetimes.counted_releases(literal)))

    def _released_by(self, literal: Unit | None) -> set[Symbol]:
        if literal is None:
            return set()
        lifetimes = self._lifetimes
        return {s for s in self._uses.captures(literal) if lifetimes.summary(literal, s).releases_on_some_path}


def _deferred_call(statement: Node | None) -> Node | None:
    inner = syntax.children(statement) if statement is not None else []
    call = syntax.unparen(inner[0]) if inner else None
    return call if call is not None and call.type == "call_expression" else None


DEFERS: Analysis[DeferredReleases] = Analysis(
    "defers", __doc__ or "",
    lambda p: DeferredReleases(p.result_of(LIFETIMES), p.result_of(CALLS), p.result_of(USES), p.knowledge),
    requires=(CALLS, USES, LIFETIMES),
)
