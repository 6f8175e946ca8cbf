"""CL502: device memory leaving its function as a bare pointer."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex, unwrap
from cudalint.analyses.lifetimes import LIFETIMES
from cudalint.analyses.lifetimes.handouts import stored_in_receiver
from cudalint.analyses.owners import OWNERS, Owners
from cudalint.analyses.uses import USES, UseKind
from cudalint.catalog import Level, Rule
from cudalint.prefilter import imports_of
from cudalint.fixes.placement import statement_of
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit, UnitKind
from cudalint.knowledge import CallRole
from cudalint.scope import UNIVERSE_TYPES, Role


def check(p: Pass) -> None:
    """Device memory returned, or stored in a package-level variable, map or
    slice, as a bare pointer. A func literal is no boundary: what it returns
    stays with the function that made it."""
    calls = p.result_of(CALLS)
    lifetimes = p.result_of(LIFETIMES)
    uses = p.result_of(USES)
    resolution = p.package.resolution
    owners = p.result_of(OWNERS)
    calling = calls.units_calling_api()
    # A literal that allocates into its function's variable (`err :=
    # RunOnDevice(id, func() error { return check(C.cudaMalloc(&ptr, n)) })`)
    # hands the pointer to that function, which is where it leaves.
    holders = [unit.parent for unit in calling if unit.kind is UnitKind.LITERAL and unit.parent is not None]
    for unit, graph in p.graphs_of(list(dict.fromkeys(calling + holders))):
        with p.isolating(unit):
            for fact in calls.api_facts_in(unit):
                call = fact.node
                for resource, role in fact.api.roles("acquire"):
                    target = _out_target(calls, call, role) if resource.device_memory and role.is_out else None
                    symbol = resolution.symbol(target) if target is not None else None
                    if symbol is not None and symbol.role is Role.GLOBAL:
                        _report(p, unit, call, fact.written, call, f"stored in the package-level variable {symbol.name}")
                    if resource.device_memory and role.is_result and role.index == 0 and unit.kind is not UnitKind.LITERAL:
                        # `return unsafe.Pointer(C.nppiMalloc_8u_C1(w, h, &step)), int(step)`:
                        # the result leaves before any variable holds it.
                        where = _escape_of(p, calls, owners, unit, call, returned=True)
                        if where is not None:
                            _report(p, unit, statement_of(call) or call, fact.written, call, where)
            # A wrapper's bare pointer was reported where it first left the
            # function that allocated it, not again at each caller.
            # A pointer handed out with the function that frees it (`return p,
            # func() { C.cudaFree(p) }, nil`) says who frees it.
            cleaned = {o.handle for o, _ in lifetimes.handed_out(unit) if o.resource.any_use_releases}
            origins = [
                o for o in lifetimes.lifetimes(unit).origins
                if o.resource.device_memory and o.handle and o.via is None and o.handle not in cleaned and not _kept_by_receiver(unit, o.handle, calls)
            ]
            if not origins:
                continue
            reported: set[int] = set()
            for n in graph.statement_nodes():
                if n in reported:
                    continue
                for use in uses.uses(graph.evaluated(n)):
                    origin = next((o for o in origins if o.handle == use.symbol.name and use.symbol.function == unit.node), None)
                    whole = uses.as_payload(use, origin.status) if origin is not None else use
                    # `return r.res, nil`: a result struct's payload is the pointer that leaves.
                    value = use.node.parent if whole is not use else use.node
                    where = _escape_of(p, calls, owners, unit, value, whole.kind is UseKind.RETURN) if origin is not None else None
                    if where is not None:
                        reported.add(n)
                        _report(p, unit, graph.ast(n), origin.written, origin.call, where)
                        break
            if unit.kind is UnitKind.LITERAL:
                continue
            named = {r.name for r in unit.results}
            for origin in origins:
                if origin.handle not in named:
                    continue
                for n in lifetimes.returns_on_success(origin):
                    statement = graph.ast(n)
                    bare = statement is not None and not any(c.type == "expression_list" for c in statement.named_children)
                    if bare and n not in reported:
                        reported.add(n)
                        _report(p, unit, statement, origin.written, origin.call, f"returned as the named result {origin.handle}")


def _kept_by_receiver(unit: Unit, handle: str, calls: CallIndex) -> bool:
    """`b.scratch = ptr; return ptr, nil`: the method's receiver keeps the
    pointer (and frees it), so what leaves is a view of what it owns."""
    return unit.receiver is not None and unit.body is not None and handle in stored_in_receiver(unit, unit.receiver.name, calls)


def _report(p: Pass, unit: Unit, node: Node, written: str, acquired: Node, where: str) -> None:
    p.report(
        unit, node,
        f"device memory from {written} (@acquired) leaves {unit.name} as a bare pointer ({where}): "
        f"nothing says who frees it; wrap it in a struct that owns it (with a Close method) and hand that out instead",
        acquired=Ref(acquired, "device memory allocated here"),
    )


def _out_target(calls: CallIndex, call: Node, role: CallRole) -> Node | None:
    arguments = syntax.children(call.child_by_field_name("arguments"))
    if role.index >= len(arguments):
        return None
    argument = unwrap(arguments[role.index], calls)
    if not syntax.is_address_of(argument):
        return None
    target = syntax.unparen(argument.child_by_field_name("operand"))
    return target if target is not None and target.type == "identifier" else None


def _escape_of(p: Pass, calls: CallIndex, owners: Owners, unit: Unit, value: Node, returned: bool) -> str | None:
    """Where a bare pointer value goes when it leaves the function: returned,
    or stored in a package-level variable or map or slice; None where it stays
    or is converted to a type that says who frees it."""
    parent = value.parent
    while parent is not None and (
        parent.type == "parenthesized_expression"
        or (parent.type == "argument_list" and calls.callee(parent.parent).kind is CalleeKind.CONVERSION)
    ):
        value = parent if parent.type == "parenthesized_expression" else parent.parent
        if value.type == "call_expression" and _says_who_frees(p.package.units, owners, calls.callee(value).written):
            return None
        parent = value.parent
    if parent is not None and parent.type == "argument_list":
        call = parent.parent
        callee = calls.callee(call)
        if callee.kind is CalleeKind.BUILTIN and callee.written == "append" and syntax.children(parent)[0] != value:
            value, parent = call, call.parent  # s = append(s, d): where does s go?
    if parent is None or parent.type != "expression_list":
        return None
    holder = parent.parent
    if holder is not None and holder.type == "return_statement" and returned:
        return None if unit.kind is UnitKind.LITERAL else "returned"
    if holder is not None and holder.type == "assignment_statement" and holder.child_by_field_name("right") == parent:
        left = syntax.expressions(holder.child_by_field_name("left"))
        right = syntax.children(parent)
        if len(left) != len(right):
            return None
        target = syntax.unparen(left[[c.id for c in right].index(value.id)])
        resolution = p.package.resolution
        if target is not None and target.type == "identifier":
            symbol = resolution.symbol(target)
            if symbol is not None and symbol.role is Role.GLOBAL:
                return f"stored in the package-level variable {symbol.name}"
        if target is not None and target.type == "index_expression":
            container = syntax.unparen(target.child_by_field_name("operand"))
            symbol = resolution.symbol(container) if container is not None and container.type == "identifier" else None
            # A package-level map or slice, or the caller's (a parameter); a
            # local one never leaves, and one in a struct field is owned.
            if symbol is not None and symbol.role is Role.GLOBAL:
                return f"stored in the package-level map or slice {symbol.name}"
            if symbol is not None and symbol.role is Role.PARAM:
                return f"stored in the caller's map or slice {symbol.name}"
    return None


def _says_who_frees(units: list[Unit], owners: Owners, type_name: str) -> bool:
    """Whether a named type of the package comes with its release: a method
    of its own (`func (p DevicePtr) Free() error`), or a function or method of
    the package that frees a parameter of the type (`func (c *Context)
    Free(p DevPtr) error`, `func MemFree(p DevicePtr)`). A value of it is
    no bare pointer: its type names what frees it."""
    if not type_name.isidentifier() or type_name in UNIVERSE_TYPES:
        return False  # `uintptr`: a free wrapper taking one names no owner
    if owners.of(type_name) is not None:
        return True
    for unit in units:
        for index, _ in owners.released_parameters(unit):
            parameter = unit.params[index] if index < len(unit.params) else None
            if parameter is not None and parameter.type_node is not None and syntax.text(parameter.type_node) == type_name:
                return True
    return False


RULE = Rule(
    "CL502", "raw-device-pointer-escape", Level.WARNING,
    "Device memory leaves the allocating function as a bare pointer or integer.",
    """
    ## What it does
    Reports device memory (from `cudaMalloc`, `cuMemAlloc`, ... as
    `rules/*.toml` marks with `device_memory = true`) that leaves the function
    that allocated it as a bare `unsafe.Pointer`, `uintptr` or C pointer:
    returned (also as a named result), allocated straight into a
    package-level variable, stored into one, or into a package-level map or
    slice, or into a map or slice the caller passed in. Storing it in a
    struct field, or in a map or slice held by one (an owning Go type with a
    `Close` method), is the fix, not a finding, and so is a named type its
    package releases (`type DevPtr uintptr` with `Free`, or a `Free(p
    DevPtr)` function) or a pointer returned beside the function that frees
    it (`return p, func() { C.cudaFree(p) }, nil`), or a pointer a method also
    keeps in its receiver (`s.scratch = d; return d, nil`: a view of what the
    receiver owns); a local map is no escape, and neither is a func literal
    returning it to the function that made it. The payload of a C result
    struct (`return r.value, nil` of `r := C.gpu_alloc(n)`) and the pointer
    a C function returns after filling it (`void *p; cudaMalloc(&p, n);
    return p;`) are that device memory too.
    What a callee does with a pointer it receives is the callee's business.

    ## Why is this bad?
    A bare device address says nothing about who frees it or how much memory
    it spans. Every caller must remember to call `cudaFree` on every path,
    and the leak rules can no longer follow it.

    ## Example
    ```go
    func alloc(n int) (unsafe.Pointer, error) {
        var d unsafe.Pointer
        if st := C.cudaMalloc(&d, C.size_t(n)); st != C.cudaSuccess {
            return nil, cudaError(st)
        }
        return d, nil
    }
    ```

    ## Use instead
    ```go
    type DeviceBuffer struct {
        ptr  unsafe.Pointer
        size int
    }

    func NewDeviceBuffer(n int) (*DeviceBuffer, error) {
        var d unsafe.Pointer
        if st := C.cudaMalloc(&d, C.size_t(n)); st != C.cudaSuccess {
            return nil, cudaError(st)
        }
        return &DeviceBuffer{ptr: d, size: n}, nil
    }

    func (b *DeviceBuffer) Close() error {
        return cudaError(C.cudaFree(b.ptr))
    }
    ```

    """,
    tags=("maintainability", "resource-leak"),
    check=check,
    requires=(CALLS, USES, LIFETIMES, OWNERS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: any(r.device_memory for r in family.resources)),
)
