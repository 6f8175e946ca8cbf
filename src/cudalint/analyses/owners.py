"""Owning types: Go types that hold a GPU resource and free it in a method
of their own: a struct with the handle in a field (`type Buffer struct{ ptr
unsafe.Pointer }` with `func (b *Buffer) Free() error { return
check(C.cudaFree(b.ptr)) }`), or a named handle type (`type DevicePtr
uintptr` with `func (p DevicePtr) Free() error { return
check(C.cudaFree(unsafe.Pointer(p))) }`).

Real bindings hand resources out this way far more often than as bare
pointers, and a value of such a type leaks its resource exactly like the
pointer would: `b, err := NewBuffer(n)` followed by a return that neither
calls `b.Free()` nor hands `b` on is a leak. This analysis finds the owning
types of a package and the functions that construct them (return a new
value of the type holding an acquisition: a composite literal, keyed or
positional, through `&` or not, or a conversion `DevicePtr(p)`), so that the
resource engine can treat a constructor's call as an acquisition whose
release is the type's method, in the package and, through its facts
(`OwnedResources`, filed under the type's name), in its importers.

A method releases what it passes to a release: an API release, a function of
the package or of the module that frees its parameter (a release wrapper:
`release(b.ptr)`, `MemFree(ptr)`), another releasing method of the receiver,
or a releasing method of a field whose type owns a resource (`s.ptr.Free()`),
also inside `s.once.Do(func() {...})`. A releasing method that checks and
clears the handle, or runs under such a `sync.Once`, is idempotent: a second
call frees nothing (no CL102), which importers learn from the facts.
Which parameters a function frees is solved callees first, like the other
per-function facts (`fixpoint`); an exported release wrapper's are a fact
(`OwnedResources.releases`, filed under the function's name) for the owning
types of its importers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex, unwrap
from cudalint.analyses.choices import Choice, choice_of, through_call, with_variadic
from cudalint.analyses.receiver_fields import before_failing_return, cleared_fields, clears_handle, flags_raised, guards_through, receiver_field
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import Unit, UnitKind, exported_name
from cudalint.gotypes import range_position
from cudalint.knowledge import CallRole, ResourceSpec
from cudalint.scope import Symbol, SymbolKind

# Calls an inert method may make besides the package's own functions.
_INERT_CALLS = frozenset({CalleeKind.BUILTIN, CalleeKind.CONVERSION, CalleeKind.STD_BORROW})

# What a release method's name says it does.
_RELEASE_NAME = re.compile(r"Drop|Free|Close|Release|Destroy|Delete|Dispose|Shutdown|Unload|Clean")

# The receiver's position in a function's released values.
RECEIVER = -1

# (value position, resource) for each value a function frees on some path:
# a parameter's index, or RECEIVER; freeing a field of the value counts.
Released = tuple[tuple[int, ResourceSpec], ...]


@dataclass(frozen=True)
class OwnedResources:
    """The fact an exported owning type gives importers: the (family,
    resource) pairs it holds and the methods that release them. Filed under
    an exported function's name instead, it says which of the function's
    parameters it frees (`releases`: parameter index, family, resource), a
    release wrapper the importers' owning types may free their fields with."""

    owns: tuple[tuple[str, str], ...]
    methods: tuple[str, ...]
    releases: tuple[tuple[int, str, str], ...] = ()
    idempotent: tuple[str, ...] = ()  # of `methods`, those a second call of is harmless
    inert: tuple[str, ...] = ()  # the type's methods that reach no GPU API (`IsNull`)
    chosen: tuple[tuple[str, Choice], ...] = ()  # of `methods`, those that release only for some arguments

    def concerns_callers(self) -> bool:
        return True


@dataclass(frozen=True)
class Owner:
    """A type of the package whose `methods` release the `resources` held in
    its fields (or in the value itself, for a named handle type)."""

    type_name: str
    methods: tuple[str, ...]
    resources: tuple[ResourceSpec, ...]
    idempotent: tuple[str, ...] = ()  # of `methods`, those that check and clear the handle
    inert: tuple[str, ...] = ()  # the type's methods that reach no GPU API (`IsNull`)
    # Of `methods`, those that release the receiver only where an argument
    # says so (`func (ts Tensor) View(size []int64, del bool)`: `if del {
    # defer ts.MustDrop() }`), with the choice.
    chosen: tuple[tuple[str, Choice], ...] = ()


