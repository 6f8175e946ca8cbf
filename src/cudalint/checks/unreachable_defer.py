"""CL203: a deferred release that can never be registered."""

from __future__ import annotations

from cudalint.analyses.defers import DEFERS
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG, NodeKind
from cudalint.checks.wording import imports_of
from cudalint.framework import Pass
from cudalint.functions import Unit


def check(p: Pass) -> None:
    defers = p.result_of(DEFERS)

    def visit(unit: Unit, graph: CFG) -> None:
        for n in graph.statement_nodes():
            if graph.kind(n) is not NodeKind.DEFER:
                continue
            released = defers.described(graph, n)
            if released is None:
                continue
            statement = graph.ast(n)
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
    requires=(DEFERS,),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
