"""Go-memory provenance: where a pointer value comes from, as far as the
syntax says.

Go memory (`&x` of a Go variable, `&s[i]` of a Go-made slice, re-slices and
variables assigned from those) may be moved or freed by the GC, so C must
not keep it (CL504), and a uintptr that holds its address is a dangling
integer (CL501). C memory (`C.malloc`, `unsafe.Slice` of a C pointer, an
array-pointer view of one) is not. Where the syntax does not say (a field, a
call's result) the answer is "unknown" and no rule guesses. Reports nothing.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CallIndex, unwrap
from cudalint.framework import Analysis
from cudalint.functions import Package, UnitKind
from cudalint.gotypes import imported_type, range_position, type_declarations
from cudalint.scope import Role, Symbol, SymbolKind

_GO_POINTER_METHODS = frozenset({"UnsafeAddr", "Pointer", "UnsafePointer"})


class Provenance:
    """Where pointer values come from, as far as the syntax says."""

    def __init__(self, package: Package, calls: CallIndex):
        self.package = package
        self.calls = calls
        self.resolution = package.resolution
        self._fields: dict[str, list[tuple[Node, Node, Node]]] | None = None
        self._positional: dict[str, bool] = {}  # type -> made by an unkeyed literal somewhere
        self._made_of_go: dict[str, Node | None] = {}
        self._declared_uintptr: frozenset[str] | None = None

    def assigned_values(self, symbol: Symbol) -> list[Node]:
        """Values assigned to a variable with `=` anywhere in the package."""
        values = []
        for node in self.calls.references(symbol):
            assigned = syntax.assigned_value(node)
            if assigned is not None and assigned[1] is None:
                values.append(assigned[0])
        return values

    def is_go_memory(self, expression: Node | None, depth: int = 0) -> bool:
        """&x of any Go variable (of a C type too: it lives in Go memory),
        &s[i] / unsafe.SliceData(s) of a slice or array backed by Go memory,
        or a pointer variable assigned from one of those."""
        node = unwrap(expression, self.calls, views=False)
        if node is None or depth > 6:
            return False
        if syntax.is_address_of(node):
            operand = syntax.unparen(node.child_by_field_name("operand"))
            if operand is not None and operand.type == "identifier":
                symbol = self.resolution.symbol(operand)
                return symbol is not None and symbol.kind is SymbolKind.VAR
            if operand is not None and operand.type == "index_expression":
                held = self.backing(operand.child_by_field_name("operand"), depth + 1)
                if held is not None:
                    return held == "go"  # `&c.vals[i]` of a field filled from Go
            return self.backing(root_variable(operand), depth + 1) == "go"
        if node.type == "call_expression":
            fact = self.calls.calls.get(node)
            if fact is not None and fact.import_path == "unsafe" and fact.name in ("SliceData", "StringData"):
                arguments = syntax.children(node.child_by_field_name("arguments"))
                return bool(arguments) and self.backing(arguments[0], depth + 1) == "go"
            return False
        if node.type == "identifier":
            symbol = self.resolution.symbol(node)
            if symbol is None or symbol.kind is not SymbolKind.VAR:
                return False
            values = ([symbol.init] if symbol.init is not None and symbol.init_index < 0 else []) + self.assigned_values(symbol)
            return any(self.is_go_memory(value, depth + 1) for value in values)
        return False

    def backing(self, expression: Node | None, depth: int = 0) -> str | None:
        """Where the elements of a slice or array live: "go", "c", or None
        when the syntax does not say (a field, a call's result)."""
        node = syntax.unparen(expression)
        if node is None or depth > 6:
            return None
        if node.type == "slice_expression":
            operand = syntax.unparen(node.child_by_field_name("operand"))
            if operand is not None and operand.type in ("call_expression", "type_conversion_expression") and self._views_a_pointer(operand):
                return "c"  # (*[1 << 30]T)(p)[:n:n]
            return self.backing(operand, depth + 1)
        if node.type == "type_conversion_expression":
            return "c" if self._views_a_pointer(node) else "go"  # []byte(s) copies
        if node.type in ("composite_literal", "interpreted_string_literal", "raw_string_literal"):
            return "go"
        if syntax.is_address_of(node):
            inner = syntax.unparen(node.child_by_field_name("operand"))
            return "go" if inner is not None and inner.type == "composite_literal" else None
        if node.type == "call_expression":
            function = syntax.unparen(node.child_by_field_name("function"))
            if syntax.text(function) in ("make", "append", "new"):
                return "go"
            fact = self.calls.calls.get(node)
            if fact is not None and fact.import_path == "unsafe" and fact.name == "Slice":
                return "c"
            if fact is not None and fact.import_path == "C" and fact.name in ("GoBytes", "GoString", "GoStringN"):
                return "go"
            return "c" if self._views_a_pointer(node) else None
        if node.type == "selector_expression":
            # `c.vals`, a field the package only ever fills from Go (`c.vals = make([]uint64, n)`);
            # a struct of its type also made positionally (`T{view, nil}`) may hold anything there.
            if self._made_positionally(self.calls.types.type_of(node.child_by_field_name("operand"))):
                return None
            kinds = {self.backing(value, depth + 1) for value in self._field_values(node)}
            return "go" if kinds == {"go"} else "c" if "c" in kinds else None
        if node.type == "identifier":
            symbol = self.resolution.symbol(node)
            if symbol is None or symbol.kind is not SymbolKind.VAR:
                return None
            if symbol.role in (Role.PARAM, Role.RECEIVER):
                declared = symbol.type_node.type if symbol.type_node is not None else ""
                return "go" if declared in ("slice_type", "array_type") else None
            ranged = range_position(symbol)
            if ranged is not None and ranged[1] == 1:
                # `for _, pl := range planes` of a `planes [][]byte` parameter:
                # its elements are Go slices as the parameter's are.
                collection = syntax.unparen(ranged[0])
                owner = self.resolution.symbol(collection) if collection is not None and collection.type == "identifier" else None
                declared = owner.type_node if owner is not None and owner.role is Role.PARAM else None
                element = declared.child_by_field_name("element") if declared is not None and declared.type in ("slice_type", "array_type") else None
                if element is not None and element.type in ("slice_type", "array_type"):
                    return "go"
            if symbol.type_node is not None and symbol.type_node.type not in ("pointer_type", "slice_type", "map_type", "qualified_type"):
                return "go"  # var buf [256]byte, var h header: the variable is the storage
            values = ([symbol.init] if symbol.init is not None and symbol.init_index < 0 else []) + self.assigned_values(symbol)
            kinds = {self.backing(value, depth + 1) for value in values}
            if kinds == {"go"}:
                return "go"
            if "c" in kinds:
                return "c"
        return None

    def _views_a_pointer(self, conversion: Node) -> bool:
        """`(*[1 << 30]C.float)(p)`: a conversion of a pointer to an array type."""
        target = conversion.child_by_field_name("function" if conversion.type == "call_expression" else "type")
        return target is not None and target.type in ("parenthesized_expression", "parenthesized_type") and "[" in syntax.text(target)

    def field_from_go(self, selector: Node, element: bool = False) -> Node | None:
        """A value with a Go object's address given to the same field of the
        same struct type anywhere in the package
        (`req{host: uintptr(unsafe.Pointer(&b[0]))}`, `r.host = ...`), or,
        with `element`, to an element of it (`c.args[i] = ...`)."""
        return next((value for value in self._field_values(selector, element) if self._go_address(value)), None)

    def _made_positionally(self, type_name: str | None) -> bool:
        """Whether some composite literal of the package makes the type with
        unkeyed elements (`staging{p, n}`), whose stores no index records."""
        if type_name is None:
            return True
        if type_name not in self._positional:
            literal = re.compile(rb"\b" + re.escape(type_name.encode()) + rb"\{\s*(?!\}|[A-Za-z_]\w*\s*:)")
            self._positional[type_name] = any(literal.search(parsed.source.data) for parsed in self.package.files)
        return self._positional[type_name]

    def _field_values(self, selector: Node, element: bool = False) -> list[Node]:
        """The values the package stores into this field of structs of the
        same type (`T{f: v}`, `x.f = v`), or, with `element`, into its
        elements (`x.f[i] = v`)."""
        owner = self.calls.types.type_of(selector.child_by_field_name("operand"))
        if owner is None:
            return []
        if self._fields is None:
            self._fields = {}
            for parsed in self.package.files:
                for name, stores in syntax.field_stores(parsed.index).items():
                    self._fields.setdefault(name, []).extend((parsed.root, holder, value) for holder, value in stores)
        resolution, facts = self.package.resolution, self.calls
        field = syntax.text(selector.child_by_field_name("field")) + ("[]" if element else "")
        found = []
        for root, holder, value in self._fields.get(field, []):
            resolution.ensure(root, holder)
            if facts.types.type_of(holder) == owner:
                found.append(value)
        return found

    def uintptr_from_go(self, symbol: Symbol) -> Node | None:
        """The assignment that gave a uintptr variable a Go object's
        address; for a parameter, the argument a caller in the package
        passes (`copyTo(uintptr(unsafe.Pointer(&buf[0])))`)."""
        candidates = ([symbol.init] if symbol.init is not None else []) + self.assigned_values(symbol)
        if symbol.role is Role.PARAM:
            candidates += self._arguments_for(symbol)
        for value in candidates:
            if value is not None and self._go_address(value):
                return value
        return None

    def named_uintptr_from_go(self, type_name: str) -> Node | None:
        """For a type of the package declared as uintptr (`type Array
        uintptr`): where the package makes a value of it of a Go object's
        address, `Array(uintptr(unsafe.Pointer(&x)))`, or of a pointer
        parameter its callers in the package give `&x`
        (`goArray(&cArray)`). Every value of that type may then hold one."""
        if type_name not in self._made_of_go:
            self._made_of_go[type_name] = self._find_made_of_go(type_name) if type_name in self._uintptr_types() else None
        return self._made_of_go[type_name]

    def _find_made_of_go(self, type_name: str) -> Node | None:
        """The first such conversion in a function of the package, in the
        order of its functions."""
        by_function: dict[Node, list[Node]] = {}
        for call in self.calls.calls_named(type_name):
            function = syntax.unparen(call.child_by_field_name("function"))
            if function is not None and function.type == "identifier":
                by_function.setdefault(syntax.enclosing_function(call), []).append(call)
        for unit in self.package.units:
            if unit.file.source.path.name.endswith("_test.go"):
                continue  # a test's fake values say nothing of what the package makes
            for call in by_function.get(unit.node, ()):
                arguments = syntax.children(call.child_by_field_name("arguments"))
                if len(arguments) == 1 and (self._go_address(arguments[0]) or self._parameter_given_go_memory(arguments[0])):
                    return arguments[0]
        return None

    def _parameter_given_go_memory(self, value: Node) -> bool:
        """`uintptr(unsafe.Pointer(p))` of a pointer parameter p to which
        some caller in the package passes a Go object's address."""
        node = syntax.unparen(value)
        if node is None or node.type != "call_expression" or syntax.text(node.child_by_field_name("function")) != "uintptr":
            return False
        arguments = syntax.children(node.child_by_field_name("arguments"))
        inner = unwrap(arguments[0], self.calls) if arguments else None
        symbol = self.resolution.symbol(inner) if inner is not None and inner.type == "identifier" else None
        return symbol is not None and symbol.role is Role.PARAM and any(self.is_go_memory(a) for a in self._arguments_for(symbol))

    def _uintptr_types(self) -> frozenset[str]:
        if self._declared_uintptr is None:
            declared = type_declarations(self.package)
            self._declared_uintptr = frozenset(name for name, body in declared.items() if syntax.text(body) == "uintptr")
        return self._declared_uintptr

    def element_from_go(self, index: Node) -> Node | None:
        """For `addrs[i]`: a Go object's address the package stores in an
        element of that slice or array variable (`addrs[i] = uintptr(...)`,
        `addrs = append(addrs, uintptr(...))`, `[]uintptr{uintptr(...)}`)."""
        operand = syntax.unparen(index.child_by_field_name("operand"))
        if operand is not None and operand.type == "selector_expression":
            return self.field_from_go(operand, element=True)  # `c.args[i]`, filled as `c.args[i] = uintptr(...)`
        symbol = self.resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
        if symbol is None or symbol.kind is not SymbolKind.VAR:
            return None
        values: list[Node] = []
        for reference in self.calls.references(symbol):
            parent = reference.parent
            if parent is not None and parent.type == "index_expression" and parent.child_by_field_name("operand") == reference:
                values += self._stored_into(parent)
        for whole in ([symbol.init] if symbol.init is not None else []) + self.assigned_values(symbol):
            whole = syntax.unparen(whole)
            if whole is not None and whole.type == "composite_literal":
                body = whole.child_by_field_name("body")
                values += [syntax.children(e)[-1] if e.type == "keyed_element" else e for e in syntax.children(body)] if body is not None else []
            elif whole is not None and whole.type == "call_expression" and syntax.text(whole.child_by_field_name("function")) == "append":
                values += syntax.children(whole.child_by_field_name("arguments"))[1:]
        return next((value for value in values if self._go_address(value)), None)

    def _stored_into(self, element: Node) -> list[Node]:
        """The values assigned to this `x[i]` (`x[i] = v`)."""
        parent = element.parent
        holder = parent.parent if parent is not None and parent.type == "expression_list" else None
        if holder is None or holder.type != "assignment_statement" or holder.child_by_field_name("left") != parent:
            return []
        left, right = syntax.expressions(parent), syntax.expressions(holder.child_by_field_name("right"))
        return [right[[c.id for c in left].index(element.id)]] if len(left) == len(right) else []

    def _arguments_for(self, parameter: Symbol) -> list[Node]:
        unit = next((u for u in self.package.units if u.node == parameter.function), None)
        if unit is None or unit.kind is UnitKind.LITERAL or parameter not in unit.params:
            return []
        position = unit.params.index(parameter)
        found = []
        for call in self.calls.calls_of(unit):
            arguments = syntax.children(call.child_by_field_name("arguments"))
            if position < len(arguments):
                found.append(arguments[position])
        return found

    def _go_address(self, value: Node | None) -> bool:
        """uintptr(<Go memory>), a reflect value's address, or arithmetic on
        one of those; not a uintptr that merely passed through a call."""
        node = syntax.unparen(value)
        if node is None:
            return False
        if node.type == "binary_expression":
            return self._go_address(node.child_by_field_name("left")) or self._go_address(node.child_by_field_name("right"))
        if node.type == "selector_expression" and syntax.text(node.child_by_field_name("field")) == "Data":
            return self._header_of_go_slice(node.child_by_field_name("operand"))
        if node.type != "call_expression":
            return False
        function = syntax.unparen(node.child_by_field_name("function"))
        if function is not None and function.type == "identifier" and syntax.text(function) == "uintptr":
            arguments = syntax.children(node.child_by_field_name("arguments"))
            return bool(arguments) and self.is_go_memory(arguments[0])
        if function is not None and function.type == "selector_expression":
            return syntax.text(function.child_by_field_name("field")) in _GO_POINTER_METHODS and self._is_reflect_value(function)
        return False

    def _header_of_go_slice(self, header: Node | None) -> bool:
        """`(*reflect.SliceHeader)(unsafe.Pointer(&s))` (or a variable made
        so) of a slice backed by Go memory: its Data is that memory's address."""
        header = syntax.unparen(header)
        if header is not None and header.type == "identifier":
            symbol = self.resolution.symbol(header)
            header = syntax.unparen(symbol.init) if symbol is not None and symbol.init_index < 0 else None
        if header is None or header.type != "call_expression":
            return False
        written = syntax.text(header.child_by_field_name("function")).replace(" ", "").strip("()")
        arguments = syntax.children(header.child_by_field_name("arguments"))
        if written not in ("*reflect.SliceHeader", "*reflect.StringHeader") or len(arguments) != 1:
            return False
        address = unwrap(arguments[0], self.calls, views=False)
        operand = syntax.unparen(address.child_by_field_name("operand")) if syntax.is_address_of(address) else None
        return operand is not None and self.backing(operand) == "go"

    def _is_reflect_value(self, selector: Node) -> bool:
        operand = syntax.unparen(selector.child_by_field_name("operand"))
        # reflect.ValueOf(v).Elem().Index(i): walk the chain down to its start.
        while operand is not None and operand.type == "call_expression":
            fact = self.calls.calls.get(operand)
            if fact is not None:
                return fact.import_path == "reflect"
            function = syntax.unparen(operand.child_by_field_name("function"))
            if function is None or function.type != "selector_expression":
                return False
            operand = syntax.unparen(function.child_by_field_name("operand"))
        if operand is None:
            return False
        if operand.type == "identifier":
            symbol = self.resolution.symbol(operand)
            declared = imported_type(self.resolution, symbol)
            if declared == ("reflect", "Value"):
                return True
            init = syntax.unparen(symbol.init) if symbol is not None else None
            fact = self.calls.calls.get(init) if init is not None else None
            return fact is not None and fact.import_path == "reflect"
        return False


def root_variable(node: Node | None) -> Node | None:
    """The variable at the root of s[i].f[j]."""
    node = syntax.unparen(node)
    while node is not None and node.type in ("index_expression", "selector_expression", "slice_expression"):
        node = syntax.unparen(node.child_by_field_name("operand"))
    return node


PROVENANCE: Analysis[Provenance] = Analysis(
    "provenance", __doc__ or "", lambda p: Provenance(p.package, p.result_of(CALLS)), requires=(CALLS,),
)