def owned_resource(
    resource: ResourceSpec, type_written: str, methods: tuple[str, ...], idempotent: tuple[str, ...] = (),
    inert: tuple[str, ...] = (), chosen: tuple[tuple[str, Choice], ...] = (),
) -> ResourceSpec:
    """The resource a value of an owning type stands for: released by any of
    the type's releasing methods (`b.Free()`), named after the type so that
    messages say what the caller holds (`Buffer (owns device memory)`).
    Asked again for every variable of the type, it is made once per owner:
    a generated binding's tensor has some 1,800 releasing methods to order
    and wrap, and as many choices, which a key by value would hash at every
    question; the owner's own tuples are the key, by identity."""
    given = (resource, methods, idempotent, inert, chosen)
    key = (type_written, *map(id, given))
    found = _OWNED.get(key)
    if found is not None and all(kept is now for kept, now in zip(found[0], given)):
        return found[1]
    if len(_OWNED) >= _OWNED_KEPT:
        _OWNED.clear()
    made = _owned_resource(resource, type_written, methods, idempotent, inert, chosen)
    _OWNED[key] = (given, made)
    return made


# owned_resource's answers, with the arguments they were made of (kept alive,
# so that an identity in a key is never another object's).
_OWNED: dict[tuple, tuple[tuple, ResourceSpec]] = {}
_OWNED_KEPT = 4096


def _owned_resource(
    resource: ResourceSpec, type_written: str, methods: tuple[str, ...], idempotent: tuple[str, ...],
    inert: tuple[str, ...], chosen: tuple[tuple[str, Choice], ...],
) -> ResourceSpec:
    qualifier, _, type_name = type_written.rpartition(".")
    # The one a remedy names first: a method that releases on every call and
    # says so by its name (`Drop`, not `AccuracyForLogits`, which drops its
    # receiver on the way).
    conditional = {method for method, _ in chosen}
    ordered = sorted(methods, key=lambda method: (method in conditional, _RELEASE_NAME.search(method) is None))
    roles = tuple(CallRole(f"{qualifier or '_'}.{type_name}.{method}", "receiver") for method in ordered)
    return ResourceSpec(
        f"{type_written} (owns {resource.name})", (), roles, needs_context=resource.needs_context, owns=resource,
        outlives=resource.outlives, idempotent=frozenset(idempotent), inert=frozenset(inert), chosen=chosen,
    )


def owner_type(resource: ResourceSpec) -> str:
    """The owning type's name of a resource made by owned_resource."""
    return resource.release[0].call.split(".")[1] if resource.owns is not None and resource.release else ""


