"""CL202: a deferred release registered before its handle is acquired."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.defers import DEFERS, DeferredReleases
from cudalint.analyses.lifetimes import LIFETIMES, Engine
from cudalint.analyses.uses import USES, UseKind, VariableUses
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG, NodeKind
from cudalint.fixes.placement import after_success_check, move_defer
from cudalint.prefilter import imports_of
from cudalint.findings import Fix
from cudalint.wording import acquired_here
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit
from cudalint.scope import Role, Symbol


def check(p: Pass) -> None:
    defers = p.result_of(DEFERS)
    lifetimes = p.result_of(LIFETIMES)
    uses = p.result_of(USES)

    def visit(unit: Unit, graph: CFG) -> None:
        for n in graph.statement_nodes():
            if graph.kind(n) is not NodeKind.DEFER or not graph.reachable(n) or defers.described(graph, n) is None:
                continue
            if defers.constant_guard(graph.ast(n), unit.body) is None:  # else CL203's
                _check_defer(p, defers, lifetimes, uses, graph, n)

    p.visit_graphs(defers.units(), visit)
    p.visit_graphs(lifetimes.units_with_acquisitions(), lambda unit, graph: _check_early(p, lifetimes, graph))


def _check_early(p: Pass, lifetimes: Engine, graph: CFG) -> None:
    """A release registered before the acquisition succeeded: a counted
    kind's (`defer nvml.Shutdown()` above `if ret := nvml.Init(); ret !=
    nvml.SUCCESS { return }`), a release handed out as a function
    (`defer cleanup()` above go-dcgm's `if err != nil`), or a handle's
    (`defer dcgm.DestroyGroup(g)` above the check of the group's creation:
    where it failed, g was never made)."""
    reported: set[int] = set()
    for early in lifetimes.lifetimes(graph.unit).early_releases:
        if early.defer in reported:
            continue
        reported.add(early.defer)
        origin = early.origin
        defer = graph.ast(early.defer)
        exit_span = graph.span(early.node)
        refs = {"acquired": acquired_here(origin)}
        exit_word = "panic" if early.panics else "failed assertion" if early.asserted else "return"
        if exit_span is not None:
            refs["exit"] = Ref(exit_span, f"it failed, and this {exit_word} runs the defer")
        where = "@exit" if exit_span is not None else f"line {graph.line(early.node)}"
        if origin.role.handle == "none":
            effect = f"releases a count of {origin.resource.name} this function never took"
        elif origin.resource.any_use_releases:
            effect = f"calls {origin.handle}, which is nil when {origin.written} fails"
        elif origin.resource.nil_when_failed:
            effect = f"calls a method of {origin.handle}, which is nil when {origin.written} fails"
        else:
            effect = f"releases {origin.handle}, which {origin.written} did not make"
        written = " ".join(syntax.text(defer).split())
        if "\n" in syntax.text(defer) and written.startswith("defer func("):
            written = "defer func() {...}()"  # a deferred closure: its body is at the line reported
        if early.unchecked:
            registered = f"is registered although the status of {origin.written} at @acquired is never checked"
            fix = "check the status and register it after the success check"
        else:
            registered = f"is registered before {origin.written} at @acquired has succeeded"
            fix = "register it after the success check"
        p.report(graph.unit, defer, f"{written} {registered}: where it fails, the {exit_word} at {where} {effect}; {fix}", **refs)


def _check_defer(p: Pass, defers: DeferredReleases, lifetimes: Engine, uses: VariableUses, graph: CFG, n: int) -> None:
    for use, symbol in defers.releasing_uses(graph, n):
        if symbol.role is not Role.LOCAL:
            continue
        origins = [o for o in lifetimes.lifetimes(graph.unit).origins if o.handle == symbol.name and o.role.handle != "none"]
        if not origins or any(graph.has_path(o.node, n) for o in origins):
            continue
        later = [o for o in origins if graph.has_path(n, o.node)]
        if not later or _assigned_before(uses, graph, symbol, n):
            continue
        first = min(later, key=lambda o: o.line)
        deferred = syntax.text(use.call) if use.call is not None else syntax.text(graph.ast(n))
        move = _move_fix(graph.ast(n), first, symbol.name)
        p.report(
            graph.unit, graph.ast(n),
            f"defer {deferred} is registered before {symbol.name} is acquired by {first.written} "
            f"at @acquired: its arguments are evaluated now, so it releases the old value of "
            f"{symbol.name} (nil); move it to right after the acquisition's error check",
            fixes=(move,) if move is not None else (),
            acquired=Ref(first.call, f"{symbol.name} acquired here"),
        )


def _move_fix(defer: Node, origin, handle: str) -> Fix | None:
    """Move the defer to right after the acquisition's success check: safe
    where both are statements of one block and the deferred call names
    nothing but the handle (so moving it evaluates the same thing later)."""
    anchor = after_success_check(origin.call, origin.status is not None)
    if anchor is None or anchor.start_byte < defer.end_byte:
        return None
    edits = move_defer(defer, anchor, origin.unit.file.source, handle)
    if edits is None:
        return None
    return Fix(f"move `{syntax.text(defer)}` to right after the acquisition's error check", True, edits)


def _assigned_before(uses: VariableUses, graph: CFG, symbol: Symbol, n: int) -> bool:
    """Whether some non-nil value is written to the variable on a path to n."""
    for m in graph.statement_nodes():
        if m == n or not graph.reachable(m):
            continue
        for use in uses.uses(graph.evaluated(m)):
            if use.symbol is symbol and use.kind is UseKind.WRITE and graph.has_path(m, n):
                statement = graph.ast(m)
                if statement is not None and not syntax.text(statement).rstrip().endswith("nil"):
                    return True
    return False


RULE = Rule(
    "CL202", "defer-before-acquire", Level.ERROR,
    "A deferred release registered before its handle is acquired releases the old (nil) value.",
    """
    ## What it does
    Reports `defer C.cudaFree(p)` (a deferred call, not a deferred closure)
    that runs before `p` is acquired. A deferred call's arguments are
    evaluated when the `defer` statement executes, so it captures the value
    `p` had then, usually nil, and the allocation made afterwards is never
    freed (cudalint also reports that leak, CL101).

    A release of a count with no handle (`defer nvml.Shutdown()`,
    `defer C.dcgmShutdown()`) registered before the acquisition's success
    check, above the acquisition or between it and the check, is reported
    where some path on which the acquisition failed returns: it gives back a
    count this function never took. So is `defer cleanup()` above the error
    check of an acquisition that hands out its release as a function
    (go-dcgm's `cleanup, err := dcgm.Init(mode)`), and so is `defer
    b.Free()` above the error check of a constructor that returns nil where
    it fails (`b, err := NewBuffer(n)`): the method runs on a nil receiver.
    So is the release of a handle deferred between its acquisition and the
    acquisition's success check (`group, err := dcgm.CreateGroup(name);
    defer dcgm.DestroyGroup(group); if err != nil`): where it failed, the
    handle was never made. Where the acquisition's status is thrown away
    (`nvml.Init()` as a statement, or `_ = nvml.Init()`) and a count's
    release is deferred after it, every path may be one where it failed: the
    defer is reported (beside CL301/CL302 for the status), if it is a
    function or a closure (`defer nvml.Shutdown()`, `defer shutdown()`,
    `defer func() {...}()`) or a method of the value that took the count
    (`lib.Init()`, `defer lib.Shutdown()`); not a method of another value
    (`defer client().Cleanup()`), which may check whether its value holds a
    count. A deferred closure that gives the count back only in the
    consequence of `if flag` (or `if !failed`), a variable of the function
    set to true (false) after the success check, releases nothing where the
    init failed: not reported. Releases of the zero value that the API documents
    as no-ops (`free(NULL)`, `cudaFree(0)`: `zero_release_noop` in the
    knowledge) are not reported, nor are release methods that check for
    the zero value of a value type (`func (p DevPtr) Free()` with `if p ==
    0`); a method called on a pointer its maker returned as nil is.
    A count's deferred release in a method (or its goroutine) that can
    return without taking a count is the value's, not the acquisition's,
    where the package makes values of the receiver's type while taking one
    (`NewChecker` calls `nvml.Init()` and returns `&Checker{}`; `Start`'s
    goroutine defers `nvml.Shutdown()` and re-initialises only where a
    device call failed): not reported. A failing branch that
    panics counts (the panic runs the defer as it unwinds), and so does a
    failed `require.NoError(t, err)` of the acquisition's error in a test
    (`t.FailNow` runs the deferred calls); not one that ends the process
    (`log.Fatal`, `os.Exit`): deferred calls never run.

    ## Why is this bad?
    It looks like the canonical cleanup and passes review, while it frees
    nothing and the real allocation leaks on every call. A count released
    without its acquisition decrements another component's count (NVML is
    shut down under it) or returns an error nobody reads; a nil cleanup
    function panics.

    ## Example
    ```go
    var p unsafe.Pointer
    defer C.cudaFree(p) // frees nil
    if st := C.cudaMalloc(&p, n); st != C.cudaSuccess { // and p leaks: CL101
        return errors.New("cudaMalloc failed")
    }
    ```

    ## Use instead
    ```go
    var p unsafe.Pointer
    if st := C.cudaMalloc(&p, n); st != C.cudaSuccess {
        return errors.New("cudaMalloc failed")
    }
    defer C.cudaFree(p)
    ```
    or, if the defer must come first, a closure, which reads `p` when it runs:
    `defer func() { C.cudaFree(p) }()`.


    ## Fix safety
    Safe: the defer (with its trailing comment) moves to right after the
    acquisition's success check, where the deferred call names nothing but
    the handle and both are statements of one block. Otherwise no fix, and
    none for a count's release or a cleanup function.
    """,
    tags=("correctness", "resource-leak"),
    check=check,
    requires=(USES, LIFETIMES, DEFERS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
