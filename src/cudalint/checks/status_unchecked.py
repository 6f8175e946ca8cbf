"""CL303: a stored status that is overwritten or dropped before it is read."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CallIndex
from cudalint.analyses.uses import USES, Use, UseKind, VariableUses
from cudalint.analyses.wrappers import WRAPPERS, Wrapped, failure_tested
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG, ExitKind, NodeKind
from cudalint.prefilter import imports_of
from cudalint.wording import called_name, success_hint, wrapper_advice
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit
from cudalint.scope import Role, Symbol, SymbolKind


def check(p: Pass) -> None:
    calls = p.result_of(CALLS)
    uses = p.result_of(USES)
    resolution = p.package.resolution
    for unit, graph in p.graphs_of(calls.units_calling_api()):
        with p.isolating(unit):
            for n in graph.statement_nodes():
                if not graph.reachable(n):
                    continue
                for left, right in syntax.assignment_sides(graph.ast(n)):
                    for target, fact in calls.status_targets(left, right):
                        if target.type != "identifier" or syntax.text(target) == "_":
                            continue
                        symbol = resolution.symbol(target)
                        if symbol is None or not symbol.is_local:
                            continue
                        if symbol.function is not None and symbol.function != unit.node:
                            continue  # a variable of the enclosing function: read there, after the literal ran
                        if not _read_by_deferred_closure(uses, unit, symbol):
                            is_error = fact.status.kind == "error"
                            name = "error" if is_error else fact.status.type
                            _check_unread(
                                p, calls, uses, graph, n, symbol, fact.node, f"the {name} from {fact.written}", success_hint(fact),
                                only_overwrites=is_error,  # a Go error: first-error-wins is an idiom, as for wrappers
                            )
    # The error of a status wrapper of the module (`err := s.Sync()`), as CL301
    # defines them, or of a converter (`err = check(C.cudaMemcpy(...))`).
    wrappers = p.result_of(WRAPPERS)
    sites: dict[Unit, list[tuple[Node, Wrapped, bool]]] = {}  # (call, status, the call converts it)
    for unit, call, wrapped in wrappers.call_sites():
        if not wrapped.release:
            sites.setdefault(unit, []).append((call, wrapped, False))
    for unit in calls.units_calling_api():
        for call in syntax.calls_in(unit.body) if unit.body is not None else ():
            converted = wrappers.converted(call) if syntax.assigned_from(call) else None
            if converted is not None and not converted.release and syntax.enclosing_function(call) == unit.node:
                sites.setdefault(unit, []).append((call, converted, True))
    for unit, graph in p.graphs_of(list(sites)):
        with p.isolating(unit):
            for call, wrapped, converts in sites[unit]:
                symbol = _error_variable(resolution, unit, call)
                n = graph.node_containing(call)
                if symbol is not None and n is not None and graph.reachable(n) and not _read_by_deferred_closure(uses, unit, symbol):
                    source = f"the status of {wrapped.inner}" if converts else f"from {wrapped.inner} inside it"
                    what = f"the {'status' if wrapped.raw else 'error'} from {called_name(call)} ({source})"
                    # Not an error left unread on a path that returns another (`if derr :=
                    # p.Done(); err == nil { err = derr }`): Go's first-error-wins idiom.
                    _check_unread(p, calls, uses, graph, n, symbol, call, what, wrapper_advice(wrapped.raw), only_overwrites=True)


def _error_variable(resolution, unit: Unit, call: Node) -> Symbol | None:
    """The local variable a call's whole result, or its last (the error),
    is assigned to: `err := s.Sync()`, `n, err = w.Write(b)`."""
    left = syntax.assigned_from(call)
    target = syntax.unparen(left[-1]) if left else None
    if target is None or target.type != "identifier" or syntax.text(target) == "_":
        return None
    symbol = resolution.symbol(target)
    if symbol is None or not symbol.is_local or symbol.function != unit.node:
        return None
    return symbol


def _check_unread(
    p: Pass, calls: CallIndex, uses: VariableUses, graph: CFG, n: int, symbol: Symbol, at: Node, what: str, hint: str,
    only_overwrites: bool = False,
) -> None:
    """Follow the variable from the assignment; on some path it must not be
    overwritten, or end its life, before something reads it. With
    `only_overwrites` (a wrapper's error), an error left unread on some
    paths only is Go's first-error-wins idiom: only an overwrite, or an
    error no path reads, is reported."""
    scope = symbol.scope_node
    verdicts: dict[int, str | None] = {}

    def verdict(m: int) -> str | None:
        """None: the path goes on; "read": it ends well; else what went wrong."""
        if m not in verdicts:
            verdicts[m] = _verdict(calls, uses, graph, m, symbol, scope)
        return verdicts[m]

    # The assignment starts the walk; reaching it again (a loop) is a visit.
    def step(m: int, starting: bool):
        if starting or verdict(m) is None:
            for successor in graph.successors(m):
                yield successor, False

    unread: tuple[int, str] | None = None
    for m, starting in graph.walk(n, True, step):
        verdict_here = None if starting else verdict(m)
        if verdict_here is None or verdict_here == "read":
            continue
        if only_overwrites and not verdict_here.startswith("is overwritten"):
            unread = unread or (m, verdict_here)
            continue
        refs = {"overwritten": Ref(graph.ast(m), f"{symbol.name} overwritten here")} if verdict_here.startswith("is overwritten") else {}
        p.report(graph.unit, at, f"{what} stored in {symbol.name} {verdict_here}; {hint}", **refs)
        return
    if unread is None:
        return
    reads = [m for m, found in verdicts.items() if found == "read" and graph.kind(m) is not NodeKind.EXIT]
    if not reads:
        p.report(graph.unit, at, f"{what} stored in {symbol.name} {unread[1]}; {hint}")
        return
    guards = [_failure_guard(p.package.resolution, graph.ast(m), symbol, graph.ast(n)) for m in reads]
    if all(guards):
        other, test = guards[0]
        p.report(
            graph.unit, at,
            f"{what} stored in {symbol.name} is read only under the test of {other} at @test, which this call does "
            f"not set: where {other} holds success, {symbol.name} {unread[1]}; test {symbol.name} there instead",
            test=Ref(test, f"tests {other}, not {symbol.name}"),
        )


def _failure_guard(resolution, read: Node | None, symbol: Symbol, assignment: Node | None) -> tuple[str, Node] | None:
    """The test of another status variable that the read is guarded by, on
    its failing side, when that variable was set before the assignment
    (`infos, err := profiles(gpu); if ret != nvml.SUCCESS { return
    fmt.Errorf("...: %v", err) }`: the test of a status checked earlier,
    left after a copy, where err was meant). A read on the success side of
    another error is Go's first-error-wins idiom and no guard."""
    current = read
    while current is not None and current.type not in syntax.FUNCTION_NODES:
        parent = current.parent
        if parent is not None and parent.type == "if_statement" and parent.child_by_field_name("consequence") == current:
            test = _failure_test(resolution, parent.child_by_field_name("condition"), symbol, assignment)
            if test is not None:
                return test, parent.child_by_field_name("condition")
        current = parent
    return None


def _failure_test(resolution, condition: Node | None, symbol: Symbol, assignment: Node | None) -> str | None:
    """`v != nil`, `v != nvml.SUCCESS` (`C.cudaSuccess`): the name of v, a local
    status or error other than symbol that the assignment does not set."""
    for subject in failure_tested(condition, nil=True):
        tested = resolution.symbol(subject)
        if tested is None or tested is symbol or tested.kind is not SymbolKind.VAR:
            continue
        if assignment is not None and any(
            resolution.symbol(target) is tested for left_side, _ in syntax.assignment_sides(assignment) for target in left_side
        ):
            continue
        return tested.name
    return None


def _verdict(calls: CallIndex, uses: VariableUses, graph: CFG, m: int, symbol: Symbol, scope) -> str | None:
    if graph.kind(m) is NodeKind.EXIT:
        if symbol.role is Role.RESULT and graph.exit_kind(m) is ExitKind.RETURN:
            return "read"  # a named result: the caller reads it
        return "is never read before the function returns" if graph.exit_kind(m) in (ExitKind.RETURN, ExitKind.GOEXIT) else "read"
    there = graph.ast(m)
    if scope is not None and scope != symbol.function and there is not None and not (scope.start_byte <= there.start_byte < scope.end_byte):
        return f"goes out of scope at line {scope.end_point[0] + 1} without being read"
    here = uses.uses(graph.evaluated(m))
    mine = [u for u in here if u.symbol is symbol]
    if any(u.kind not in (UseKind.WRITE, UseKind.ACQUIRE_OUT) for u in mine) or _calls_closure_reading(calls, uses, here, symbol):
        return "read"
    if there is not None and _tested_beside(graph.unit, there, symbol):
        return "read"
    if mine or _returned_over(graph, m, symbol):
        return "is overwritten at @overwritten before it is read"
    return None


def _tested_beside(unit: Unit, leaf: Node, symbol: Symbol) -> bool:
    """`if e1 != C.cudaSuccess || e2 != C.cudaSuccess`: a condition that tests
    the status in a later operand reads it, also on the path where an
    earlier one decided (either failure is handled there)."""
    top = leaf
    while top.parent is not None and (
        top.parent.type == "parenthesized_expression" or (
            top.parent.type == "binary_expression" and syntax.text(top.parent.child_by_field_name("operator")) in ("&&", "||")
        )
    ):
        top = top.parent
    if top is leaf:
        return False
    return any(node.type == "identifier" and unit.resolution.symbol(node) is symbol for node in syntax.walk(top))


def _returned_over(graph: CFG, m: int, symbol: Symbol) -> bool:
    """`return c, nil` in a function whose named result `err` holds the
    status: the return sets err to another value before the caller reads it."""
    if symbol.role is not Role.RESULT or graph.kind(m) is not NodeKind.RETURN:
        return False
    values = syntax.returned(graph.ast(m))
    results = list(graph.unit.results)
    return bool(values) and len(values) == len(results) and symbol in results


def _read_by_deferred_closure(uses: VariableUses, unit: Unit, symbol: Symbol) -> bool:
    """A deferred closure that refers to the variable reads it at return."""
    body = unit.body
    return body is not None and any(
        use.symbol is symbol and use.kind is UseKind.CAPTURE and use.deferred for use in uses.uses([body])
    )


def _calls_closure_reading(calls: CallIndex, variables: VariableUses, uses: list[Use], symbol: Symbol) -> bool:
    """`report()` where report is a local closure that refers to the variable."""
    for use in uses:
        if use.kind is UseKind.CALLED:
            literal = calls.unit_of(use.symbol)
            if literal is not None and symbol in variables.captures(literal):
                return True
    return False


RULE = Rule(
    "CL303", "status-unchecked", Level.WARNING,
    "A status stored in a variable that is overwritten or goes out of scope on some path without being read.",
    """
    ## What it does
    Follows a variable that receives a status (`st := C.cudaMemcpy(...)`,
    `count, ret := nvml.DeviceGetCount()`, `p, err := cu.MemAlloc(n)`, the
    error of a status wrapper of the module as CL301 defines them: `err :=
    s.Sync()`, or of a converter: `err = check(C.cudaMemcpy(...))`,
    `err = status(C.cudaMemcpy(...)).error("copy")`) along
    every path from the assignment and reports the assignment when some path
    overwrites the variable, returns, or leaves its scope before anything
    reads it. A Go `error` (a binding's or a wrapper's) is reported where it
    is overwritten, or where no path reads it, but not where it is left
    unread on some paths only: Go's first-error-wins idiom (`perr :=
    free(p); qerr := free(q); if perr != nil { return perr }; return qerr`)
    leaves it so. But an error read only under the failing test of another
    status that the call does not set is reported: `infos, err :=
    profiles(gpu); if ret != nvml.SUCCESS { return fmt.Errorf("...: %v",
    err) }` tests a status checked before (a test left from a copy), and
    where it holds success nothing reads err. Any read counts as handling: a comparison, a switch, a return,
    an argument to any function, a store, a conversion to an error. A
    variable a deferred closure refers to is read when the function returns;
    one another closure refers to is read where the closure is made or
    called. A named result is read by the caller when the function returns,
    and reported only where it is overwritten first, by an assignment or by
    a return that gives it another value (`return c, nil`). To keep only the
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
    check=check,
    requires=(CALLS, USES, WRAPPERS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: family.status is not None),
)
