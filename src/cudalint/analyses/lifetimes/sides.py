"""What one step of a path says of the handle followed, apart from its uses:
a test whose side cannot be taken (`cur != x`, x a parameter), the error a
converter makes of the acquisition's status, a call that keeps the handle
where it succeeds (the variable its error goes to), and where a hand-over
counts as kept on success."""

from __future__ import annotations

from typing import NoReturn

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CalleeKind, CallIndex
from cudalint.analyses.lifetimes.outcomes import Origin
from cudalint.analyses.lifetimes.states import LeftControl, State, WalkRecord
from cudalint.analyses.status import StatusSemantics, StatusSource
from cudalint.cfg import CFG, Edge, NodeKind
from cudalint.scope import Role, Symbol


def equal_to_earlier_value(calls: CallIndex, edge: Edge, state: State) -> bool:
    """The side of `cur == x` (or `cur != x`) where they are equal, cur
    holding what this function acquired and x a parameter it never
    writes: what the function made is never a value its caller passed
    in (`if cur != x { cur.Close() }` after `cur = next`)."""
    condition = syntax.unparen(edge.condition)
    if condition is None or condition.type != "binary_expression":
        return False
    operator = syntax.text(condition.child_by_field_name("operator"))
    if operator not in ("==", "!=") or (operator == "==") != bool(edge.polarity):
        return False
    resolution = calls.package.resolution
    sides = [syntax.unparen(condition.child_by_field_name(side)) for side in ("left", "right")]
    symbols = [resolution.symbol(side) if side is not None and side.type == "identifier" else None for side in sides]
    for mine, other in (symbols, symbols[::-1]):
        if mine in state.names and other is not None and other not in state.names and other.role in (Role.PARAM, Role.RECEIVER):
            return not any(
                syntax.assignment_of(reference) is not None or syntax.is_address_of(reference.parent)
                for reference in calls.references(other)
            )
    return False


def converted_status(calls: CallIndex, status: StatusSemantics, graph: CFG, origin: Origin, proxy: Symbol, n: int) -> Symbol | None:
    """`err = errorString(st)` where errorString is a converter of the
    package, or `err := Result(st)`, a conversion to the package's own
    status type: from here on, err says whether the acquisition succeeded."""
    statement = graph.ast(n)
    if statement is None or graph.kind(n) is not NodeKind.STMT:
        return None
    resolution = calls.package.resolution
    for left, right in syntax.assignment_sides(statement):
        if len(right) != 1 or not left:
            continue
        call = syntax.unparen(right[0])
        if call is None or call.type != "call_expression":
            continue
        arguments = syntax.children(call.child_by_field_name("arguments"))
        index = next((i for i, a in enumerate(arguments) if a.type == "identifier" and resolution.symbol(a) is proxy), None)
        callee = calls.callee(call)
        target = syntax.unparen(left[-1])
        if index is None or target is None or target.type != "identifier" or syntax.text(target) == "_":
            continue
        if callee.kind is CalleeKind.CONVERSION and len(arguments) == 1 and len(left) == 1:
            return resolution.symbol(target)
        if status.converts_at(call, index, StatusSource.of(origin.api, origin.written)):
            return resolution.symbol(target)
    return None


def hand_over(record: WalkRecord, graph: CFG, n: int) -> NoReturn:
    """The handle leaves the function's control at node n (the walk of this
    path ends: LeftControl), counted as kept where n returns success
    (`return &Blas{stream: s}, nil`)."""
    record.transferred += 1
    if graph.kind(n) is NodeKind.RETURN and graph.unit.returns_error:
        returned = syntax.returned(graph.ast(n))
        if returned and syntax.text(syntax.unparen(returned[-1])) == "nil":
            record.kept_on_success += 1
    raise LeftControl


def error_of(calls: CallIndex, call: Node) -> Symbol | None:
    """The variable a call's error (its last result) is assigned to."""
    targets = syntax.assigned_from(call)
    last = syntax.unparen(targets[-1]) if targets else None
    if last is None or last.type != "identifier" or syntax.text(last) == "_":
        return None
    return calls.package.resolution.symbol(last)


def null_tested(calls: CallIndex, subject: Node) -> Node | None:
    """h of `C.is_null(h)`, a C function of the package that returns whether
    its argument is NULL."""
    if subject.type != "call_expression" or calls.c_view is None:
        return None
    function = syntax.unparen(subject.child_by_field_name("function"))
    if function is None or function.type != "selector_expression" or syntax.text(function.child_by_field_name("operand")) != "C":
        return None
    helper = calls.c_view.functions.get(syntax.text(function.child_by_field_name("field")))
    arguments = syntax.children(subject.child_by_field_name("arguments"))
    if helper is None or not 0 <= helper.null_test < len(arguments):
        return None
    argument = syntax.unparen(arguments[helper.null_test])
    return argument if argument is not None and argument.type == "identifier" else None
