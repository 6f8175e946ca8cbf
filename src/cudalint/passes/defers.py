"""Deferred releases (CL2xx): `defer` is the right tool for releasing GPU
resources, but it runs when the function returns, evaluates its arguments
when the defer statement runs, and only if that statement is reached."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyzer import Analyzer, Pass
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG, NodeKind
from cudalint.facts import CalleeKind
from cudalint.functions import Unit
from cudalint.handles import UseKind
from cudalint.knowledge import Knowledge
from cudalint.lazy import networkx as nx
from cudalint.lifetimes import Effect, Engine, unwrap
from cudalint.passes.resources import engine
from cudalint.scope import Role

CL201 = Rule(
    "CL201", "defer-in-loop", Level.WARNING,
    "A deferred release inside a loop body: every iteration's resource lives until the function returns.",
    """
    ## What it does
    Reports a `defer` of a release (`defer C.cudaFree(d)`, `defer C.cudaStreamDestroy(s)`,
    a deferred closure or same-package helper that releases) that is executed
    on every iteration of a loop.

    It is not reported when the loop keeps the released values for after it
    on purpose: each is stored in a slice or array declared outside the loop
    (`cargs[i] = C.CString(s); defer C.free(unsafe.Pointer(cargs[i]))` to
    pass `cargs` to C after the loop). Then releasing at return is the intent.

    ## Why is this bad?
    Deferred calls run when the *function* returns, not at the end of the
    iteration. A loop over a thousand batches keeps a thousand device buffers
    allocated until then, and a long-running loop never releases anything.

    ## Example
    ```go
    for _, n := range sizes {
        var d unsafe.Pointer
        if st := C.cudaMalloc(&d, C.size_t(n)); st != C.cudaSuccess {
            return cudaError(st)
        }
        defer C.cudaFree(d)
        run(d)
    }
    ```

    ## Use instead
    Move the body into a function, so that its defer runs per iteration:
    ```go
    for _, n := range sizes {
        if err := runOne(n); err != nil { // runOne allocates, defers the free, runs
            return err
        }
    }
    ```
    """,
    tags=("correctness", "resource-leak"),
)

CL202 = Rule(
    "CL202", "defer-before-acquire", Level.ERROR,
    "A deferred release registered before its handle is acquired releases the old (nil) value.",
    """
    ## What it does
    Reports `defer C.cudaFree(p)` (a deferred call, not a deferred closure)
    that runs before `p` is acquired. A deferred call's arguments are
    evaluated when the `defer` statement executes, so it captures the value
    `p` had then, usually nil, and the allocation made afterwards is never
    freed (cudalint also reports that leak, CL101).

    ## Why is this bad?
    It looks like the canonical cleanup and passes review, while it frees
    nothing and the real allocation leaks on every call.

    ## Example
    ```go
    var p unsafe.Pointer
    defer C.cudaFree(p) // frees nil
    check(C.cudaMalloc(&p, n))
    ```

    ## Use instead
    ```go
    var p unsafe.Pointer
    check(C.cudaMalloc(&p, n))
    defer C.cudaFree(p)
    ```
    or, if the defer must come first, a closure, which reads `p` when it runs:
    `defer func() { C.cudaFree(p) }()`.
    """,
    tags=("correctness", "resource-leak"),
)

CL203 = Rule(
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
)


def _symbol_resources(lifetimes: Engine, unit: Unit, symbol) -> list:
    return lifetimes.resources_of(symbol) + [
        o.resource for o in lifetimes.lifetimes(unit).origins if o.handle == symbol.name
    ]


def _releasing_uses(lifetimes: Engine, graph: CFG, n: int):
    """The deferred uses at a defer statement that release something, with
    the variable released."""
    unit = graph.unit
    for use in lifetimes.uses.uses(graph.evaluated(n)):
        if not use.deferred:
            continue
        if use.kind is UseKind.RELEASE:
            yield use, use.symbol
        elif use.kind is UseKind.METHOD and any(
            r.release_method(use.method) for r in _symbol_resources(lifetimes, unit, use.symbol)
        ):
            yield use, use.symbol
        elif use.kind is UseKind.CALLED and any(r.any_use_releases for r in _symbol_resources(lifetimes, unit, use.symbol)):
            yield use, use.symbol
        elif use.kind is UseKind.PASS_LOCAL and use.unit is not None and lifetimes.effect_of_argument(use.unit, use.index) is Effect.RELEASES:
            yield use, use.symbol


def _deferred_release(p: Pass, lifetimes: Engine, graph: CFG, n: int) -> str | None:
    """What a defer statement releases, described for a message, or None."""
    statement = graph.ast(n)
    inner = syntax.children(statement) if statement is not None else []
    call = syntax.unparen(inner[0]) if inner else None
    if call is None or call.type != "call_expression":
        return None
    written = syntax.text(call)
    callee = p.facts.callee(call)
    if callee.kind is CalleeKind.API and callee.api is not None and callee.api.is_release:
        return written
    if any(True for _ in _releasing_uses(lifetimes, graph, n)):
        return written
    function = syntax.unparen(call.child_by_field_name("function"))
    if function is not None and function.type == "func_literal":
        released = _released_by(lifetimes, p.facts.callee(call).target)
        return f"of a closure that releases {', '.join(sorted(s.name for s in released))}" if released else None
    if callee.symbol is not None and callee.target is not None and callee.target.stored_in is callee.symbol:
        released = _released_by(lifetimes, callee.target)
        return f"{callee.written}() (which releases {', '.join(sorted(s.name for s in released))})" if released else None
    return None


def _released_by(lifetimes: Engine, literal: Unit | None):
    if literal is None:
        return set()
    return {s for s in lifetimes.captures(literal) if lifetimes.summary(literal, s).releases_on_some_path}


def _in_loop(graph: CFG, n: int, components: dict[int, int], sizes: dict[int, int]) -> bool:
    component = components.get(n)
    return component is not None and (sizes[component] > 1 or graph.graph.has_edge(n, n))


def _kept_beyond_iteration(lifetimes: Engine, graph: CFG, n: int) -> bool:
    """Whether the deferred release is of values the loop keeps for after it:
    `h[i] = C.CString(s); defer C.free(unsafe.Pointer(h[i]))` builds an array
    that a call after the loop reads. Then running the releases at return is
    the intent, not a mistake."""
    statement = graph.ast(n)
    loop = statement.parent if statement is not None else None
    while loop is not None and loop.type != "for_statement" and loop != graph.unit.node:
        loop = loop.parent
    if loop is None or loop.type != "for_statement":
        return False
    resolution = lifetimes.facts.package.resolution
    inner = syntax.children(statement)
    call = syntax.unparen(inner[0]) if inner else None
    arguments = syntax.children(call.child_by_field_name("arguments")) if call is not None and call.type == "call_expression" else []
    for argument in arguments:
        value = unwrap(argument, lifetimes.facts)
        if value is not None and value.type == "index_expression":
            operand = syntax.unparen(value.child_by_field_name("operand"))
            symbol = resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
            if symbol is not None and symbol.node is not None and not (loop.start_byte <= symbol.node.start_byte < loop.end_byte):
                return True
    released = {symbol for _, symbol in _releasing_uses(lifetimes, graph, n)}
    for m in graph.statement_nodes():
        ast = graph.ast(m)
        if ast is None or not (loop.start_byte <= ast.start_byte < loop.end_byte):
            continue
        for use in lifetimes.uses.uses(graph.evaluated(m)):
            if use.symbol in released and use.kind in (UseKind.STORE, UseKind.ALIAS):
                return True
    return False


def _constant_guard(p: Pass, statement: Node, body: Node | None) -> str | None:
    """The condition of an enclosing `if` (or `for`) that keeps the statement
    from ever running because it is a constant: false for the body, true for
    the else branch."""
    resolution = p.package.resolution
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


def _check_before_acquire(p: Pass, lifetimes: Engine, graph: CFG, n: int) -> None:
    for use, symbol in _releasing_uses(lifetimes, graph, n):
        if symbol.role is not Role.LOCAL or use.kind is UseKind.PASS_LOCAL:
            continue
        origins = [o for o in lifetimes.lifetimes(graph.unit).origins if o.handle == symbol.name and o.role.handle != "none"]
        if not origins or any(nx.has_path(graph.graph, o.node, n) for o in origins):
            continue
        later = [o for o in origins if nx.has_path(graph.graph, n, o.node)]
        if not later or _assigned_before(lifetimes, graph, symbol, n):
            continue
        first = min(later, key=lambda o: o.line)
        deferred = syntax.text(use.call) if use.call is not None else syntax.text(graph.ast(n))
        p.report(
            "CL202", graph.unit, graph.ast(n),
            f"defer {deferred} is registered before {symbol.name} is acquired by {first.written} "
            f"at line {first.line}: its arguments are evaluated now, so it releases the old value of "
            f"{symbol.name} (nil); move it to right after the acquisition's error check",
        )


def _assigned_before(lifetimes: Engine, graph: CFG, symbol, n: int) -> bool:
    """Whether some non-nil value is written to the variable on a path to n."""
    for m in graph.statement_nodes():
        if m == n or not graph.reachable(m):
            continue
        for use in lifetimes.uses.uses(graph.evaluated(m)):
            if use.symbol is symbol and use.kind is UseKind.WRITE and nx.has_path(graph.graph, m, n):
                statement = graph.ast(m)
                if statement is not None and not syntax.text(statement).rstrip().endswith("nil"):
                    return True
    return False


def _with_release_defers(p: Pass) -> list[Unit]:
    """Functions with a defer that may release something: of an API release,
    of a function or literal of the package, or of a method the knowledge
    names as a release. `defer mu.Unlock()` needs no graph, and a package
    that calls no API function acquires nothing a defer could release."""
    if not p.facts.api_calls:
        return []
    release_methods = {
        role.method for family in p.knowledge.families for resource in family.resources
        for role in resource.release if role.handle == "receiver"
    }
    by_node = {unit.node: unit for unit in p.package.units}
    found = {unit for unit in p.package.units if unit.node in p.facts.api_calls}
    for parsed in p.package.files:
        for statement in parsed.index.defer_statements:
            inner = syntax.children(statement)
            call = syntax.unparen(inner[0]) if inner else None
            if call is None or call.type != "call_expression":
                continue
            p.package.resolution.ensure(parsed.root, statement)
            callee = p.facts.callee(call)
            function = syntax.unparen(call.child_by_field_name("function"))
            method = syntax.text(function.child_by_field_name("field")) if function is not None and function.type == "selector_expression" else ""
            if callee.kind in (CalleeKind.LOCAL, CalleeKind.VALUE, CalleeKind.API) or method in release_methods:
                unit = by_node.get(syntax.enclosing_function(statement))
                if unit is not None:
                    found.add(unit)
    return list(found)


def run(p: Pass) -> None:
    lifetimes = engine(p)
    for unit, graph in p.graphs_of(_with_release_defers(p)):
        with p.isolating(unit):
            if not graph.created:
                continue
            defers = [n for n in graph.statement_nodes() if graph.kind(n) is NodeKind.DEFER]
            if not defers:
                continue
            live = graph.graph.subgraph(graph.live)
            components: dict[int, int] = {}
            sizes: dict[int, int] = {}
            for index, component in enumerate(nx.strongly_connected_components(live)):
                sizes[index] = len(component)
                for node in component:
                    components[node] = index
            for n in defers:
                released = _deferred_release(p, lifetimes, graph, n)
                if released is None:
                    continue
                statement = graph.ast(n)
                if not graph.reachable(n):
                    p.report(
                        "CL203", unit, statement,
                        f"defer {released} can never be registered: no path reaches it; "
                        f"move it to right after the acquisition's error check",
                    )
                    continue
                guard = _constant_guard(p, statement, unit.body)
                if guard is not None:
                    p.report(
                        "CL203", unit, statement,
                        f"defer {released} is registered only when {guard}; "
                        f"register it unconditionally after the acquisition",
                    )
                    continue
                if _in_loop(graph, n, components, sizes) and not _kept_beyond_iteration(lifetimes, graph, n):
                    p.report(
                        "CL201", unit, statement,
                        f"defer {released} inside a loop runs only when {unit.name} returns: every iteration's "
                        f"resource stays held until then; release it at the end of the iteration, or move the "
                        f"loop body into its own function",
                    )
                _check_before_acquire(p, lifetimes, graph, n)


def _needles(knowledge: Knowledge) -> frozenset[bytes]:
    return frozenset(
        f'"{family.import_path}"'.encode() for family in knowledge.families if family.resources
    )


ANALYZER = Analyzer(
    name="defers",
    doc=__doc__ or "",
    rules=(CL201, CL202, CL203),
    run=run,
    needles=_needles,
)
