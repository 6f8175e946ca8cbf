"""Release functions kept for later: a function's cleanup (or a func literal
that releases a handle) appended to a slice, and that slice or function
stored in a field of a struct the function makes. Whoever later calls
them, or calls a method that runs them, releases the handle.

Cleanup stacks are how Go code keeps many releases: dcgm-exporter's
collectors collect their DCGM groups' cleanups (`cleanups =
append(cleanups, cleanup)`), store them (`collector.Cleanups = cleanups`)
and return `func() { collector.Cleanup() }`, where `Cleanup` ranges over
`c.Cleanups` calling each; its pipeline then lost all but one of them by
overwriting the one cleanup variable it kept. A function that returns such
a slice, or a func literal that runs what it holds, hands the handle out
exactly as one returning the handle's own cleanup function does.

This is syntax of one function plus the package's methods: which local
names carry the release, and whether a returned literal runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CallIndex
from cudalint.functions import Unit

# How many methods deep a method may call the receiver's method that runs the field.
_METHOD_DEPTH = 3


@dataclass(frozen=True)
class Carriers:
    """The local names that carry a handle's release in one function."""

    functions: frozenset[str]  # variables holding a function that releases it
    slices: frozenset[str]  # local slices holding such functions
    fields: frozenset[tuple[str, str, str]]  # (variable, its type, field) holding one or a slice of them

    def __bool__(self) -> bool:
        return bool(self.slices or self.fields)


def carriers_of(
    unit: Unit, handle: str, is_function: bool, releasing_literal: Callable[[Node], bool], calls: CallIndex,
) -> Carriers:
    """What carries the release of `handle` in `unit`: the handle itself
    where it is a release function (`is_function`), the slices it or a
    literal releasing it is appended to or listed in, and the fields of
    local structs those are stored in."""
    functions = {handle} if is_function else set()
    slices: set[str] = set()
    fields: set[tuple[str, str, str]] = set()

    def carries(value: Node | None) -> bool:
        value = syntax.unparen(value)
        if value is None:
            return False
        if value.type == "identifier":
            return syntax.text(value) in functions or syntax.text(value) in slices
        if value.type == "variadic_argument":
            return carries(syntax.children(value)[0] if syntax.children(value) else None)
        if value.type == "func_literal":
            return releasing_literal(value)
        if value.type == "call_expression" and syntax.text(value.child_by_field_name("function")) == "append":
            return any(carries(argument) for argument in syntax.children(value.child_by_field_name("arguments")))
        if value.type == "composite_literal":
            return any(carries(element) for element in syntax.element_values(value))
        return False

    changed = True
    while changed:
        changed = False
        for statement in syntax.walk(unit.body) if unit.body is not None else ():
            for targets, values in syntax.assignment_sides(statement):
                for target, value in zip(targets, values) if len(targets) == len(values) else ():
                    for found in _stored(target, value, carries, calls):
                        kind, item = found
                        known = slices if kind == "slice" else fields
                        if item not in known:
                            known.add(item)
                            changed = True
    return Carriers(frozenset(functions), frozenset(slices), frozenset(fields))


def _stored(target: Node, value: Node, carries: Callable[[Node | None], bool], calls: CallIndex) -> Iterator[tuple[str, object]]:
    """What an assignment makes a carrier: the slice assigned a carrier
    (`s = append(s, cleanup)`, `s := []func(){cleanup}`), a struct's field
    (`c.Cleanups = s`), or the fields of a struct literal (`c := &T{F: s}`)."""
    value = syntax.unparen(value)
    made = value.child_by_field_name("operand") if value is not None and value.type == "unary_expression" else value
    made = syntax.unparen(made)
    if target.type == "identifier" and made is not None and made.type == "composite_literal" and not _is_slice_literal(made):
        type_name = calls.types.type_of(made)
        for field, element in _keyed_elements(made):
            if type_name is not None and carries(element):
                yield "field", (syntax.text(target), type_name, field)
        return
    if not carries(value):
        return
    if target.type == "identifier":
        yield "slice", syntax.text(target)
    elif target.type == "selector_expression":
        operand = target.child_by_field_name("operand")
        type_name = calls.types.type_of(operand)
        if type_name is not None and operand.type == "identifier":
            yield "field", (syntax.text(operand), type_name, syntax.text(target.child_by_field_name("field")))


