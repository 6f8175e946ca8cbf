"""Hand-outs: the resources a function of the package gives its caller.

A function that acquires a resource, never leaks it and returns it as a
bare variable (with a nil error where it returns one: `func alloc(n)
(unsafe.Pointer, error)`), or returns the acquiring call itself (`return
C.CString(s)`), or wraps it in an owning type it constructs, hands it out:
its callers acquire that resource at their call. Hand-outs are solved
callees first, so a chain of wrappers is no chain of nested analyses; the
functions that acquire anything are those calling the API, a module
wrapper, or a function of the package that hands something out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CallIndex, unwrap
from cudalint.analyses.lifetimes.counted import hand_out_status
from cudalint.analyses.call_kinds import CalleeKind, value_parent
from cudalint.analyses.lifetimes.carriers import carriers_of, runs
from cudalint.analyses.lifetimes.origins import Lifetimes, pointer_parameter, traced_value
from cudalint.analyses.lifetimes.outcomes import OUT_HANDOUT, RECEIVER_HANDOUT, Origin
from cudalint.analyses.owners import Owner, Owners, owned_resource, owner_type
from cudalint.analyses.status import StatusSource
from cudalint.functions import Unit, UnitKind
from cudalint.knowledge import CallRole


class HandOuts:
    def __init__(
        self, calls: CallIndex, owners: Owners, lifetimes: Lifetimes, analysing: Callable[[Unit], bool],
        module_hands_out: Callable[[str, str], bool], releases_captured: Callable[[Unit, str], bool],
        releases_kind: Callable[[Unit, str], bool], converts_at: Callable[[Node, int, StatusSource], bool],
        constructing: Callable[[], frozenset[int]],
    ):
        self._constructing = constructing  # the ids of the functions that make an owning value of what C produced
        self._calls = calls
        self._converts_at = converts_at  # (call, argument index, status): the call makes it an error, nil on success
        self._releases_captured = releases_captured  # (func literal, variable name): it releases the variable
        self._releases_kind = releases_kind  # (func literal, resource name): it releases a count of the kind
        self._module_hands_out = module_hands_out  # (import path, name) of a module function that hands out
        self._owners = owners
        self._lifetimes = lifetimes
        self._analysing = analysing
        self._handing: dict[Unit, list[tuple[Origin, int]]] = {}
        self._acquiring: list[Unit] | None = None

    def handed_out(self, unit: Unit) -> list[tuple[Origin, int]]:
        """What a function of the package hands its caller: (acquisition,
        result index, -1 for a count) for each resource it acquires, never leaks, and
        returns as a bare variable, with a nil error where it returns one
        (`func alloc(n) (unsafe.Pointer, error)`). Its callers then acquire
        that resource at their call, held where the error is nil."""
        if unit in self._handing:
            return self._handing[unit]
        if self._analysing(unit) or unit.nested or unit.body is None:
            return []  # recursion, or not a function its callers name
        # Callees first; a recursive wrapper hands out nothing (the answer
        # its callers got before it was known), so nothing in a cycle is
        # analysed under an assumption that changes afterwards.
        fixpoint.solve([unit], self._calls.local_callees, self._hand_outs, self._handing, lambda _: [], rounds=0)
        return self._handing[unit]

    def _payload(self, origin: Origin) -> str:
        """The field of a result struct that stands for the handle (`return
        r.res, nil` hands it out); "" for any other acquisition."""
        status, view = origin.status, self._calls.c_view
        if status is None or status.kind != "field" or view is None:
            return ""
        return view.payload(status.type)

    def units_with_acquisitions(self) -> list[Unit]:
        """The functions that acquire something: by an API call, or by a
        call of a function of the package that hands a resource out."""
        if self._acquiring is None:
            calls = self._calls
            found = {unit.node: unit for unit in calls.units_calling_api() + calls.units_calling_module(self._module_hands_out)}
            constructing = self._constructing()
            found.update((unit.node, unit) for unit in calls.package.units if unit.node.id in constructing)
            # A literal may hand what it acquires to the function around it.
            for literal in list(found.values()):
                if literal.nested:
                    found.setdefault(literal.parent.node, literal.parent)
            pending = list(found.values())
            by_node = {unit.node: unit for unit in calls.package.units}
            while pending:
                wrapper = pending.pop()
                if not self.handed_out(wrapper):
                    continue
                for call in calls.calls_of(wrapper):
                    caller = by_node.get(syntax.enclosing_function(call))
                    if caller is not None and caller.node not in found:
                        found[caller.node] = caller
                        pending.append(caller)
            self._acquiring = [unit for unit in calls.package.units if unit.node in found]
        return self._acquiring

    def _hand_outs(self, unit: Unit) -> list[tuple[Origin, int]]:
        if unit.nested or unit.body is None:
            return []
        found = self._lifetimes(unit)
        # Lost on a path where the function succeeds: not the caller's. Lost
        # only where it fails (reported there), it is still handed on where
        # it succeeds (createDeviceGroup leaks the group when AddToGroup
        # fails, and returns it otherwise).
        lost = {leak.origin for leak in found.leaks if not leak.on_failure} | {overwrite.origin for overwrite in found.overwrites}
        handed = []
        held: set[tuple[str, int]] = set()  # (variable, result index): one value, one hand-out
        for origin in found.origins:
            if origin.role.handle == "none":
                if hand_out_status(unit, origin) is None:
                    continue
                if origin in found.counted_out:
                    handed.append((origin, -1))  # an initialiser: the count, held where it succeeds
                elif (cleanup := self._returned_literal(unit, lambda literal: self._releases_kind(literal, origin.resource.name))) is not None:
                    # `return func() { nvml.Shutdown() }, nvml.SUCCESS`: the function gives the count back.
                    handed.append((_as_cleanup(origin, unit, cleanup), cleanup))
                continue
            if origin in lost:
                continue
            parameter = _out_parameter(unit, origin, self._calls)
            if parameter is not None:
                handed.append((origin, OUT_HANDOUT - parameter))
                continue
            handle = origin.handle
            cleanup = self._returned_literal(unit, lambda literal: self._releases_captured(literal, handle)) if handle else None
            if cleanup is None and handle:
                cleanup = self._carried_out(unit, origin)
            if cleanup is not None:
                # `return s, func() { destroy(s) }, nil`: the function value is
                # what the caller must call; the handle beside it is lent. One
                # function releasing several acquisitions is one value handed out.
                if ("", cleanup) not in held:
                    held.add(("", cleanup))
                    handed.append((_as_cleanup(origin, unit, cleanup), cleanup))
                continue
            # A new value of an owning type made of the handle first: the
            # conversion `DevicePtr(p)` is also the handle returned.
            succeeded = self._error_nil_where_acquired(origin)
            constructed = (
                self._owners.constructed(unit, origin.handle, origin.resource, succeeded) if origin.handle
                else self._wrapped_and_returned(unit, origin)
            )
            if constructed is not None:
                index, owner = constructed
                if self._owners.finalized(owner.type_name):
                    continue  # the collector releases a value dropped
                if any(_kept_elsewhere(unit, name, origin.handle) for name in _returned_names(unit, index)):
                    continue  # `registry[name] = m` too: not the caller's alone
                origin = replace(origin, resource=owned_resource(
                    origin.resource.owns or origin.resource, owner.type_name, owner.methods, owner.idempotent, owner.inert, owner.chosen,
                ))
            else:
                payload = self._payload(origin)
                index = (
                    _returned_at(
                        unit, f"{origin.handle}.{payload}" if payload else origin.handle, self._calls,
                        origin.resource.owns is not None, succeeded, beside_failure=origin in found.returned_failing, payload=bool(payload),
                        acquired=origin.call,
                    ) if origin.handle else self._returned_directly(unit, origin)
                )
                if index is not None and _kept_elsewhere(unit, origin.handle):
                    continue  # also held by a closure or a structure the function fills: not the caller's alone
                if origin.resource.glue_only and origin.resource.owns is None:
                    continue  # a bare C++ object: nothing its caller could call deletes it
            if index is None or (origin.resource.owns is not None and origin.captured is None and self._finalized(origin)):
                continue
            # A value of an owning type that holds two acquisitions (`new(Timer)`
            # with both events made into its fields, a literal made of two
            # calls) is one value handed out.
            holder = origin.handle or (f"<{origin.resource.name}>" if constructed is not None else "")
            if holder and origin.resource.owns is not None:
                if (holder, index) in held:
                    continue
                held.add((holder, index))
            handed.append((origin, index))
        filled = self._receiver_filled(unit, found.origins)
        if filled is not None:
            handed.append((filled, RECEIVER_HANDOUT))
        return handed

    def _error_nil_where_acquired(self, origin: Origin) -> Callable[[Node], bool]:
        """Whether a returned error is nil exactly where this acquisition
        succeeded: a converter of its own status (`return &Module{m: mod},
        newErrorDriver("load", x)` with `x := C.cuModuleLoadData(&mod, ...)`)."""
        source = StatusSource.of(origin.api, origin.written)
        resolution = self._calls.package.resolution

        def is_status(argument: Node) -> bool:
            value = unwrap(argument, self._calls)
            if value is not None and value.type == "identifier":
                symbol = resolution.symbol(value)
                value = unwrap(symbol.init, self._calls) if symbol is not None and symbol.init is not None and symbol.init_index < 0 else None
            return value is not None and value.id == origin.call.id

        def succeeded(error: Node) -> bool:
            call = syntax.unparen(error)
            if source is None or source.status is None or call is None or call.type != "call_expression":
                return False
            arguments = syntax.children(call.child_by_field_name("arguments"))
            return any(is_status(argument) and self._converts_at(call, index, source) for index, argument in enumerate(arguments))
        return succeeded

    def _receiver_filled(self, unit: Unit, origins: list[Origin]) -> Origin | None:
        """The acquisition a method with a pointer receiver stores into a
        field of its receiver, where the receiver's type owns that resource
        and the method releases nothing of it (`func (d *DeviceSlice)
        MallocAsync(...)` with `dp, err := cuda_runtime.MallocAsync(...)`
        and `d.inner = dp`): the caller's variable then holds it."""
        receiver = unit.receiver
        declared = receiver.type_node if receiver is not None else None
        if declared is None or declared.type != "pointer_type" or unit.body is None:
            return None
        owner = self._owners.of(unit.receiver_type)
        if owner is None or unit.name.rsplit(".", 1)[-1] in owner.methods or self._releases_receiver(unit, receiver.name):
            return None
        stored = stored_in_receiver(unit, receiver.name, self._calls)
        # `C.cudaMalloc(&b.ptr, n)` into the receiver's field is no origin the
        # method follows (the struct holds it from the start): taken from the call.
        into_fields = [
            Origin(unit, -1, fact.node, fact.written, fact.api, resource, role, "")
            for fact in self._calls.api_facts_in(unit) for resource, role in fact.api.roles("acquire") if role.is_out
        ]
        for origin in [*origins, *into_fields]:
            held = origin.resource.owns or origin.resource
            if held not in owner.resources or origin.role.handle == "none":
                continue
            if (
                (origin.handle and origin.handle in stored)
                or _out_into_receiver(origin, receiver.name, self._calls)
                or _result_into_receiver(origin, receiver.name)
            ):
                return replace(origin, resource=owned_resource(held, owner.type_name, owner.methods, owner.idempotent, owner.inert, owner.chosen))
        return self._filled_by_own_method(unit, receiver.name)

    def _releases_receiver(self, unit: Unit, receiver: str) -> bool:
        """Whether the method releases something of its receiver (`a.ptr.Free()`,
        `C.cudaFree(a.ptr)`, `a.Free()`): one that frees what it made, or
        frees and makes again (`Resize`), hands nothing new to its caller."""
        for call in syntax.calls_in(unit.body):
            callee = self._calls.callee(call)
            if callee.kind is CalleeKind.API and callee.api is not None:
                arguments = syntax.children(call.child_by_field_name("arguments"))
                for _, role in callee.api.roles("release"):
                    argument = unwrap(arguments[role.index], self._calls) if 0 <= role.index < len(arguments) else None
                    if argument is not None and syntax.text(argument).startswith(receiver + "."):
                        return True
            operand = syntax.method_operand(call)
            target = callee.target if callee.kind is CalleeKind.LOCAL else None
            if operand is None or target is None or target.kind is not UnitKind.METHOD:
                continue
            on_receiver = syntax.text(operand) == receiver or syntax.text(operand).startswith(receiver + ".")
            owner = self._owners.of(target.receiver_type)
            if on_receiver and owner is not None and target.name.rsplit(".", 1)[-1] in owner.methods:
                return True
        return False

    def _filled_by_own_method(self, unit: Unit, receiver: str) -> Origin | None:
        """`func (a *Array) Init(...) { a.Alloc() }` where Alloc fills its
        receiver: Init fills the same value, and so hands it out the same way."""
        for call in syntax.calls_in(unit.body):
            operand = syntax.method_operand(call)
            if operand is None or syntax.text(operand) != receiver:
                continue
            callee = self._calls.callee(call)
            target = callee.target
            if callee.kind is not CalleeKind.LOCAL or target is None or target is unit or target.receiver_type != unit.receiver_type:
                continue
            for inner, index in self.handed_out(target):
                if index == RECEIVER_HANDOUT:
                    return inner
        return None

    def _returned_literal(self, unit: Unit, releases: Callable[[Unit], bool]) -> int | None:
        """The result position at which the function returns a func literal
        that releases what it acquired (a cleanup function: `releases`
        says), if every return that returns one does so there, and one of
        them with a nil error where the function returns one."""
        if not self._calls.literals_of(unit):
            return None
        index = None
        for statement in syntax.return_statements(unit.body):
            expressions = syntax.returned(statement)
            literals = [self._calls.literal(e) if e.type == "func_literal" else None for e in expressions]
            positions = [
                i for i, literal in enumerate(literals)
                if literal is not None and literal.parent is unit and releases(literal)
            ]
            if not positions:
                continue
            if len(positions) > 1 or (index is not None and positions[0] != index):
                return None
            if unit.returns_error and syntax.text(expressions[-1]) != "nil":
                continue  # `return g, func() { destroy(g) }, err`: the caller holds it only where err is nil
            index = positions[0]
        return index

    def _carried_out(self, unit: Unit, origin: Origin) -> int | None:
        """The result position of a cleanup stack that runs the handle's
        release: a returned slice its cleanup was appended to (`return
        cleanups, nil`), or a returned literal that runs that slice or a
        method of a struct holding it (`return c, func() { c.Cleanup() },
        nil`)."""
        carried = carriers_of(
            unit, origin.handle, origin.resource.any_use_releases,
            lambda node: (literal := self._calls.literal(node)) is not None and self._releases_captured(literal, origin.handle),
            self._calls,
        )
        if not carried or _beside_returned(unit, origin):
            return None
        index = self._returned_literal(unit, lambda literal: runs(literal.node, carried, self._calls))
        if index is not None:
            return index
        returned = {_returned_bare(unit, name) for name in carried.slices} - {None}
        return returned.pop() if len(returned) == 1 else None

    def _finalized(self, origin: Origin) -> bool:
        """An owning type's value made here whose type has a finalizer."""
        local = origin.resource.release[0].call.startswith("_.")  # owned_resource's qualifier of the package's own types
        return local and self._owners.finalized(owner_type(origin.resource))

    def _wrapped_and_returned(self, unit: Unit, origin: Origin) -> tuple[int, Owner] | None:
        """`return newMat(C.Mat_New())` (gocv's constructors): the acquiring
        call handed straight to a function of the package that makes a value
        of an owning type of it, returned (with a nil error after it)."""
        if not origin.role.is_result:
            return None
        child, parent = value_parent(origin.call, self._calls.callee)
        if parent is not None and parent.type == "literal_element":
            # `return Stream{p: C.Stream_New()}`: made into a literal of an owning type.
            literal = _literal_around(parent)
            owner = self._owners.made_as_literal(literal, origin.resource) if literal is not None else None
            outer = literal.parent if literal is not None and syntax.is_address_of(literal.parent) else literal
        elif parent is not None and parent.type == "argument_list" and parent.parent is not None:
            outer = parent.parent
            owner = self._owners.made_by_call(outer, [c.id for c in syntax.children(parent)].index(child.id), origin.resource)
        else:
            return None
        if owner is None or outer is None:
            return None
        index = self._returned_directly(unit, replace(origin, call=outer, role=CallRole(origin.role.call, "result0")))
        return (index, owner) if index is not None else None

    def _returned_directly(self, unit: Unit, origin: Origin) -> int | None:
        """`return C.CString(s)`: the position of the acquiring call among
        the returned values (with a nil error after it, if any)."""
        if not origin.role.is_result:
            return None
        child, parent = value_parent(origin.call, self._calls.callee)
        if parent is None or parent.type != "expression_list" or parent.parent is None or parent.parent.type != "return_statement":
            return None
        values = syntax.expressions(parent)
        if len(values) == 1 and unit.result_count > 1:
            return origin.role.index  # `return alloc(n)`: its results are the function's
        index = next((i for i, value in enumerate(values) if value.id == child.id), None)
        if index is None or (unit.returns_error and (index == len(values) - 1 or syntax.text(values[-1]) != "nil")):
            return None
        return index