class Owners:
    def __init__(self, facts: CallIndex, imported: FactView):
        self.facts = facts
        # The owning types and release wrappers of the other packages of the module.
        self.imported = imported
        self._owners: dict[str, Owner | None] = {}
        self._released: dict[Unit, Released] = {}
        self._choices: dict[Unit, Choice | None] = {}
        self._releasing: frozenset[Node] | None = None
        self._finalized: set[str] | None = None

    def of(self, type_name: str | None) -> Owner | None:
        """The owning type of that name, if the package declares one."""
        if type_name is None:
            return None
        if type_name not in self._owners:
            self._owners[type_name] = None  # a question reaching it back while it is asked
            found: dict[str, tuple[ResourceSpec, ...]] = {}
            methods = self.facts.methods_of_type(type_name)
            # Some method must reach a release (others may call it): asked
            # first, it spares resolving the methods of every other type.
            releasing = self.releasing_units()
            if not any(method.node in releasing for method in methods):
                methods = []
            for method in methods:
                released = tuple(dict.fromkeys(r for index, r in self.released(method) if index == RECEIVER))
                if released and not self._refills(method) and not self._never_releases(method):
                    found[method.name.rsplit(".", 1)[-1]] = released
            resources = tuple(dict.fromkeys(r for released in found.values() for r in released))
            # A release of the zero value that does nothing (`delete` of a null
            # pointer, `free(NULL)`) makes clearing the field enough (gocv's
            # `C.Mat_Close(m.p); m.p = nil`).
            idempotent = tuple(sorted(
                name for method in methods if (name := method.name.rsplit(".", 1)[-1]) in found and (
                    clears_handle(method, _fields_passed(method, self.facts))
                    or (all((r.owns or r).zero_release_noop for r in found[name]) and cleared_fields(method) & _fields_passed(method, self.facts))
                )
            ))
            # Methods that touch no GPU, or return at once once a release raised
            # a flag they test (`if e.closed { return }` after `Close` set it)
            # or cleared the handle they test (`if c.ctx == nil { return 0 }`).
            raised = set().union(*(flags_raised(m) for m in methods if m.name.rsplit(".", 1)[-1] in found)) if found else set()
            by_name = {method.name.rsplit(".", 1)[-1]: method for method in self.facts.methods_of_type(type_name)}
            inert = tuple(sorted(
                name for name, method in by_name.items()
                if name not in found and (self._inert(method) or bool(guards_through(method, by_name) & raised))
            )) if found else ()
            chosen = tuple(
                (name, choice) for method in methods
                if (name := method.name.rsplit(".", 1)[-1]) in found and (choice := self.receiver_choice(method)) is not None
            )
            self._owners[type_name] = Owner(type_name, tuple(sorted(found)), resources, idempotent, inert, chosen) if found else None
        return self._owners[type_name]

    def _refills(self, method: Unit) -> bool:
        """Whether a method that releases its receiver's resource fills the
        receiver again (`Resize`: `a.ptr.Free(); a.alloc()`): the value
        still holds one afterwards, so the method is no release of it."""
        receiver = method.receiver
        if receiver is None or method.body is None:
            return False
        fillers = [method] + [
            target for call in syntax.calls_in(method.body)
            if (target := self.facts.callee(call).target) is not None and target.receiver_type == method.receiver_type
            and _called_on(call, receiver.name) and target.receiver is not None
        ]
        return any(acquires_into_receiver(unit, self.facts) for unit in fillers if unit.body is not None)

    def _inert(self, method: Unit) -> bool:
        """Whether a method reaches nothing but the package's own code and
        Go's builtins, conversions and borrowing standard library: no GPU
        API, no other package's function, no function value (`IsNull`
        testing the handle, `Len` reading a field)."""
        seen, pending = set(), [method]
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            if current.body is None or len(seen) > 64:
                return False
            for call in syntax.calls_in(current.body):
                callee = self.facts.callee(call)
                if callee.kind is CalleeKind.LOCAL and callee.target is not None:
                    pending.append(callee.target)
                elif callee.kind not in _INERT_CALLS:
                    return False
        return True

    def finalized(self, type_name: str) -> bool:
        """Whether the package registers a finalizer on values of the type
        (`runtime.SetFinalizer(d, destroy)`): such a value dropped is
        released by the collector, so it is no leak (CL508 is about relying
        on that)."""
        if self._finalized is None:
            self._finalized = set()
            for _, call in self.facts.calls_to("runtime", "SetFinalizer"):
                arguments = syntax.children(call.child_by_field_name("arguments"))
                if len(arguments) == 2 and syntax.text(syntax.unparen(arguments[1])) != "nil":
                    found = self.facts.types.type_of(arguments[0])
                    if found is not None:
                        self._finalized.add(found)
        return type_name in self._finalized

    def exported(self) -> list[Owner]:
        """The package's exported owning types, for its importers."""
        return [owner for owner in self.declared() if owner.type_name[:1].isupper()]

    def declared(self) -> list[Owner]:
        """The package's owning types, exported or not."""
        return [owner for name in self._method_types() if (owner := self.of(name)) is not None]

    def elsewhere(self, import_path: str, type_name: str) -> OwnedResources | None:
        """An owning type of another package of the module, as its facts say."""
        return self.imported.get(import_path, type_name)

    def _method_types(self) -> list[str]:
        """The names of the package's types that have methods, structs first
        in declaration order, then named types of other kinds."""
        names = dict.fromkeys(self.facts.struct_types())
        for unit in self.facts.package.units:
            if unit.kind is UnitKind.METHOD:
                names.setdefault(unit.receiver_type)
        return list(names)

    # -- releases ------------------------------------------------------------------

    def released(self, unit: Unit) -> Released:
        """What `unit` frees on some path: (parameter index or RECEIVER,
        resource), the value itself or one of its fields, by an API release
        or through a release wrapper of the package or the module. Solved
        callees first."""
        if unit not in self._released:
            fixpoint.solve([unit], self.facts.local_callees, self._released_by, self._released, lambda _: ())
        return self._released[unit]

    def released_parameters(self, unit: Unit) -> Released:
        """The parameters (not the receiver) `unit` frees on some path: a
        release wrapper's, for its importers' owning types."""
        if unit.node not in self.releasing_units():
            return ()
        return tuple(item for item in self.released(unit) if item[0] != RECEIVER)

    def _released_by(self, unit: Unit) -> Released:
        if unit.body is None or unit.kind is UnitKind.LITERAL or unit.node not in self.releasing_units():
            return ()
        values = ([unit.receiver] if unit.receiver is not None else []) + list(unit.params)
        found: list[tuple[int, ResourceSpec]] = []
        refilled = _refilled_fields(unit, self.facts)
        for _, argument, resources in self._releases_in(unit):
            if syntax.text(unwrap(argument, self.facts)) in refilled:
                continue  # freed to be replaced (`cudaFree(c.tmp)` then `cudaMalloc(&c.tmp, n)`): the value still holds one
            symbol = self._value_released(argument, values)
            if symbol is None or symbol not in values:
                continue
            index = RECEIVER if symbol is unit.receiver else unit.params.index(symbol)
            if index == RECEIVER and before_failing_return(argument):
                continue  # `d.Shutdown(); return fmt.Errorf(...)`: where the method succeeds, d still holds it
            found.extend((index, resource) for resource in resources)
        return tuple(dict.fromkeys(found))

    def _value_released(self, argument: Node, values: list) -> Symbol | None:
        """The parameter or receiver a released argument is, or holds: through
        conversions (`C.CUdeviceptr(d)`), a field (`b.ptr`), a dereference
        (`C.cufftHandle(*plan)` with `plan *Handle`), a field's address
        (`cu.DestroyEvent(&r.done)`) or a local variable made of one (`str := *stream`)."""
        resolution = self.facts.package.resolution
        node = unwrap(argument, self.facts)
        for _ in range(8):
            if node is None:
                return None
            if node.type == "selector_expression":
                node = unwrap(node.child_by_field_name("operand"), self.facts)  # a field of the value
            elif node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) in ("*", "&"):
                node = unwrap(node.child_by_field_name("operand"), self.facts)
            elif node.type == "identifier":
                symbol = resolution.symbol(node)
                if symbol is None or symbol in values:
                    return symbol
                ranged = range_position(symbol) if symbol.kind is SymbolKind.VAR and symbol.is_local else None
                if ranged is not None and ranged[1] == 1 and ranged[0].type == "composite_literal":
                    # `for _, p := range []unsafe.Pointer{s.keys, s.vals}`: each of s's fields.
                    elements = syntax.element_values(ranged[0])
                    node = unwrap(elements[0], self.facts) if elements else None
                    continue
                if symbol.kind is not SymbolKind.VAR or not symbol.is_local or symbol.init is None or symbol.init_index >= 0:
                    return None
                node = unwrap(symbol.init, self.facts)
            else:
                return None
        return None

    def receiver_choice(self, method: Unit, depth: int = 0) -> Choice | None:
        """The values of a releasing method's arguments for which it releases
        its receiver, where an argument decides it (`if del { defer
        ts.MustDrop() }`, or `ts.View(size, del)` passing its own on); None
        where it releases it on every call, or nothing says when."""
        if method in self._choices:
            return self._choices[method]
        self._choices[method] = None  # a question reaching it back while it is asked
        body = method.body
        if body is None or method.receiver is None or depth > 4:
            return None
        resolution = self.facts.package.resolution
        writes = [node for node in syntax.walk(body) if node.type in ("assignment_statement", "short_var_declaration")]
        values = [method.receiver, *method.params]
        found: set[Choice] = set()
        never: Choice | None = None
        for call, argument, _ in self._releases_in(method):
            if self._value_released(argument, values) is not method.receiver:
                continue
            choice = choice_of(call, body, method.params, resolution, writes)
            target = self.facts.callee(call).target
            if choice is None and target is not None and target.receiver_type == method.receiver_type and target is not method:
                inner = self.receiver_choice(target, depth + 1)
                arguments = syntax.children(call.child_by_field_name("arguments"))
                choice = through_call(inner, arguments, method.params, resolution) if inner is not None else None
            if choice is None:
                return None
            if all(source.parameter < 0 for source in choice.sources):
                if choice.excludes([], -1, resolution):
                    never = choice  # `ts.MustView(size, false)`: no release here
                    continue
                return None
            found.add(choice)
        if not found:
            found = {never} if never is not None else found
        self._choices[method] = with_variadic(found.pop(), method) if len(found) == 1 else None
        return self._choices[method]

    def _never_releases(self, method: Unit) -> bool:
        """Whether every release of the receiver in the method is one its
        constant arguments turn off (`grad := ts.MustGrad(false)`)."""
        choice = self.receiver_choice(method)
        return choice is not None and all(source.parameter < 0 for source in choice.sources) and choice.excludes(
            [], -1, self.facts.package.resolution,
        )

    def _releases_in(self, unit: Unit) -> Iterator[tuple[Node, Node, tuple[ResourceSpec, ...]]]:
        """(call, value, resources) for each value a call in the body frees,
        also inside `b.once.Do(func() {...})`, which runs its literal there."""
        facts = self.facts
        calls = list(syntax.calls_in(unit.body))
        calls += [
            inner for call in calls if (literal := _once_literal(call)) is not None
            for inner in syntax.calls_in(literal.child_by_field_name("body"))
        ]
        for call in calls:
            callee = facts.callee(call)
            arguments = syntax.children(call.child_by_field_name("arguments"))
            if callee.kind is CalleeKind.API and callee.api is not None:
                for resource, role in callee.api.roles("release"):
                    if 0 <= role.index < len(arguments):
                        yield call, arguments[role.index], (resource,)
                    elif role.handle == "receiver":  # `w.set.Free()` on a handle type the knowledge describes
                        function = syntax.unparen(call.child_by_field_name("function"))
                        if function is not None and function.type == "selector_expression":
                            yield call, function.child_by_field_name("operand"), (resource,)
                if not callee.api.roles("release"):
                    for handle, _, resource in self.module_releases(call):
                        yield call, handle, (resource,)
                continue
            operand = syntax.method_operand(call)
            if callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target is not unit and callee.target.kind is not UnitKind.LITERAL:
                released = self._released.get(callee.target, ())
                for index, resource in released:
                    if index == RECEIVER and operand is not None:
                        yield call, operand, (resource,)
                    elif 0 <= index < len(arguments):
                        yield call, arguments[index], (resource,)
            else:
                for handle, _, resource in self.module_releases(call):
                    yield call, handle, (resource,)

    def module_releases(self, call: Node) -> list[tuple[Node, str, ResourceSpec]]:
        """(handle, family name, resource) for each value a call of another
        package of the module frees: an argument of a release wrapper
        (`gpu.Free(p)`), or the value a release method of an owning type is
        called on (`s.ptr.Free()` with `ptr gpu.DevicePtr`)."""
        facts = self.facts
        callee = facts.callee(call)
        # (An API call too: `i.ctx.Close()` of a binding the knowledge
        # describes in part, whose own source says Close frees a `Ctx`.)
        if callee.kind not in (CalleeKind.UNKNOWN, CalleeKind.MODULE, CalleeKind.API):
            return []
        found: list[tuple[Node, str, ResourceSpec]] = []
        arguments = syntax.children(call.child_by_field_name("arguments"))
        imported = self.imported.get(*callee.imported) if callee.kind is CalleeKind.MODULE and callee.imported is not None else None
        for index, family, name in imported.releases if imported is not None else ():
            known = facts.knowledge.resource(family, name)
            if known is not None and 0 <= index < len(arguments):
                found.append((arguments[index], family, known[1]))
        operand = syntax.method_operand(call)
        typed = facts.types.imported_type_of(operand) if operand is not None else None
        owned = self.elsewhere(*typed) if typed is not None else None
        if owned is not None and syntax.text(syntax.called(call).child_by_field_name("field")) in owned.methods:
            for family, name in owned.owns:
                known = facts.knowledge.resource(family, name)
                if known is not None:
                    found.append((operand, family, known[1]))
        return found

    def releasing_units(self) -> frozenset[Node]:
        """The functions (their nodes) that may free something: those calling an API
        release, a module function that frees a parameter or a release
        method of another package's owning type, and their callers in the
        package, transitively (found from the releases up, once)."""
        if self._releasing is None:
            facts = self.facts
            by_node = {unit.node: unit for unit in facts.package.units}
            seeds: dict[Node, Unit] = {}
            for unit in facts.package.units:
                if any(facts.calls[call].is_release for call in facts.api_calls.get(unit.node, ())):
                    seeds[unit.node] = unit
                    once = unit.node.parent.parent if unit.kind is UnitKind.LITERAL and unit.node.parent is not None else None
                    if once is not None and _once_literal(once) == unit.node and unit.parent is not None:
                        seeds[unit.parent.node] = unit.parent  # `s.once.Do(func() { C.cudaStreamDestroy(s.s) })`
            for call, fact in facts.calls.items():
                imported = self.imported.get(*function) if (function := facts.module_function(fact)) is not None else None
                if imported is not None and imported.releases:
                    unit = by_node.get(syntax.enclosing_function(call))
                    if unit is not None:
                        seeds[unit.node] = unit
            for unit in self._owner_method_callers(by_node):
                seeds[unit.node] = unit
            found = dict(seeds)
            pending = [unit for unit in seeds.values() if unit.kind is not UnitKind.LITERAL]
            while pending:
                unit = pending.pop()
                for call in facts.calls_of(unit):
                    caller = by_node.get(syntax.enclosing_function(call))
                    if caller is not None and caller.node not in found:
                        found[caller.node] = caller
                        pending.append(caller)
            self._releasing = frozenset(found)
        return self._releasing

    def _owner_method_callers(self, by_node: dict[Node, Unit]) -> Iterator[Unit]:
        """The functions that call a release method's name of an owning type
        of another package of the module (`s.ptr.Free()`), by name: which of
        them release is _releases_in's to say."""
        names = {method for _, _, owned in self.imported.items() if owned.owns for method in owned.methods}
        if not names:
            return
        for parsed in self.facts.package.files:
            for name, calls in syntax.calls_by_name(parsed.index).items():
                if name in names:
                    for call in calls:
                        unit = by_node.get(syntax.enclosing_function(call))
                        if unit is not None:
                            yield unit

    # -- constructors ----------------------------------------------------------------

    def constructed(
        self, unit: Unit, handle: str, resource: ResourceSpec, succeeded: Callable[[Node], bool] = lambda _: False,
    ) -> tuple[int, Owner] | None:
        """Where `unit` returns a new value of an owning type that holds the
        variable `handle` (of `resource`): `return &Buffer{ptr: p}, nil`,
        `return Buffer{p, n}, nil`, `return DevicePtr(p), nil`, or `b :=
        &Buffer{ptr: p}` ... `return b, nil`. Every such return must put it
        at one result position, with a nil error after it where the
        function returns one (or an error that `succeeded` says is nil
        exactly where the acquisition succeeded: `return &Module{m: mod},
        check(st)`); the owner must release that resource (a
        value of another owning type, `&Workspace{mem: p}` with `p
        DevicePtr`, stands for what that type owns)."""
        resource = resource.owns or resource
        found: tuple[int, Owner] | None = None
        holders = _field_holders(unit.body, handle) if unit.body is not None else set()
        for statement in syntax.return_statements(unit.body):
            expressions = syntax.returned(statement)
            for index, value in enumerate(expressions):
                made = self._made_of(value, handle, holders)
                if made is None:
                    continue
                owner = self.of(made)
                if owner is None or resource not in owner.resources:
                    continue
                if unit.returns_error and syntax.text(expressions[-1]) != "nil" and not succeeded(expressions[-1]):
                    return None
                if found is not None and found[0] != index:
                    return None
                found = (index, owner)
        return found

    def made_by_call(self, call: Node, index: int, resource: ResourceSpec) -> Owner | None:
        """`newMat(C.Mat_New())`: the owning type of the value a function of
        the package makes of its argument at `index` (every return returns
        `Mat{p: p}`, `&Mat{p}` or `Mat(p)`), where that type releases
        `resource`: the acquisition handed to it is in that value."""
        callee = self.facts.callee(call)
        target = callee.target if callee.kind is CalleeKind.LOCAL else None
        if target is None or target.body is None or target.receiver is not None or not 0 <= index < len(target.params):
            return None
        name = target.params[index].name
        made = set()
        for statement in syntax.return_statements(target.body):
            expressions = syntax.returned(statement)
            if not expressions:
                return None
            made.add(self._made_of(expressions[0], name))
        if len(made) != 1 or None in made:
            return None
        owner = self.of(made.pop())
        return owner if owner is not None and (resource.owns or resource) in owner.resources else None

    def made_as_literal(self, literal: Node, resource: ResourceSpec) -> Owner | None:
        """The owning type of a composite literal (`Stream{p: C.Stream_New()}`)
        where that type releases `resource`."""
        owner = self.of(_literal_type(literal))
        return owner if owner is not None and (resource.owns or resource) in owner.resources else None

    def _made_of(self, value: Node, handle: str, holders: set[str] | frozenset[str] = frozenset()) -> str | None:
        """The package type of a new value made of the variable `handle`: a
        composite literal mentioning it (through `&`), a conversion of it
        (`DevicePtr(p)`, `DevicePtr(uintptr(p))`), or a variable declared
        with one of those."""
        node = syntax.unparen(value)
        if syntax.is_address_of(node):
            node = syntax.unparen(node.child_by_field_name("operand"))  # `return &fd`
        # `t := &Array{}` (or `new(Array)`) and then `t.stream = s`: the handle
        # is a field of the new value returned.
        into_field = node is not None and node.type == "identifier" and (
            handle.startswith(syntax.text(node) + ".") or syntax.text(node) in holders
        )
        if node is not None and node.type == "identifier":
            symbol = self.facts.package.resolution.symbol(node)
            node = syntax.unparen(symbol.init) if symbol is not None and symbol.init_index < 0 else None
        if syntax.is_address_of(node):
            node = syntax.unparen(node.child_by_field_name("operand"))
        if node is None:
            return None
        if node.type == "composite_literal":
            return _literal_type(node) if into_field or _mentions(node, handle) else None
        if into_field and node.type == "call_expression" and syntax.text(node.child_by_field_name("function")) == "new":
            arguments = syntax.children(node.child_by_field_name("arguments"))
            return syntax.text(arguments[0]) if len(arguments) == 1 and arguments[0].type == "type_identifier" else None
        if node.type == "call_expression":
            function = syntax.unparen(node.child_by_field_name("function"))
            if function is None or function.type != "identifier" or self.facts.callee(node).kind is not CalleeKind.CONVERSION:
                return None
            symbol = self.facts.package.resolution.symbol(function)
            converted = unwrap(node, self.facts)
            if symbol is None or symbol.kind is not SymbolKind.TYPE or converted is None or converted.type != "identifier":
                return None
            return syntax.text(function) if syntax.text(converted) == handle else None
        return None