def runs(literal: Node, carried: Carriers, calls: CallIndex) -> bool:
    """Whether a func literal's body runs what the carriers hold: calls the
    function, calls each element of the slice (ranged over or indexed), or
    calls a method of the struct that does so with its field."""
    body = literal.child_by_field_name("body")
    if body is None:
        return False
    for call in syntax.calls_in(body):
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is None:
            continue
        if function.type == "identifier" and syntax.text(function) in carried.functions:
            return True
        if function.type == "selector_expression":
            operand = syntax.unparen(function.child_by_field_name("operand"))
            method = syntax.text(function.child_by_field_name("field"))
            for variable, type_name, field in carried.fields:
                if operand is not None and syntax.text(operand) == variable and _method_runs(calls, type_name, method, field, _METHOD_DEPTH):
                    return True
    return any(_runs_elements(body, name) for name in carried.slices) or any(
        _runs_elements(body, f"{variable}.{field}") or _calls_text(body, f"{variable}.{field}")
        for variable, _, field in carried.fields
    )


def _method_runs(calls: CallIndex, type_name: str, method: str, field: str, depth: int) -> bool:
    """Whether the type's method runs its receiver's field: calls it, calls
    each element, or calls another method of the receiver that does."""
    unit = next((u for u in calls.methods_of_type(type_name) if u.name.rsplit(".", 1)[-1] == method), None)
    if unit is None or unit.body is None or unit.receiver is None or depth <= 0:
        return False
    receiver = unit.receiver.name
    if _runs_elements(unit.body, f"{receiver}.{field}") or _calls_text(unit.body, f"{receiver}.{field}"):
        return True
    for call in syntax.calls_in(unit.body):
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is not None and function.type == "selector_expression" and syntax.text(function.child_by_field_name("operand")) == receiver:
            other = syntax.text(function.child_by_field_name("field"))
            if other != method and _method_runs(calls, type_name, other, field, depth - 1):
                return True
    return False


def _runs_elements(body: Node, collection: str) -> bool:
    """`for _, f := range s { f() }`, or `s[i]()` anywhere in the body."""
    for node in syntax.walk(body):
        if node.type == "call_expression":
            function = syntax.unparen(node.child_by_field_name("function"))
            if function is not None and function.type == "index_expression" and syntax.text(function.child_by_field_name("operand")) == collection:
                return True
        if node.type != "for_statement":
            continue
        header = next((child for child in syntax.children(node) if child.type == "range_clause"), None)
        if header is None or syntax.text(syntax.unparen(header.child_by_field_name("right"))) != collection:
            continue
        names = syntax.expressions(header.child_by_field_name("left"))
        if len(names) == 2 and _calls_text(node.child_by_field_name("body"), syntax.text(names[1])):
            return True
    return False


def _calls_text(body: Node | None, callee: str) -> bool:
    return body is not None and any(
        syntax.text(syntax.unparen(call.child_by_field_name("function"))) == callee for call in syntax.calls_in(body)
    )


def _is_slice_literal(literal: Node) -> bool:
    kind = literal.child_by_field_name("type")
    return kind is not None and kind.type == "slice_type"


def _keyed_elements(literal: Node) -> Iterator[tuple[str, Node]]:
    """(field, value) of a keyed struct literal's elements."""
    body = literal.child_by_field_name("body")
    for element in syntax.children(body) if body is not None else []:
        parts = syntax.children(element) if element.type == "keyed_element" else []
        if len(parts) == 2:
            key = parts[0].child(0) if parts[0].type == "literal_element" and parts[0].child_count else parts[0]
            value = parts[1].child(0) if parts[1].type == "literal_element" and parts[1].child_count else parts[1]
            yield syntax.text(key), value