def _literal_around(element: Node) -> Node | None:
    """The composite literal a literal element is a field value of."""
    node = element.parent
    if node is not None and node.type == "keyed_element":
        if node.child_by_field_name("value") is None or node.child_by_field_name("value").id != element.id:
            return None  # the key
        node = node.parent
    node = node.parent if node is not None and node.type == "literal_value" else None
    return node if node is not None and node.type == "composite_literal" else None


def _returned_at(
    unit: Unit, handle: str, calls: CallIndex, owning: bool = False, succeeded: Callable[[Node], bool] = lambda _: False,
    beside_failure: bool = False, payload: bool = False, acquired: Node | None = None,
) -> int | None:
    """The result position at which the function returns the variable
    `handle` itself, or converted (`return Handle(h), nil`: a named type is
    the same handle), or its address where it is a value of an owning type
    (`return &ctx`), if every return that returns it does so there with a
    nil error (when the last result is an error), or, `beside_failure`,
    with a nil error or a failure (`return d, fmt.Errorf(...)`: its callers
    then hold it either way); None otherwise. `payload`: handle is a result
    struct's payload field (`r.value`). A return that runs before the
    acquisition `acquired` returns another value of the variable (`return
    retVal, err` of the zero value a named result starts with)."""
    index = None
    returns_error = unit.returns_error
    named = _named_results_holding(unit, handle, calls, owning)
    for statement in syntax.return_statements(unit.body):
        if acquired is not None and _runs_before(statement, acquired):
            continue
        values = syntax.returned_list(statement)
        if values is None:
            # A bare return hands out the named results (`id = GroupHandle{h}; return`).
            positions = named
            if len(positions) > 1 or (positions and index is not None and positions[0] != index):
                return None
            index = positions[0] if positions else index
            continue
        expressions = syntax.expressions(values)
        positions = [i for i, e in enumerate(expressions) if _is_variable(unwrap(e, calls), handle, owning, payload)]
        if not positions:
            continue
        if len(positions) > 1 or (index is not None and positions[0] != index):
            return None
        error = syntax.text(expressions[-1])
        if returns_error and error != "nil" and not succeeded(expressions[-1]) and not beside_failure and not _nil_here(statement, error):
            return None
        index = positions[0]
    return index


