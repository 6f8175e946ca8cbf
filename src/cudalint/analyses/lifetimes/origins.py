"""Acquisitions: where a function comes to hold a resource, and who holds it.

An origin is a call the knowledge names as an acquire (`C.cudaMalloc(&p,
n)`), a call of a function of the package that hands a resource out (a
wrapper, as its hand-outs say), an exported function of another package of
the module that does (as its summary says), or a func literal that runs at
a known call and acquires into a variable of this function. Its birth is the
state right after the call: the variable that holds the handle (through
`&p`, an assignment of the result, or none: a result discarded or only
compared is lost at once) and the proxy, the variable or expression whose
test says whether the acquire succeeded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from tree_sitter import Node

from cudalint import buildtags, syntax
from cudalint.analyses.call_kinds import value_parent
from cudalint.analyses.calls import CalleeKind, CallIndex, unwrap
from cudalint.analyses.choices import Choice, choice_in, variadic_from
from cudalint.analyses.lifetimes.flags import set_in
from cudalint.analyses.lifetimes.constructions import Constructions
from cudalint.analyses.lifetimes.counted import hand_out_status, nil_when_failed
from cudalint.analyses.lifetimes.effects import Effects
from cudalint.analyses.lifetimes.outcomes import RECEIVER_HANDOUT, Effect, Origin, UnitLifetimes, out_parameter
from cudalint.analyses.lifetimes.states import Phase, State
from cudalint.analyses.owners import Owners, owned_resource
from cudalint.analyses.uses import appended_to, calls_parameter, literal_holder, local_collection, local_holder
from cudalint.analyses.status import ERROR_STATUS, as_imported, status_beside, success_beside, success_spelled
from cudalint.cfg import CFG
from cudalint.functions import Unit, UnitKind
from cudalint.knowledge import ApiFunction, CallRole
from cudalint.scope import Role, Symbol, SymbolKind, default_import_name

# What a function of the package hands its caller: (acquisition, result index).
HandOuts = Callable[[Unit], list[tuple[Origin, int]]]
# A function's outcomes (what a func literal hands up to the function around it).
Lifetimes = Callable[[Unit], UnitLifetimes]
# The state right after an acquisition: the origin (with its handle named),
# who holds it (None: handed over at once), and why it is lost at once.
Birth = tuple[Origin, State | None, str | None]


# How many functions may pass a literal on before one calls it.
_FORWARDS = 3


class Origins:
    def __init__(
        self, calls: CallIndex, effects: Effects, handed_out: HandOuts, lifetimes: Lifetimes, owners: Owners, made: Constructions,
    ):
        self._constructions = made
        self._calls = calls
        self._owners = owners
        self._effects = effects
        self._handed_out = handed_out
        self._lifetimes = lifetimes
        self._choices: dict[tuple[Unit, int], Choice | None] = {}

    def of_api_calls(self, unit: Unit, graph: CFG) -> list[Origin]:
        """Acquisitions by calls the knowledge describes, reachable ones, in
        source order."""
        origins = []
        for fact in self._calls.api_facts_in(unit):
            acquires = fact.api.roles("acquire")
            if not acquires:
                continue
            n = graph.node_containing(fact.node)
            if n is None or not graph.reachable(n):
                continue
            for resource, role in acquires:
                origins.append(Origin(unit, n, fact.node, fact.written, fact.api, resource, role, ""))
        return origins

    def of_wrappers(self, unit: Unit, graph: CFG) -> list[Origin]:
        """Acquisitions by calls of the package's functions that hand a
        resource out, as if each were an API call returning it."""
        if unit.body is None:
            return []
        origins = []
        for call in syntax.calls_in(unit.body):
            callee = self._calls.callee(call)
            target = callee.target
            if callee.kind is CalleeKind.MODULE and self._effects.hands_out(*callee.imported):
                origins.extend(self._of_module_function(unit, graph, call, callee))
                continue
            if callee.kind is not CalleeKind.LOCAL or target is None or target is unit or target.nested:
                continue  # (a package-level variable's literal is a function like any: `var dcgmInit = func...`)
            if not buildtags.compatible(unit.file, target.file):
                continue  # `cuda_stub_test.go` (!cuda) never calls the `cuda` file's variant

            n = graph.node_containing(call)
            if n is None or not graph.reachable(n):
                continue
            for inner, index in self._handed_out(target):
                if self._not_chosen(call, target, inner):
                    continue  # `NewEmbedder(&Config{Provider: "ollama"})`: the branch that acquires does not run
                if index == RECEIVER_HANDOUT and _filled_local(call, unit, self._calls) is None:
                    continue  # `s.buf.Alloc(n)`, `p.Alloc(n)` of a parameter: the holder's, not this function's
                if inner.role.handle == "none" and index < 0 and _kept_by_own_receiver(call, unit, target, self._calls):
                    continue  # `b.ensureInit()` in a method of b, which records the count on b: b's
                status = ERROR_STATUS if target.returns_error else status_beside(success_beside(target, index, self._calls))
                if out_parameter(index) is not None and not target.returns_error:
                    status = status_beside(success_spelled(inner.api.status, self._calls))  # its own status, returned as it came
                beside_failure = inner in self._lifetimes(target).returned_failing
                if beside_failure:
                    status = None  # `return d, fmt.Errorf(...)`: held whether it failed or not
                if inner.role.handle == "none":  # a count (or its cleanup) handed on where it succeeds
                    handed = hand_out_status(target, inner)
                    status = handed[1] if handed is not None and handed[1] is not None else status
                resource = inner.resource
                if resource.owns is not None and nil_when_failed(target, index):
                    resource = replace(resource, nil_when_failed=True)
                api = ApiFunction(inner.api.family, target.name, status, False, (), (resource,))
                role = CallRole(target.name, _handle_role(index))
                origins.append(Origin(unit, n, call, callee.written, api, resource, role, "", via=inner, beside_failure=beside_failure))
        return origins

    def of_constructions(self, unit: Unit, graph: CFG) -> list[Origin]:
        """Values of an owning type made of what C produced (see
        `constructions`), each an acquisition of what the type releases."""
        origins = []
        for literal, owner in self._constructions.in_function(unit.node):
            n = graph.node_containing(literal)
            family = self._calls.knowledge.family_of(owner.resources[0])
            if n is None or family is None or not graph.reachable(n):
                continue
            written = syntax.text(literal.child_by_field_name("type")) + "{...}"
            if literal.parent is not None and syntax.is_address_of(literal.parent):
                literal = literal.parent  # `&Tensor{ctensor: *ptr}`: the pointer is the value made
            resource = owned_resource(owner.resources[0], owner.type_name, owner.methods, owner.idempotent, owner.inert, owner.chosen)
            api = ApiFunction(family, written, None, False, (), (resource,))
            origins.append(Origin(unit, n, literal, written, api, resource, CallRole(written, "result"), ""))
        return origins

    def choice(self, unit: Unit, acquisition: Node) -> Choice | None:
        """The values of `unit`'s arguments for which its acquisition there runs."""
        key = (unit, acquisition.id)
        if key not in self._choices:
            self._choices[key] = choice_in(unit, acquisition, self._calls.package.resolution)
        return self._choices[key]

    def _not_chosen(self, call: Node, target: Unit, inner: Origin) -> bool:
        """Whether the call's arguments choose a branch of `target` where its acquisition does not run."""
        choice = self.choice(target, inner.call)
        arguments = syntax.children(call.child_by_field_name("arguments"))
        return choice is not None and choice.excludes(arguments, variadic_from(target), self._calls.package.resolution)

    def of_literals(self, unit: Unit, graph: CFG) -> list[Origin]:
        """Acquisitions a func literal makes into this function's variables,
        where the literal runs at a known call and returns an error: called
        in place (`func() error {...}()`) or passed to a function of the
        package that calls it and returns an error (`retry(func() error
        {...})`). The resource is held where that call's error is nil."""
        if unit.body is None:
            return []
        origins = []
        for call in syntax.calls_in(unit.body):
            if syntax.enclosing_function(call) != unit.node:
                continue
            for literal in self._literals_run_by(call):
                if literal.parent is not unit or not literal.returns_error:
                    continue
                n = graph.node_containing(call)
                if n is None or not graph.reachable(n):
                    continue
                for inner, symbol in self._lifetimes(literal).handed_up:
                    if symbol.function != unit.node:
                        continue
                    api = ApiFunction(inner.api.family, inner.written, ERROR_STATUS, False, (), (inner.resource,))
                    origins.append(Origin(
                        unit, n, inner.call, inner.written, api, inner.resource, CallRole(inner.written, "captured"),
                        symbol.name, captured=symbol, through=call,
                    ))
        return origins

    def _runs_parameter(self, function: Unit, index: int, depth: int) -> bool:
        """Whether `function` calls its parameter `index`, itself or through
        functions of the package it passes it to (`RunOnDevice(id, fn)`
        returning `withLockedDevice(id, fn)`, which calls `fn()`)."""
        if calls_parameter(function, index):
            return True
        if depth <= 0:
            return False
        for call, position in _forwarded_to(function, index):
            callee = self._calls.callee(call)
            target = callee.target
            if callee.kind is CalleeKind.LOCAL and target is not None and target.kind is not UnitKind.LITERAL and target is not function:
                if self._runs_parameter(target, position, depth - 1):
                    return True
        return False

    def _literals_run_by(self, call: Node) -> list[Unit]:
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is not None and function.type == "func_literal":
            found = self._calls.literal(function)
            return [found] if found is not None else []
        if function is not None and function.type == "identifier":
            # `alloc := func() error {...}` then `alloc()`: the literal bound to a local runs here.
            symbol = self._calls.package.resolution.symbol(function)
            bound = self._calls.unit_of(symbol) if symbol is not None and symbol.is_local else None
            if bound is not None and bound.kind is UnitKind.LITERAL and bound.stored_in is symbol:
                return [bound]
        arguments = call.child_by_field_name("arguments")
        if arguments is None or not any(syntax.unparen(a).type == "func_literal" for a in syntax.children(arguments)):
            return []  # nothing to run: spare classifying the call
        callee = self._calls.callee(call)
        target = callee.target
        if callee.kind is not CalleeKind.LOCAL or target is None or not target.returns_error:
            return []
        literals = []
        for index, argument in enumerate(syntax.children(call.child_by_field_name("arguments"))):
            argument = syntax.unparen(argument)
            if argument is not None and argument.type == "func_literal" and self._runs_parameter(target, index, _FORWARDS):
                found = self._calls.literal(argument)
                if found is not None:
                    literals.append(found)
        return literals

    def _of_module_function(self, unit: Unit, graph: CFG, call: Node, callee) -> list[Origin]:
        """`gpu.Alloc(n)` of another package of the module that hands out a
        resource: an acquisition here, as its summary says."""
        n = graph.node_containing(call)
        if n is None or not graph.reachable(n):
            return []
        origins = []
        arguments = syntax.children(call.child_by_field_name("arguments"))
        for handed in self._effects.imported(callee.imported).hands_out:
            if handed.chosen_by is not None and handed.chosen_by.excludes(arguments, handed.variadic_from, self._calls.package.resolution):
                continue  # `tensor.NewTensor(data, shape)` without "gpu": the branch that allocates does not run
            found = self._calls.knowledge.resource(handed.family, handed.resource)
            if found is None:
                continue
            family, resource = found
            if handed.owner:
                # The type is named by its package: not by buf of `buf.Malloc(n)`,
                # nor by device of `device.CreateGpuInstance(...)`.
                names = self._calls.package.resolution.import_names(unit.file.root, {callee.imported[0]})
                qualifier = min(names) if names else default_import_name(callee.imported[0])
                written = handed.owner if "." in handed.owner else f"{qualifier}.{handed.owner}"
                resource = owned_resource(resource, written, handed.methods, handed.idempotent, handed.inert, handed.chosen)
                resource = replace(resource, nil_when_failed=handed.nil_when_failed)
            if handed.cleanup:
                # The function that releases it.
                resource = replace(resource, any_use_releases=True, callable_when_failed=handed.callable_when_failed)
            status = ERROR_STATUS if handed.returns_error else status_beside(as_imported(handed.succeeds_with, unit, callee.imported[0]))
            api = ApiFunction(family, callee.written, status, False, (), (resource,))
            if handed.index == RECEIVER_HANDOUT and _filled_local(call, unit, self._calls) is None:
                continue
            role = CallRole(callee.written, _handle_role(handed.index))
            origins.append(Origin(unit, n, call, callee.written, api, resource, role, "", via_text=handed.via))
        return origins

    def birth(self, origin: Origin) -> Birth | None:
        """The state right after the acquiring call: who holds the handle and
        which variable carries the status. None: nothing to follow."""
        call, role = origin.call, origin.role
        if origin.captured is not None:
            return origin, State(Phase.HELD, frozenset({origin.captured}), self._proxy(replace(origin, call=origin.through))), None
        proxy = self._proxy(origin)
        if role.handle == "none":
            return origin, State(Phase.HELD, frozenset(), proxy), None
        if role.is_result:
            return self._result_birth(origin, proxy)
        if role.handle == "receiver":
            symbol = _filled_local(call, origin.unit, self._calls)
            if symbol is None:
                return None
            return replace(origin, handle=symbol.name), State(Phase.HELD, frozenset({symbol}), proxy), None
        arguments = syntax.children(call.child_by_field_name("arguments"))
        if role.index >= len(arguments):
            return None
        argument = unwrap(arguments[role.index], self._calls)
        if argument is None:
            return None
        if role.is_out:
            argument = self._address_held(argument)
            if not syntax.is_address_of(argument):
                # Stored through a pointer the caller gave: handed over at once
                # (to the caller, where that pointer is a parameter).
                symbol = pointer_parameter(argument, self._calls)
                return (replace(origin, handle=symbol.name), None, None) if symbol is not None else None
            target = unwrap(argument.child_by_field_name("operand"), self._calls)
        else:
            target = argument
        if target is not None and target.type == "selector_expression":
            return self._field_birth(origin, target, proxy)
        if target is None or target.type != "identifier":
            return None
        symbol = self._calls.package.resolution.symbol(target)
        if symbol is None or not symbol.is_local:
            return None  # a global: the package owns it
        if not role.is_out and symbol.role is Role.PARAM and not origin.unit.returns_error and not self._releases_in(origin):
            # `func MemHostRegister(p HostPtr, n int64) { C.cuMemHostRegister(p, n, 0) }`:
            # the caller's memory, registered for the caller, who unregisters
            # it. (One that reports a failure may fail after registering.)
            return None
        origin = replace(origin, handle=symbol.name)
        if self._returned_beside(call, symbol):
            return origin, None, None
        return origin, State(Phase.HELD, frozenset({symbol}), proxy), None

    def _only_discarded(self, target: Node) -> bool:
        """`cleanup, err := dcgm.Init(mode)` then only `_ = cleanup`: the
        variable silences the compiler and is dropped as `_` would be."""
        symbol = self._calls.package.resolution.symbol(target)
        if symbol is None or not symbol.is_local:
            return False
        declared = symbol.node.id if symbol.node is not None else None
        references = [node for node in self._calls.references(symbol) if node.id not in (target.id, declared)]
        return bool(references) and all(_discarded(node) for node in references)

    def _releases_in(self, origin: Origin) -> bool:
        """Whether the acquiring function releases the resource anywhere."""
        return any(
            resource is origin.resource or resource.name == origin.resource.name
            for fact in self._calls.api_facts_in(origin.unit) for resource, _ in fact.api.roles("release")
        )

    def _returned_beside(self, call: Node, symbol) -> bool:
        """`return ptr, check(C.cudaMalloc(&ptr, n))`: the statement that
        allocates also returns the variable. Go leaves the order of a plain
        variable's read and a call in one expression list unspecified; gc
        makes the calls first, and the code means the allocated value: it is
        handed out (nil beside a failing status)."""
        statement = call.parent
        while statement is not None and statement.type not in ("return_statement", "func_literal", "block"):
            statement = statement.parent
        if statement is None or statement.type != "return_statement":
            return False
        resolution = self._calls.package.resolution
        for expression in syntax.returned(statement):
            value = unwrap(expression, self._calls)
            if value is not None and value.type == "identifier" and resolution.symbol(value) is symbol:
                return True
        return False

    def _address_held(self, argument: Node) -> Node:
        """`&d` where the out-argument is a local that holds it and is never
        assigned again (`pd := &d`, `cPtr := unsafe.Pointer(&ptr)`): the
        allocation lands in d. Anything else as it is."""
        if argument.type != "identifier":
            return argument
        symbol = self._calls.package.resolution.symbol(argument)
        if symbol is None or not symbol.is_local or symbol.init is None or symbol.init_index >= 0:
            return argument
        held = unwrap(symbol.init, self._calls)
        if not syntax.is_address_of(held):
            return argument
        for reference in self._calls.references(symbol):
            holder = reference.parent.parent if reference.parent is not None and reference.parent.type == "expression_list" else None
            if holder is not None and holder.type == "assignment_statement" and holder.child_by_field_name("left") == reference.parent:
                return argument  # assigned again: which variable it points at is not known
        return held

    def _field_birth(self, origin: Origin, field: Node, proxy) -> Birth | None:
        """`C.cuCtxCreate(&ctx.id, ...)` into a field of a value this function
        makes (`var ctx Context`, `d := new(TensorD)`) of a type that owns
        the resource: the value holds it from then on, released by the
        type's method. A field of anything else (`&b.ptr` of a receiver or
        parameter, of a global) is owned by the struct from the start."""
        operand = syntax.unparen(field.child_by_field_name("operand"))
        if operand is None or operand.type != "identifier" or (proxy is None and origin.status is not None):
            return None  # (a status tested in a way not followed: the struct's, as before)
        symbol = self._calls.package.resolution.symbol(operand)
        if symbol is None or symbol.role not in (Role.LOCAL, Role.RESULT) or symbol.function != origin.unit.node:
            return None  # (a named result the function makes: `m = new(GpuMem)`, returned bare)
        owner = self._owners.of(self._calls.types.type_of(operand))
        if owner is None or origin.resource not in owner.resources:
            return self._held_in_field(origin, field, proxy)
        if self._owners.finalized(owner.type_name):
            return None  # a type with a finalizer: the collector releases a value dropped
        resource = owned_resource(origin.resource, owner.type_name, owner.methods, owner.idempotent, owner.inert, owner.chosen)
        return replace(origin, handle=symbol.name, resource=resource), State(Phase.HELD, frozenset({symbol}), proxy), None

    def _held_in_field(self, origin: Origin, field: Node, proxy) -> Birth | None:
        """`o.name = C.CString(s)` into a struct this function makes and
        keeps (`var o C.struct_opts`): o holds it in that field, released by
        a release of `o.name`, handed on with o."""
        held = local_holder(field, self._calls)
        if held is None:
            return None
        holder, name = held
        origin = replace(origin, handle=syntax.text(field))
        return origin, State(Phase.HELD, frozenset({holder}), proxy, fields=frozenset({(holder, name)})), None

    def _result_birth(self, origin: Origin, proxy) -> Birth | None:
        call = origin.call
        child, parent = value_parent(call, self._calls.callee)
        if parent is None:
            return None
        if parent.type == "expression_list":
            holder = parent.parent
            if holder is not None and holder.type == "return_statement":
                return origin, None, None
            if holder is not None and holder.type in ("short_var_declaration", "assignment_statement", "var_spec"):
                left = (
                    holder.children_by_field_name("name") if holder.type == "var_spec"
                    else syntax.expressions(holder.child_by_field_name("left"))
                )
                right = syntax.children(parent)
                if len(right) == 1:
                    index = origin.role.index if len(left) > 1 else 0
                else:
                    index = [c.id for c in right].index(child.id) if origin.role.index == 0 else -1
                if not 0 <= index < len(left):
                    return None
                target = syntax.unparen(left[index])
                if target is not None and target.type == "identifier":
                    by_kind = any(role.handle == "none" for role in origin.resource.release)
                    if syntax.text(target) == "_" or (by_kind and self._only_discarded(target)):
                        if by_kind:
                            # `_, err := dcgm.Init(mode)` then `dcgm.Shutdown()`: the
                            # release it hands out is dropped, the count released by kind.
                            return replace(origin, role=CallRole(origin.role.call, "none")), State(Phase.HELD, frozenset(), proxy), None
                        return origin, State(Phase.HELD, frozenset()), "its result is assigned to _"
                    symbol = self._calls.package.resolution.symbol(target)
                    if symbol is not None and symbol.is_local:
                        return replace(origin, handle=symbol.name), State(Phase.HELD, frozenset({symbol}), proxy), None
                if target is not None and target.type == "selector_expression":
                    return self._held_in_field(origin, target, proxy) or (origin, None, None)
                collection = local_collection(target, self._calls.package.resolution) if target is not None else None
                if collection is not None:
                    return _held_in_collection(origin, collection, proxy)  # `argv[i] = C.CString(a)`
                return origin, None, None
            return None
        if parent.type == "literal_element":
            held = literal_holder(parent, self._calls.package.resolution)
            if held is not None:
                # `o := C.struct_opts{name: C.CString(s)}`
                holder, name = held
                origin = replace(origin, handle=f"{holder.name}.{name}")
                return origin, State(Phase.HELD, frozenset({holder}), proxy, fields=frozenset({held})), None
            return origin, None, None
        if parent.type == "expression_statement":
            if self._released_by_kind_in(origin):
                # `dcgm.Init(mode)` then `dcgm.Shutdown()`: as with `_`, the count is released by kind.
                return replace(origin, role=CallRole(origin.role.call, "none")), State(Phase.HELD, frozenset(), proxy), None
            return origin, State(Phase.HELD, frozenset()), "its result is discarded"
        if parent.type == "argument_list":
            return self._temporary(origin, parent.parent, [c.id for c in syntax.children(parent)].index(child.id))
        if parent.type in ("binary_expression", "if_statement", "unary_expression"):
            return origin, State(Phase.HELD, frozenset()), "its result is only compared, never stored"
        return origin, None, None

    def _released_by_kind_in(self, origin: Origin) -> bool:
        """Whether the function gives the resource back by kind somewhere
        (`dcgm.Shutdown()`): a release it handed out and the caller dropped
        is then not the only way back."""
        by_kind = {role.call for role in origin.resource.release if role.handle == "none"}
        return bool(by_kind) and any(
            fact.api is not None and fact.api.name in by_kind for fact in self._calls.api_facts_in(origin.unit)
        )

    def _temporary(self, origin: Origin, call: Node, index: int) -> Birth:
        """`C.puts(C.CString(s))`: the result is handed straight to a call."""
        callee = self._calls.callee(call)
        if callee.kind is CalleeKind.API and callee.api is not None:
            if any(role.index == index for _, role in callee.api.roles("release")):
                return origin, None, None
            if any(role.index == index for _, role in callee.api.roles("transfer")):
                return origin, None, None
            return origin, State(Phase.HELD, frozenset()), f"it is passed to {callee.written} and then lost"
        if callee.kind is CalleeKind.BUILTIN and callee.written == "append" and index > 0:
            collection = appended_to(call, self._calls.package.resolution)
            if collection is not None:
                return _held_in_collection(origin, collection, None)  # `argv = append(argv, C.CString(a))`
            return origin, None, None
        if callee.kind in (CalleeKind.FAMILY, CalleeKind.STD_BORROW):
            return origin, State(Phase.HELD, frozenset()), f"it is passed to {callee.written} and then lost"
        if callee.kind is CalleeKind.LOCAL and callee.target is not None:
            if self._effects.effect_of_argument(callee.target, index) is Effect.BORROWS:
                return origin, State(Phase.HELD, frozenset()), f"it is passed to {callee.written}, which does not free it, and then lost"
        return origin, None, None

    def _proxy(self, origin: Origin) -> Symbol | Node | None:
        """The variable (or call, inside a condition) whose test says whether
        the acquire succeeded."""
        status = origin.status
        current: Node = origin.call
        while True:
            child, parent = value_parent(current, self._calls.callee)
            if parent is None:
                return None
            if parent.type == "binary_expression" or (
                parent.type == "expression_switch_statement" and parent.child_by_field_name("value") == child
            ):
                return current  # `switch C.cudaStreamCreate(&s) { case C.cudaSuccess: ... }` too
            if parent.type == "argument_list":
                current = parent.parent  # a helper converting the status: its result carries it
                continue
            holder = parent.parent
            if parent.type == "selector_expression" and holder is not None and holder.type == "call_expression" and holder.child_by_field_name("function") == parent:
                current = holder  # `Status(st).error("x")`: a method of the converted status carries it
                continue
            if parent.type == "expression_list":
                holder = parent.parent
                if holder is None or holder.type not in ("short_var_declaration", "assignment_statement", "var_spec"):
                    return None
                left = (
                    holder.children_by_field_name("name") if holder.type == "var_spec"
                    else syntax.expressions(holder.child_by_field_name("left"))
                )
                if current is origin.call:
                    if status is None:
                        return None
                    index = status.result_index(len(left))
                else:
                    index = len(left) - 1
                if not 0 <= index < len(left) or (
                    current is origin.call and origin.role.is_result and index == origin.role.index
                    and (status is None or status.kind != "field")  # (a result struct is both)
                ):
                    return None
                target = syntax.unparen(left[index])
                if target is None or target.type != "identifier" or syntax.text(target) == "_":
                    return None
                return self._calls.package.resolution.symbol(target)
            return None


