"""Status codes (CL3xx): CUDA, cuBLAS, NVML, ... report failure only through
their return value, and Go lets any call's result be dropped without a word.
A dropped status loses the error and, for the CUDA runtime, leaves it sticky:
the next unrelated call fails instead, far from the cause."""

from __future__ import annotations

from tree_sitter import Node

from collections import deque

from cudalint import syntax
from cudalint.analyzer import Analyzer, Pass
from cudalint.cfg import CFG, ExitKind, NodeKind
from cudalint.handles import UseKind
from cudalint.passes.resources import engine
from cudalint.scope import Role
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


CL303 = Rule(
    "CL303", "status-unchecked", Level.WARNING,
    "A status stored in a variable that is overwritten or goes out of scope on some path without being read.",
    """
    ## What it does
    Follows a variable that receives a status (`st := C.cudaMemcpy(...)`,
    `count, ret := nvml.DeviceGetCount()`, `p, err := cu.MemAlloc(n)`) along
    every path from the assignment and reports the assignment when some path
    overwrites the variable, returns, or leaves its scope before anything
    reads it. Any read counts as handling: a comparison, a switch, a return,
    an argument to any function, a store, a conversion to an error. A
    variable a deferred closure refers to is read when the function returns;
    one another closure refers to is read where the closure is made or
    called. To keep only the
    first failure in a sticky error field, compare the status before storing
    it: `if st != C.cudaSuccess && s.err == C.cudaSuccess { s.err = st }`.

    ## Why is this bad?
    The Go compiler only insists that a variable is used *somewhere*. A status
    that is checked on one path and silently overwritten by the next call on
    another loses exactly the failure the check was written for.

    ## Example
    ```go
    st := C.cudaMemcpy(dst, src, n, C.cudaMemcpyHostToDevice)
    st = C.cudaDeviceSynchronize() // the copy's status is lost
    if st != C.cudaSuccess {
        return cudaError(st)
    }
    ```

    ## Use instead
    ```go
    if st := C.cudaMemcpy(dst, src, n, C.cudaMemcpyHostToDevice); st != C.cudaSuccess {
        return cudaError(st)
    }
    if st := C.cudaDeviceSynchronize(); st != C.cudaSuccess {
        return cudaError(st)
    }
    ```
    """,
    tags=("correctness", "error-handling"),
)

