"""Owning types: Go types that hold a GPU resource in a field and free it in
a method of their own (`type Buffer struct{ ptr unsafe.Pointer }` with
`func (b *Buffer) Free() error { return check(C.cudaFree(b.ptr)) }`).

Real bindings hand resources out this way far more often than as bare
pointers, and a value of such a type leaks its resource exactly like the
pointer would: `b, err := NewBuffer(n)` followed by a return that neither
calls `b.Free()` nor hands `b` on is a leak. This analysis finds the owning
types of a package and the functions that construct them (return a new
value of the type holding an acquisition), so that the resource engine can
treat a constructor's call as an acquisition whose release is the type's
method, in the package and, through its facts (`OwnedResources`, filed
under the type's name), in its importers.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex, unwrap
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import Unit, UnitKind
from cudalint.knowledge import CallRole, ResourceSpec


@dataclass(frozen=True)
class Owner:
    """A type of the package whose `methods` release the `resources` held in
    its fields."""

    type_name: str
    methods: tuple[str, ...]
    resources: tuple[ResourceSpec, ...]


@dataclass(frozen=True)
class OwnedResources:
    """The fact an exported owning type gives importers: the (family,
    resource) pairs it holds and the methods that release them."""

    owns: tuple[tuple[str, str], ...]
    methods: tuple[str, ...]


def owned_resource(resource: ResourceSpec, type_written: str, methods: tuple[str, ...]) -> ResourceSpec:
    """The resource a value of an owning type stands for: released by any of
    the type's releasing methods (`b.Free()`), named after the type so that
    messages say what the caller holds (`Buffer (owns device memory)`)."""
    qualifier, _, type_name = type_written.rpartition(".")
    roles = tuple(CallRole(f"{qualifier or '_'}.{type_name}.{method}", "receiver") for method in methods)
    return ResourceSpec(f"{type_written} (owns {resource.name})", (), roles, needs_context=resource.needs_context, owns=resource)


def owner_type(resource: ResourceSpec) -> str:
    """The owning type's name of a resource made by owned_resource."""
    return resource.release[0].call.split(".")[1] if resource.owns is not None and resource.release else ""


