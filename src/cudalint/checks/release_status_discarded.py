"""CL304: a release whose status is dropped."""

from __future__ import annotations

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.wrappers import WRAPPERS
from cudalint.catalog import Level, Rule
from cudalint.prefilter import imports_of
from cudalint.wording import status_what, wrapper_what
from cudalint.framework import Pass


def check(p: Pass) -> None:
    calls = p.result_of(CALLS)
    for unit, graph in p.graphs_of(calls.units_calling_api()):
        with p.isolating(unit):
            for n in graph.statement_nodes():
                statement = graph.ast(n)
                if statement.type not in ("expression_statement", "go_statement"):
                    continue  # `defer C.cudaFree(p)` is the exemption
                inner = syntax.children(statement)
                fact = calls.status_call(inner[0] if inner else None)
                if fact is None or not fact.is_release or (fact.api is not None and fact.api.discardable):
                    continue
                p.report(
                    unit, fact.node,
                    f"{status_what(fact)} is discarded; a release also reports errors of earlier asynchronous work: "
                    f"check it, or write `{fact.blanks} = {syntax.text(fact.node)}` to discard it on purpose",
                )
    for unit, call, wrapped in p.result_of(WRAPPERS).call_sites():
        if wrapped.release and syntax.statement_of_call(call) == "expression_statement":
            with p.isolating(unit):
                p.report(unit, call, f"{wrapper_what(call, wrapped.inner, True, wrapped.raw, wrapped.teardown)} is discarded; a release also reports errors of "
                         f"earlier asynchronous work: check it, or write `_ = {syntax.text(call)}` to discard it on purpose")


RULE = Rule(
    "CL304", "release-status-discarded", Level.NOTE,
    "A release call (`C.cudaFree(p)`) used as a bare statement; only `defer C.cudaFree(p)` is exempt.",
    """
    ## What it does
    Reports a release that returns a status (`cudaFree`, `cuMemFree`,
    `cudaStreamDestroy`, `cublasDestroy`, ...) used as a bare statement,
    anywhere: in a function, a deferred closure or a finalizer. Only the
    deferred call itself (`defer C.cudaFree(p)`) is exempt, since a deferred
    call's result has nowhere to go, as is an explicit `_ = C.cudaFree(p)`;
    `go C.cudaFree(p)` drops the status too and is reported.
    Releases returning `void` (`C.free`, `nppiFree`) are never reported. A
    release is never reported as CL301. A status wrapper of the module
    whose status comes from a release (`Free(p)` returning
    `check(C.cudaFree(p))`) is a release too.

    ## Why is this bad?
    It is a note, not an error: releases rarely fail on their own. But
    `cudaFree` synchronises, and its status also reports errors of earlier
    asynchronous work (a kernel that faulted); dropping it hides them, most
    often in a `Close` method that could have returned them.

    ## Example
    ```go
    func (b *Buffer) Close() error {
        C.cudaFree(b.ptr)
        return nil
    }
    ```

    ## Use instead
    ```go
    func (b *Buffer) Close() error {
        return check(C.cudaFree(b.ptr))
    }
    ```
    """,
    tags=("error-handling",),
    check=check,
    requires=(CALLS, WRAPPERS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: family.status is not None),
)