CL304 = Rule(
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
    release is never reported as CL301.

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
    """A status call as a statement of its own (CL301), a release as one
    (CL304, also `go C.cudaFree(p)`: only the deferred call is exempt)."""
    inner = syntax.children(statement)
    fact = _status_call(p, inner[0] if inner else None)
    if fact is None or (fact.api is not None and fact.api.discardable):
        return
    if statement.type == "go_statement" and not fact.is_release:
        return
    if fact.is_release:
        p.report(
            "CL304", unit, fact.node,
            f"{_what(fact)} is discarded; a release also reports errors of earlier asynchronous work: "
            f"check it, or write `_ = {syntax.text(fact.node)}` to discard it on purpose",
        )
        return
    p.report("CL301", unit, fact.node, f"{_what(fact)} is discarded; {_success_hint(fact)}")


def _blank_worthy(fact: CallFact | None) -> bool:
    """`_ =` is an explicit decision for a release, and the idiom for clearing
    the sticky error with a discardable call: only other statuses count."""
    return fact is not None and not fact.is_release and not (fact.api is not None and fact.api.discardable)


def _status_targets(p: Pass, left: list[Node], right: list[Node]) -> list[tuple[Node, CallFact]]:
    """Where the statuses of an assignment go: one multi-valued call, or one to one."""
    if len(right) == 1:
        fact = _status_call(p, right[0])
        if fact is None or fact.status is None:
            return []
        index = fact.status.result_index(len(left))
        return [(left[index], fact)] if 0 <= index < len(left) else []
    if len(left) == len(right):
        return [(target, fact) for target, value in zip(left, right) if (fact := _status_call(p, value)) is not None]
    return []


def _check_blank(p: Pass, file: ParsedFile, function: str, left: list[Node], right: list[Node]) -> None:
    for target, fact in _status_targets(p, left, right):
        if target.type == "identifier" and syntax.text(target) == "_" and _blank_worthy(fact):
            p.report_in("CL302", file, function, fact.node, f"{_what(fact)} is assigned to _; {_success_hint(fact)}")


def _assignment_sides(statement: Node) -> list[tuple[list[Node], list[Node]]]:
    kind = statement.type
    if kind == "short_var_declaration" or (
        kind == "assignment_statement" and syntax.text(statement.child_by_field_name("operator")) == "="
    ):
        return [(
            syntax.expressions(statement.child_by_field_name("left")),
            syntax.expressions(statement.child_by_field_name("right")),
        )]
    if kind == "var_declaration":
        return [
            (spec.children_by_field_name("name"), syntax.expressions(spec.child_by_field_name("value")))
            for spec in syntax.value_specs(statement)
        ]
    return []


def _check_unread(p: Pass, unit: Unit, graph: CFG, n: int, target: Node, fact: CallFact) -> None:
    """CL303: follow the variable from the assignment; on some path it must
    not be overwritten, or end its life, before something reads it."""
    symbol = p.package.resolution.symbol(target)
    if symbol is None or not symbol.is_local or symbol.role is Role.RESULT:
        return
    uses = engine(p).uses
    seen = {n}
    queue = deque([n])
    while queue:
        node = queue.popleft()
        for successor in graph.graph.successors(node):
            if graph.kind(successor) is NodeKind.EXIT:
                if graph.graph.nodes[successor]["exit"] in (ExitKind.RETURN, ExitKind.GOEXIT):
                    return _report_unread(p, unit, fact, symbol, "is never read before the function returns")
                continue
            there = graph.ast(successor)
            scope = symbol.scope_node
            if scope is not None and scope != symbol.function and there is not None and not (
                scope.start_byte <= there.start_byte < scope.end_byte
            ):
                return _report_unread(p, unit, fact, symbol, f"goes out of scope at line {scope.end_point[0] + 1} without being read")
            here = uses.uses(graph.evaluated(successor))
            mine = [u for u in here if u.symbol is symbol]
            if any(u.kind not in (UseKind.WRITE, UseKind.ACQUIRE_OUT) for u in mine) or _calls_closure_reading(p, here, symbol):
                continue  # read on this path
            if mine:
                return _report_unread(p, unit, fact, symbol, f"is overwritten at line {graph.line(successor)} before it is read")
            if successor not in seen:
                seen.add(successor)
                queue.append(successor)


def _report_unread(p: Pass, unit: Unit, fact: CallFact, symbol, what: str) -> None:
    name = "error" if fact.status.kind == "error" else fact.status.type
    p.report(
        "CL303", unit, fact.node,
        f"the {name} from {fact.written} stored in {symbol.name} {what}; {_success_hint(fact)}",
    )


def _read_by_deferred_closure(p: Pass, unit: Unit, symbol) -> bool:
    """A deferred closure that refers to the variable reads it at return."""
    body = unit.body
    return body is not None and any(
        use.symbol is symbol and use.kind is UseKind.CAPTURE and use.deferred for use in engine(p).uses.uses([body])
    )


def _calls_closure_reading(p: Pass, uses, symbol) -> bool:
    """`report()` where report is a local closure that refers to the variable."""
    for use in uses:
        if use.kind is UseKind.CALLED:
            literal = p.facts.unit_of(use.symbol)
            if literal is not None and symbol in engine(p).captures(literal):
                return True
    return False


def run(p: Pass) -> None:
    for unit, graph in p.graphs_of(p.units_with_api_calls()):
        with p.isolating(unit):
            for n in graph.statement_nodes():
                statement = graph.ast(n)
                if statement.type in ("expression_statement", "go_statement"):
                    _check_bare(p, unit, statement)
                    continue
                for left, right in _assignment_sides(statement):
                    _check_blank(p, unit.file, unit.name, left, right)
                    if not graph.reachable(n) or "CL303" not in p.enabled:
                        continue
                    for target, fact in _status_targets(p, left, right):
                        if target.type == "identifier" and syntax.text(target) != "_":
                            symbol = p.package.resolution.symbol(target)
                            if symbol is not None and not _read_by_deferred_closure(p, unit, symbol):
                                _check_unread(p, unit, graph, n, target, fact)
    # Package-level initializers run too (in the package's init).
    for parsed in p.package.files:
        for declaration in syntax.children(parsed.root):
            if declaration.type == "var_declaration" and not declaration.has_error:
                for left, right in _assignment_sides(declaration):
                    _check_blank(p, parsed, "init", left, right)


def _needles(knowledge: Knowledge) -> frozenset[bytes]:
    return frozenset(
        f'"{family.import_path}"'.encode() for family in knowledge.families if family.status is not None
    )


ANALYZER = Analyzer(
    name="status",
    doc=__doc__ or "",
    rules=(CL301, CL302, CL303, CL304),
    run=run,
    needles=_needles,
)