def _field_holders(body: Node, handle: str) -> set[str]:
    """The variables a field of which is given the handle (`l.stream = s`)."""
    found = set()
    for node in syntax.walk(body):
        for left, right in syntax.assignment_sides(node):
            for target, value in zip(left, right) if len(left) == len(right) else ():
                operand = target.child_by_field_name("operand") if target.type == "selector_expression" else None
                if operand is not None and operand.type == "identifier" and syntax.text(syntax.unparen(value)) == handle:
                    found.add(syntax.text(operand))
    return found


def _refilled_fields(unit: Unit, facts: CallIndex) -> set[str]:
    """The fields (`c.tmp`, as written) the function fills with a new
    value: assigned something other than nil, or given to a call by
    address (`C.cudaMalloc(&ctx.stagingY, n)`). A field it frees and fills
    again is grown or replaced, not released: the value goes on holding one."""
    filled: set[str] = set()
    out_arguments: set[str] = set()  # `&ptr` and `&c.tmp` handed to a call, which fills them
    assigned: list[tuple[str, Node]] = []
    for node in syntax.walk(unit.body) if unit.body is not None else ():
        if node.type == "assignment_statement" and syntax.text(node.child_by_field_name("operator")) == "=":
            left = syntax.expressions(node.child_by_field_name("left"))
            right = syntax.expressions(node.child_by_field_name("right"))
            for target, value in zip(left, right) if len(left) == len(right) else ():
                if target.type == "selector_expression":
                    assigned.append((syntax.text(target), value))
        elif syntax.is_address_of(node):
            operand = syntax.unparen(node.child_by_field_name("operand"))
            if operand is not None and node.parent is not None and node.parent.type == "argument_list":
                out_arguments.add(syntax.text(operand))
    filled = {name for name in out_arguments if "." in name}
    for target, value in assigned:
        # A new value: a call's result (`c.tmp = newBuffer(n)`), or a local
        # a call filled (`cudaMalloc(&ptr, n)` then `c.tmp = (*C.float)(ptr)`);
        # not a zero value (`impl.h = empty`) or nil.
        made = unwrap(value, facts)
        if made is not None and (
            _made_by_call(made, facts)
            or (made.type == "identifier" and (syntax.text(made) in out_arguments or _made_by_call(_local_init(made, facts), facts)))
        ):
            filled.add(target)
    return filled


