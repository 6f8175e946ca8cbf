"""Whose count a deferred release gives back. A `defer nvml.Shutdown()`
registered before the function's own `nvml.Init()` is CL202 where that
init fails, unless the function can return without taking a count and is
a method of a type whose values hold one (its constructor took it): then
the defer is that value's release, not the init's."""

from __future__ import annotations

from collections.abc import Callable

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
    owner = unit.outermost.receiver_type
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

