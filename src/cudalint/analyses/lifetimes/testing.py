"""What Go tests say to the lifetimes of counts: a test function (or its
helper, or a literal inside it) that stops with `t.Fatal` keeps what it
took for the test binary, and testify's `require.NoError(t, err)` is a
success check whose failing side ends the test."""

from __future__ import annotations

import re

from tree_sitter import Node

from cudalint import syntax
from cudalint.cfg import ExitKind
from cudalint.functions import Unit

# A test, subtest, benchmark or fuzz target, or a helper of one (`t.Fatal` there ends the test).
_TESTING_PARAMETER = re.compile(r"\*\s*testing\.(T|B|F)\b")


def ends_test(unit: Unit, kind: ExitKind) -> bool:
    """A test (or subtest, or helper of one) that stops (`t.Skip`,
    `t.Fatal`: its goroutine exits) with a count it took: no caller was
    to release it, and the test binary is the process that keeps it, as
    on the test's normal return."""
    if kind is not ExitKind.GOEXIT or not unit.file.source.path.name.endswith("_test.go"):
        return False
    current: Unit | None = unit
    while current is not None:  # a literal inside a test (`t.Run`, a closure that captures t)
        parameters = current.node.child_by_field_name("parameters")
        if parameters is not None and _TESTING_PARAMETER.search(syntax.text(parameters)) is not None:
            return True
        current = current.parent
    return False


# testify's assertions that stop the test where the error is not nil.
_REQUIRE_SUCCESS = frozenset({"NoError", "NoErrorf", "Nil", "Nilf"})


def requires_success(statement: Node | None, error: str) -> bool:
    """`require.NoError(t, err)` (or `require.Nil`) of the error `error`
    (the acquisition's): a success check whose failing side ends the test."""
    if statement is None or statement.type != "expression_statement" or not statement.named_children:
        return False
    call = syntax.unparen(statement.named_children[0])
    return call is not None and call.type == "call_expression" and bool(error) and testify_asserts(call, ("require",), _REQUIRE_SUCCESS, error)


def testify_asserts(call: Node, packages: tuple[str, ...], assertions: frozenset[str], name: str) -> bool:
    """`require.NoError(t, name)`, `assert.Error(t, name)` and their kin: an
    assertion of one of `assertions`, by testify's package of one of
    `packages`, about the variable `name`."""
    function = syntax.unparen(call.child_by_field_name("function"))
    if function is None or function.type != "selector_expression" or syntax.text(function.child_by_field_name("operand")) not in packages:
        return False
    arguments = syntax.children(call.child_by_field_name("arguments"))
    return (
        syntax.text(function.child_by_field_name("field")) in assertions
        and len(arguments) >= 2 and syntax.text(syntax.unparen(arguments[1])) == name
    )