def _made_by_call(node: Node | None, facts: CallIndex) -> bool:
    return node is not None and node.type == "call_expression" and facts.callee(node).kind is not CalleeKind.CONVERSION


def _local_init(identifier: Node, facts: CallIndex) -> Node | None:
    """What a local was initialised with (`addr := C.malloc(n)`), through conversions."""
    symbol = facts.package.resolution.symbol(identifier)
    if symbol is None or not symbol.is_local or symbol.init is None or symbol.init_index > 0:
        return None
    return unwrap(symbol.init, facts)


def _literal_type(literal: Node) -> str | None:
    """`Buffer` of `Buffer{...}`, and of `HostOrDeviceSlice[T]{...}`."""
    type_node = literal.child_by_field_name("type")
    if type_node is not None and type_node.type == "generic_type":
        type_node = type_node.child_by_field_name("type")
    return syntax.text(type_node) if type_node is not None and type_node.type == "type_identifier" else None


def _mentions(node: Node, name: str) -> bool:
    return any(child.type == "identifier" and syntax.text(child) == name for child in syntax.walk(node))


def _fields_passed(method: Unit, facts: CallIndex) -> set[str]:
    """The receiver's fields the method hands to a call (`C.Mat_Close(m.p)`):
    the handles its release takes, among them."""
    found = set()
    for call in syntax.calls_in(method.body) if method.body is not None and method.receiver is not None else ():
        for argument in syntax.children(call.child_by_field_name("arguments")):
            value = unwrap(argument, facts)
            while value is not None and value.type == "unary_expression" and syntax.text(value.child_by_field_name("operator")) in ("*", "&"):
                value = syntax.unparen(value.child_by_field_name("operand"))  # `C.Tensor(*a.T)`, `&b.h`
            found.add(receiver_field(value, method.receiver.name))
    return found - {None}


