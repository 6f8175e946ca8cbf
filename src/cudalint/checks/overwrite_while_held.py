"""CL103: a variable holding a live resource is overwritten before release."""

from __future__ import annotations

from cudalint.analyses.calls import CALLS
from cudalint.analyses.lifetimes import LIFETIMES, Origin
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.prefilter import imports_of
from cudalint.wording import acquired_here, release_verb
from cudalint.framework import Pass
from cudalint.functions import Unit


def check(p: Pass) -> None:
    lifetimes = p.result_of(LIFETIMES)

    def visit(unit: Unit, graph: CFG) -> None:
        for overwrite in lifetimes.lifetimes(unit).overwrites:
            p.report(unit, graph.ast(overwrite.node), _message(overwrite.origin), acquired=acquired_here(overwrite.origin))

    p.visit_graphs(lifetimes.units_with_acquisitions(), visit)


def _message(origin: Origin) -> str:
    return (
        f"{origin.handle} is overwritten here while it still holds {origin.resource.name} from "
        f"{origin.written} (@acquired), which can then never be {release_verb(origin.resource)}; "
        f"release it first"
    )


RULE = Rule(
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
    for _, size := range sizes {
        if st := C.cudaMalloc(&d, C.size_t(size)); st != C.cudaSuccess { // the previous iteration's d is lost
            return errors.New("cudaMalloc failed")
        }
    }
    _ = C.cudaFree(d)
    ```

    ## Use instead
    ```go
    for _, size := range sizes {
        var d unsafe.Pointer
        if st := C.cudaMalloc(&d, C.size_t(size)); st != C.cudaSuccess {
            return errors.New("cudaMalloc failed")
        }
        _ = C.cudaFree(d)
    }
    ```

    """,
    tags=("correctness", "resource-leak"),
    check=check,
    requires=(CALLS, LIFETIMES),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
