"""CL302: a status assigned to the blank identifier."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CallFact, CallIndex
from cudalint.analyses.wrappers import WRAPPERS
from cudalint.catalog import Level, Rule
from cudalint.prefilter import imports_of
from cudalint.wording import status_what, success_hint, wrapper_advice, wrapper_what
from cudalint.framework import Pass
from cudalint.parse import ParsedFile


def check(p: Pass) -> None:
    calls = p.result_of(CALLS)
    for unit, graph in p.graphs_of(calls.units_calling_api()):
        with p.isolating(unit):
            for n in graph.statement_nodes():
                _check_statement(p, calls, unit.file, unit.name, graph.ast(n))
    for unit, call, wrapped in p.result_of(WRAPPERS).call_sites():
        if not wrapped.release and _error_blank(call):
            with p.isolating(unit):
                p.report(unit, call, f"{wrapper_what(call, wrapped.inner, False, wrapped.raw)} is assigned to _; {wrapper_advice(wrapped.raw)}")
    # Package-level initializers run too (in the package's init).
    for parsed in p.package.files:
        for declaration in syntax.children(parsed.root):
            if declaration.type == "var_declaration" and not declaration.has_error:
                _check_statement(p, calls, parsed, "init", declaration)


def _check_statement(p: Pass, calls: CallIndex, file: ParsedFile, function: str, statement: Node) -> None:
    for left, right in syntax.assignment_sides(statement):
        for target, fact in calls.status_targets(left, right):
            if target.type == "identifier" and syntax.text(target) == "_" and _blank_worthy(fact):
                p.report_in(file, function, fact.node, f"{status_what(fact)} is assigned to _; {success_hint(fact)}")


def _error_blank(call: Node) -> bool:
    """`_ = wrapper()`, `n, _ := wrapper()`: the error, its last result, goes to _."""
    left = syntax.assigned_from(call)
    return bool(left) and syntax.text(left[-1]) == "_"


def _blank_worthy(fact: CallFact) -> bool:
    """`_ =` is an explicit decision for a release, and the idiom for clearing
    the sticky error with a discardable call: only other statuses count."""
    return not fact.is_release and not (fact.api is not None and fact.api.discardable)


RULE = Rule(
    "CL302", "status-blank", Level.WARNING,
    "A CUDA/NVML/cuBLAS/... status is assigned to the blank identifier `_`.",
    """
    ## What it does
    Reports an assignment or declaration that puts the status result of a call
    into `_`: `_ = C.cudaMemset(p, 0, n)`, `_, _ = C.cudaMalloc(&p, n)` (cgo's
    errno form), `buf, _ := cu.MemAlloc(n)` for a wrapper that returns an `error`,
    `_ = Sync()` for a status wrapper of the module (as CL301 defines them).

    Releases (`_ = C.cudaFree(p)`) are not reported: writing `_` is an explicit
    decision about a release's status. So is a teardown method, one that
    frees what its receiver holds and acquires nothing (`_ = r.Abort()`),
    whatever status it reports (a stream's synchronisation first, say).
    Nor are calls whose status is dropped on purpose to reset state
    (`_ = C.cudaGetLastError()` clears the sticky error). Package-level
    initializers (`var _ = nvml.Init()`) are checked like function bodies.

    ## Why is this bad?
    `_` silences the compiler but not the GPU: the failure still happened, and
    the code after it runs on memory that was never set, copied or allocated.
    Status codes of asynchronous CUDA calls also report earlier failures, so a
    discarded one can hide a fault in a kernel that ran before.

    ## Example
    ```go
    _ = C.cudaMemset(d, 0, n)
    ```

    ## Use instead
    ```go
    if st := C.cudaMemset(d, 0, n); st != C.cudaSuccess {
        return cudaError(st)
    }
    ```
    A release whose failure the code cannot act on may keep its `_`
    (`_ = C.cudaFree(d)`): that is not reported.
    """,
    tags=("correctness", "error-handling"),
    check=check,
    requires=(CALLS, WRAPPERS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: family.status is not None),
)