def _nil_here(statement: Node, error: str) -> bool:
    """`return retVal, err` after `if err = f(); err != nil { return ... }`
    in the same block, err not written between: err is nil here."""
    sibling = statement.prev_named_sibling
    while sibling is not None:
        if sibling.type == "if_statement" and sibling.child_by_field_name("alternative") is None:
            compared = syntax.equality(sibling.child_by_field_name("condition"))
            body = syntax.statements(sibling.child_by_field_name("consequence"))
            if compared is not None and not compared[2] and sorted((syntax.text(compared[0]), syntax.text(compared[1]))) == sorted((error, "nil")):
                return bool(body) and body[-1].type == "return_statement"
        if any(
            syntax.text(target) == error
            for node in syntax.walk(sibling) for targets, _ in syntax.assignment_sides(node) for target in targets
        ):
            return False
        sibling = sibling.prev_named_sibling
    return False


def _runs_before(statement: Node, acquired: Node) -> bool:
    """Whether a statement written before the acquisition runs only before
    it: no loop around the acquisition holds the statement too."""
    if statement.end_byte > acquired.start_byte:
        return False
    loop = acquired.parent
    while loop is not None and loop.type not in syntax.FUNCTION_NODES:
        if loop.type == "for_statement" and loop.start_byte <= statement.start_byte:
            return False
        loop = loop.parent
    return True


