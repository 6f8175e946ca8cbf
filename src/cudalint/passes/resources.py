"""Resource lifetimes (CL1xx): device memory, streams, handles, C strings...
Go's garbage collector sees none of them; every path through a function must
release what it acquired or hand it to someone who will."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyzer import Analyzer, Pass
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.findings import Span, Step
from cudalint.handles import UseKind
from cudalint.knowledge import Knowledge, ResourceSpec
from cudalint.lifetimes import Engine, Leak, Lost, Origin, UnitLifetimes

CL101 = Rule(
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
)

CL102 = Rule(
    "CL102", "double-release", Level.ERROR,
    "A handle released twice on one path.",
    """
    ## What it does
    Reports the second release of a handle on a path that already released
    it: two `cudaFree` calls, a `cudaFree` followed by a `defer cudaFree` of
    the same value, or an explicit release of a handle a registered `defer`
    will release again when the function returns. Handles that arrive as
    parameters are followed from the point where the function releases them.

    ## Why is this bad?
    Freeing device memory twice is undefined behaviour in the CUDA runtime:
    the second call may fail with `cudaErrorInvalidValue`, or free an
    allocation that another goroutine has received in the meantime.

    ## Example
    ```go
    defer C.cudaFree(d)
    ...
    C.cudaFree(d) // the defer frees d again at return
    ```

    ## Use instead
    Release each handle exactly once: keep the `defer`, drop the explicit
    call (or set the variable to nil after freeing it and free through a
    deferred closure that checks for nil).
    """,
    tags=("correctness",),
)

CL103 = Rule(
    "CL103", "overwrite-while-held", Level.ERROR,
    "A variable holding a live resource is re-acquired or reassigned before release.",
    """
    ## What it does
    Reports the statement that overwrites a variable while it still holds the
    only reference to a resource: a second `C.cudaMalloc(&d, n)` into the same
    `d`, `d = nil`, or the next iteration of a loop that allocates into a
    variable declared outside the loop. The resource is reported once, here,
    and not also as a leak (CL101).

    ## Why is this bad?
    After the overwrite nothing refers to the old allocation any more, so it
    can never be freed. In a loop, every iteration but the last leaks.

    ## Example
    ```go
    var d unsafe.Pointer
    for _, n := range sizes {
        C.cudaMalloc(&d, n) // the previous iteration's d is lost
        run(d)
    }
    C.cudaFree(d)
    ```

    ## Use instead
    ```go
    for _, n := range sizes {
        var d unsafe.Pointer
        if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
            return cudaError(st)
        }
        run(d)
        C.cudaFree(d)
    }
    ```
    """,
    tags=("correctness", "resource-leak"),
)

CL104 = Rule(
    "CL104", "use-after-release", Level.ERROR,
    "A handle passed to a non-release API call, dereferenced or returned after it was released.",
    """
    ## What it does
    Reports a use of a handle (a local variable, or a parameter the function
    releases itself) that some path reaches after releasing it: passed to an
    API call that is not a release, dereferenced (`*p`, `p[i]`, `p.f`),
    called, or returned.

    ## Why is this bad?
    Memory released with `cudaFree` may be handed to the next `cudaMalloc`
    of any goroutine; a copy into it corrupts someone else's data, and a
    stream or event used after its destroy call fails at best.

    ## Example
    ```go
    C.cudaFree(d)
    C.cudaMemcpy(host, d, n, C.cudaMemcpyDeviceToHost)
    ```

    ## Use instead
    Move the release after the last use, usually as a `defer` right after the
    acquisition's error check.
    """,
    tags=("correctness", "memory-safety"),
)

CL105 = Rule(
    "CL105", "mismatched-release", Level.ERROR,
    "A handle released with the release function of another kind of resource.",
    """
    ## What it does
    Reports a release call whose kind does not match how the handle was
    acquired: `cudaFreeHost` on memory from `cudaMalloc`, `cudaFree` on pinned
    memory from `cudaMallocHost`, `C.free` on memory from `cudaMallocManaged`,
    `cuMemFree` on `cuMemAllocHost` memory. The pairs come from `rules/*.toml`.

    ## Why is this bad?
    Each allocator keeps its own bookkeeping: releasing with the wrong one
    fails (and the memory leaks) or corrupts the allocator's state.

    ## Example
    ```go
    C.cudaMallocHost(&h, n)
    defer C.cudaFree(h)
    ```

    ## Use instead
    ```go
    C.cudaMallocHost(&h, n)
    defer C.cudaFreeHost(h)
    ```
    """,
    tags=("correctness",),
)


def engine(p: Pass) -> Engine:
    return p.fact("lifetimes", lambda: Engine(p.cfgs, p.facts))


def _verb(resource: ResourceSpec) -> str:
    release = resource.first_release.rsplit(".", 1)[-1].lower()
    for word, verb in (
        ("unregister", "unregistered"), ("free", "freed"), ("destroy", "destroyed"), ("unload", "unloaded"),
        ("shutdown", "shut down"), ("close", "closed"), ("unsubscribe", "unsubscribed"), ("abort", "aborted"),
    ):
        if word in release:
            return verb
    return "released"


def _written(origin: Origin, qualified: str) -> str:
    """A knowledge name as this file writes it (imports may be renamed)."""
    package = origin.written.split(".", 1)[0]
    qualifier = origin.api.family.qualifier
    return package + qualified[len(qualifier):] if qualified.startswith(qualifier + ".") else qualified


def fix(origin: Origin) -> str:
    """The statement that would release the resource, as this file spells it."""
    resource = origin.resource
    if resource.any_use_releases:
        return f"defer {origin.handle or 'x'}()"
    if not resource.release:
        return ""
    role = resource.release[0]
    if role.handle == "receiver":
        return f"defer {origin.handle}.{role.method}()"
    call = _written(origin, role.call)
    if role.handle == "none":
        return f"defer {call}(...)"
    handle = origin.handle or "x"  # a result never stored: name the variable to store it in
    if role.index == 0:
        argument = f"unsafe.Pointer({handle})" if role.call == "C.free" else handle
        return f"defer {call}({argument})"
    return f"defer {call}(...{handle}...)"


def _where_to_fix(origin: Origin) -> str:
    return "after the error check" if origin.status is not None else "right after the acquisition"


def leak_message(leak: Leak, graph: CFG) -> str:
    origin = leak.origin
    what = f"{origin.resource.name} from {origin.written} (line {origin.line})"
    verb = _verb(origin.resource)
    remedy = fix(origin)
    if origin.role.handle == "none":
        return (
            f"{what} is {verb} on some paths but not on the return at line {leak.line}; "
            f"release it on this path too (`{remedy}` {_where_to_fix(origin)})"
        )
    if leak.how is Lost.DISCARDED:
        return f"{what} is never {verb}: {leak.detail}; keep it in a variable x and `{remedy}`"
    if leak.how is Lost.SCOPE:
        return (
            f"{what} is not {verb} before {origin.handle} goes out of scope at line {leak.line} "
            f"(each loop iteration or block declares a new {origin.handle}); release it before then"
        )
    where = "the return" if leak.how is Lost.RETURN else "the goroutine exit"
    if graph.kind(leak.node).value == "implicit-return":
        where = "the return at the end of the function"
        place = f"(line {leak.line})"
    else:
        place = f"at line {leak.line}"
    if leak.other_defer is not None and leak.defer_too_early:
        advice = (
            f"the defer at line {leak.other_defer} ran before the acquisition and released the old value: "
            f"move it to right {_where_to_fix(origin).removeprefix('right ')}"
        )
    elif leak.other_defer is not None:
        advice = (
            f"the defer at line {leak.other_defer} is not registered on this path: "
            f"move it to right {_where_to_fix(origin).removeprefix('right ')}"
        )
    else:
        advice = f"add `{remedy}` {_where_to_fix(origin)}"
    return f"{what} is not {verb} on {where} {place}; {advice}"


def path_steps(leak: Leak, graph: CFG, p: Pass) -> tuple[Step, ...]:
    """acquire -> each branch taken -> the leaking exit, for SARIF codeFlows."""
    source = leak.origin.unit.file.source
    steps = [Step(source.span(leak.origin.call), f"{leak.origin.resource.name} acquired by {leak.origin.written}")]
    for u, v in zip(leak.path, leak.path[1:]):
        attrs = graph.graph.get_edge_data(u, v) or {}
        condition = attrs.get("cond")
        if condition is not None:
            steps.append(Step(source.span(condition), f"`{syntax.text(condition)}` is {'true' if attrs.get('polarity') else 'false'}"))
        elif attrs.get("branch") in ("case", "default") and attrs.get("case") is not None:
            clause = attrs["case"]
            taken = "taken" if attrs.get("polarity") else "not taken"
            steps.append(Step(source.span(_head(clause)), f"case {taken}"))
    ast = graph.ast(leak.node)
    if ast is not None and leak.how is not Lost.DISCARDED:
        if graph.kind(leak.node).value == "implicit-return":
            end = source.position(ast.end_point[0], max(ast.end_point[1] - 1, 0))
            span = Span(end, source.position(ast.end_point[0], ast.end_point[1]))
        else:
            span = source.span(ast)
        steps.append(Step(span, f"{leak.origin.handle or 'it'} is still held here"))
    return tuple(steps)


def _head(clause: Node) -> Node:
    value = clause.child_by_field_name("value")
    return value if value is not None else clause


def _use_phrase(kind: UseKind, call: Node | None) -> str:
    if kind is UseKind.RETURN:
        return "returned"
    if kind is UseKind.DEREF:
        return "dereferenced"
    if kind in (UseKind.PASS_API, UseKind.TRANSFER_CALL, UseKind.METHOD, UseKind.CALLED) and call is not None:
        callee = syntax.text(call.child_by_field_name("function"))
        return f"passed to {callee}" if kind is not UseKind.METHOD else f"used by {callee}"
    return "used"


def run(p: Pass) -> None:
    lifetimes = engine(p)
    for unit, graph in p.graphs_of(p.units_with_api_calls()):
        with p.isolating(unit):
            if not graph.created:
                continue
            found: UnitLifetimes = lifetimes.lifetimes(unit)
            overwritten = {o.origin for o in found.overwrites}
            for leak in found.leaks:
                if leak.origin in overwritten:
                    continue  # reported once, as CL103
                p.report("CL101", unit, leak.origin.call, leak_message(leak, graph), path_steps(leak, graph, p))
            for overwrite in found.overwrites:
                origin = overwrite.origin
                p.report(
                    "CL103", unit, graph.ast(overwrite.node),
                    f"{origin.handle} is overwritten here while it still holds {origin.resource.name} from "
                    f"{origin.written} (line {origin.line}), which can then never be {_verb(origin.resource)}; "
                    f"release it first",
                )
            for double in found.double_releases:
                first = graph.line(double.first)
                if double.by_defer:
                    message = (
                        f"{double.handle} is released at line {first} and again by this defer when the function "
                        f"returns; remove one of the two releases"
                    )
                else:
                    message = f"{double.handle} was already released at line {first}; release it only once"
                p.report("CL102", unit, graph.ast(double.node), message)
            for late in found.uses_after_release:
                use = late.use
                phrase = _use_phrase(use.kind, use.call)
                p.report(
                    "CL104", unit, use.node,
                    f"{use.symbol.name} is {phrase} after it was released at line {graph.line(late.released)}; "
                    f"move the release after its last use",
                )
            for mismatch in found.mismatches:
                origin = mismatch.origin
                expected = _written(origin, origin.resource.first_release)
                p.report(
                    "CL105", unit, graph.ast(mismatch.node),
                    f"{origin.handle} holds {origin.resource.name} from {origin.written} (line {origin.line}) but is "
                    f"released with {_written(origin, mismatch.release_call)}, which releases "
                    f"{mismatch.release_resource.name}; use {expected}",
                )


def _needles(knowledge: Knowledge) -> frozenset[bytes]:
    return frozenset(
        f'"{family.import_path}"'.encode() for family in knowledge.families if family.resources
    )


ANALYZER = Analyzer(
    name="resources",
    doc=__doc__ or "",
    rules=(CL101, CL102, CL103, CL104, CL105),
    run=run,
    needles=_needles,
)
