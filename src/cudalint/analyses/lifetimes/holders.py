"""Whose count a deferred release gives back. A `defer nvml.Shutdown()`
registered before the function's own `nvml.Init()` is CL202 where that
init fails, unless the function can return without taking a count and is
a method of a type whose values hold one (its constructor took it): then
the defer is that value's release, not the init's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tree_sitter import Node

from cudalint import syntax
from cudalint.cfg import CFG, DEFERS_RUN_ON, NodeKind
from cudalint.functions import Unit, UnitKind


def released_untaken(graph: CFG, n: int, acquires: Callable[[Node], bool]) -> bool:
    """Whether the function can return from the defer at n without
    taking a count of the kind (`acquires` tells a call that takes one). In
    a method (or a literal of one) the defer then gives back a count its
    value holds: a goroutine's `defer nvml.Shutdown()` for its constructor's
    `nvml.Init()`, re-initialising only where a device call failed, not one
    of its own."""
    seen = {n}
    pending = [n]
    while pending:
        node = pending.pop()
        for target in graph.successors(node):
            if target in seen:
                continue
            seen.add(target)
            if graph.kind(target) is NodeKind.EXIT:
                if graph.exit_kind(target) in DEFERS_RUN_ON:
                    return True
                continue
            if not any(acquires(call) for root in graph.evaluated(target) for call in syntax.calls_in(root)):
                pending.append(target)
    return False


def value_holds_count(unit: Unit, units: list[Unit], acquires: Callable[[Node], bool]) -> bool:
    """Whether `unit` is a method (or a literal written in one) of a type
    whose values the package makes where it takes a count of the kind
    (`NewChecker` calls `nvml.Init()` and returns `&Checker{...}`): the
    method's deferred release may give that count back."""
    while unit.parent is not None:
        unit = unit.parent
    owner = unit.receiver_type
    if not owner:
        return False
    for maker in units:
        body = maker.body
        if maker.kind is UnitKind.LITERAL or body is None or f"{owner}{{".encode() not in body.text:
            continue
        if any(acquires(call) for call in syntax.calls_in(body)) and any(
            node.type == "composite_literal" and syntax.text(node.child_by_field_name("type")) == owner
            for node in syntax.walk(body)
        ):
            return True
    return False


def flag_guarded_release(defer: Node | None, calls: Any, call_releases: Callable[[Node, str], bool], name: str) -> bool:
    """`defer shutDown()` (or `defer func() {...}()`) whose literal gives the
    count back only under a flag of the function around it (`if nvmlFound {
    nvml.Shutdown() }`, the flag set once the init succeeded): the code says
    itself whether a count was taken, so a failing init releases nothing."""
    function = syntax.statement_callee(defer)
    if function is not None and function.type == "identifier":
        symbol = calls.package.resolution.symbol(function)
        literal = calls.unit_of(symbol) if symbol is not None and symbol.is_local else None
    else:
        literal = calls.literal(function)
    if literal is None or literal.kind is not UnitKind.LITERAL or literal.body is None:
        return False
    releasing = [node for node in syntax.walk(literal.body) if node.type == "call_expression" and call_releases(node, name)]
    return bool(releasing) and all(_under_outer_flag(node, literal) for node in releasing)


def _under_outer_flag(node: Node, literal: Unit) -> bool:
    """Inside `if flag {` where flag is a plain name the literal does not
    declare (a variable of the function around it)."""
    current = node.parent
    while current is not None and current != literal.node:
        if current.type == "if_statement":
            condition = syntax.unparen(current.child_by_field_name("condition"))
            if condition is not None and condition.type == "identifier" and f"{syntax.text(condition)} :=".encode() not in literal.body.text:
                return True
        current = current.parent
    return False