def stored_in_receiver(unit: Unit, receiver: str, calls: CallIndex) -> set[str]:
    """The locals the method assigns to a field of its receiver, through
    conversions and views (`d.inner = dp`, `h.device.s = unsafe.Slice((*T)(p), n)`)."""
    found = set()
    for statement in syntax.walk(unit.body):
        for targets, values in syntax.assignment_sides(statement):
            for target, value in zip(targets, values) if len(targets) == len(values) else ():
                root = target
                while root is not None and root.type == "selector_expression":
                    root = syntax.unparen(root.child_by_field_name("operand"))
                value = unwrap(value, calls)
                if root is not target and root is not None and syntax.text(root) == receiver and value is not None and value.type == "identifier":
                    found.add(syntax.text(value))
    return found


def _out_into_receiver(origin: Origin, receiver: str, calls: CallIndex) -> bool:
    """`C.cudaMalloc(&d.ptr, n)`: the acquisition's out-argument is a field of the receiver."""
    if not origin.role.is_out or origin.call.type != "call_expression":
        return False
    arguments = syntax.children(origin.call.child_by_field_name("arguments"))
    argument = unwrap(arguments[origin.role.index], calls) if origin.role.index < len(arguments) else None
    if not syntax.is_address_of(argument):
        return False
    field = syntax.unparen(argument.child_by_field_name("operand"))
    return field is not None and field.type == "selector_expression" and syntax.text(field.child_by_field_name("operand")) == receiver


