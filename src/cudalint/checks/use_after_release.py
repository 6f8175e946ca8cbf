"""CL104: a handle used after it was released."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import argument_of
from cudalint.analyses.calls import CALLS
from cudalint.analyses.lifetimes import LIFETIMES
from cudalint.analyses.uses import UseKind
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.prefilter import imports_of
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit


def check(p: Pass) -> None:
    lifetimes = p.result_of(LIFETIMES)
    calls = p.result_of(CALLS)

    def visit(unit: Unit, graph: CFG) -> None:
        for late in lifetimes.lifetimes(unit).uses_after_release:
            use = late.use
            subject, call = use.symbol.name, use.call
            if use.kind is UseKind.DEREF and use.field and use.node.parent is not None:
                # `m.mod` after `C.cuModuleUnload(m.mod)`: the field is the handle.
                passed = argument_of(use.node.parent, calls.callee)
                subject, call = f"{use.symbol.name}.{use.field}", passed[0] if passed is not None else None
            p.report(
                unit, use.node,
                f"{subject} is {_phrase(use.kind, call, bool(use.field))} after it was released at @released; "
                f"move the release after its last use",
                released=Ref(graph.ast(late.released), "the release"),
            )
        for gated in lifetimes.lifetimes(unit).gated_after_release:
            callee = syntax.text(gated.call.child_by_field_name("function"))
            p.report(
                unit, gated.call,
                f"{callee} is called after the release at @released gave back the {gated.origin.resource.name} "
                f"this function took with {gated.origin.written} at @taken, on every path to it; "
                f"call it before the release",
                released=Ref(graph.ast(gated.released), "the release"),
                taken=Ref(gated.origin.call, "the acquisition"),
            )

    p.visit_graphs(lifetimes.units_with_releases(), visit)


def _phrase(kind: UseKind, call: Node | None, field: bool = False) -> str:
    if kind is UseKind.RETURN:
        return "returned"
    if kind is UseKind.DEREF and field and call is not None:
        return f"passed to {syntax.text(call.child_by_field_name('function'))}"
    if kind is UseKind.DEREF:
        return "dereferenced"
    if kind in (UseKind.PASS_API, UseKind.PASS_LOCAL, UseKind.TRANSFER_CALL, UseKind.METHOD, UseKind.CALLED) and call is not None:
        callee = syntax.text(call.child_by_field_name("function"))
        return f"passed to {callee}" if kind is not UseKind.METHOD else f"used by {callee}"
    return "used"


RULE = Rule(
    "CL104", "use-after-release", Level.ERROR,
    "A handle passed to a non-release API call, dereferenced or returned after it was released.",
    """
    ## What it does
    Reports a use of a handle (a local variable, a parameter the function
    releases itself, or a field of either that the function releases:
    `C.cuModuleUnload(m.mod)`, or a parameter released by its own method:
    `set.Free()` then `set.Wait(0)`) that some path reaches after releasing it,
    until the field is assigned or its address given to C: passed to an
    API call that is not a release, or to a function of the module that uses
    it without releasing or keeping it (`gpu.Fill(p, 0, n)`), dereferenced
    (`*p`, `p[i]`, `p.f`), called, or returned. For a count every call of
    its family needs (NVML's initialisation, DCGM's: `gates_family` in the
    knowledge), a call of the family that every path reaches only after the
    function gave its count back (`nvml.Shutdown()`, then
    `nvml.SystemGetDriverVersion()`).

    ## Why is this bad?
    Memory released with `cudaFree` may be handed to the next `cudaMalloc`
    of any goroutine; a copy into it corrupts someone else's data, and a
    stream or event used after its destroy call fails at best. An NVML call
    after the last `nvmlShutdown` returns `NVML_ERROR_UNINITIALIZED`.

    ## Example
    ```go
    var d unsafe.Pointer
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        return errors.New("cudaMalloc failed")
    }
    _ = C.cudaFree(d)
    if st := C.cudaMemcpy(unsafe.Pointer(&host[0]), d, n, C.cudaMemcpyDeviceToHost); st != C.cudaSuccess {
        return errors.New("cudaMemcpy failed")
    }
    ```

    ## Use instead
    Move the release after the last use, usually as a `defer` right after the
    acquisition's error check:
    ```go
    var d unsafe.Pointer
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        return errors.New("cudaMalloc failed")
    }
    defer C.cudaFree(d)
    if st := C.cudaMemcpy(unsafe.Pointer(&host[0]), d, n, C.cudaMemcpyDeviceToHost); st != C.cudaSuccess {
        return errors.New("cudaMemcpy failed")
    }
    ```

    """,
    tags=("correctness", "memory-safety"),
    check=check,
    requires=(CALLS, LIFETIMES),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
    # A use that can follow a release is one defect however many releases
    # can precede it.
    one_per_span=True,
)
