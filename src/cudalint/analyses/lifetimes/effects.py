"""Interprocedural effects: what a function does with a value it starts with.

A handle passed to a function of the package is released, retained (handed
on, stored, released on some paths only) or borrowed by it; the answer is a
`Summary` of the callee's paths, computed by the same path walk that follows
acquisitions, started at the callee's entry with the parameter held. The
parameters of the functions a question reaches are solved together, callees
first (`fixpoint.solve`), so a chain of calls handing a pointer on is no
chain of nested walks. A function of another package of the module answers
through the facts its package exported (`facts.ResourceEffects`).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CalleeKind, CallIndex
from cudalint.analyses.lifetimes.outcomes import Effect, Summary
from cudalint.analyses.lifetimes.facts import ResourceEffects
from cudalint.analyses.lifetimes.states import Phase, State, WalkRecord
from cudalint.analyses.uses import Use
from cudalint.cfg import CFG, ExitKind, PackageCFGs
from cudalint.framework import FactView
from cudalint.functions import Unit, UnitKind
from cudalint.scope import Symbol

# What a walk assumes of a value it cannot follow (a body not analysed, or
# recursion): the function keeps it.
KEEPS = Summary(False, False, True)

# The walk of a value held at a function's entry (the engine's path walk).
WalkFromEntry = Callable[[CFG, State], WalkRecord]

# Whether a function's exit after a node fails for its caller (a non-nil
# error returned): True, False, or None where it cannot be told.
FailingExit = Callable[[CFG, ExitKind, int], "bool | None"]


def _keeps_all(unit: Unit) -> tuple[Summary, ...]:
    return tuple(KEEPS for _ in unit.params)


# Go's numeric types: a value of one holds no resource, whatever number it holds.
_NUMBERS = frozenset({
    "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr",
    "float32", "float64", "byte", "rune",
})


class Effects:
    """The summaries of the package's functions, memoised per (function,
    variable)."""

    def __init__(
        self, cfgs: PackageCFGs, calls: CallIndex, walk_from_entry: WalkFromEntry, imported: FactView, fails: FailingExit,
    ):
        self._cfgs = cfgs
        self._fails = fails
        self._imported = imported  # the ResourceEffects of the other packages of the module
        self._calls = calls
        self._walk_from_entry = walk_from_entry
        self._summaries: dict[tuple[Unit, Symbol], Summary] = {}
        self._in_progress: set[tuple[Unit, Symbol]] = set()
        self._by_parameter: dict[Unit, tuple[Summary, ...]] = {}
        self._spreading: set[Unit] = set()

    def effect(self, unit: Unit, symbol: Symbol) -> Effect:
        """What `unit` does with the value of `symbol` it starts with (a
        parameter, or a variable a func literal captures)."""
        return self.summary(unit, symbol).effect

    def summary(self, unit: Unit, symbol: Symbol) -> Summary:
        key = (unit, symbol)
        if key in self._summaries:
            return self._summaries[key]
        if unit.kind is not UnitKind.LITERAL and symbol in unit.params and key not in self._in_progress:
            # A parameter: solved with every function unit reaches, callees
            # first, so that a chain of calls handing a pointer on is no
            # chain of nested walks.
            fixpoint.solve([unit], self._calls.local_callees, self._parameter_summaries, self._by_parameter, _keeps_all)
            return self._by_parameter[unit][unit.params.index(symbol)]
        return self._walk_summary(unit, symbol)

    def effect_of_use(self, use: Use) -> Effect:
        """What the function a handle is passed to does with it: computed
        for the package's own functions, read from the summary for an
        exported function of another package of the module."""
        if use.unit is not None:
            return self.effect_of_argument(use.unit, use.index)
        summary = self.imported(use.callee.imported) if use.callee is not None else None
        return Effect(summary.effect_at(use.index)) if summary is not None else Effect.RETAINS

    def imported(self, function: tuple[str, str] | None) -> ResourceEffects | None:
        """The facts of a function of another package of the module."""
        return self._imported.get(*function) if function is not None else None

    def hands_out(self, import_path: str, name: str) -> bool:
        """Whether that function of another package of the module hands a resource out."""
        effects = self._imported.get(import_path, name)
        return effects is not None and bool(effects.hands_out)

    def effect_of_argument(self, unit: Unit, index: int) -> Effect:
        """What `unit` does with its argument at `index`. One of a variadic
        parameter of numbers (`Launch(name string, args ...uint64)`, handed
        `uint64(uintptr(d))`) is lent unless the function releases what the
        slice holds; one of any other variadic parameter, or past the
        parameters, is retained (`freeAll(ps ...unsafe.Pointer)` may keep or
        free each)."""
        params = unit.params
        if index < 0 or not params:
            return Effect.RETAINS
        if index >= len(params) - 1 and unit.variadic:
            element = params[-1].node.parent.child_by_field_name("type")
            if element is None or syntax.text(element) not in _NUMBERS:
                return Effect.RETAINS
            # Numbers copied into a kernel's parameter block are lent; a
            # function that keeps the slice (`append(pending, addrs...)`) or
            # releases anything (`for _, a := range addrs { C.cudaFree(...) }`)
            # may keep or free each.
            if unit in self._spreading:
                return Effect.RETAINS  # a cycle of functions spreading the slice on
            self._spreading.add(unit)
            try:
                if self._releases_element(unit, params[-1].name) or _kept_whole(unit, params[-1].name, self._lends_spread):
                    return Effect.RETAINS
            finally:
                self._spreading.discard(unit)
            return Effect.BORROWS
        if index >= len(params):
            return Effect.RETAINS
        return self.effect(unit, params[index])

    def _lends_spread(self, call: Node, index: int) -> bool:
        """Whether a call given a slice spread at `index` (`f.Launch(cfg,
        s, args...)`) only lends what it holds: a function of the package or
        module whose variadic numbers are lent."""
        callee = self._calls.callee(call)
        if callee.kind is CalleeKind.LOCAL and callee.target is not None:
            return self.effect_of_argument(callee.target, index) is Effect.BORROWS
        summary = self.imported(callee.imported) if callee.kind is CalleeKind.MODULE else None
        return summary is not None and summary.variadic and summary.effect_at(index) == Effect.BORROWS.value

    def _releases_element(self, unit: Unit, name: str) -> bool:
        """Whether an API release call of the function is given an element
        of the slice: `name[i]`, or a variable ranging over it."""
        names = {name} | _ranging_over(unit, name)
        return any(
            fact.api is not None and fact.api.is_release
            and any(node.type == "identifier" and syntax.text(node) in names for node in syntax.walk(fact.node))
            for fact in self._calls.api_facts_in(unit)
        )

    def _parameter_summaries(self, unit: Unit) -> tuple[Summary, ...]:
        return tuple(self._walk_summary(unit, param, memo=False) for param in unit.params)

    def _walk_summary(self, unit: Unit, symbol: Symbol, memo: bool = True) -> Summary:
        key = (unit, symbol)
        if key in self._in_progress or unit not in self._cfgs.graphs:
            # Recursion, or a body we could not analyse: assume it keeps it.
            return KEEPS
        self._in_progress.add(key)
        try:
            graph = self._cfgs.graphs[unit]
            walk = self._walk_from_entry(graph, State(Phase.HELD, frozenset({symbol})))
        finally:
            self._in_progress.discard(key)
        # A release wrapper that checks something first (`if err :=
        # c.bind(); err != nil { return err }`) releases wherever it says it
        # succeeded: its callers read the error, as they do the release's own.
        held = [(kind, path) for _, kind, path in walk.held_exits if not (len(path) >= 2 and self._fails(graph, kind, path[-2]))]
        summary = Summary(
            releases_on_some_path=walk.released_exits > 0,
            releases_on_every_path=walk.released_exits > 0 and not held and not walk.transferred,
            hands_over=walk.transferred > 0,
            hands_over_only_on_success=walk.transferred > 0 and walk.kept_on_success == walk.transferred and unit.returns_error,
        )
        if memo:
            self._summaries[key] = summary
        return summary


def _kept_whole(unit: Unit, name: str, lends_spread: Callable[[Node, int], bool]) -> bool:
    """Whether the body hands the slice on whole: spread into a call that
    may keep it (`append(pending, name...)`, not a launcher that lends its
    numbers), assigned, listed in a literal or returned (reading its
    elements, ranging over it or copying from it keeps nothing)."""
    for node in syntax.walk(unit.body) if unit.body is not None else ():
        if node.type == "variadic_argument" and syntax.text(node) == f"{name}...":
            call = node.parent.parent if node.parent is not None else None
            if call is None or call.type != "call_expression" or not lends_spread(call, len(syntax.children(node.parent)) - 1):
                return True
        if node.type == "identifier" and syntax.text(node) == name and node.parent is not None and node.parent.type in (
            "expression_list", "literal_element", "keyed_element", "return_statement",
        ):
            return True
    return False


def _ranging_over(unit: Unit, name: str) -> set[str]:
    """The variables of `for _, v := range name` loops."""
    found: set[str] = set()
    for node in syntax.walk(unit.body) if unit.body is not None else ():
        if node.type == "range_clause" and syntax.text(node.child_by_field_name("right")) == name:
            found.update(syntax.text(v) for v in syntax.expressions(node.child_by_field_name("left")))
    return found

