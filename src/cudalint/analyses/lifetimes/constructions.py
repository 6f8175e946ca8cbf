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
    package made there of what C produced, with their owner, in source
    order: a keyed field (`Tensor{ctensor: *ptr}`) or a lone positional one
    (`&Tensor{ctensor}`). Found by the type's name in each file's text, so
    that a package without such a type costs nothing."""
    found: dict[int, list[tuple[Node, Owner]]] = {}
    owning = [owner for owner in owners.declared() if len(owner.resources) == 1 and not owners.finalized(owner.type_name)]
    resolution = calls.package.resolution
    for parsed in calls.package.files if owning else ():
        data = parsed.source.data
        for owner in owning:
            written = owner.type_name.encode() + b"{"
            position = data.find(written)
            while position >= 0:
                literal = _literal_at(parsed.tree.root_node, position, len(owner.type_name))
                position = data.find(written, position + 1)
                if literal is None or not any(_made_by_c(value, calls, resolution) for value in _field_values(literal)):
                    continue
                function = syntax.enclosing_function(literal)
                if function is not None:
                    found.setdefault(function.id, []).append((literal, owner))
    return {function: sorted(sites, key=lambda site: site[0].start_byte) for function, sites in found.items()}


def _literal_at(root: Node, position: int, length: int) -> Node | None:
    """The composite literal whose type is the name at that position."""
    name = root.descendant_for_byte_range(position, position + length)
    literal = name.parent if name is not None and name.type == "type_identifier" else None
    if literal is None or literal.type != "composite_literal" or literal.child_by_field_name("type") != name:
        return None
    if name.end_byte - name.start_byte != length:
        return None  # `OtherTensor{`: another name that ends the same
    return literal


def _field_values(literal: Node) -> list[Node]:
    """The values of the literal's keyed fields, or its one positional value."""
    body = literal.child_by_field_name("body")
    elements = syntax.children(body) if body is not None else []
    positional = any(element.type == "literal_element" for element in elements)
    return syntax.element_values(literal) if len(elements) == 1 or not positional else []


def _made_by_c(value: Node | None, calls: CallIndex, resolution: Resolution) -> bool:
    if value is None:
        return False
    if value.type == "unary_expression" and syntax.text(value.child_by_field_name("operator")) == "*":
        operand = syntax.unparen(value.child_by_field_name("operand"))
        symbol = resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
        return symbol is not None and symbol.role is Role.LOCAL and _passed(symbol, calls, address=False)
    if value.type == "identifier":
        symbol = resolution.symbol(value)
        if symbol is None or symbol.role is not Role.LOCAL:
            return False
        if symbol.init is None:
            return _passed(symbol, calls, address=True)
        # `ctensor := lib.AtLoadImage(path)`: what a binding's other package returned of C.
        init = syntax.unparen(symbol.init) if symbol.init_index < 0 else None
        return init is not None and init.type == "call_expression" and calls.callee(init).kind is CalleeKind.MODULE and _written_once(symbol, calls)
    if value.type == "call_expression":
        name = _c_name(value)
        if name is None or _borrows(calls, name):
            return False
        callee = calls.callee(value)
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
        name = _c_name(call)
        if name is not None and _borrows(calls, name):
            continue
        if callee.kind in (CalleeKind.API, CalleeKind.FAMILY, CalleeKind.MODULE, CalleeKind.UNKNOWN):
            return True
    return False


def _c_name(call: Node) -> str | None:
    """f of a cgo call `C.f(...)`; None for any other call."""
    function = syntax.unparen(call.child_by_field_name("function"))
    if function is None or function.type != "selector_expression" or syntax.text(function.child_by_field_name("operand")) != "C":
        return None
    return syntax.text(function.child_by_field_name("field"))


def _borrows(calls: CallIndex, name: str) -> bool:
    """A C function whose body the package shows making nothing: what it
    returns or writes out belongs to something else (an element's address)."""
    function = calls.c_view.functions.get(name) if calls.c_view is not None else None
    return function is not None and function.allocates is False


def _written_once(symbol: Symbol, calls: CallIndex) -> bool:
    """Never assigned after its declaration, nor given away by address."""
    for mention in calls.references(symbol):
        parent = mention.parent
        if parent is not None and (syntax.is_address_of(parent) or (
            parent.type == "expression_list" and parent.parent is not None and parent.parent.type == "assignment_statement"
            and parent.id == parent.parent.child_by_field_name("left").id
        )):
            return False
    return True
