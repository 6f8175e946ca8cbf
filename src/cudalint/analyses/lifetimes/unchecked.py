"""Acquisitions whose status is thrown away where they are made
(`nvml.Init()` as a statement): every path after one may be a path where
it failed, so a release registered after it may give back a count never
taken (CL202)."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.lifetimes.outcomes import Origin
from cudalint.scope import Resolution


def status_dropped(origin: Origin) -> bool:
    """The acquisition's status (or error) is thrown away where it is
    made: a bare call (`nvml.Init()`) or one assigned to blanks only
    (`_ = nvml.Init()`). Then every path after it is one where it may have
    failed. A status kept in a variable and never tested is not this: no
    guess at what the code meant."""
    if origin.status is None:
        return False  # it cannot fail
    statement = origin.call.parent
    if statement is not None and statement.type == "expression_statement":
        return True
    if statement is None or statement.type != "expression_list":
        return False
    assignment = statement.parent
    return (
        assignment is not None and assignment.type in ("assignment_statement", "short_var_declaration")
        and assignment.child_by_field_name("right") == statement
        and all(syntax.text(target) == "_" for target in assignment.child_by_field_name("left").named_children)
    )


def plain_release(defer: Node | None, origin: Origin, resolution: Resolution) -> bool:
    """A release that gives back whatever count there is, not the one a
    value holds: a function (`defer nvml.Shutdown()`, `defer shutdown()`,
    `defer func() {...}()`) or a method of what took it (`lib.Init()`,
    `defer lib.Shutdown()`). A method of another value (`defer
    Client().Cleanup()`) may check whether its value holds one: where the
    status was dropped, nothing says."""
    function = syntax.statement_callee(defer)
    if function is None or function.type in ("identifier", "func_literal"):
        return function is not None
    operand = syntax.unparen(function.child_by_field_name("operand")) if function.type == "selector_expression" else None
    if operand is None:
        return False
    if operand.type == "identifier" and resolution.package_of(operand) is not None:
        return True
    taker = syntax.method_operand(origin.call)
    return taker is not None and syntax.text(taker) == syntax.text(operand)
