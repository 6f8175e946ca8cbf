"""CL103: a variable holding a live resource is overwritten before release."""

from __future__ import annotations

import re

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.field_kinds import FIELD_KINDS, FieldWrite
from cudalint.analyses.lifetimes import LIFETIMES, Origin
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.prefilter import imports_of
from cudalint.wording import acquired_here, release_verb
from cudalint.framework import Pass
from cudalint.functions import Unit, UnitKind


def check(p: Pass) -> None:
    lifetimes = p.result_of(LIFETIMES)

    def visit(unit: Unit, graph: CFG) -> None:
        # One statement, one finding: `start = next` in a loop loses what
        # start held first and each earlier next alike; the value written to
        # is named after the variable the statement assigns.
        by_node: dict[int, list] = {}
        for overwrite in lifetimes.lifetimes(unit).overwrites:
            by_node.setdefault(overwrite.node, []).append(overwrite)
        for node, overwrites in by_node.items():
            statement = graph.ast(node)
            assigned = {syntax.text(target) for left, _ in syntax.assignment_sides(statement) for target in left} if statement is not None else set()
            overwrite = next((o for o in overwrites if o.origin.handle in assigned), overwrites[0])
            p.report(unit, statement, _message(overwrite.origin), acquired=acquired_here(overwrite.origin))

    p.visit_graphs(lifetimes.units_with_acquisitions(), visit)
    _check_fields(p)


def _check_fields(p: Pass) -> None:
    """A method that acquires into a field of its receiver which the
    package's values are born holding (a constructor fills it with the same
    kind), without releasing, reading or testing that field first, testing
    a flag of the receiver, or calling a method of the receiver before
    (which may release it): the value it held is lost (`Grow`
    re-allocating `b.ptr`)."""
    kinds = p.result_of(FIELD_KINDS)
    writes_in: dict[Unit, list[FieldWrite]] = {}
    for write in kinds.writes():
        if write.unit.kind is UnitKind.METHOD and kinds.born_holding(write.key):
            writes_in.setdefault(write.unit, []).append(write)

    def visit(unit: Unit, graph: CFG) -> None:
        receiver = unit.receiver
        for write in writes_in[unit]:
            operand = write.target.child_by_field_name("operand")
            held = kinds.kind_of(*write.key)
            if receiver is None or operand.type != "identifier" or p.package.resolution.symbol(operand) is not receiver or held is None:
                continue
            n = graph.node_containing(write.target)
            if n is None or not graph.reachable(n) or _touched_before(graph, n, receiver.name, syntax.text(write.target)):
                continue
            p.report(
                unit, write.target,
                f"{syntax.text(write.target)} is overwritten here while it may still hold {held.resource.name} "
                f"stored by {held.origin.unit.name} (@acquired), which can then never be {release_verb(held.resource)}; "
                f"release it first, or test that it is nil",
                acquired=acquired_here(held.origin),
            )

    p.visit_graphs(list(writes_in), visit)


def _touched_before(graph: CFG, n: int, receiver: str, field: str) -> bool:
    """Whether a statement on a path to n mentions the field, calls a
    method of the receiver, or tests a flag of the receiver (`if m.loaded
    { return errLoaded }`: the state it guards is the field's)."""
    method_call = re.compile(rf"\b{re.escape(receiver)}\.\w+\s*\(")
    mention = re.compile(rf"\b{re.escape(field)}\b")
    flag = re.compile(rf"^!?\s*{re.escape(receiver)}\.\w+$|\b{re.escape(receiver)}\.\w+\s*[!=]=\s*(true|false)\b")
    for m in graph.statement_nodes():
        if m == n or not graph.has_path(m, n):
            continue
        for root in graph.evaluated(m):
            text = syntax.text(root)
            if mention.search(text) or method_call.search(text) or flag.search(text.strip()):
                return True
    return False


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
    and not also as a leak (CL101). A method that allocates into a field of
    its receiver (`C.cudaMalloc(&b.ptr, n)`, `b.ptr = p`) is reported where
    the package's values are born holding that field (a constructor or a
    composite literal fills it with the same kind) and nothing on the way
    releases, reads or tests the field, tests a flag of the receiver
    (`if b.open { ... }`) or calls a method of the receiver first. A handle of
    a resource that outlives the process (a MIG instance) is reported where
    the function keeps its handles (hands one on or destroys one); one that
    leaves what it makes in place on the GPU is not. A cleanup function is a
    handle too: `_, cleanup, err = newCollector(...)` a second time loses the
    first collector's cleanup, also where that function only runs cleanups it
    collected (a `[]func()` it returns, a literal that ranges over one, or a
    method of a struct holding them, `func() { c.Cleanup() }`).

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
    requires=(CALLS, LIFETIMES, FIELD_KINDS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
