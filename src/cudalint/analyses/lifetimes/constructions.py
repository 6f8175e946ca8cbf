"""Values of an owning type made of what C produced.

A binding's wrapper often makes its owning type of a handle that a C
function wrote through a pointer or returned, where no knowledge says that
the C function acquires anything (libtorch's generated glue, one function
per operation, each making a new tensor in C++ inside a macro):

```go
ptr := (*lib.Ctensor)(unsafe.Pointer(C.malloc(0)))
lib.AtgView(ptr, ts.ctensor, size, len(size))
...
retVal = Tensor{ctensor: *ptr} // Tensor's Drop frees ctensor
return retVal, nil
```

The type's author says, by its releasing method, that a value owns its
field; a value made of something the function did not get from its
parameters, its receiver or a global is a new one: an acquisition of the
resource the type releases, as if the literal were a call returning it.
What the literal is made of decides: the pointee of a local pointer that a
call was given (`*ptr`), a local whose address a call was given (`var out
C.tensor; C.f(&out)`), or a C call's result. A value of a type with a
finalizer is the collector's, and one made of what a known acquisition
gave is already followed from that acquisition.
"""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import CalleeKind
from cudalint.analyses.calls import CallIndex
from cudalint.analyses.owners import Owner, Owners
from cudalint.scope import Resolution
from cudalint.scope.symbols import Role, Symbol


class Constructions:
    """The package's constructions, found once on first asking."""

    def __init__(self, calls: CallIndex, owners: Owners):
        self._calls = calls
        self._owners = owners
        self._found: dict[int, list[tuple[Node, Owner]]] | None = None

    def in_function(self, function: Node) -> list[tuple[Node, Owner]]:
        """The literals that function makes, with their owner, in source order."""
        return self._all().get(function.id, [])

    def functions(self) -> frozenset[int]:
        """The ids of the function nodes that make one."""
        return frozenset(self._all())

    def _all(self) -> dict[int, list[tuple[Node, Owner]]]:
        if self._found is None:
            self._found = constructions(self._calls, self._owners)
        return self._found


def constructions(calls: CallIndex, owners: Owners) -> dict[int, list[tuple[Node, Owner]]]:
    """Per function node id, the composite literals of an owning type of the
    package made there of what C produced, with their owner, in source order."""
    found: dict[int, list[tuple[Node, Owner]]] = {}
    resolution = calls.package.resolution
    for parsed in calls.package.files:
        for element in parsed.index.keyed_elements:
            literal = _literal_of(element)
            if literal is None:
                continue
            parts = syntax.children(element)
            value = parts[1].named_children[0] if len(parts) == 2 and parts[1].type == "literal_element" and parts[1].named_children else None
            if not _made_by_c(syntax.unparen(value), calls, resolution):
                continue
            type_node = literal.child_by_field_name("type")
            if type_node is None or type_node.type != "type_identifier":
                continue
            owner = owners.of(syntax.text(type_node))
            if owner is None or len(owner.resources) != 1 or owners.finalized(owner.type_name):
                continue
            function = syntax.enclosing_function(literal)
            if function is None:
                continue
            sites = found.setdefault(function.id, [])
            if all(site.id != literal.id for site, _ in sites):
                sites.append((literal, owner))
    return found


def _literal_of(element: Node) -> Node | None:
    body = element.parent
    literal = body.parent if body is not None and body.type == "literal_value" else None
    return literal if literal is not None and literal.type == "composite_literal" else None


def _made_by_c(value: Node | None, calls: CallIndex, resolution: Resolution) -> bool:
    if value is None:
        return False
    if value.type == "unary_expression" and syntax.text(value.child_by_field_name("operator")) == "*":
        operand = syntax.unparen(value.child_by_field_name("operand"))
        symbol = resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
        return symbol is not None and symbol.role is Role.LOCAL and _passed(symbol, calls, address=False)
    if value.type == "identifier":
        symbol = resolution.symbol(value)
        return symbol is not None and symbol.role is Role.LOCAL and symbol.init is None and _passed(symbol, calls, address=True)
    if value.type == "call_expression":
        function = syntax.unparen(value.child_by_field_name("function"))
        operand = function.child_by_field_name("operand") if function is not None and function.type == "selector_expression" else None
        if operand is None or syntax.text(operand) != "C":
            return False
        callee = calls.callee(value)
        if _borrows(calls, syntax.text(function.child_by_field_name("field"))):
            return False
        return callee.kind is CalleeKind.FAMILY or (
            callee.kind is CalleeKind.API and callee.api is not None and not callee.api.acquires and callee.api.status is None
        )
    return False


def _passed(symbol: Symbol, calls: CallIndex, address: bool) -> bool:
    """Whether the local is given to a call (its address, with `address`):
    what the call writes there is what the literal is made of. A call that
    the knowledge says acquires into it is followed as that acquisition."""
    for mention in calls.references(symbol):
        node = mention
        if address:
            parent = node.parent
            if parent is None or parent.type != "unary_expression" or not syntax.is_address_of(parent):
                continue
            node = parent
        arguments = node.parent
        call = arguments.parent if arguments is not None and arguments.type == "argument_list" else None
        if call is None:
            continue
        callee = calls.callee(call)
        if callee.kind is CalleeKind.API and callee.api is not None and callee.api.acquires:
            return False
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is not None and function.type == "selector_expression" and syntax.text(function.child_by_field_name("operand")) == "C" and _borrows(
            calls, syntax.text(function.child_by_field_name("field")),
        ):
            continue
        if callee.kind in (CalleeKind.API, CalleeKind.FAMILY, CalleeKind.MODULE, CalleeKind.UNKNOWN):
            return True
    return False


def _borrows(calls: CallIndex, name: str) -> bool:
    """A C function whose body the package shows making nothing: what it
    returns or writes out belongs to something else (an element's address)."""
    function = calls.c_view.functions.get(name) if calls.c_view is not None else None
    return function is not None and function.allocates is False