def _once_literal(call: Node) -> Node | None:
    """The func literal of `x.once.Do(func() {...})`, a `sync.Once` of a
    value's field, which runs it where the call is (once)."""
    if call.type != "call_expression":
        return None
    function = syntax.unparen(call.child_by_field_name("function"))
    arguments = syntax.children(call.child_by_field_name("arguments"))
    if function is None or function.type != "selector_expression" or syntax.text(function.child_by_field_name("field")) != "Do":
        return None
    operand = syntax.unparen(function.child_by_field_name("operand"))
    if operand is None or operand.type != "selector_expression" or len(arguments) != 1:
        return None
    literal = syntax.unparen(arguments[0])
    return literal if literal is not None and literal.type == "func_literal" else None


def _exported_owners(p: Pass) -> dict[str, OwnedResources]:
    """The package's exported owning types that hold a resource of a known
    family, and its exported release wrappers (functions that free a
    parameter of a known family's resource)."""
    families = {resource: family for family in p.knowledge.families for resource in family.resources}
    owners = p.result_of(OWNERS)
    found = {}
    for owner in owners.exported():
        owns = tuple((families[resource].name, resource.name) for resource in owner.resources if resource in families)
        if owns:
            found[owner.type_name] = OwnedResources(owns, owner.methods, idempotent=owner.idempotent, inert=owner.inert, chosen=owner.chosen)
    for unit in p.package.units:
        name = exported_name(unit) if unit.kind is UnitKind.FUNCTION else None
        released = owners.released_parameters(unit) if name is not None else ()
        releases = tuple(dict.fromkeys((index, families[r].name, r.name) for index, r in released if r in families))
        if releases:
            found[name] = OwnedResources((), (), releases)
    return found