def _held_in_collection(origin: Origin, collection: Symbol, proxy) -> Birth:
    """The acquisition stored straight into a local slice the function keeps."""
    return origin, State(Phase.HELD, frozenset({collection}), proxy, collections=frozenset({collection})), None


def _discarded(reference: Node) -> bool:
    """`_ = x`: the reference is the whole right side of an assignment to the blank identifier."""
    values = reference.parent
    statement = values.parent if values is not None and values.type == "expression_list" else None
    if statement is None or statement.type != "assignment_statement" or statement.child_by_field_name("right") != values:
        return False
    return [syntax.text(t) for t in syntax.expressions(statement.child_by_field_name("left"))] == ["_"] and len(syntax.children(values)) == 1


def _handle_role(index: int) -> str:
    """Where a hand-out of that index puts the handle at the caller's call."""
    if index == RECEIVER_HANDOUT:
        return "receiver"
    if (parameter := out_parameter(index)) is not None:
        return f"out{parameter}"
    return "none" if index < 0 else f"result{index}"


def _kept_by_own_receiver(call: Node, unit: Unit, target: Unit, calls: CallIndex) -> bool:
    """A method of the same value (`b.ensureInit()` in a method of b) that
    records the count it takes on its receiver (`b.initialized = true`, a
    lazy initialisation): the value holds the count, and whatever releases
    the value gives it back; the calling method neither holds nor loses it.
    Both receivers must be pointers: a value receiver's record is on a copy."""
    receiver, own = unit.outermost.receiver, target.receiver
    operand = syntax.method_operand(call)
    if receiver is None or own is None or target.body is None or operand is None or operand.type != "identifier":
        return False
    if calls.package.resolution.symbol(operand) is not receiver:
        return False  # another value of that name (a shadowing local)
    if any(r.type_node is None or r.type_node.type != "pointer_type" for r in (receiver, own)):
        return False
    return any(
        flag.type == "selector_expression" and syntax.text(flag.child_by_field_name("operand")) == own.name
        for flag in set_in(target.body)
    )