def _result_into_receiver(origin: Origin, receiver: str) -> bool:
    """`a.pointer = MemAlloc(n)`: the acquiring call's handle result is
    assigned straight to a field of the receiver."""
    if not origin.role.is_result or origin.call.type != "call_expression":
        return False
    targets = syntax.assigned_from(origin.call)
    index = origin.role.index if len(targets) > 1 else 0
    field = syntax.unparen(targets[index]) if index < len(targets) else None
    return (
        field is not None and field.type == "selector_expression"
        and syntax.text(syntax.unparen(field.child_by_field_name("operand"))) == receiver
    )


def _beside_returned(unit: Unit, origin: Origin) -> bool:
    """Whether the function also returns the handle itself, or another
    result of its acquiring call (`groupID, cleanup, err := createGroup()`
    with `groups = append(groups, groupID)` returned beside the cleanups):
    the caller may then release either way, and dropping the cleanups is
    no leak."""
    names = {
        syntax.text(target) for target in syntax.assigned_from(origin.call)
        if target.type == "identifier" and syntax.text(target) not in ("_", origin.handle)
    } - {"err", "ret", "ok"}
    if not origin.resource.any_use_releases:
        names.add(origin.handle)  # not a cleanup function itself: the handle its literal releases
    for statement in syntax.walk(unit.body):
        for targets, values in syntax.assignment_sides(statement):
            for target, value in zip(targets, values) if len(targets) == len(values) else ():
                value = syntax.unparen(value)
                if target.type == "identifier" and value is not None and syntax.is_call_of(value, "append") and any(
                    syntax.text(syntax.unparen(argument)) in names for argument in syntax.children(value.child_by_field_name("arguments"))[1:]
                ):
                    names.add(syntax.text(target))
    return any(
        node.type == "identifier" and syntax.text(node) in names
        for statement in syntax.return_statements(unit.body) for value in syntax.returned(statement)
        if value.type != "func_literal" for node in syntax.walk(value)
    )


