"""CL301: a status-returning call used as a bare statement."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CallFact, CallIndex
from cudalint.analyses.status import STATUS
from cudalint.analyses.wrappers import WRAPPERS, StatusWrappers
from cudalint.catalog import Level, Rule
from cudalint.prefilter import imports_of
from cudalint.wording import called_name, status_what, success_hint, wrapper_advice, wrapper_what
from cudalint.framework import Pass


def check(p: Pass) -> None:
    calls = p.result_of(CALLS)
    wrappers = p.result_of(WRAPPERS)
    for unit, graph in p.graphs_of(calls.units_calling_api()):
        with p.isolating(unit):
            for n in graph.statement_nodes():
                statement = graph.ast(n)
                fact = _dropped(calls, statement)
                if fact is not None:
                    p.report(unit, fact.node, f"{status_what(fact)} is discarded; {success_hint(fact)}")
                    continue
                converted = _converted_and_dropped(wrappers, statement)
                if converted is not None:
                    converter, inner = converted
                    name = called_name(converter)
                    p.report(
                        unit, converter,
                        f"the error {name} makes of {status_what(inner)} is discarded; "
                        f"check it: `if err := {syntax.text(converter)}; err != nil {{ ... }}`",
                    )
    for unit, call, wrapped in wrappers.call_sites():
        if not wrapped.release and syntax.statement_of_call(call) == "expression_statement":
            with p.isolating(unit):
                p.report(unit, call, f"{wrapper_what(call, wrapped.inner, False, wrapped.raw)} is discarded; {wrapper_advice(wrapped.raw)}")


def _converted_and_dropped(wrappers: StatusWrappers, statement: Node) -> tuple[Node, CallFact] | None:
    """`check(C.cudaMemcpy(...))` or `status(C.cudaMemset(...)).error("clear")`
    as a statement: a converter of the module, or a method of the package's
    status type, turns the status into an error, which is then dropped."""
    call = _statement_call(statement)
    fact = wrappers.converted_status(call, through_locals=False) if call is not None else None
    return (call, fact) if call is not None and fact is not None and not fact.is_release else None


def _statement_call(statement: Node) -> Node | None:
    """The call an expression statement is."""
    if statement.type != "expression_statement":
        return None
    inner = syntax.children(statement)
    call = syntax.unparen(inner[0]) if inner else None
    return call if call is not None and call.type == "call_expression" else None


def _dropped(calls: CallIndex, statement: Node) -> CallFact | None:
    """A status call that is not a release, as a statement of its own (a
    `go` statement drops nothing the caller could have read)."""
    if statement.type != "expression_statement":
        return None
    inner = syntax.children(statement)
    fact = calls.status_call(inner[0] if inner else None)
    if fact is None or fact.is_release or (fact.api is not None and fact.api.discardable):
        return None
    return fact


RULE = Rule(
    "CL301", "status-discarded", Level.ERROR,
    "A call that returns a CUDA/NVML/cuBLAS/... status is used as a bare statement.",
    """
    ## What it does
    Reports a call whose result is a status code (`cudaError_t`, `CUresult`,
    `cublasStatus_t`, `nvmlReturn_t`, ..., or the `error` of a known Go wrapper)
    when the call is a statement of its own, so that the status is dropped.
    Which calls return a status comes from the API knowledge in `rules/*.toml`;
    calls that return `void` or a pointer (`cudaGetErrorString`) are never
    reported, nor are releases such as `cudaFree`: a release's status is a
    separate, lesser concern (it also reports errors of earlier asynchronous
    work), left to a rule of its own. A status wrapper of the module counts
    too (`Sync()` returning `check(C.cudaDeviceSynchronize())`): a function
    whose every non-nil error comes from a status (a converter's error, an
    API call's `error`, another wrapper's, a raw status wrapped with `%w`,
    or any error returned where a status test failed, in an `if` or in a
    failure `case` of a `switch` on the status; an error variable declared
    bare counts by what is assigned to it, and a bare `return` of named
    results returns what its error result holds); one that returns any other
    error of its own making (a check of its arguments before the call, a
    check after it, another call's) is not a wrapper: this is not errcheck.

    ## Why is this bad?
    A CUDA call reports failure only through its return value. Dropping it hides
    the failure: a `cudaMemcpy` that did not copy, a kernel launch that never ran.
    The CUDA runtime also keeps asynchronous errors sticky, so the failure
    resurfaces in a later, unrelated call, far from its cause.

    A `defer` or `go` statement is not reported: a deferred call is the release
    idiom, and its status has nowhere to go.

    ## Example
    ```go
    C.cudaMemcpy(dst, src, n, C.cudaMemcpyHostToDevice)
    ```

    ## Use instead
    ```go
    if st := C.cudaMemcpy(dst, src, n, C.cudaMemcpyHostToDevice); st != C.cudaSuccess {
        return fmt.Errorf("copy to device: %s", C.GoString(C.cudaGetErrorString(st)))
    }
    ```
    """,
    tags=("correctness", "error-handling"),
    check=check,
    requires=(CALLS, STATUS, WRAPPERS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: family.status is not None),
)