def _filled_local(call: Node, unit: Unit, calls: CallIndex) -> Symbol | None:
    """The variable a method call fills through its receiver (`out.MallocAsync(...)`):
    a local of this function, not a parameter, a field or a global."""
    operand = syntax.method_operand(call)
    symbol = calls.package.resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
    if symbol is None or symbol.role is not Role.LOCAL or symbol.function != unit.node:
        return None
    # Only a value that holds nothing yet: `var s Scratch`, `s := &Scratch{}`,
    # `new(Scratch)`; a value a constructor made already holds its resource
    # (`e := newEngine()` then `e.grow(n)` replaces a buffer it owns).
    init = syntax.unparen(symbol.init) if symbol.init is not None and symbol.init_index < 0 else None
    if syntax.is_address_of(init):
        init = syntax.unparen(init.child_by_field_name("operand"))
    if symbol.init is not None and not (
        init is not None and (init.type == "composite_literal" or syntax.is_call_of(init, "new"))
    ):
        return None
    # `app := &App{}; defer app.Close()` before `app.initASR()`: the deferred
    # method runs on the same value at exit, after whatever fills it.
    for node in syntax.walk(unit.body, into_functions=False):
        if node.type == "defer_statement" and node.start_byte < call.start_byte and syntax.text(node).startswith(f"defer {symbol.name}."):
            return None
    return symbol