def _returned_bare(unit: Unit, name: str) -> int | None:
    """The one result position at which the function returns the variable
    itself (a slice of cleanups, not a value built around it), with a nil
    error on some such return."""
    positions = set()
    succeeding = False
    for statement in syntax.return_statements(unit.body):
        expressions = syntax.returned(statement)
        for i, value in enumerate(expressions):
            if value.type == "identifier" and syntax.text(value) == name:
                positions.add(i)
                succeeding = succeeding or not unit.returns_error or syntax.text(expressions[-1]) == "nil"
    return positions.pop() if len(positions) == 1 and succeeding else None


def _named_results_holding(unit: Unit, handle: str, calls: CallIndex, owning: bool) -> list[int]:
    """The positions of the named results that are the handle, or are
    assigned it or a value made around it somewhere in the body."""
    names = [symbol.name for symbol in unit.results]
    if not names or unit.body is None:
        return []
    holding = {handle}
    for assignment in syntax.walk(unit.body):
        if assignment.type != "assignment_statement":
            continue
        left = syntax.expressions(assignment.child_by_field_name("left"))
        right = syntax.expressions(assignment.child_by_field_name("right"))
        for target, value in zip(left, right) if len(left) == len(right) else ():
            if target.type == "identifier" and _is_variable(unwrap(value, calls), handle, owning):
                holding.add(syntax.text(target))
    return [i for i, name in enumerate(names) if name in holding]


