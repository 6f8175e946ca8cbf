"""CL105: a handle released by another kind's release."""

from __future__ import annotations

from cudalint.analyses.calls import CALLS
from cudalint.analyses.lifetimes import LIFETIMES, Mismatch
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.prefilter import imports_of
from cudalint.wording import acquired_here, spelled
from cudalint.framework import Pass
from cudalint.functions import Unit


def check(p: Pass) -> None:
    lifetimes = p.result_of(LIFETIMES)

    def visit(unit: Unit, graph: CFG) -> None:
        for mismatch in lifetimes.lifetimes(unit).mismatches:
            p.report(unit, graph.ast(mismatch.node), _message(mismatch), acquired=acquired_here(mismatch.origin))

    p.visit_graphs(lifetimes.units_with_acquisitions(), visit)


def _message(mismatch: Mismatch) -> str:
    origin = mismatch.origin
    return (
        f"{origin.handle} holds {origin.resource.name} from {origin.written} (@acquired) but is "
        f"released with {spelled(origin, mismatch.release_call)}, which releases "
        f"{mismatch.release_resource.name}; use {spelled(origin, origin.resource.first_release)}"
    )


RULE = Rule(
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
    var h unsafe.Pointer
    if st := C.cudaMallocHost(&h, n); st != C.cudaSuccess {
        return errors.New("cudaMallocHost failed")
    }
    defer C.cudaFree(h) // pinned memory needs cudaFreeHost
    ```

    ## Use instead
    Release with the function of the allocator that made the handle:
    ```go
    var h unsafe.Pointer
    if st := C.cudaMallocHost(&h, n); st != C.cudaSuccess {
        return errors.New("cudaMallocHost failed")
    }
    defer C.cudaFreeHost(h) // pinned memory: cudaFreeHost
    ```

    """,
    tags=("correctness",),
    check=check,
    requires=(CALLS, LIFETIMES),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
