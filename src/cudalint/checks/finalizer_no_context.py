"""CL505: a driver-API release in a finalizer."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex
from cudalint.catalog import Level, Rule
from cudalint.checks.wording import imports_of
from cudalint.framework import Pass
from cudalint.functions import LiteralUse, Package, Unit, UnitKind


def check(p: Pass) -> None:
    """A finalizer, with the functions of the package it calls."""
    calls = p.result_of(CALLS)
    for _, call in calls.calls_to("runtime", "SetFinalizer"):
        arguments = syntax.children(call.child_by_field_name("arguments"))
        finalizer = _function_of(p.package, calls, arguments[1]) if len(arguments) == 2 else None
        if finalizer is None:
            continue
        reached = _reached(calls, finalizer)
        api = [(unit, via, calls.calls[c]) for unit, via in reached for c in calls.api_calls.get(unit.node, [])]
        if any(fact.api.context_setter for _, _, fact in api):
            continue
        for unit, via, fact in api:
            needs = [r for r in fact.api.releases if r.needs_context]
            if not (needs and fact.api.family.releases_need_context):
                continue
            where = fact.node if via is None else via
            through = "" if via is None else f" (through {unit.name})"
            p.report(
                finalizer, where,
                f"{fact.written}{through} runs in a finalizer, on whatever OS thread the GC picks, with no CUDA "
                f"context current: it fails and the {needs[0].name} leaks; release it in a Close method, or make "
                f"its context current here first (cuCtxPushCurrent ... cuCtxPopCurrent on a locked thread)",
            )


def _reached(calls: CallIndex, start: Unit) -> list[tuple[Unit, Node | None]]:
    """The function and the functions of the package it calls (with the call
    in `start` that leads to each), transitively."""
    found: list[tuple[Unit, Node | None]] = [(start, None)]
    seen = {start}
    index = 0
    while index < len(found):
        unit, via = found[index]
        index += 1
        body = unit.body
        for node in syntax.walk(body, into_functions=False) if body is not None else ():
            if node.type != "call_expression":
                continue
            callee = calls.callee(node)
            if callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target not in seen:
                seen.add(callee.target)
                found.append((callee.target, via if via is not None else node))
    return found


def _function_of(package: Package, calls: CallIndex, expression: Node) -> Unit | None:
    node = syntax.unparen(expression)
    if node is None:
        return None
    if node.type == "func_literal":
        return next((u for u in package.units if u.node == node and u.use is LiteralUse.PASSED), None)
    if node.type == "identifier":
        return calls.unit_of(package.resolution.symbol(node))
    if node.type == "selector_expression":
        method = syntax.text(node.child_by_field_name("field"))
        operand = syntax.text(syntax.unparen(node.child_by_field_name("operand")))
        names = {f"{operand}.{method}", f"({operand}).{method}"}
        return next((u for u in package.units if u.kind is UnitKind.METHOD and u.name in names), None)
    return None


RULE = Rule(
    "CL505", "finalizer-no-context", Level.ERROR,
    "A driver-API release in a runtime.SetFinalizer function that never makes a context current.",
    """
    ## What it does
    Reports a release of the CUDA driver API (`cuMemFree`, `cuStreamDestroy`,
    `cuModuleUnload`, ... from families marked `releases_need_context`) inside
    a function registered with `runtime.SetFinalizer`, or a function of the
    package it calls, when none of them makes a context current
    (`cuCtxSetCurrent`, `cuCtxPushCurrent`). Releases that name what they
    release need no current context and are not reported (`cuCtxDestroy`,
    `cuDevicePrimaryCtxRelease`: `needs_context = false` in the knowledge).

    ## Why is this bad?
    Finalizers run on the GC's finalizer goroutine, on an arbitrary OS
    thread with no CUDA context current. The release fails with
    `CUDA_ERROR_INVALID_CONTEXT` and the resource leaks, silently, since
    nothing checks a finalizer's status.

    ## Example
    ```go
    runtime.SetFinalizer(b, func(b *Buffer) { _ = C.cuMemFree(b.ptr) })
    ```

    ## Use instead
    Release explicitly in a `Close` method; if a finalizer must stay as a
    safety net, make the buffer's context current in it first:
    ```go
    runtime.SetFinalizer(b, func(b *Buffer) {
        runtime.LockOSThread()
        defer runtime.UnlockOSThread()
        if C.cuCtxPushCurrent(b.ctx) != C.CUDA_SUCCESS {
            return
        }
        _ = C.cuMemFree(b.ptr)
        var old C.CUcontext
        if C.cuCtxPopCurrent(&old) != C.CUDA_SUCCESS {
            panic("cuCtxPopCurrent failed")
        }
    })
    ```

    """,
    tags=("correctness", "resource-leak"),
    check=check,
    requires=(CALLS,),
    needles=lambda knowledge: imports_of(knowledge, lambda family: family.releases_need_context),
)