def _is_variable(node, handle: str, address: bool, payload: bool = False) -> bool:
    """The variable itself, its address (a value of an owning type), or a
    value of a Go type made around it (`GroupHandle{h}`, `&Buffer{ptr: p,
    size: n}`): a wrapped handle is the resource."""
    if syntax.is_address_of(node):
        operand = syntax.unparen(node.child_by_field_name("operand"))
        if address or (operand is not None and operand.type == "composite_literal"):
            node = operand
    elif address and node is not None and node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) == "*":
        node = syntax.unparen(node.child_by_field_name("operand"))  # `return *slice`: the owning value itself
    if node is not None and node.type == "composite_literal":
        if syntax.text(node.child_by_field_name("type")).startswith("C."):
            return False  # a C struct of arguments (`&C.CUDA_HOST_NODE_PARAMS{...}`) owns nothing
        return any(_is_variable(value, handle, False) for value in syntax.element_values(node))
    if payload:  # a result struct's payload field, spelled `r.value`
        return node is not None and node.type == "selector_expression" and syntax.text(node) == handle
    return node is not None and node.type == "identifier" and syntax.text(node) == handle


def _kept_elsewhere(unit: Unit, handle: str, field: str = "", depth: int = 0) -> bool:
    """Whether the function also keeps the handle outside its results: in a
    func literal (`cleanups = append(cleanups, func() { destroy(h) })`), in
    a field, element or through a pointer (`c.ptr = h`, `m[k] = h`), or
    appended to a slice. A value returned around it (`&collector{group: h}`)
    is then one of several owners, and the returned one may not be the
    one that releases it. Where the resource is the value's `field` (`c.ctx`),
    reading its other fields keeps nothing of it (`c.ctx = create(c.dev)`,
    `c.fn = c.mod.Function("k")`). A local made of a literal holding it
    (`v := Var{Tensor: t}`) keeps it where that local is kept."""
    for node in syntax.walk(unit.body) if unit.body is not None else ():
        if node.type != "identifier" or syntax.text(node) != handle:
            continue
        if field and _reads_other_field(node, field):
            continue
        literal = syntax.enclosing_function(node)
        if literal != unit.node and not _run_in_place(literal):
            return True  # captured by a func literal that outlives the call
        child, parent = node, node.parent
        while parent is not None and not parent.type.endswith("statement") and parent.type != "block":
            if parent.type == "call_expression" and syntax.text(parent.child_by_field_name("function")) == "append":
                return True
            holder = _literal_holder(parent) if depth == 0 else None
            if holder is not None and _kept_elsewhere(unit, holder, depth=1):
                return True
            child, parent = parent, parent.parent
        if parent is not None and parent.type == "assignment_statement" and child.id == parent.child_by_field_name("right").id:
            if any(target.type != "identifier" for target in syntax.expressions(parent.child_by_field_name("left"))):
                return True
    return False


