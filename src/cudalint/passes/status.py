"""Status codes (CL3xx): CUDA, cuBLAS, NVML, ... report failure only through
their return value, and Go lets any call's result be dropped without a word.
A dropped status loses the error and, for the CUDA runtime, leaves it sticky:
the next unrelated call fails instead, far from the cause."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyzer import Analyzer, Pass
from cudalint.catalog import Level, Rule
from cudalint.facts import CallFact
from cudalint.functions import Unit
from cudalint.knowledge import Knowledge
from cudalint.parse import ParsedFile

CL301 = Rule(
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
    work), left to a rule of its own.

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
)

CL302 = Rule(
    "CL302", "status-blank", Level.WARNING,
    "A CUDA/NVML/cuBLAS/... status is assigned to the blank identifier `_`.",
    """
    ## What it does
    Reports an assignment or declaration that puts the status result of a call
    into `_`: `_ = C.cudaMemset(p, 0, n)`, `_, _ = C.cudaMalloc(&p, n)` (cgo's
    errno form), `buf, _ := cu.MemAlloc(n)` for a wrapper that returns an `error`.

    Releases (`_ = C.cudaFree(p)`) are not reported: writing `_` is an explicit
    decision about a release's status.
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
    """,
    tags=("correctness", "error-handling"),
)


def _success_hint(fact: CallFact) -> str:
    status = fact.status
    assert status is not None
    if status.kind == "error":
        return "check that it is nil and handle the failure"
    family = fact.api.family if fact.api is not None else None
    written_package = fact.written.split(".", 1)[0]
    success = status.success[0]
    if family is not None and success.startswith(family.qualifier + "."):
        success = written_package + success[len(family.qualifier):]
    return f"compare it with {success} and handle the failure"


def _what(fact: CallFact) -> str:
    status = fact.status
    assert status is not None
    return f"the {'error' if status.kind == 'error' else status.type} returned by {fact.written}"


def _status_call(p: Pass, expression: Node | None) -> CallFact | None:
    expression = syntax.unparen(expression)
    if expression is None or expression.type != "call_expression":
        return None
    fact = p.facts.call(expression)
    if fact is None or fact.status is None:
        return None
    return fact


def _check_bare(p: Pass, unit: Unit, statement: Node) -> None:
    inner = syntax.children(statement)
    fact = _status_call(p, inner[0] if inner else None)
    if fact is None or fact.is_release or (fact.api is not None and fact.api.discardable):
        return
    p.report("CL301", unit, fact.node, f"{_what(fact)} is discarded; {_success_hint(fact)}")


def _blank_worthy(fact: CallFact | None) -> bool:
    """`_ =` is an explicit decision for a release, and the idiom for clearing
    the sticky error with a discardable call: only other statuses count."""
    return fact is not None and not fact.is_release and not (fact.api is not None and fact.api.discardable)


def _check_blank(p: Pass, file: ParsedFile, function: str, left: list[Node], right: list[Node]) -> None:
    """Match assigned names to results: one multi-valued call, or one to one."""
    if len(right) == 1:
        fact = _status_call(p, right[0])
        if not _blank_worthy(fact):
            return
        index = fact.status.result_index(len(left)) if fact.status else 0
        targets = [left[index]] if 0 <= index < len(left) else []
        pairs = [(target, fact) for target in targets]
    elif len(left) == len(right):
        pairs = []
        for target, value in zip(left, right):
            fact = _status_call(p, value)
            if _blank_worthy(fact):
                pairs.append((target, fact))
    else:
        return
    for target, fact in pairs:
        if target.type == "identifier" and syntax.text(target) == "_":
            p.report_in("CL302", file, function, fact.node, f"{_what(fact)} is assigned to _; {_success_hint(fact)}")


def run(p: Pass) -> None:
    for unit, graph in p.cfgs.graphs.items():
        for n in graph.statement_nodes():
            statement = graph.ast(n)
            kind = statement.type
            if kind == "expression_statement":
                _check_bare(p, unit, statement)
            elif kind == "short_var_declaration" or (
                kind == "assignment_statement" and syntax.text(statement.child_by_field_name("operator")) == "="
            ):
                _check_blank(
                    p, unit.file, unit.name,
                    syntax.expressions(statement.child_by_field_name("left")),
                    syntax.expressions(statement.child_by_field_name("right")),
                )
            elif kind == "var_declaration":
                _check_var_declaration(p, unit.file, unit.name, statement)
    # Package-level initializers run too (in the package's init).
    for parsed in p.package.files:
        for declaration in syntax.children(parsed.root):
            if declaration.type == "var_declaration" and not declaration.has_error:
                _check_var_declaration(p, parsed, "init", declaration)


def _check_var_declaration(p: Pass, file: ParsedFile, function: str, declaration: Node) -> None:
    for spec in syntax.value_specs(declaration):
        _check_blank(
            p, file, function, spec.children_by_field_name("name"),
            syntax.expressions(spec.child_by_field_name("value")),
        )


def _needles(knowledge: Knowledge) -> frozenset[bytes]:
    return frozenset(
        f'"{family.import_path}"'.encode() for family in knowledge.families if family.status is not None
    )


ANALYZER = Analyzer(
    name="status",
    doc=__doc__ or "",
    rules=(CL301, CL302),
    run=run,
    needles=_needles,
)
