"""Functions of a C API called by name through the shared library that
exports it, without cgo. Windows code loads `nvml.dll` or `nvcuda.dll` and
binds each function it needs to a procedure (`nvmlInit :=
dll.NewProc("nvmlInit_v2")`, `FindProc`, `MustFindProc`, or a helper of the
package that is handed the name), then calls it: `ret, _, _ :=
nvmlInit.Call()`. Such a call is that API function. Its status is the first
of `Call`'s results (r1, a uintptr: 0 is success in every C family), as
`result = "first"` says of the C families; whether the function releases
says whether `_ =` discards the status on purpose (CL304 rather than
CL302). Handles passed as `uintptr(unsafe.Pointer(&h))` are not followed:
the call has no acquisition or release roles of its own.

Only packages that name one of the shared libraries the knowledge lists
(`libraries` of a C family) are searched, the same needles that let them
through the prefilter."""

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import CallFact
from cudalint.functions import Package
from cudalint.knowledge import ApiFunction, Knowledge
from cudalint.scope import Symbol


def loaded_procedure_calls(package: Package, knowledge: Knowledge) -> list[CallFact]:
    """The `.Call(...)` of each procedure the package bound to a function of
    a C family that a shared library exports."""
    libraries = [library.encode() for family in knowledge.families for library in family.libraries]
    if not libraries or not any(library in parsed.source.data for parsed in package.files for library in libraries):
        return []
    bound: dict[Symbol, tuple[str, ApiFunction]] = {}
    calls_of_call: list[tuple[Node, Node]] = []
    for parsed in package.files:
        for node in syntax.walk(parsed.root):
            if node.type != "call_expression":
                continue
            function = syntax.unparen(node.child_by_field_name("function"))
            if function is not None and function.type == "selector_expression" and syntax.text(function.child_by_field_name("field")) == "Call":
                calls_of_call.append((parsed.root, node))
                continue
            named = _named_function(node, knowledge)
            target = _assigned_to(node) if named is not None else None
            if target is None:
                continue
            package.resolution.ensure(parsed.root, target)
            symbol = package.resolution.symbol(target)
            if symbol is not None:
                bound[symbol] = named
    found = []
    for root, node in calls_of_call if bound else ():
        operand = syntax.unparen(node.child_by_field_name("function").child_by_field_name("operand"))
        if operand is None or operand.type != "identifier":
            continue
        package.resolution.ensure(root, operand)
        symbol = package.resolution.symbol(operand)
        if symbol not in bound:
            continue
        name, api = bound[symbol]
        variable = syntax.text(operand)
        written = f"{variable}.Call" if variable == name else f"{variable}.Call ({name})"
        status = replace(api.status, success=("0",)) if api.status is not None else None
        found.append(CallFact(node, "C", name, written, ApiFunction(api.family, written, status, api.discardable, api.releases, ()), on_value=True, blanks="_, _, _"))
    return found


def _named_function(call: Node, knowledge: Knowledge) -> tuple[str, ApiFunction] | None:
    """The C API function the call's first string argument names, where a
    shared library of its family exports it (`dll.NewProc("nvmlInit_v2")`)."""
    for argument in syntax.children(call.child_by_field_name("arguments")):
        if argument.type != "interpreted_string_literal":
            continue
        name = syntax.text(argument)[1:-1]
        api = knowledge.lookup("C", name) if name.isidentifier() else None
        if api is not None and api.status is not None and api.family.libraries:
            return name, api
        return None
    return None


def _assigned_to(call: Node) -> Node | None:
    """The variable a call's (first) result is assigned to: `p = d.NewProc(n)`,
    `p, err := findProc(d, n)`, `var p = d.NewProc(n)`."""
    holder = call.parent
    if holder is None or holder.type != "expression_list" or syntax.children(holder)[0] != call:
        return None
    statement = holder.parent
    if statement is None:
        return None
    if statement.type in ("assignment_statement", "short_var_declaration") and statement.child_by_field_name("right") == holder:
        left = syntax.expressions(statement.child_by_field_name("left"))
    elif statement.type == "var_spec" and statement.child_by_field_name("value") == holder:
        left = statement.children_by_field_name("name")
    else:
        return None
    return left[0] if left and left[0].type == "identifier" else None