def _literal_holder(node: Node) -> str | None:
    """`v` of `v := Var{...}` (or `v = ...`, `var v = ...`) for that composite literal."""
    if node.type != "composite_literal" or node.parent is None or node.parent.type != "expression_list":
        return None
    statement = node.parent.parent
    sides = syntax.assignment_sides(statement) if statement is not None else []
    for targets, values in sides:
        for target, value in zip(targets, values) if len(targets) == len(values) else ():
            if value.id == node.id and target.type == "identifier":
                return syntax.text(target)
    return None


def _reads_other_field(node: Node, field: str) -> bool:
    """`c.dev` where the resource is in `c.ctx`: a read of another field."""
    selector = node.parent
    if selector is None or selector.type != "selector_expression" or selector.child_by_field_name("operand") != node:
        return False
    read = syntax.text(selector)
    return read != field and not field.startswith(read + ".")


def _returned_names(unit: Unit, index: int) -> set[str]:
    """The variables the function returns at result `index`."""
    names = set()
    for statement in syntax.return_statements(unit.body):
        expressions = syntax.returned(statement)
        value = syntax.unparen(expressions[index]) if index < len(expressions) else None
        if value is not None and value.type == "identifier":
            names.add(syntax.text(value))
    return names


def _run_in_place(literal) -> bool:
    """A func literal called where it is written, or deferred (`defer
    func() { if err != nil { destroy(h) } }()`): it keeps nothing."""
    call = literal.parent if literal is not None else None
    return call is not None and call.type == "call_expression" and call.child_by_field_name("function") == literal


def _as_cleanup(origin: Origin, unit: Unit, index: int) -> Origin:
    """The acquisition as the cleanup function at result `index` hands it
    out: any use of that function disposes of it, and where every other
    return gives a function too (`return func() {}, err`), calling it after
    a failure is harmless."""
    others = []
    for statement in syntax.return_statements(unit.body):
        expressions = syntax.returned(statement)
        if index < len(expressions):
            others.append(syntax.unparen(expressions[index]))
    callable_when_failed = bool(others) and all(value is not None and value.type == "func_literal" for value in others)
    # The function releases what the value held: a value of an owning type
    # (`return b, func() { b.Free() }, nil`) hands out its resource.
    held = origin.resource.owns or origin.resource
    resource = replace(held, any_use_releases=True, owns=None, callable_when_failed=callable_when_failed)
    return replace(origin, resource=resource)


def _out_parameter(unit: Unit, origin: Origin, calls: CallIndex) -> int | None:
    """The pointer parameter an API call stores its handle through
    (`C.cudaMalloc(p, n)` in `func devAlloc(p *unsafe.Pointer, n int)`):
    the caller's variable holds it, where the function reports success as
    an error or as the API's own status, returned as it came."""
    if not origin.role.is_out or origin.api is None or origin.call is None:
        return None
    arguments = syntax.children(origin.call.child_by_field_name("arguments"))
    argument = unwrap(arguments[origin.role.index], calls) if origin.role.index < len(arguments) else None
    symbol = pointer_parameter(argument, calls)
    if symbol is None or symbol not in unit.params or symbol.type_node is None or symbol.type_node.type != "pointer_type":
        return None
    if not unit.returns_error and not returns_status_of(unit, origin, calls):
        return None
    return unit.params.index(symbol)


def returns_status_of(unit: Unit, origin: Origin, calls: CallIndex) -> bool:
    """`func devAlloc(...) C.cudaError_t { return C.cudaMalloc(p, n) }`, or a
    generated binding's `__ret := C.cudnnCreate(chandle); __v :=
    (Status)(__ret); return __v`: its one result is the acquiring call's
    status, returned as it came (through locals and conversions)."""
    status = origin.api.status if origin.api is not None else None
    if status is None or status.kind != "code" or unit.result_count != 1 or unit.body is None:
        return False
    returned = [syntax.returned(statement) for statement in syntax.return_statements(unit.body)]
    return bool(returned) and all(len(values) == 1 and traced_value(values[0], calls) == origin.call for values in returned)