class Owners:
    def __init__(self, facts: CallIndex, imported: FactView):
        self.facts = facts
        # The owning types of the other packages of the module.
        self.imported = imported
        self._owners: dict[str, Owner | None] = {}
        self._releases: dict[Unit, tuple[ResourceSpec, ...]] = {}

    def of(self, type_name: str | None) -> Owner | None:
        """The owning type of that name, if the package declares one."""
        if type_name is None:
            return None
        if type_name not in self._owners:
            found: dict[str, tuple[ResourceSpec, ...]] = {}
            methods = self.facts.methods_of_type(type_name)
            # Some method must call a release itself (others may call it):
            # asked first, it spares resolving the methods of every other type.
            if not any(self._calls_a_release(method) for method in methods):
                methods = []
            for method in methods:
                released = self._released_fields(method)
                if released:
                    found[method.name.rsplit(".", 1)[-1]] = released
            resources = tuple(dict.fromkeys(r for released in found.values() for r in released))
            self._owners[type_name] = Owner(type_name, tuple(sorted(found)), resources) if found else None
        return self._owners[type_name]

    def exported(self) -> list[Owner]:
        """The package's exported owning types, for its importers."""
        return [owner for name in self.facts.struct_types() if name[:1].isupper() and (owner := self.of(name)) is not None]

    def elsewhere(self, import_path: str, type_name: str) -> OwnedResources | None:
        """An owning type of another package of the module, as its facts say."""
        return self.imported.get(import_path, type_name)

    def _calls_a_release(self, method: Unit) -> bool:
        return any(self.facts.calls[call].is_release for call in self.facts.api_calls.get(method.node, ()))

    def _released_fields(self, method: Unit) -> tuple[ResourceSpec, ...]:
        """The resources a method frees out of its receiver's fields: by an
        API release of `r.field`, or by calling another method of the type
        that does (`Close` calling `Free`). Solved callees first."""
        if method not in self._releases:
            fixpoint.solve([method], self.facts.local_callees, self._fields_released_by, self._releases, lambda _: ())
        return self._releases[method]

    def _fields_released_by(self, method: Unit) -> tuple[ResourceSpec, ...]:
        if method.body is None:
            return ()
        receiver = method.receiver
        found: list[ResourceSpec] = []
        for call in syntax.calls_in(method.body):
            callee = self.facts.callee(call)
            arguments = syntax.children(call.child_by_field_name("arguments"))
            if callee.kind is CalleeKind.API and callee.api is not None:
                for resource, role in callee.api.roles("release"):
                    if 0 <= role.index < len(arguments) and self._field_of(arguments[role.index], receiver):
                        found.append(resource)
            elif callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target.kind is UnitKind.METHOD:
                function = syntax.unparen(call.child_by_field_name("function"))
                operand = function.child_by_field_name("operand") if function is not None and function.type == "selector_expression" else None
                if operand is not None and self._is_receiver(operand, receiver):
                    found.extend(self._released_fields(callee.target))
        return tuple(dict.fromkeys(found))

    def _field_of(self, argument: Node, receiver) -> bool:
        """`r.ptr`, `C.CUdeviceptr(r.ptr)`, `unsafe.Pointer(r.buf)`: a field
        of the receiver, through conversions."""
        node = unwrap(argument, self.facts)
        return (
            node is not None and node.type == "selector_expression"
            and self._is_receiver(node.child_by_field_name("operand"), receiver)
        )

    def _is_receiver(self, node: Node | None, receiver) -> bool:
        node = syntax.unparen(node)
        return (
            receiver is not None and node is not None and node.type == "identifier"
            and self.facts.package.resolution.symbol(node) is receiver
        )

    def constructed(self, unit: Unit, handle: str, resource: ResourceSpec) -> tuple[int, Owner] | None:
        """Where `unit` returns a new value of an owning type that holds the
        variable `handle` (of `resource`): `return &Buffer{ptr: p}, nil`,
        or `b := &Buffer{ptr: p}` ... `return b, nil`. Every such return
        must put it at one result position, with a nil error after it where
        the function returns one; the owner must release that resource."""
        found: tuple[int, Owner] | None = None
        for statement in syntax.return_statements(unit.body):
            values = next((c for c in statement.named_children if c.type == "expression_list"), None)
            expressions = syntax.expressions(values) if values is not None else []
            for index, value in enumerate(expressions):
                literal = self._literal_of(value)
                if literal is None or not _mentions(literal, handle):
                    continue
                owner = self.of(_literal_type(literal))
                if owner is None or resource not in owner.resources:
                    continue
                if unit.returns_error and syntax.text(expressions[-1]) != "nil":
                    return None
                if found is not None and found[0] != index:
                    return None
                found = (index, owner)
        return found

    def _literal_of(self, value: Node) -> Node | None:
        """The composite literal a returned value is (through `&`), or the one
        a returned variable was declared with."""
        node = syntax.unparen(value)
        if node is not None and node.type == "identifier":
            symbol = self.facts.package.resolution.symbol(node)
            node = syntax.unparen(symbol.init) if symbol is not None and symbol.init_index < 0 else None
        if node is not None and node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) == "&":
            node = syntax.unparen(node.child_by_field_name("operand"))
        return node if node is not None and node.type == "composite_literal" else None


def _literal_type(literal: Node) -> str | None:
    type_node = literal.child_by_field_name("type")
    return syntax.text(type_node) if type_node is not None and type_node.type == "type_identifier" else None


def _mentions(node: Node, name: str) -> bool:
    return any(child.type == "identifier" and syntax.text(child) == name for child in syntax.walk(node))


def _exported_owners(p: Pass) -> dict[str, OwnedResources]:
    """The package's exported owning types that hold a resource of a known family."""
    families = {resource: family for family in p.knowledge.families for resource in family.resources}
    found = {}
    for owner in p.result_of(OWNERS).exported():
        owns = tuple((families[resource].name, resource.name) for resource in owner.resources if resource in families)
        if owns:
            found[owner.type_name] = OwnedResources(owns, owner.methods)
    return found


OWNERS: Analysis[Owners] = Analysis(
    "owners", __doc__ or "", lambda p: Owners(p.result_of(CALLS), p.imported_facts(OWNERS)), requires=(CALLS,),
    facts=_exported_owners, fact_type=OwnedResources,
)
