"""CL105: a handle released by another kind's release."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.field_kinds import FIELD_KINDS
from cudalint.analyses.lifetimes import LIFETIMES, Origin
from cudalint.knowledge import ResourceSpec
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.prefilter import imports_of
from cudalint.wording import acquired_here, spelled
from cudalint.framework import Pass
from cudalint.functions import Unit


def check(p: Pass) -> None:
    lifetimes = p.result_of(LIFETIMES)
    reported: list[Node] = []

    def visit(unit: Unit, graph: CFG) -> None:
        for mismatch in lifetimes.lifetimes(unit).mismatches:
            statement = graph.ast(mismatch.node)
            reported.append(statement)
            origin = mismatch.origin
            p.report(
                unit, statement, _message(origin.handle, origin, mismatch.release_call, mismatch.release_resource),
                acquired=acquired_here(origin),
            )

    p.visit_graphs(lifetimes.units_with_acquisitions(), visit)
    _check_fields(p, reported)


def _check_fields(p: Pass, reported: list[Node]) -> None:
    """A release of a field whose kind the package fixes (`C.free(p.ptr)`
    where every value stored into ptr is pinned memory), wherever it is."""
    units = {unit.node: unit for unit in p.package.units}
    for mismatch in p.result_of(FIELD_KINDS).mismatches():
        call = mismatch.call
        unit = units.get(syntax.enclosing_function(call))
        if unit is None or any(statement.start_byte <= call.start_byte < statement.end_byte for statement in reported):
            continue  # the walk from its acquisition said it already
        kind = mismatch.kind
        p.report(
            unit, call, _message(mismatch.holder, kind.origin, mismatch.release_call, mismatch.release_resource, kind.resource),
            acquired=acquired_here(kind.origin),
        )


def _message(holder: str, origin: Origin, release_call: str, release_resource: ResourceSpec, held: ResourceSpec | None = None) -> str:
    held = held or origin.resource
    # A C++ object is deleted in C++: by a glue function, which Go calls.
    fix = "a glue function that `delete`s it" if held.glue_only else spelled(origin, held.first_release)
    return (
        f"{holder} holds {held.name} from {origin.written} (@acquired) but is "
        f"released with {spelled(origin, release_call)}, which releases "
        f"{release_resource.name}; use {fix}"
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
    A struct field counts as the handle wherever it is released when every
    value the package stores into it (`T{ptr: p}`, `b.ptr = p`,
    `C.cudaMallocHost(&b.ptr, n)`) is an acquisition of one kind: `C.free(p.ptr)`
    in a method far from the allocation is reported too. A field that also
    receives anything else (a parameter, another kind) is not judged.

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
    requires=(CALLS, LIFETIMES, FIELD_KINDS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
