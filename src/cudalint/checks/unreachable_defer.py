"""CL203: a deferred release that can never be registered."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.defers import DEFERS, DeferredReleases
from cudalint.analyses.uses import USES, UseKind, VariableUses
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG, NodeKind
from cudalint.prefilter import imports_of
from cudalint.framework import Pass
from cudalint.functions import Unit
from cudalint.scope import Role


def check(p: Pass) -> None:
    defers = p.result_of(DEFERS)
    uses = p.result_of(USES)

    def visit(unit: Unit, graph: CFG) -> None:
        for n in graph.statement_nodes():
            if graph.kind(n) is not NodeKind.DEFER:
                continue
            released = defers.described(graph, n)
            if released is None:
                continue
            statement = graph.ast(n)
            if not _pairs_with_live_code(defers, uses, graph, n):
                continue  # what it would release is acquired in code just as dead
            if not graph.reachable(n):
                p.report(
                    unit, statement,
                    f"defer {released} can never be registered: no path reaches it; "
                    f"move it to right after the acquisition's error check",
                )
                continue
            guard = defers.constant_guard(statement, unit.body)
            if guard is not None:
                p.report(
                    unit, statement,
                    f"defer {released} is registered only when {guard}; "
                    f"register it unconditionally after the acquisition",
                )

    p.visit_graphs(defers.units(), visit)


def _pairs_with_live_code(defers: DeferredReleases, uses: VariableUses, graph: CFG, n: int) -> bool:
    """Whether something the defer releases is acquired (or given a value)
    in code that runs: a parameter, a package variable, or a local written
    at a reachable statement no constant guard disables. A defer after
    `t.SkipNow()` that pairs with an acquisition after it too is dead code
    about dead code, not a leak."""
    released = [symbol for _, symbol in defers.releasing_uses(graph, n)]
    if not released or any(symbol.role is not Role.LOCAL for symbol in released):
        return True
    body = graph.unit.body
    for m in graph.statement_nodes():
        statement = graph.ast(m)
        if m == n or not graph.reachable(m) or _declares_only(statement):
            continue
        for use in uses.uses(graph.evaluated(m)):
            if use.symbol in released and use.kind in (UseKind.WRITE, UseKind.ACQUIRE_OUT):
                if defers.constant_guard(statement, body) is None:
                    return True
    return False


def _declares_only(statement: Node | None) -> bool:
    """`var d unsafe.Pointer`: a declaration without a value gives nothing."""
    return statement is not None and statement.type == "var_declaration" and all(
        spec.child_by_field_name("value") is None for spec in syntax.value_specs(statement)
    )


RULE = Rule(
    "CL203", "unreachable-defer", Level.WARNING,
    "A deferred release that can never be registered.",
    """
    ## What it does
    Reports a `defer` of a release that no execution reaches: it follows a
    `return`, a `panic` or a call that never returns, or sits under a
    condition that is constant false (`if false`, or a `const debug = false`
    flag).

    ## Why is this bad?
    The release reads like it is there, but it never runs: whatever it was
    meant to release leaks (often on every call).

    ## Example
    ```go
    return run(d)
    defer C.cudaFree(d)
    ```

    ## Use instead
    Register the defer right after the acquisition's error check, before any
    return.
    """,
    tags=("correctness", "resource-leak"),
    check=check,
    requires=(USES, DEFERS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
