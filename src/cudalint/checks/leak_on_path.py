"""CL101: an acquisition that some path to a return neither releases nor hands over."""

from __future__ import annotations

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.lifetimes import LIFETIMES, Engine, Leak, Lost
from cudalint.analyses.uses import UseKind
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG, NodeKind
from cudalint.checks.wording import imports_of, release_statement, release_verb, where_to_fix
from cudalint.findings import Step
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit


def check(p: Pass) -> None:
    lifetimes = p.result_of(LIFETIMES)

    def visit(unit: Unit, graph: CFG) -> None:
        found = lifetimes.lifetimes(unit)
        overwritten = {o.origin for o in found.overwrites}
        for leak in found.leaks:
            if leak.origin in overwritten:
                continue  # reported once, as CL103
            message, refs = _message(lifetimes, leak, graph)
            p.report(unit, leak.origin.call, message, steps=_path(leak, graph), **refs)

    p.visit_graphs(lifetimes.units_with_acquisitions(), visit)


def _message(lifetimes: Engine, leak: Leak, graph: CFG) -> tuple[str, dict[str, Ref]]:
    origin = leak.origin
    refs = {"acquired": Ref(origin.call, f"{origin.resource.name} acquired here")}
    what = f"{origin.resource.name} from {origin.written} (@acquired{_through(origin)})"
    inner = origin.innermost
    if origin.via is not None and inner.unit.file is origin.unit.file:
        refs["inner"] = Ref(inner.call, f"{inner.written} acquires it inside {inner.unit.name}")
    verb = release_verb(origin.resource)
    remedy = release_statement(origin)
    exit_span = graph.span(leak.node)
    if exit_span is not None:
        refs["exit"] = Ref(exit_span, f"{origin.handle or 'it'} is still held here")
    exit_at = "@exit" if exit_span is not None else f"line {leak.line}"
    if origin.role.handle == "none":
        return (
            f"{what} is {verb} on some paths but not on the return at {exit_at}; "
            f"release it on this path too (`{remedy}` {where_to_fix(origin)})"
        ), refs
    if leak.how is Lost.DISCARDED:
        refs.pop("exit", None)
        return f"{what} is never {verb}: {leak.detail}; keep it in a variable x and `{remedy}`", refs
    if leak.how is Lost.SCOPE:
        refs.pop("exit", None)
        return (
            f"{what} is not {verb} before {origin.handle} goes out of scope at line {leak.line} "
            f"(each loop iteration or block declares a new {origin.handle}); release it before then"
        ), refs
    where = "the return" if leak.how is Lost.RETURN else "the goroutine exit"
    if graph.kind(leak.node) is NodeKind.IMPLICIT_RETURN:
        where = "the return at the end of the function"
        place = f"({exit_at})"
    else:
        place = f"at {exit_at}"
    fix_place = where_to_fix(origin).removeprefix("right ")
    if leak.other_defer is not None:
        refs["defer"] = Ref(graph.ast(leak.other_defer), "the defer")
        if leak.defer_too_early:
            advice = f"the defer at @defer ran before the acquisition and released the old value: move it to right {fix_place}"
        else:
            advice = f"the defer at @defer is not registered on this path: move it to right {fix_place}"
    elif _handed_out(lifetimes, leak):
        # A constructor: a defer would release what it returns on success.
        advice = (
            f"release it before this return (`{remedy.removeprefix('defer ')}`): {origin.unit.name} hands it on "
            f"when it succeeds, so a deferred release would free what it hands on"
        )
    else:
        advice = f"add `{remedy}` {where_to_fix(origin)}"
    return f"{what} is not {verb} on {where} {place}; {advice}", refs


def _through(origin) -> str:
    """", via C.cudaMalloc at line 12 of memory.go" for a resource a wrapper
    of the package handed out."""
    if origin.via_text:
        return f", via {origin.via_text}"
    if origin.via is None:
        return ""
    inner = origin.innermost
    at = "@inner" if inner.unit.file is origin.unit.file else f"line {inner.line}"
    return f", via {inner.written} at {at} of {inner.unit.file.source.path.name}"


