"""The finalizer registrations: each `runtime.SetFinalizer(obj, f)` whose
f the analysis can follow (a method expression, a function, a literal, a
literal in a variable), with f's releases on the object and the flags the
registering code sets on it."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import unwrap
from cudalint.analyses.finalizers.model import Form, GuardKind, Registration
from cudalint.analyses.finalizers.releases import Summaries
from cudalint.functions import Unit, UnitKind


class Registrations:
    """Finds the registrations of one package; `arguments` keeps the
    finalizers registered (the argument and the function), which only a
    registration names."""

    def __init__(self, summaries: Summaries):
        # The summaries hold the package, its graphs, calls, access paths
        # and guards: read through them, so that the inputs are given once.
        self.summaries = summaries
        self.arguments: set[Node] = set()

    def find(self) -> list[Registration]:
        found = []
        for unit, call in self.summaries.calls.calls_to("runtime", "SetFinalizer"):
            arguments = syntax.children(call.child_by_field_name("arguments"))
            if len(arguments) != 2:
                continue
            graph = self.summaries.cfgs.graphs.get(unit)
            n = graph.node_containing(call) if graph is not None else None
            if n is None or n not in self.summaries.feasible(graph):
                continue  # never runs (`if contextsetfinalizer {` with the constant false)
            self.arguments.add(arguments[1])
            resolved = self._finalizer(arguments[1])
            if resolved is None:
                continue
            finalizer, form = resolved
            self.arguments.add(finalizer.node)
            obj_symbol = finalizer.receiver if finalizer.kind is UnitKind.METHOD else (finalizer.params[0] if finalizer.params else None)
            if obj_symbol is None:
                continue
            obj = unwrap(arguments[0], self.summaries.calls)
            while syntax.is_address_of(obj):
                obj = unwrap(obj.child_by_field_name("operand"), self.summaries.calls)
            # A finalizer taking `interface{}` frees what its type switch's
            # clause of the registered object's type frees.
            declared = self.summaries.access_paths.symbol_type(obj_symbol)
            registered = self.summaries.calls.types.type_of(obj) if obj is not None else None
            registration = Registration(
                unit, call, arguments[0], finalizer, form, declared if declared not in (None, "any", "interface{}") else registered,
                syntax.text(obj) if obj is not None and obj.type in ("identifier", "selector_expression") else obj_symbol.name,
            )
            for release in self.summaries.summary(finalizer):
                if release.root is obj_symbol and (
                    registration.type_name is None or release.root_type in (None, declared, registration.type_name)
                ):
                    registration.releases.append(release)
            registration.flags = self._flags_set(unit, registration.obj)
            found.append(registration)
        return found

    def _flags_set(self, unit: Unit, obj: Node) -> set[tuple[str, ...]]:
        """Fields of the registered object that the registering function (or
        the functions around a literal that registers) sets."""
        where = self.summaries.access_paths.access(obj)
        if where is None or where.root is None or where.path:
            return set()
        symbol = where.root
        found: set[tuple[str, ...]] = set()
        current: Unit | None = unit
        while current is not None:
            found |= {path for kind, root, path in self.summaries.guards.marks(current) if kind is GuardKind.SET and root is symbol}
            current = current.parent
        init = unwrap(symbol.init, self.summaries.calls) if symbol.init is not None and symbol.init_index < 0 else None
        while syntax.is_address_of(init):
            init = unwrap(init.child_by_field_name("operand"), self.summaries.calls)
        if init is not None and init.type == "composite_literal":
            body = init.child_by_field_name("body")
            for element in syntax.children(body) if body is not None else []:
                parts = syntax.children(element) if element.type == "keyed_element" else []
                if len(parts) == 2:
                    found.add((syntax.text(parts[0]),))
        return found

    def _finalizer(self, expression: Node) -> tuple[Unit, Form] | None:
        node = syntax.unparen(expression)
        if node is None:
            return None
        if node.type == "func_literal":
            literal = self.summaries.literals.get(node)
            return (literal, Form.LITERAL) if literal is not None else None
        if node.type == "identifier":
            target = self.summaries.calls.unit_of(self.summaries.resolution.symbol(node))
            if target is None:
                return None
            return target, (Form.VARIABLE if target.kind is UnitKind.LITERAL else Form.FUNCTION)
        if node.type == "selector_expression":
            method = syntax.text(node.child_by_field_name("field"))
            operand = syntax.unparen(node.child_by_field_name("operand"))
            if operand is None:
                return None
            base = syntax.text(operand).lstrip("*").strip("()").lstrip("*")
            names = {f"(*{base}).{method}", f"{base}.{method}"}  # (*T).m names value-receiver methods too
            target = next((u for u in self.summaries.package.units if u.kind is UnitKind.METHOD and u.name in names), None)
            return (target, Form.METHOD) if target is not None else None
        return None