OWNERS: Analysis[Owners] = Analysis(
    "owners", __doc__ or "", lambda p: Owners(p.result_of(CALLS), p.imported_facts(OWNERS)), requires=(CALLS,),
    facts=_exported_owners, fact_type=OwnedResources,
)


def _called_on(call: Node, name: str) -> bool:
    """`a.alloc()` called on the variable `name`."""
    operand = syntax.method_operand(call)
    return operand is not None and syntax.text(operand) == name


def acquires_into_receiver(unit: Unit, facts: CallIndex) -> bool:
    """A method that makes something new into its receiver's fields: a
    call's result assigned to one (`a.ptr = memAlloc(n)`), or an API call
    writing into one (`C.cudaMalloc(&a.ptr, n)`)."""
    name = unit.receiver.name if unit.receiver is not None else ""
    for statement in syntax.walk(unit.body):
        for targets, values in syntax.assignment_sides(statement):
            for target, value in zip(targets, values):
                value = syntax.unparen(value)
                if (
                    syntax.text(target).startswith(name + ".") and value is not None and value.type == "call_expression"
                    and facts.callee(value).kind is not CalleeKind.CONVERSION
                ):
                    return True
    return any(
        role.is_out and syntax.text(arguments[role.index]).startswith(f"&{name}.")
        for fact in facts.api_facts_in(unit) for _, role in fact.api.roles("acquire")
        if 0 <= role.index < len(arguments := syntax.children(fact.node.child_by_field_name("arguments")))
    )