def _handed_out(lifetimes: Engine, leak: Leak) -> bool:
    """Whether the function returns the handle, or stores it where its
    caller finds it (a field of what it returns), on some path."""
    unit = leak.origin.unit
    if unit.body is None or not leak.origin.handle:
        return False
    return any(
        use.symbol.name == leak.origin.handle and use.symbol.function == unit.node
        and use.kind in (UseKind.RETURN, UseKind.STORE)
        for use in lifetimes.uses.uses([unit.body])
    )


def _path(leak: Leak, graph: CFG) -> tuple[Step, ...]:
    """acquire -> each branch taken -> the leaking exit, for SARIF codeFlows."""
    source = leak.origin.unit.file.source
    steps = [Step(source.span(leak.origin.call), f"{leak.origin.resource.name} acquired by {leak.origin.written}")]
    for u, v in zip(leak.path, leak.path[1:]):
        edge = graph.edge(u, v)
        if edge.condition is not None:
            steps.append(Step(source.span(edge.condition), f"`{syntax.text(edge.condition)}` is {'true' if edge.polarity else 'false'}"))
        elif edge.tests_case:
            value = edge.case.child_by_field_name("value")
            taken = "taken" if edge.polarity else "not taken"
            steps.append(Step(source.span(value if value is not None else edge.case), f"case {taken}"))
    span = graph.span(leak.node)
    if span is not None and leak.how is not Lost.DISCARDED:
        steps.append(Step(span, f"{leak.origin.handle or 'it'} is still held here"))
    return tuple(steps)


RULE = Rule(
    "CL101", "leak-on-path", Level.ERROR,
    "A successful acquisition that some path to a return neither releases nor hands over.",
    """
    ## What it does
    Follows every acquisition (`C.cudaMalloc(&d, n)`, `C.cuStreamCreate(&s, 0)`,
    `cs := C.CString(name)`, `cublasCreate(&h)`, ... as listed in `rules/*.toml`)
    along every path of the function and reports it at the acquiring call when
    some path reaches a `return` (or ends the goroutine with `runtime.Goexit`,
    `t.FailNow`, `t.Fatal`) with the resource still held: not released, no
    `defer` of a release registered for it, not returned, not stored in a
    field, map, slice, global or through a pointer, not sent on a channel, not
    captured by an escaping closure, not passed to a function that takes it.

    It is held only after its status says success: in
    `if st := C.cudaMalloc(&d, n); st != C.cudaSuccess { return err }` the
    early return leaks nothing, because nothing was allocated. The same holds
    for `err != nil` after a Go wrapper, and for `p == nil` after `C.malloc`.
    Paths that end in `panic`, `os.Exit` or `log.Fatal` are not reported.

    A variable declared inside a loop body is a new variable in each iteration:
    losing its resource at the end of an iteration is a leak too. A result
    that is never stored (`C.puts(C.CString(s))`) is reported as well.

    ## Why is this bad?
    Device memory, pinned host memory and C heap memory are invisible to Go's
    garbage collector. A leak on an error path is invisible in tests and
    slowly exhausts the GPU of a long-running service until allocations fail
    or the OOM killer steps in.

    ## Example
    ```go
    var d unsafe.Pointer
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        return errAlloc // fine: nothing was allocated
    }
    if st := C.cudaMemset(d, 0, n); st != C.cudaSuccess {
        return errMemset // leaks d
    }
    defer C.cudaFree(d)
    ```

    ## Use instead
    ```go
    var d unsafe.Pointer
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        return errAlloc
    }
    defer C.cudaFree(d)
    if st := C.cudaMemset(d, 0, n); st != C.cudaSuccess {
        return errMemset
    }
    ```
    """,
    tags=("correctness", "resource-leak"),
    check=check,
    requires=(CALLS, LIFETIMES),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