def _forwarded_to(function: Unit, index: int) -> Iterator[tuple[Node, int]]:
    """(call, argument index) where `function` passes its parameter `index`
    on, on its own goroutine (`return withLockedDevice(id, fn)`)."""
    params = function.params
    if index >= len(params) or function.body is None:
        return
    parameter = params[index]
    for call in syntax.calls_in(function.body):
        if syntax.enclosing_function(call) != function.node or syntax.statement_of_call(call) == "go_statement":
            continue
        for position, argument in enumerate(syntax.children(call.child_by_field_name("arguments"))):
            argument = syntax.unparen(argument)
            if argument is not None and argument.type == "identifier" and function.resolution.symbol(argument) is parameter:
                yield call, position


def pointer_parameter(argument: Node | None, calls: CallIndex) -> Symbol | None:
    """The parameter a pointer argument is, directly or through locals made
    of it by conversions (a generated binding's `chandle :=
    (*C.cudnnHandle_t)(unsafe.Pointer(handle))`)."""
    value = traced_value(argument, calls)
    symbol = calls.package.resolution.symbol(value) if value is not None and value.type == "identifier" else None
    return symbol if symbol is not None and symbol.role is Role.PARAM else None


def traced_value(value: Node | None, calls: CallIndex) -> Node | None:
    """A value followed back through conversions and the locals it was
    assigned from once (`__v := (Status)(__ret)`, `chandle := (*C.T)(p)`)."""
    node = unwrap(value, calls)
    for _ in range(4):
        symbol = calls.package.resolution.symbol(node) if node is not None and node.type == "identifier" else None
        if symbol is None or symbol.kind is not SymbolKind.VAR or not symbol.is_local or symbol.init is None or symbol.init_index >= 0:
            return node
        node = unwrap(symbol.init, calls)
    return node
