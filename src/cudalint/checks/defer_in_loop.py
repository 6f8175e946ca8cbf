"""CL201: a deferred release inside a loop body."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CallIndex, unwrap
from cudalint.analyses.defers import DEFERS, DeferredReleases
from cudalint.analyses.uses import USES, UseKind, VariableUses
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG, NodeKind
from cudalint.fixes.placement import indent_of, replacement
from cudalint.prefilter import imports_of
from cudalint.findings import Fix
from cudalint.framework import Pass
from cudalint.functions import Unit


def check(p: Pass) -> None:
    defers = p.result_of(DEFERS)
    calls = p.result_of(CALLS)
    uses = p.result_of(USES)

    def visit(unit: Unit, graph: CFG) -> None:
        for n in graph.statement_nodes():
            if graph.kind(n) is not NodeKind.DEFER or not graph.in_loop(n) or _in_one_shot_loops(graph.ast(n), unit.node):
                continue
            released = defers.described(graph, n)
            if released is None or defers.constant_guard(graph.ast(n), unit.body) is not None:
                continue  # CL203's
            if _kept_beyond_iteration(defers, calls, uses, graph, n):
                # No fix: releasing at the end of the iteration would free
                # what the code after the loop still reads.
                p.report(
                    unit, graph.ast(n),
                    f"defer {released} inside a loop runs only when {unit.name} returns: the loop keeps these "
                    f"values for after it, and each iteration adds one more deferred call; release them "
                    f"together after their last use (one deferred loop over the collection)",
                )
                continue
            wrap = _wrap_fix(graph.ast(n), unit.file.source)
            p.report(
                unit, graph.ast(n),
                f"defer {released} inside a loop runs only when {unit.name} returns: every iteration's "
                f"resource stays held until then; release it at the end of the iteration, or move the "
                f"loop body into its own function",
                fixes=(wrap,) if wrap is not None else (),
            )

    p.visit_graphs(defers.units(), visit)


def _in_one_shot_loops(defer: Node, function: Node) -> bool:
    """Whether every loop around the defer runs its body once: `for
    doWhile := 0; doWhile < 1; doWhile++ {` (a do-once block to `break`
    out of), its counter never written in the body."""
    loops = []
    node = defer.parent
    while node is not None and node.id != function.id and node.type not in syntax.FUNCTION_NODES:
        if node.type == "for_statement":
            loops.append(node)
        node = node.parent
    return bool(loops) and all(_runs_once(loop) for loop in loops)


def _runs_once(loop: Node) -> bool:
    clause = next((child for child in syntax.children(loop) if child.type == "for_clause"), None)
    if clause is None:
        return False
    start, test, step = (clause.child_by_field_name(f) for f in ("initializer", "condition", "update"))
    sides = syntax.assignment_sides(start) if start is not None else []
    if len(sides) != 1 or len(sides[0][0]) != 1 or len(sides[0][1]) != 1 or test is None or step is None:
        return False
    counter, first = syntax.text(sides[0][0][0]), syntax.text(sides[0][1][0])
    left, right = test.child_by_field_name("left"), test.child_by_field_name("right")
    if test.type != "binary_expression" or left is None or right is None or syntax.text(left) != counter:
        return False
    if step.type != "inc_statement" or syntax.text(step).rstrip("+ ") != counter or not first.isdigit() or not syntax.text(right).isdigit():
        return False
    bound = int(syntax.text(right)) + (1 if syntax.text(test.child_by_field_name("operator")) == "<=" else 0)
    body = loop.child_by_field_name("body")
    written = any(
        syntax.text(target) == counter for node in syntax.walk(body) for targets, _ in syntax.assignment_sides(node) for target in targets
    ) if body is not None else True
    return syntax.text(test.child_by_field_name("operator")) in ("<", "<=") and bound - int(first) == 1 and not written


# Statements that mean something else inside a func literal than in the loop.
_JUMPS = frozenset({"return_statement", "break_statement", "continue_statement", "goto_statement", "labeled_statement"})


def _wrap_fix(defer: Node, source) -> Fix | None:
    """Wrap the loop body in a func literal called in place, so each
    iteration's defer runs at the end of the iteration (unsafe: the body's
    other defers move too, and a closure captures differently). Not
    offered where the body jumps (`return`, `break`, `continue`, `goto`, a
    label), or holds a multi-line raw string that re-indenting would change."""
    body = defer.parent
    while body is not None and not (body.type == "block" and body.parent is not None and body.parent.type == "for_statement"):
        body = body.parent
    if body is None:
        return None
    stack = list(body.named_children)
    while stack:
        node = stack.pop()
        if node.type in _JUMPS or (node.type == "raw_string_literal" and b"\n" in (node.text or b"")):
            return None
        if node.type != "func_literal":
            stack.extend(node.named_children)
    data = source.data
    indent = indent_of(body.parent, data)
    if indent is None:
        return None
    inner = data[body.start_byte + 1:body.end_byte - 1].decode("utf-8", "replace")
    lines = inner.split("\n")
    shifted = [("\t" + line) if line.strip() else line for line in lines[1:-1]]
    text = "{\n" + indent + "\tfunc() {\n" + "\n".join(shifted) + "\n" + indent + "\t}()\n" + indent + "}"
    if lines[0].strip() or lines[-1].strip():
        return None  # the body shares a line with its braces
    edit = replacement(source, body.start_byte, body.end_byte, text)
    return Fix("move the loop body into a func literal called in place, so that the defer runs each iteration", False, (edit,))


def _kept_beyond_iteration(defers: DeferredReleases, calls: CallIndex, uses: VariableUses, graph: CFG, n: int) -> bool:
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
    resolution = graph.unit.resolution
    inner = syntax.children(statement)
    call = syntax.unparen(inner[0]) if inner else None
    arguments = syntax.children(call.child_by_field_name("arguments")) if call is not None and call.type == "call_expression" else []
    for argument in arguments:
        value = unwrap(argument, calls)
        if value is not None and value.type == "index_expression":
            operand = syntax.unparen(value.child_by_field_name("operand"))
            symbol = resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
            if symbol is not None and symbol.node is not None and not (loop.start_byte <= symbol.node.start_byte < loop.end_byte):
                return True
    released = {symbol for _, symbol in defers.releasing_uses(graph, n)}
    for m in graph.statement_nodes():
        ast = graph.ast(m)
        if ast is None or not (loop.start_byte <= ast.start_byte < loop.end_byte):
            continue
        for use in uses.uses(graph.evaluated(m)):
            if use.symbol in released and use.kind in (UseKind.STORE, UseKind.ALIAS):
                return True
    return False


RULE = Rule(
    "CL201", "defer-in-loop", Level.WARNING,
    "A deferred release inside a loop body: every iteration's resource lives until the function returns.",
    """
    ## What it does
    Reports a `defer` of a release (`defer C.cudaFree(d)`, `defer C.cudaStreamDestroy(s)`,
    a deferred closure or same-package helper that releases, a closure that
    gives back a count: `defer func() { _ = lib.Shutdown() }()`) that is
    executed on every iteration of a loop. A loop that runs its body once (a
    do-once block to `break` out of: `for once := 0; once < 1; once++`, its
    counter never written inside) registers the defer once and is not reported.

    Where the loop keeps the released values for after it (each is stored in
    a slice or array declared outside the loop: `cargs[i] = C.CString(s);
    defer C.free(unsafe.Pointer(cargs[i]))` to pass `cargs` to C after the
    loop), they must live past the iteration, and the finding asks for one
    deferred loop over the collection instead of a defer per element; no fix
    is offered there (releasing in the iteration would free what the call
    after the loop reads).

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
    and for values kept for after the loop, one deferred loop:
    ```go
    cargs := make([]*C.char, len(args))
    defer func() {
        for _, c := range cargs {
            C.free(unsafe.Pointer(c))
        }
    }()
    for i, a := range args {
        cargs[i] = C.CString(a)
    }
    ```

    ## Fix safety
    With `--unsafe-fixes`, a loop body that does not jump (no `break`,
    `continue`, `return`, `goto` or label) is wrapped in a func literal
    called in place, so that its defers run at the end of each iteration.
    Unsafe: every defer of the body moves, and the body's variables are now
    captured by a closure.
    """,
    tags=("correctness", "resource-leak"),
    check=check,
    requires=(CALLS, USES, DEFERS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
