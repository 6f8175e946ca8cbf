"""Field kinds: the one kind of resource a struct field of the package holds.

Real code keeps its handles in struct fields: a constructor allocates into
`b.ptr`, a `Close` method frees `b.ptr` far from the allocation. Where every
value the package stores into a field (`T{ptr: p}`, `b.ptr = p`, `&b.ptr`
handed to an allocator) is an acquisition of one kind, the field holds that
kind wherever it is read, and a release of another kind (`C.free(p.ptr)` of
pinned memory) is a mismatch however far from the allocation it is. A field
that also receives anything else (a parameter, another field, a value of
another kind) says nothing: its kind is unknown. The zero value (`nil`, `0`)
is no store.

The acquisitions written into fields of existing values are kept too
(`writes`), with whether the package's values are born holding the field (a
constructor or a composite literal fills it): a method that allocates into
such a field again, with nothing released or tested first, loses what it
held (CL103).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CallIndex, unwrap
from cudalint.analyses.lifetimes import LIFETIMES, Engine, Origin
from cudalint.framework import Analysis
from cudalint.functions import Unit, UnitKind
from cudalint.gotypes import named_type
from cudalint.knowledge import ResourceSpec

_ZERO = frozenset({"nil", "0"})


@dataclass(frozen=True)
class FieldKind:
    """What a field holds, and one place the package stores it."""

    resource: ResourceSpec  # what an owning type's constructor acquires is what it owns
    origin: Origin  # one acquisition stored into it


@dataclass(frozen=True)
class FieldMismatch:
    """A release of a field by a release of another kind than it holds."""

    call: Node
    holder: str  # the field as written: "p.ptr"
    kind: FieldKind
    release_call: str  # the release as the knowledge names it
    release_resource: ResourceSpec


@dataclass(frozen=True)
class FieldWrite:
    """An acquisition written into a field of an existing value: `&b.ptr`
    handed to an allocator, or `b.ptr = p` with p just acquired."""

    key: tuple[str, str]  # (type, field)
    target: Node  # the selector `b.ptr`
    resource: ResourceSpec
    unit: Unit


class FieldKinds:
    def __init__(self, calls: CallIndex, lifetimes: Engine):
        self._calls = calls
        self._kinds: dict[tuple[str, str], FieldKind | None] = {}
        self._writes: list[FieldWrite] = []
        self._literal_stores: list[tuple[str, str]] = []  # fields a composite literal fills with an acquisition
        by_node = {unit.node: unit for unit in calls.package.units}
        # The acquisitions, by call and by (function, handle variable).
        self._by_call: dict[Node, list[Origin]] = {}
        self._by_handle: dict[tuple[Node, str], list[Origin]] = {}
        for unit in lifetimes.units_with_acquisitions():
            for origin in lifetimes.lifetimes(unit).origins:
                self._by_call.setdefault(origin.call, []).append(origin)
                self._by_handle.setdefault((unit.node, origin.handle), []).append(origin)
                target = self._out_field(origin.call, origin.role.index) if origin.via is None and origin.role.is_out else None
                key = self._key(target) if target is not None else None
                if key is not None:
                    self._add(key, FieldKind(origin.resource.owns or origin.resource, origin))
        # Every allocation into a field, an acquisition the walks follow or
        # not (`C.cudaStreamCreate(&p.stream)` in a method of p's type).
        for call, fact in calls.calls.items():
            for resource, role in fact.api.roles("acquire") if fact.api is not None else ():
                target = self._out_field(call, role.index) if role.is_out else None
                key = self._key(target) if target is not None else None
                unit = by_node.get(syntax.enclosing_function(call))
                if key is None or unit is None:
                    continue
                known = self._kinds.get(key)
                if known is not None and known.resource.name != resource.name:
                    self._kinds[key] = None
                self._writes.append(FieldWrite(key, target, resource, unit))
        if not self._by_call and not self._writes:
            return  # nothing acquired here: no field can hold a known kind
        stores = [
            (parsed, field_name, holder, value)
            for parsed in calls.package.files for field_name, found in syntax.field_stores(parsed.index).items() for holder, value in found
            if value is not None
        ]
        # Only the fields some acquisition may be stored into are judged (and
        # resolved): those written by an allocator, or given a value that
        # mentions a handle variable or is an acquisition's call.
        handles = {handle for _, handle in self._by_handle}
        fields = {syntax.text(write.target.child_by_field_name("field")) for write in self._writes} | {
            field_name for _, field_name, _, value in stores if self._may_hold(value, handles)
        }
        for parsed, field_name, holder, value in stores:
            if field_name in fields:
                calls.package.resolution.ensure(parsed.root, holder)
                self._store(field_name, holder, value, by_node)

    def _store(self, field_name: str, holder: Node, value: Node, by_node: dict[Node, Unit]) -> None:
        type_name = named_type(holder.child_by_field_name("type")) if holder.type == "composite_literal" else self._calls.types.type_of(holder)
        if type_name is None:
            return
        kind = self._value_kind(value, by_node)
        self._add((type_name, field_name), kind)
        unit = by_node.get(syntax.enclosing_function(holder))
        if isinstance(kind, FieldKind) and holder.type == "composite_literal":
            self._literal_stores.append((type_name, field_name))
        elif isinstance(kind, FieldKind) and unit is not None:
            self._writes.append(FieldWrite((type_name, field_name), holder.parent, kind.resource, unit))

    def _may_hold(self, value: Node, handles: set[str]) -> bool:
        """Whether a stored value may be an acquisition (told from the
        syntax alone: it mentions a handle variable, or is an acquisition's
        call)."""
        for node in syntax.walk(value):
            if (node.type == "identifier" and syntax.text(node) in handles) or node in self._by_call:
                return True
        return False

    def kind_of(self, type_name: str | None, field: str) -> FieldKind | None:
        """The kind every value stored into `type_name.field` is, if one."""
        return self._kinds.get((type_name, field)) if type_name is not None else None

    def mismatches(self) -> list[FieldMismatch]:
        """The API releases of a field whose kind the package fixes, by a
        release of another kind (`C.free(p.ptr)` of pinned memory)."""
        found = []
        calls = self._calls
        for call, fact in calls.calls.items():
            if fact.api is None or not fact.api.is_release:
                continue
            roles = fact.api.roles("release")
            released = {resource.name for resource, _ in roles}
            arguments = syntax.children(call.child_by_field_name("arguments"))
            for resource, role in roles:
                if role.is_out or not 0 <= role.index < len(arguments):
                    continue
                argument = unwrap(arguments[role.index], calls)
                if argument is None or argument.type != "selector_expression":
                    continue
                key = self._key(argument)
                kind = self._kinds.get(key) if key is not None else None
                if kind is not None and kind.resource.name not in released:
                    found.append(FieldMismatch(call, syntax.text(argument), kind, role.call, resource))
                    break
        return found

    def writes(self) -> list[FieldWrite]:
        """The acquisitions written into fields of existing values, in order."""
        return list(self._writes)

    def born_holding(self, key: tuple[str, str]) -> bool:
        """Whether the package's values of the type are born holding the
        field: a composite literal fills it with an acquisition, or a
        function that is no method writes one into it (a constructor).
        Methods alone (`Open`, `Reopen` on a zero value) say nothing."""
        return key in self._literal_stores or any(
            other.key == key and other.unit.kind is not UnitKind.METHOD for other in self._writes
        )

    def _add(self, key: tuple[str, str], kind: FieldKind | None | bool) -> None:
        if kind is False:
            return  # the zero value: no store
        if key in self._kinds:
            known = self._kinds[key]
            if known is None or kind is None or known.resource.name != kind.resource.name:
                self._kinds[key] = None
            return
        self._kinds[key] = kind if isinstance(kind, FieldKind) else None

    def _value_kind(self, value: Node, by_node: dict[Node, Unit]) -> FieldKind | None | bool:
        """The kind of a value stored into a field: an acquisition's call, or
        a variable of the function holding one (False: the zero value)."""
        node = unwrap(value, self._calls)
        if node is None:
            return None
        if syntax.text(node) in _ZERO:
            return False
        unit = by_node.get(syntax.enclosing_function(node))
        if node.type == "call_expression":
            origins = self._by_call.get(node, [])
        elif node.type == "identifier" and unit is not None:
            origins = self._by_handle.get((unit.node, syntax.text(node)), [])
        else:
            return None
        kinds = {(origin.resource.owns or origin.resource).name: origin for origin in origins}
        if len(kinds) != 1:
            return None
        origin = next(iter(kinds.values()))
        return FieldKind(origin.resource.owns or origin.resource, origin)

    @staticmethod
    def _out_field(call: Node, index: int) -> Node | None:
        """`C.cudaMallocHost(&b.ptr, n)`: the field an acquisition writes."""
        arguments = syntax.children(call.child_by_field_name("arguments"))
        if not 0 <= index < len(arguments):
            return None
        pointer = syntax.unparen(arguments[index])
        if not syntax.is_address_of(pointer):
            return None
        target = syntax.unparen(pointer.child_by_field_name("operand"))
        return target if target is not None and target.type == "selector_expression" else None

    def _key(self, selector: Node) -> tuple[str, str] | None:
        type_name = self._calls.types.type_of(selector.child_by_field_name("operand"))
        return (type_name, syntax.text(selector.child_by_field_name("field"))) if type_name is not None else None


FIELD_KINDS: Analysis[FieldKinds] = Analysis(
    "field_kinds", __doc__ or "", lambda p: FieldKinds(p.result_of(CALLS), p.result_of(LIFETIMES)),
    requires=(CALLS, LIFETIMES),
)
