"""The resources a variable may hold, when no acquisition says.

A variable not followed from its acquisition (a parameter, a field's
value) holds what its type owns: an owning type of the package
(`owners`), an owning type of another package of the module (its facts),
a type of a knowledge family with a release method (`set.Free()`), or what
the call that initialised it acquires. The walk asks this to know whether a
method call releases the handle; `defers` asks it to word a deferred
release.
"""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CalleeKind, CallIndex
from cudalint.analyses.lifetimes.outcomes import Origin
from cudalint.analyses.owners import Owners, owned_resource
from cudalint.gotypes import imported_type, named_type
from cudalint.knowledge import ResourceSpec
from cudalint.functions import Unit
from cudalint.scope import Symbol


class VariableResources:
    def __init__(self, calls: CallIndex, owners: Owners):
        self._calls = calls
        self._owners = owners

    def may_release_parameter(self, unit: Unit, index: int) -> bool:
        """Whether a function of the package may free what it is passed at
        `index`, told from its syntax without a walk: the parameter is
        written in the arguments of an API release, of a function of the
        package that may free something, or of another package's function.
        Only then is the function's summary worth its cost (a constructor of
        many paths, handed a graph, is not summarised for nothing)."""
        if not 0 <= index < len(unit.params) or unit.node not in self._owners.releasing_units():
            return False
        name = unit.params[index].name
        for call in syntax.all_calls(unit.body):
            arguments = call.child_by_field_name("arguments")
            if arguments is None or not any(node.type == "identifier" and syntax.text(node) == name for node in syntax.walk(arguments)):
                continue
            callee = self._calls.callee(call)
            if callee.kind is CalleeKind.API and callee.api is not None and callee.api.is_release:
                return True
            if callee.kind is CalleeKind.MODULE or (
                callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target.node in self._owners.releasing_units()
            ):
                return True
        return False

    def of(self, symbol: Symbol, origin: Origin | None = None) -> list[ResourceSpec]:
        """The resources a variable may hold: the followed origin's, or those
        its declared type or its initialising call say."""
        if origin is not None:
            return [origin.resource]
        calls = self._calls
        found: list[ResourceSpec] = []
        # Declared (`b *Buffer`), or made by a constructor (`b, err := NewBuffer(n)`, `gpu.NewBuffer(n)`).
        declaration = symbol.node if symbol.is_local else None
        local = calls.local_type(symbol) or (calls.types.type_of(declaration) if declaration is not None else None)
        # `func Free(index Index)` of an interface that one owning type implements.
        owner = self._owners.of(local) or (self._owners.of(calls.implementation(local)) if local is not None else None)
        if owner is not None:
            found.extend(owned_resource(resource, owner.type_name, owner.methods, owner.idempotent, owner.inert, owner.chosen) for resource in owner.resources)
        declared = imported_type(calls.package.resolution, symbol) or (
            calls.types.imported_type_of(declaration) if declaration is not None else None
        )
        if declared is not None:
            path, type_name = declared
            found.extend(self._owned_elsewhere(symbol, path, type_name))
            for family in calls.knowledge.families:
                if family.import_path != path:
                    continue
                for resource in family.resources:
                    if any(r.handle == "receiver" and r.call.startswith(f"{family.qualifier}.{type_name}.") for r in resource.release):
                        found.append(resource)
        init = syntax.unparen(symbol.init)
        fact = calls.calls.get(init) if init is not None else None
        if fact is not None and fact.api is not None:
            found.extend(resource for resource, _ in fact.api.roles("acquire"))
        return found

    def releases_by_method(self, symbol: Symbol, method: str, origin: Origin | None, call: Node | None = None) -> bool:
        """Whether calling `method` on the variable releases what it holds,
        also through a conversion to an owning type (`DevicePtr(p).Free()`
        with p the uintptr a helper returned)."""
        return any(
            resource.release_method(method) is not None and self._chosen_at(resource, method, call) is True for resource in self.of(symbol, origin)
        ) or (call is not None and self._converted_owner_releases(call, method))

    def may_release_by_method(self, symbol: Symbol, method: str, origin: Origin | None, call: Node | None) -> bool:
        """`x.View(size, del)`: a method that releases its receiver only for
        some values of an argument this call's arguments do not decide."""
        return any(
            resource.release_method(method) is not None and self._chosen_at(resource, method, call) is None for resource in self.of(symbol, origin)
        )

    def _chosen_at(self, resource: ResourceSpec, method: str, call: Node | None) -> bool | None:
        """Whether the release method releases at this call: a method that
        releases its receiver only for some values of an argument (`if del {
        defer ts.MustDrop() }`) releases nothing at `x.View(size, false)`,
        and None says an argument not known here decides."""
        choice = dict(resource.chosen).get(method)
        if choice is None:
            return True
        if call is None:
            return None
        arguments = syntax.children(call.child_by_field_name("arguments"))
        return choice.decides(arguments, -1, self._calls.package.resolution)

    def _converted_owner_releases(self, call: Node, method: str) -> bool:
        converted = syntax.method_operand(call)
        if converted is None or converted.type != "call_expression" or self._calls.callee(converted).kind is not CalleeKind.CONVERSION:
            return False
        function = syntax.unparen(converted.child_by_field_name("function"))
        if function is not None and function.type == "selector_expression":
            path = self._calls.package.resolution.package_of(syntax.unparen(function.child_by_field_name("operand")))
            owned = self._owners.elsewhere(path, syntax.text(function.child_by_field_name("field"))) if path is not None else None
            return owned is not None and bool(owned.owns) and method in owned.methods
        owner = self._owners.of(self._calls.types.type_of(converted))
        return owner is not None and method in owner.methods

    def releases_idempotently(self, symbol: Symbol, method: str, origin: Origin | None) -> bool:
        """Whether `method` releases what the variable holds and a second call
        of it releases nothing (it checks and clears the handle)."""
        return any(
            resource.release_method(method) is not None and method in resource.idempotent for resource in self.of(symbol, origin)
        )

    def reads_only(self, symbol: Symbol, method: str, origin: Origin | None) -> bool:
        """Whether `method` is one of the methods of the owning type the
        variable holds that reach no GPU API (`IsNull` testing the handle
        against nil): calling it after the release uses nothing freed."""
        held = self.of(symbol, origin)
        if "." in method:
            # `e.ringBuf.SampleCount()`: a method of a field whose type is the
            # package's own and owns nothing (a Go ring buffer of an engine
            # that owns a stream).
            field = method.split(".", 1)[0]
            for resource in held:
                if resource.owns is not None and resource.release and resource.release[0].call.startswith("_."):
                    fields, _ = self._calls.types.structs().get(resource.release[0].call.split(".")[1], ({}, []))
                    declared = fields.get(field)
                    local = named_type(declared) if declared is not None else None
                    if local is not None and local in self._calls.types.structs() and self._owners.of(local) is None:
                        return True
            return False
        return any(method in resource.inert for resource in held)

    def owns(self, symbol: Symbol, resource: ResourceSpec, origin: Origin | None) -> bool:
        """Whether the variable holds a value of an owning type of that
        resource: releasing its field (`C.cudaFree(b.ptr)`) releases it."""
        return any(held.owns is not None and held.owns.name == resource.name for held in self.of(symbol, origin))

    def _owned_elsewhere(self, symbol: Symbol, path: str, type_name: str) -> list[ResourceSpec]:
        """`b *gpu.Buffer`: the resources an owning type of another package of
        the module holds, as its summary says."""
        calls = self._calls
        summary = self._owners.elsewhere(path, type_name)
        if summary is None or not summary.owns:
            return []
        if symbol.type_node is not None:
            qualifier = syntax.text(symbol.type_node).lstrip("*").rsplit(".", 1)[0]
        else:  # made by `gpu.NewBuffer(n)`: named as that call writes the package
            function = syntax.unparen(symbol.init).child_by_field_name("function") if symbol.init is not None else None
            qualifier = syntax.text(function).rsplit(".", 1)[0] if function is not None and function.type == "selector_expression" else path.rsplit("/", 1)[-1]
        found = []
        for family_name, resource_name in summary.owns:
            known = calls.knowledge.resource(family_name, resource_name)
            if known is not None:
                found.append(owned_resource(known[1], f"{qualifier}.{type_name}", summary.methods, summary.idempotent, summary.inert, summary.chosen))
        return found
