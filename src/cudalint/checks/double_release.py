"""CL102: a handle released twice on one path."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.lifetimes import LIFETIMES
from cudalint.analyses.stale_fields import STALE_FIELDS
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.prefilter import imports_of
from cudalint.wording import acquired_here
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit


def check(p: Pass) -> None:
    lifetimes = p.result_of(LIFETIMES)

    def visit(unit: Unit, graph: CFG) -> None:
        for double in lifetimes.lifetimes(unit).double_releases:
            first = Ref(graph.ast(double.first), "the first release")
            if not double.handle and double.origin is not None:
                # A count (nvml.Init): one acquisition, released twice.
                origin = double.origin
                again = "again by this defer when the function returns" if double.by_defer else "again here"
                p.report(
                    unit, graph.ast(double.node),
                    f"{origin.resource.name} taken once by {origin.written} at @acquired is released at @first "
                    f"and {again}: the second release drops a count that another user holds; release it once",
                    first=first, acquired=acquired_here(origin),
                )
                continue
            if double.by_defer:
                message = (
                    f"{double.handle} is released at @first and again by this defer when the function "
                    f"returns; remove one of the two releases"
                )
            else:
                by = _literal_runner(graph.ast(double.first), double.handle)
                through = f" (by the func literal {by} runs there)" if by else ""
                message = f"{double.handle} was already released at @first{through}; release it only once"
            p.report(unit, graph.ast(double.node), message, first=first)

    p.visit_graphs(lifetimes.units_with_releases(), visit)
    stale = p.result_of(STALE_FIELDS)
    for unit in p.package.units:
        with p.isolating(unit):
            for found in stale.of(unit):
                p.report(
                    unit, found.release,
                    f"{found.field} is freed here to be refilled at @refill, but the return at @exit leaves it "
                    f"holding the freed handle: the next release of it (this method again, or a Close) frees it "
                    f"a second time; set {found.field} to nil (or zero) right after the free",
                    refill=Ref(found.refill, "the refill"), exit=Ref(found.exit, "returns with the field still freed"),
                )


def _literal_runner(statement: Node | None, handle: str) -> str:
    """`visitComputeInstances` where the first release is a func literal
    passed to it that names the handle (`visit(gi, func(...) { gi.Destroy() })`)."""
    for node in syntax.walk(statement) if statement is not None else ():
        if node.type == "func_literal" and node.parent is not None and node.parent.type == "argument_list":
            names = {syntax.text(n) for n in syntax.walk(node) if n.type == "identifier"}
            if handle in names:
                return syntax.text(node.parent.parent.child_by_field_name("function"))
    return ""


RULE = Rule(
    "CL102", "double-release", Level.ERROR,
    "A handle released twice on one path.",
    """
    ## What it does
    Reports the second release of a handle on a path that already released
    it: two `cudaFree` calls, a `cudaFree` followed by a `defer cudaFree` of
    the same value, or an explicit release of a handle a registered `defer`
    will release again when the function returns. Handles that arrive as
    parameters, and handles in a field of a parameter, receiver or local
    (`C.cuStreamDestroy(l.stream)` twice in a method), are followed from the
    point where the function releases them until the field is assigned; a
    release by the handle's own method (`gi.Destroy()`, `set.Free()`) counts
    where its status is dropped or a failure returns, not where the status
    is kept, as for a retry (`if ret == nvml.ERROR_IN_USE { ret =
    gi.Destroy() }`). A func literal that a function of the package runs
    in place releases what it captures there, where it releases the value
    itself (`visitComputeInstances(gi, func(ci nvml.ComputeInstance)
    nvml.Return { return gi.Destroy() })`, the wrong handle): a release of
    it after the call is a second one.
    A method of the package that frees some fields of its receiver
    (`s.freeTables()`) releases those fields: freeing another field after it
    is no second release, freeing one of them or calling it again is.
    A release method of an owning type that checks and clears its handle
    (`if b.ptr == nil { return nil }` ... `b.ptr = nil`) or runs under a
    `sync.Once` of the value frees nothing the second time: calling it
    twice (`defer b.Free()` and an early `b.Free()`) is not reported.
    A count with no handle (`nvml.Init` / `nvml.Shutdown`) released twice
    after one acquisition is reported the same way: the second release
    gives back a count another user of the library holds.
    A method that frees a field of its receiver to refill it (`C.cuMemFree(
    p.buf)` then `cuMemAlloc(&p.buf, n)`, or a later `p.buf = fresh`) and
    returns in between, or where the refill fails, leaves the field naming
    freed memory: the next release of it (the method again, or a Close) is
    the second one, reported at the first free.

    ## Why is this bad?
    A double free is memory corruption, not an error the driver catches.
    Measured on an NVIDIA H200 with driver 580: after `cudaFree(a)`, the
    next `cudaMalloc` of the same size returned the same address `a`; a
    second, stale `cudaFree(a)` then returned `cudaSuccess`, and the new
    owner's `cudaMemset` failed with `cudaErrorInvalidValue`. The allocator
    reuses a freed address at once, so the second free silently releases
    whatever live allocation owns the address by then (another buffer of
    this function, or of another goroutine), and the failure surfaces later,
    somewhere else. CL507 reports the same bug between an explicit release
    and a finalizer.

    ## Example
    ```go
    var d unsafe.Pointer
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        return errors.New("cudaMalloc failed")
    }
    defer C.cudaFree(d)
    _ = C.cudaFree(d) // the defer frees d again at return
    ```

    ## Use instead
    Release each handle exactly once: the `defer` or an explicit call, not
    both. An explicit call can check the status of the free (or set the
    variable to nil after freeing it, and free through a deferred closure
    that checks for nil):
    ```go
    var d unsafe.Pointer
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        return errors.New("cudaMalloc failed")
    }
    if st := C.cudaFree(d); st != C.cudaSuccess {
        return errors.New("cudaFree failed")
    }
    ```

    """,
    tags=("correctness",),
    check=check,
    requires=(CALLS, LIFETIMES, STALE_FIELDS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
    # A release that can be a second release is one defect however many
    # earlier releases can precede it.
    one_per_span=True,
)
