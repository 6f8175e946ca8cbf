"""Access paths: the handle an expression names, as a path from one of
the function's variables (`b.ptr`, `mem.Ptr()`, a local copy of a field)."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CalleeKind, CallIndex, unwrap
from cudalint.analyses.finalizers.model import Access
from cudalint.functions import Package, Unit, UnitKind
from cudalint.gotypes import short_type
from cudalint.scope import Role, Symbol, SymbolKind, switched_expression


class AccessPaths:
    """Access paths of the expressions of one package."""

    def __init__(self, package: Package, calls: CallIndex):
        self.package = package
        self.calls = calls
        self.resolution = package.resolution

    def symbol_type(self, symbol: Symbol | None) -> str | None:
        if symbol is None:
            return None
        declared = short_type(symbol.type_node)
        if declared is not None:
            return declared
        if symbol.node is not None:
            return self.calls.types.type_of(symbol.node)
        return None

    def access(self, expression: Node | None, depth: int = 0) -> Access | None:
        node = unwrap(expression, self.calls)
        path: list[str] = []
        while node is not None and depth < 16:
            depth += 1
            if node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) in ("&", "*"):
                node = unwrap(node.child_by_field_name("operand"), self.calls)
            elif node.type == "selector_expression":
                path.append(syntax.text(node.child_by_field_name("field")))
                node = unwrap(node.child_by_field_name("operand"), self.calls)
            elif node.type == "index_expression":
                path.append("[]")
                node = unwrap(node.child_by_field_name("operand"), self.calls)
            elif node.type == "call_expression":
                function = syntax.unparen(node.child_by_field_name("function"))
                arguments = syntax.children(node.child_by_field_name("arguments"))
                if function is None or function.type != "selector_expression" or arguments:
                    return None
                if self.calls.callee(node).kind in (CalleeKind.API, CalleeKind.CONVERSION):
                    return None
                path.append(syntax.text(function.child_by_field_name("field")) + "()")
                node = unwrap(function.child_by_field_name("operand"), self.calls)
            elif node.type == "identifier":
                symbol = self.resolution.symbol(node)
                if symbol is None or symbol.kind is not SymbolKind.VAR:
                    return None
                copied = self._copied_from(symbol, depth) or self._switched(symbol, depth) or self._ranged(symbol, depth)
                if copied is not None:
                    return Access(copied.root, copied.root_type, copied.path + tuple(reversed(path)))
                return Access(symbol, self.symbol_type(symbol), tuple(reversed(path)))
            else:
                return None
        return None

    def _copied_from(self, symbol: Symbol, depth: int) -> Access | None:
        """`p := b.ptr`: a local that copies a field is that field."""
        if not symbol.is_local or symbol.role is not Role.LOCAL or symbol.init is None or symbol.init_index >= 0:
            return None
        init = unwrap(symbol.init, self.calls)
        if init is None or init.type not in ("selector_expression", "index_expression"):
            return None
        found = self.access(init, depth + 1)
        return found if found is not None and found.path else None

    def _switched(self, symbol: Symbol, depth: int) -> Access | None:
        """`switch y := x.(type) { case *Uint8: ... }`: in a clause, y is x,
        of that clause's type (a finalizer taking `interface{}` for every
        type it frees)."""
        switched = switched_expression(symbol)
        if switched is None:
            return None
        found = self.access(switched, depth + 1)
        if found is None:
            return None
        return Access(found.root, self.symbol_type(symbol) or found.root_type, found.path)

    def _ranged(self, symbol: Symbol, depth: int) -> Access | None:
        """`for _, x := range b.regions`: x is an element of b.regions."""
        names = symbol.node.parent if symbol.node is not None else None
        clause = names.parent if names is not None else None
        if clause is None or clause.type != "range_clause" or clause.child_by_field_name("left") != names:
            return None
        left = syntax.expressions(names)
        if len(left) != 2 or left[1] != symbol.node:
            return None  # the key is an index, not an element
        found = self.access(clause.child_by_field_name("right"), depth + 1)
        return Access(found.root, found.root_type, found.path + ("[]",)) if found is not None else None

    def method(self, type_name_: str | None, name: str) -> Unit | None:
        if type_name_ is None:
            return None
        names = {f"(*{type_name_}).{name}", f"{type_name_}.{name}"}
        return next((u for u in self.package.units if u.kind is UnitKind.METHOD and u.name in names), None)
