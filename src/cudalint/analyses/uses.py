"""Variable uses: how a statement uses each local variable it mentions.

The vocabulary of the resource engine, and of the rules that ask what a
defer releases or whether a status variable is read.

For every reference to a local variable in the syntax a CFG node evaluates,
one Use says what the code does with the value: releases it through a spec'd
call, passes it to a function of this package, returns it, stores it where
the function loses track of it, copies it to another local, overwrites the
variable, dereferences it, captures it in a func literal... The engine then
only has to ask, per node, "what happens to the variables that hold my
handle?" and never looks at syntax itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import value_parent
from cudalint.analyses.calls import CALLS, Callee, CalleeKind, CallIndex, viewed_pointer
from cudalint.analyses.receiver_fields import zero_value
from cudalint.framework import Analysis
from cudalint.functions import Unit
from cudalint.gotypes import imported_type
from cudalint.knowledge import CallRole, ResourceSpec, StatusSpec
from cudalint.scope import Resolution, Role, Symbol, SymbolKind

# cgo's spelling of a C function passed as a pointer: `(*[0]byte)(C.onDone)`.
_CALLBACK = re.compile(r"^\(\s*\*\s*\[0\]byte\s*\)\s*\(\s*C\.\w+\s*\)$")


# Callees that take a method value to run it later (`t.Cleanup(b.Free)`,
# `context.AfterFunc(ctx, b.Free)`): of another package, not the API nor
# the module (whose facts say what its functions do with their arguments).
_REGISTERING = frozenset({CalleeKind.STD_BORROW, CalleeKind.UNKNOWN})


def _formats(written: str) -> bool:
    """`log.Printf("%d", b.ID)`, `fmt.Errorf(...)`: formatting and logging
    take values to print, never a method value to run later."""
    return written.split(".", 1)[0] in ("fmt", "log", "slog", "errors")


class UseKind(str, Enum):
    RELEASE = "release"  # the handle argument of a release call
    TRANSFER_CALL = "transfer-call"  # the handle argument of a call that takes ownership
    ACQUIRE_OUT = "acquire-out"  # `&x` as the out-argument of an acquire: x is overwritten
    WRITE = "write"  # x is assigned
    ALIAS = "alias"  # copied to another local variable, or into a field of a local struct (detail: the target, the field)
    RETURN = "return"
    STORE = "store"  # stored in a field, index, global, through a pointer, composite, appended, sent
    PASS_LOCAL = "pass-local"  # an argument of a function of this package (detail: unit, index)
    PASS_API = "pass-api"  # an argument of an API-family or C call: borrowed
    PASS_UNKNOWN = "pass-unknown"  # an argument of anything else: the callee may keep it
    DEREF = "deref"  # *x, x[i], x.f
    CALLED = "called"  # x(...): the handle is a function value
    METHOD = "method"  # x.M(...) (detail: the method name)
    CAPTURE = "capture"  # referenced in a func literal (detail: the literal's unit)
    READ = "read"  # anything else: compared, formatted, converted into an expression
    DISCARDED = "discarded"  # `_ = x`: said unused, which uses nothing


@dataclass(frozen=True)
class Use:
    kind: UseKind
    symbol: Symbol
    node: Node  # the identifier
    call: Node | None = None  # the call involved, if any
    callee: Callee | None = None
    role: tuple[ResourceSpec, CallRole] | None = None  # RELEASE / TRANSFER_CALL
    target: Symbol | None = None  # ALIAS
    field: str = ""  # ALIAS into `target.field`, a field of a struct the function keeps; DEREF of `x.field`
    element: bool = False  # ALIAS into an element of target, a local slice or array (`argv[i] = cs`)

    @property
    def collects(self) -> bool:
        """An ALIAS that puts the value in a local collection (appended, or stored in an element)."""
        return self.kind is UseKind.ALIAS and (self.call is not None or self.element)
    unit: Unit | None = None  # PASS_LOCAL (callee), CAPTURE (literal)
    index: int = -1  # PASS_LOCAL: the parameter position
    method: str = ""  # METHOD
    deferred: bool = False  # in `defer f(...)`: happens when the function returns
    spawned: bool = False  # in `go f(...)`
    # ALIAS: the target holds pointers to the variable, not the handle
    # (`args := []unsafe.Pointer{unsafe.Pointer(&d)}`, a kernel's parameters).
    pointer: bool = False


def _is_tracked(symbol: Symbol | None) -> bool:
    return symbol is not None and symbol.kind is SymbolKind.VAR and symbol.is_local


class VariableUses:
    """Uses of local variables per CFG node syntax, computed once and cached."""

    def __init__(self, facts: CallIndex):
        self.facts = facts
        self.resolution = facts.package.resolution
        self._by_root: dict[Node, list[Use]] = {}
        self._literal_units = {unit.node: unit for unit in facts.package.units}
        self._captures: dict[Unit, frozenset[Symbol]] = {}

    def captures(self, literal: Unit) -> frozenset[Symbol]:
        """The variables of enclosing functions a func literal refers to
        (it shares them: what it does to them, its encloser sees)."""
        found = self._captures.get(literal)
        if found is None:
            body = literal.body
            names = set()
            if body is not None:
                for use in self.uses([body]):
                    symbol = use.symbol
                    if symbol.function is not None and symbol.function != literal.node and not (
                        symbol.node is not None and literal.node.start_byte <= symbol.node.start_byte < literal.node.end_byte
                    ):
                        names.add(symbol)
            found = self._captures[literal] = frozenset(names)
        return found

    def uses(self, roots: list[Node]) -> list[Use]:
        found: list[Use] = []
        for root in roots:
            if root not in self._by_root:
                self._by_root[root] = self._scan(root)
            found.extend(self._by_root[root])
        return found

    def _scan(self, root: Node) -> list[Use]:
        found = []
        for node in syntax.walk(root):
            if node.type != "identifier":
                continue
            symbol = self.resolution.symbol(node)
            if not _is_tracked(symbol):
                continue
            if self.resolution.declarations.get(node) is symbol and not _declared_by_assignment(node):
                continue
            found.append(self._classify(node, symbol, root))
        # A call acts once its arguments are evaluated (`h.Cumsum(h.DType(), true)` reads h first).
        found.sort(key=lambda use: use.call.end_byte if use.call is not None else use.node.start_byte)
        return found

    # -- classification -------------------------------------------------------

    def _method_value(self, symbol: Symbol) -> tuple[Symbol, str] | None:
        """A local declared as a method value of another local (`free :=
        b.Free`): that variable and the method."""
        init = syntax.unparen(symbol.init) if symbol.init_index < 0 else None
        if init is None or init.type != "selector_expression":
            return None
        operand = syntax.unparen(init.child_by_field_name("operand"))
        found = self.resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
        return (found, syntax.text(init.child_by_field_name("field"))) if found is not None and _is_tracked(found) else None

    def _classify(self, identifier: Node, symbol: Symbol, root: Node) -> Use:
        literal = _enclosing_literal(identifier, root)
        if literal is not None:
            unit = self._literal_units.get(literal)
            if unit is not None and symbol.function != literal and not _declared_inside(symbol, literal):
                return Use(UseKind.CAPTURE, symbol, identifier, unit=unit, deferred=_is_deferred_literal(literal, self.resolution))
        return self._classify_from(identifier, symbol, identifier)

    def as_payload(self, use: Use, status: StatusSpec | None) -> Use:
        """A use of `r.res`, where r is a result struct (its status of kind
        "field", its other field the message), as the use of r itself: the
        payload is the handle."""
        selector = use.node.parent
        if (
            status is None or status.kind != "field" or use.kind is not UseKind.DEREF or not use.field or use.field == status.field
            or selector is None or selector.type != "selector_expression"
        ):
            return use
        return self._classify_from(use.node, use.symbol, selector)

    def _classify_from(self, identifier: Node, symbol: Symbol, start: Node) -> Use:
        """The use of the variable that the expression `start` is (the
        identifier, or an expression that reads its bits)."""
        child, parent = start, start.parent
        while parent is not None:
            kind = parent.type
            if kind in ("parenthesized_expression", "type_conversion_expression", "variadic_argument"):
                child, parent = parent, parent.parent  # (`append(xs, batch...)`: batch is the argument)
                continue
            if kind == "argument_list":
                call = parent.parent
                callee = self.facts.callee(call)
                if callee.kind is CalleeKind.CONVERSION or (callee.kind is CalleeKind.LOCAL and self.facts.accessed(call) is not None):
                    child, parent = call, call.parent  # `raw(p)` reads p's bits, as a conversion does
                    continue
                if viewed_pointer(call, self.facts) is not None and syntax.children(parent)[0] == child:
                    child, parent = call, call.parent  # `unsafe.Slice(p, n)`: the same memory, as a slice
                    continue
                index = [c.id for c in syntax.children(parent)].index(child.id)
                return self._argument(symbol, identifier, call, callee, index)
            if kind == "unary_expression":
                operator = syntax.text(parent.child_by_field_name("operator"))
                if operator == "&":
                    return self._address_of(symbol, identifier, parent)
                if operator == "*":
                    if parent.parent is not None and parent.parent.type in ("literal_element", "keyed_element"):
                        return Use(UseKind.STORE, symbol, identifier)  # `&Pinned{Buffer: *b}`: the value copied in
                    outer = parent.parent
                    if (
                        outer is not None and outer.type == "expression_list" and outer.parent is not None
                        and outer.parent.type == "return_statement" and self._of_go_type(identifier)
                    ):
                        return Use(UseKind.RETURN, symbol, identifier)  # `return *slice`: the value itself handed back
                    if child == identifier and syntax.assigned_whole(parent) and self._of_go_type(identifier):
                        # `*buf = nb` after `buf.Free()` replaces the Go value buf points to (`*(*uint64)(cVal)
                        # = v` writes into C memory: a use); `*ds = T{}` clears it: what was released stays so.
                        cleared = (value := syntax.assigned_value(parent)) is not None and value[1] is None and zero_value(value[0])
                        return Use(UseKind.DISCARDED if cleared else UseKind.WRITE, symbol, identifier)
                    return Use(UseKind.DEREF, symbol, identifier)
                return Use(UseKind.READ, symbol, identifier)
            if kind == "selector_expression":
                holder = parent.parent
                if holder is not None and holder.type == "call_expression" and holder.child_by_field_name("function") == parent:
                    if self.facts.accessed(holder) is not None:
                        child, parent = holder, holder.parent  # `p.ptr()`: the package's accessor reads p
                        continue
                    return Use(
                        UseKind.METHOD, symbol, identifier, call=holder,
                        method=syntax.text(parent.child_by_field_name("field")),
                        deferred=syntax.statement_of_call(holder) == "defer_statement",
                    )
                outer = holder.parent if holder is not None and holder.type == "selector_expression" else None
                if outer is not None and outer.type == "call_expression" and outer.child_by_field_name("function") == holder:
                    # `resp.Body.Close()`: a method of one of its fields.
                    return Use(
                        UseKind.METHOD, symbol, identifier, call=outer,
                        method=f"{syntax.text(parent.child_by_field_name('field'))}.{syntax.text(holder.child_by_field_name('field'))}",
                        deferred=syntax.statement_of_call(outer) == "defer_statement",
                    )
                return self._field_use(symbol, identifier, parent)
            if kind in ("index_expression", "slice_expression"):
                operand = parent.child_by_field_name("operand")
                if operand == child and kind == "index_expression" and syntax.returned_first_element(parent):
                    return Use(UseKind.RETURN, symbol, identifier)  # `return &arr[0]`: the memory arr points to
                if operand == child and kind == "index_expression":
                    pointer = self._element_address_kept(parent)
                    if pointer is not None and pointer is not symbol:
                        # `pass = &argv[0]`: pass points into argv, and holds what it holds.
                        return Use(UseKind.ALIAS, symbol, identifier, target=pointer)
                    called = parent.parent
                    if called is not None and called.type == "call_expression" and called.child_by_field_name("function") == parent:
                        # `cleanups[i]()`: an element run, as `for _, c := range cleanups { c() }` runs each.
                        return Use(UseKind.STORE, symbol, identifier)
                return Use(UseKind.DEREF if operand == child else UseKind.READ, symbol, identifier)
            if kind == "call_expression" and parent.child_by_field_name("function") == child:
                deferred = syntax.statement_of_call(parent) == "defer_statement"
                bound = self._method_value(symbol)
                if bound is not None and child == identifier:
                    # `free := b.Free` then `free()`: b's method is called.
                    operand, method = bound
                    return Use(UseKind.METHOD, operand, identifier, call=parent, method=method, deferred=deferred)
                return Use(UseKind.CALLED, symbol, identifier, call=parent, deferred=deferred)
            if kind == "expression_list":
                return self._list_member(symbol, identifier, child, parent)
            if kind in ("literal_element", "keyed_element"):
                held = literal_holder(parent, self.resolution)
                if held is not None and held[0] is not symbol:
                    return Use(UseKind.ALIAS, symbol, identifier, target=held[0], field=held[1])
                return Use(UseKind.STORE, symbol, identifier)
            if kind == "send_statement":
                value = parent.child_by_field_name("value")
                return Use(UseKind.STORE if value == child else UseKind.READ, symbol, identifier)
            if kind in ("inc_statement", "dec_statement"):
                return Use(UseKind.WRITE, symbol, identifier)
            if kind == "range_clause" and parent.child_by_field_name("right") == child:
                # `for _, cleanup := range cleanups`: what the loop does with
                # each element is not followed; the collection is handed on.
                return Use(UseKind.STORE, symbol, identifier)
            if kind == "var_spec":
                return Use(UseKind.WRITE, symbol, identifier)
            return Use(UseKind.READ, symbol, identifier)
        return Use(UseKind.READ, symbol, identifier)

    def _calls_argument(self, call: Node, argument: Node) -> bool:
        """Whether the package's function a call runs calls the parameter
        this argument is given to, on its own goroutine."""
        callee = self.facts.callee(call)
        if callee.kind is not CalleeKind.LOCAL or callee.target is None:
            return False
        index = next((i for i, a in enumerate(syntax.children(call.child_by_field_name("arguments"))) if a.id == argument.id), None)
        return index is not None and calls_parameter(callee.target, index)

    def _field_use(self, symbol: Symbol, identifier: Node, selector: Node) -> Use:
        """`x.f`: a read of a field, which an API release of it
        (`C.cudaFree(b.ptr)`) marks with the release's role, so that a value
        of a type owning that resource is released by it. A method value
        appended to a local slice (`cleanups = append(cleanups, b.Free)`)
        puts x in that slice."""
        name = syntax.text(selector.child_by_field_name("field"))
        child, parent = selector, selector.parent
        call = parent.parent if parent is not None and parent.type == "argument_list" else None
        if call is not None and syntax.children(parent)[0] != selector and syntax.text(call.child_by_field_name("function")) == "append":
            collection = self.appended_to(call)
            if collection is not None:
                return Use(UseKind.ALIAS, symbol, identifier, target=collection, call=call, callee=self.facts.callee(call))
        if call is not None and self._calls_argument(call, selector):
            # `defer logClose(dev, "engine", eng.Close)` where logClose calls
            # its function parameter: the method runs there, as `eng.Close()` would.
            return Use(
                UseKind.METHOD, symbol, identifier, call=call, method=name,
                deferred=syntax.statement_of_call(call) == "defer_statement",
            )
        if call is not None and self.facts.callee(call).kind in _REGISTERING and not self._names_field(selector) and not _formats(self.facts.callee(call).written):
            # `t.Cleanup(b.Free)`: the method value is registered to run later,
            # as `defer b.Free()` is (what the method does decides, for a
            # type of this package or of another, as for any method call).
            return Use(UseKind.METHOD, symbol, identifier, call=call, method=name, deferred=True)
        if self._run_at_exit(selector):
            # `release = b.Free`, where `defer func() { release() }()` runs what release holds at exit.
            return Use(UseKind.METHOD, symbol, identifier, method=name, deferred=True)
        while parent is not None:
            if parent.type in ("parenthesized_expression", "type_conversion_expression"):
                child, parent = parent, parent.parent
                continue
            if parent.type != "argument_list" or parent.parent is None:
                break
            call = parent.parent
            callee = self.facts.callee(call)
            if callee.kind is CalleeKind.CONVERSION:
                child, parent = call, call.parent
                continue
            if callee.kind is CalleeKind.API and callee.api is not None:
                index = [c.id for c in syntax.children(parent)].index(child.id)
                deferred = syntax.statement_of_call(call) == "defer_statement"
                for resource, role in callee.api.roles("release"):
                    if role.index == index:
                        return Use(
                            UseKind.DEREF, symbol, identifier, call=call, callee=callee, role=(resource, role), deferred=deferred, field=name,
                        )
                # `C.cudaMemcpy(b.ptr, ...)`: the field handed to the API.
                return Use(UseKind.DEREF, symbol, identifier, call=call, callee=callee, deferred=deferred, field=name)
            break
        return Use(UseKind.DEREF, symbol, identifier, field=name)

    def _argument(self, symbol: Symbol, identifier: Node, call: Node, callee: Callee, index: int) -> Use:
        statement = syntax.statement_of_call(call)
        deferred, spawned = statement == "defer_statement", statement == "go_statement"
        common = {"call": call, "callee": callee, "deferred": deferred, "spawned": spawned}
        if spawned:
            return Use(UseKind.PASS_UNKNOWN, symbol, identifier, **common)
        if callee.kind is CalleeKind.API and callee.api is not None:
            for resource, role in callee.api.roles("release"):
                if role.index == index:
                    return Use(UseKind.RELEASE, symbol, identifier, role=(resource, role), **common)
            for resource, role in callee.api.roles("transfer"):
                if role.index == index:
                    moved_to = self._result_variable(call) if role in resource.moves else None
                    if moved_to is not None and moved_to is not symbol:
                        # `grown := C.realloc(buf, n)`: grown holds it from here on (buf where it failed).
                        return Use(UseKind.ALIAS, symbol, identifier, target=moved_to)
                    return Use(UseKind.TRANSFER_CALL, symbol, identifier, role=(resource, role), **common)
            if index in callee.api.kept_args or _given_callback(call):
                return Use(UseKind.TRANSFER_CALL, symbol, identifier, **common)
            return Use(UseKind.PASS_API, symbol, identifier, **common)
        if callee.kind is CalleeKind.FAMILY:
            kept = _given_callback(call) or self._kept_by_c(callee.written, index)
            return Use(UseKind.TRANSFER_CALL if kept else UseKind.PASS_API, symbol, identifier, **common)
        if callee.kind in (CalleeKind.STD_BORROW,):
            return Use(UseKind.READ, symbol, identifier, **common)
        if callee.kind is CalleeKind.BUILTIN:
            if callee.written in ("len", "cap") and _in_loop_header(call):
                # `for i := 0; i < len(bufs); i++ { free(bufs[i]) }`: the
                # loop walks the collection's elements.
                return Use(UseKind.DEREF, symbol, identifier, **common)
            if callee.written == "append":
                collection = self.appended_to(call)
                if collection is not None:
                    # `xs = append(xs, h)`: h is held in the local slice xs
                    # (and xs stays xs, not overwritten).
                    return Use(UseKind.ALIAS, symbol, identifier, target=collection, **common)
                if index > 0:
                    return Use(UseKind.STORE, symbol, identifier, **common)
            return Use(UseKind.READ, symbol, identifier, **common)
        if callee.kind in (CalleeKind.LOCAL, CalleeKind.VALUE) and callee.target is not None:
            return Use(UseKind.PASS_LOCAL, symbol, identifier, unit=callee.target, index=index, **common)
        if callee.kind is CalleeKind.MODULE:
            return Use(UseKind.PASS_LOCAL, symbol, identifier, index=index, **common)
        return Use(UseKind.PASS_UNKNOWN, symbol, identifier, **common)

    def _run_at_exit(self, value: Node) -> bool:
        """Whether the value is assigned to a local function variable that a
        deferred literal of the same function calls (`release = b.Free` with
        `defer func() { release() }()`)."""
        assigned = value.parent.parent if value.parent is not None and value.parent.type == "expression_list" else None
        if assigned is None or assigned.type != "assignment_statement" or assigned.child_by_field_name("right") != value.parent:
            return False
        targets = syntax.expressions(assigned.child_by_field_name("left"))
        if len(targets) != 1 or targets[0].type != "identifier":
            return False
        variable = self.resolution.symbol(targets[0])
        function = syntax.enclosing_function(value)
        if variable is None or not variable.is_local or function is None:
            return False
        for statement in syntax.walk(function):
            literal = syntax.statement_callee(statement) if statement.type == "defer_statement" else None
            if literal is not None and literal.type == "func_literal" and any(
                (called := syntax.unparen(call.child_by_field_name("function"))) is not None and called.type == "identifier"
                and self.resolution.symbol(called) is variable
                for call in syntax.calls_in(literal.child_by_field_name("body"))
            ):
                return True
        return False

    def _names_field(self, selector: Node) -> bool:
        """Whether `x.f` is a field of x's struct type of this package (not a
        method value), or, for another package's type, no method its facts
        describe (`log.Printf("%d", b.ID)` of a `*batch.Batch`)."""
        operand = syntax.unparen(selector.child_by_field_name("operand"))
        field = syntax.text(selector.child_by_field_name("field"))
        type_name = self.facts.types.type_of(operand)
        declared = self.facts.types.structs().get(type_name) if type_name is not None else None
        if declared is None and (typed := self.facts.types.imported_type_of(operand)) is not None:
            return not self.facts.imported.knows(typed[0], f"{typed[1]}.{field}")
        return declared is not None and field in declared[0]

    def _kept_by_c(self, written: str, index: int) -> bool:
        """Whether the package's own C function stores that argument where it
        outlives the call (cside.CFunction.keeps): `C.set_value(entry, v)`,
        whose C stores v's pointers into *entry."""
        view = self.facts.c_view
        function = view.functions.get(written[2:]) if view is not None and written.startswith("C.") else None
        return function is not None and index in function.keeps

    def _element_address_kept(self, element: Node) -> Symbol | None:
        """The local given `&xs[i]` (`pass = &argv[0]`), through conversions."""
        unary = element.parent
        if not syntax.is_address_of(unary):
            return None
        return self._result_variable(unary)

    def _result_variable(self, call: Node) -> Symbol | None:
        """The local a call's single result is assigned to, through conversions."""
        child, parent = value_parent(call, self.facts.callee)
        holder = parent.parent if parent is not None and parent.type == "expression_list" else None
        if holder is None or holder.type not in ("short_var_declaration", "assignment_statement") or holder.child_by_field_name("right") != parent:
            return None
        left, right = syntax.expressions(holder.child_by_field_name("left")), syntax.children(parent)
        if len(left) != len(right) or left[[c.id for c in right].index(child.id)].type != "identifier":
            return None
        found = self.resolution.symbol(left[[c.id for c in right].index(child.id)])
        return found if _is_tracked(found) else None

    def appended_to(self, call: Node) -> Symbol | None:
        return appended_to(call, self.resolution)

    def _of_go_type(self, identifier: Node) -> bool:
        """Whether the variable points at a value of a named Go type (`buf
        *devslice.Slice[T]`), not at C memory (`cs *C.char`)."""
        types = self.facts.types
        if types.type_of(identifier) is not None:
            return True
        imported = types.imported_type_of(identifier)
        return imported is not None and imported[0] != "C"

    def _address_of(self, symbol: Symbol, identifier: Node, unary: Node) -> Use:
        """`&x`: an acquire's out-argument overwrites x; an API or C call may
        write through it (a borrow); anything else takes the address away."""
        child, parent = unary, unary.parent
        while parent is not None and parent.type == "parenthesized_expression":
            child, parent = parent, parent.parent
        while parent is not None and parent.type == "argument_list":
            call = parent.parent
            callee = self.facts.callee(call)
            if callee.kind is CalleeKind.CONVERSION:
                child, parent = call, call.parent
                while parent is not None and parent.type == "parenthesized_expression":
                    child, parent = parent, parent.parent
                continue
            index = [c.id for c in syntax.children(parent)].index(child.id)
            if callee.kind is CalleeKind.API and callee.api is not None:
                if any(role.index == index and role.is_out for _, role in callee.api.roles("acquire")):
                    return Use(UseKind.ACQUIRE_OUT, symbol, identifier, call=call, callee=callee)
                # Some releases take the handle's address: cu.DestroyEvent(&ev).
                return self._argument(symbol, identifier, call, callee, index)
            if callee.kind is CalleeKind.FAMILY:
                return Use(UseKind.PASS_API, symbol, identifier, call=call, callee=callee)
            if callee.kind is CalleeKind.STD_BORROW:
                return Use(UseKind.READ, symbol, identifier, call=call, callee=callee)
            if callee.kind in (CalleeKind.LOCAL, CalleeKind.MODULE):
                # `gnarkMsm(&res, &points, &scalars)`: the function's summary
                # of that pointer parameter says what it does with the value.
                return self._argument(symbol, identifier, call, callee, index)
            return Use(UseKind.PASS_UNKNOWN, symbol, identifier, call=call, callee=callee)
        if parent is not None and parent.type == "unary_expression" and syntax.text(parent.child_by_field_name("operator")) == "*":
            # `*(*C.cudnnHandle_t)(unsafe.Pointer(&handle))`: handle's own bits, read as
            # C's type (a generated binding's parameter): a use of the value itself.
            return self._classify_from(identifier, symbol, parent)
        # `args := []unsafe.Pointer{unsafe.Pointer(&d)}`: a kernel's parameters
        # point at d, which still holds it; the array is another name for it.
        # (A handle itself in a literal, `bufs := []unsafe.Pointer{p}`, is stored:
        # its elements are not followed.)
        collection = literal_collection(parent, self.resolution) if parent is not None else None
        if collection is not None and collection is not symbol:
            return Use(UseKind.ALIAS, symbol, identifier, target=collection, pointer=True)
        if parent is not None and _lent_literal(parent):
            # `LaunchKernel(fn, ..., []unsafe.Pointer{unsafe.Pointer(&d)})`: the
            # call reads d's value through the pointer, d still holds it.
            return Use(UseKind.READ, symbol, identifier)
        return Use(UseKind.STORE, symbol, identifier)

    def _list_member(self, symbol: Symbol, identifier: Node, child: Node, expression_list: Node) -> Use:
        holder = expression_list.parent
        if holder is None:
            return Use(UseKind.READ, symbol, identifier)
        if holder.type == "return_statement":
            return Use(UseKind.RETURN, symbol, identifier)
        if holder.type in ("assignment_statement", "short_var_declaration"):
            left = syntax.expressions(holder.child_by_field_name("left"))
            if holder.child_by_field_name("left") == expression_list:
                return Use(UseKind.WRITE, symbol, identifier)
            right = syntax.expressions(holder.child_by_field_name("right"))
            if len(left) != len(right):
                return Use(UseKind.READ, symbol, identifier)
            return self._copied_to(symbol, identifier, left[[c.id for c in right].index(child.id)])
        if holder.type == "var_spec":
            names = holder.children_by_field_name("name")
            values = syntax.expressions(holder.child_by_field_name("value"))
            if len(names) == len(values):
                return self._copied_to(symbol, identifier, names[[c.id for c in values].index(child.id)])
            return Use(UseKind.READ, symbol, identifier)
        if holder.type in ("range_clause", "receive_statement"):
            return Use(UseKind.WRITE, symbol, identifier) if holder.child_by_field_name("left") == expression_list else Use(UseKind.READ, symbol, identifier)
        return Use(UseKind.READ, symbol, identifier)

    def _copied_to(self, symbol: Symbol, identifier: Node, target: Node) -> Use:
        target = syntax.unparen(target)
        if target is not None and target.type == "identifier":
            if syntax.text(target) == "_":
                return Use(UseKind.DISCARDED, symbol, identifier)
            destination = self.resolution.symbol(target)
            if _is_tracked(destination):
                return Use(UseKind.ALIAS, symbol, identifier, target=destination)
        collection = local_collection(target, self.resolution) if target is not None else None
        if collection is not None and collection is not symbol:
            # `argv[i] = cs`: cs is now held in argv, a slice the function keeps.
            return Use(UseKind.ALIAS, symbol, identifier, target=collection, element=True)
        held = local_holder(target, self.facts) if target is not None else None
        if held is not None and held[0] is not symbol:
            # `o.name = cs`: cs is now also held in o, a struct the function keeps.
            return Use(UseKind.ALIAS, symbol, identifier, target=held[0], field=held[1])
        return Use(UseKind.STORE, symbol, identifier)


def appended_to(call: Node, resolution) -> Symbol | None:
    """The local slice of `xs = append(xs, ...)` (or `xs := append(xs,
    ...)`), where the call is the whole right-hand side and its first
    argument is xs itself: what it appends is held in xs."""
    holder = call.parent
    if holder is None or holder.type != "expression_list" or holder.parent is None:
        return None
    statement = holder.parent
    if statement.type not in ("assignment_statement", "short_var_declaration") or statement.child_by_field_name("right") != holder:
        return None
    left, right = syntax.expressions(statement.child_by_field_name("left")), syntax.expressions(holder)
    arguments = syntax.children(call.child_by_field_name("arguments"))
    if len(left) != 1 or len(right) != 1 or not arguments:
        return None
    target, first = syntax.unparen(left[0]), syntax.unparen(arguments[0])
    if target is None or first is None or target.type != "identifier" or first.type != "identifier":
        return None
    collection = resolution.symbol(target)
    return collection if _is_tracked(collection) and resolution.symbol(first) is collection else None


def local_holder(target: Node, calls: CallIndex) -> tuple[Symbol, str] | None:
    """`o.name` where o is a struct this function makes and keeps (`var o
    C.struct_opts`, `o := Args{}`, `o := &Args{}`, `new(Args)`, a
    configuration a described Go binding hands out: `cfg :=
    ntt.GetDefaultNttConfig()`): a handle stored in that field is still the
    function's own, held in o, until o itself is handed on. A field of a
    parameter, a receiver, a global or a value some other call returned
    belongs to whoever else holds that struct."""
    symbol = _own_local(target, "selector_expression", calls.package.resolution)
    if symbol is None or not _made_here(symbol, calls):
        return None
    return symbol, syntax.text(target.child_by_field_name("field"))


_COLLECTION_TYPES = ("slice_type", "array_type", "implicit_length_array_type")


def local_collection(target: Node, resolution) -> Symbol | None:
    """`argv[i]` where argv is a slice or array this function makes and
    keeps (`make([]*C.char, n)`, `var argv [4]*C.char`, a literal): a
    handle stored in an element is held in argv."""
    symbol = _own_local(target, "index_expression", resolution)
    if symbol is None or symbol.init_index >= 0:
        return None
    init = syntax.unparen(symbol.init)
    if init is None:
        made = symbol.type_node is not None and symbol.type_node.type in _COLLECTION_TYPES
    elif init.type == "call_expression":
        made = syntax.text(init.child_by_field_name("function")) == "make"
    else:
        made = init.type == "composite_literal" and (init.child_by_field_name("type") or init).type in _COLLECTION_TYPES
    return symbol if made else None


def literal_collection(element: Node, resolution) -> Symbol | None:
    """The local slice or array a composite literal declares, where `element`
    is one of its unkeyed elements (`args := []unsafe.Pointer{unsafe.Pointer(&d),
    unsafe.Pointer(&n)}`, a kernel's parameters)."""
    if element.type != "literal_element" or element.parent is None:
        return None
    literal = element.parent.parent
    kind = literal.child_by_field_name("type") if literal is not None and literal.type == "composite_literal" else None
    holder = literal.parent if kind is not None and kind.type in _COLLECTION_TYPES else None
    statement = holder.parent if holder is not None and holder.type == "expression_list" else None
    if statement is None or statement.type not in ("short_var_declaration", "var_spec") or len(syntax.children(holder)) != 1:
        return None
    names = (
        statement.children_by_field_name("name") if statement.type == "var_spec"
        else syntax.expressions(statement.child_by_field_name("left"))
    )
    symbol = resolution.symbol(names[0]) if len(names) == 1 and names[0].type == "identifier" else None
    if symbol is None or symbol.kind is not SymbolKind.VAR or symbol.role is not Role.LOCAL:
        return None
    return symbol


def _lent_literal(element: Node) -> bool:
    """An unkeyed element of a slice or array literal written as a call's
    argument (not a `go` or `defer` statement's, which may run later)."""
    if element.type != "literal_element" or element.parent is None:
        return False
    literal = element.parent.parent
    kind = literal.child_by_field_name("type") if literal is not None and literal.type == "composite_literal" else None
    arguments = literal.parent if kind is not None and kind.type in _COLLECTION_TYPES else None
    if arguments is None or arguments.type != "argument_list" or arguments.parent is None:
        return False
    return syntax.statement_of_call(arguments.parent) not in ("go_statement", "defer_statement")


def literal_holder(element: Node, resolution) -> tuple[Symbol, str] | None:
    """The value of `name: v` in the composite literal a local struct is
    declared with (`o := C.struct_opts{name: cs}`): the local and the field."""
    keyed = element.parent if element.type == "literal_element" else element
    if keyed is None or keyed.type != "keyed_element" or keyed.child_by_field_name("value") != element:
        return None
    key = keyed.child_by_field_name("key")
    body = keyed.parent
    literal = body.parent if body is not None else None
    if key is None or literal is None or literal.type != "composite_literal":
        return None
    names = syntax.children(key) if key.type == "literal_element" else [key]
    kind = literal.child_by_field_name("type")
    if len(names) != 1 or names[0].type != "identifier" or kind is None or kind.type in _COLLECTION_TYPES + ("map_type",):
        return None  # a struct's field, not a map's key
    child, parent = literal, literal.parent
    if syntax.is_address_of(parent):
        child, parent = parent, parent.parent
    if parent is None or parent.type != "expression_list" or parent.parent is None or parent.parent.type != "short_var_declaration":
        return None
    left = syntax.expressions(parent.parent.child_by_field_name("left"))
    right = syntax.children(parent)
    if len(left) != len(right):
        return None
    name = left[[c.id for c in right].index(child.id)]
    symbol = resolution.symbol(name) if name.type == "identifier" else None
    if symbol is None or symbol.kind is not SymbolKind.VAR or symbol.role is not Role.LOCAL:
        return None
    return symbol, syntax.text(names[0])


def _own_local(target: Node, kind: str, resolution) -> Symbol | None:
    """The local variable of the enclosing function that `target`, of
    `kind` (`o.f`, `xs[i]`), selects from or indexes."""
    if target.type != kind:
        return None
    operand = syntax.unparen(target.child_by_field_name("operand"))
    symbol = resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
    if symbol is None or symbol.kind is not SymbolKind.VAR or symbol.role is not Role.LOCAL:
        return None
    return symbol if symbol.function == syntax.enclosing_function(target) else None


def _made_here(symbol: Symbol, calls: CallIndex) -> bool:
    """A struct value declared without a value, or made by a composite
    literal or new(), or returned by a function of a described Go binding
    that acquires nothing (its configuration values): nobody else has it."""
    if symbol.init_index >= 0:
        return False
    init = syntax.unparen(symbol.init)
    if init is None:
        return symbol.type_node is not None and symbol.type_node.type in ("type_identifier", "qualified_type", "struct_type", "generic_type")
    if syntax.is_address_of(init):
        init = syntax.unparen(init.child_by_field_name("operand"))
    if init is not None and init.type == "call_expression":
        if syntax.text(init.child_by_field_name("function")) == "new":
            return True
        fact = calls.call(init)
        return calls.callee(init).kind is CalleeKind.FAMILY and fact is not None and fact.import_path != "C"
    return init is not None and init.type == "composite_literal"


def _in_loop_header(node: Node) -> bool:
    """Whether the node is part of a three-clause `for` header."""
    parent = node.parent
    while parent is not None and parent.type not in ("block", "source_file"):
        if parent.type == "for_clause":
            return True
        parent = parent.parent
    return False


def _declared_by_assignment(identifier: Node) -> bool:
    """A declaring identifier that is also a write: `x := ...` (the engine
    needs it for overwrites of a variable redeclared in a loop)."""
    parent = identifier.parent
    return parent is not None and parent.type == "expression_list"


def _enclosing_literal(node: Node, root: Node) -> Node | None:
    """The outermost func literal between node and root (root included)."""
    if node == root:
        return None
    found = None
    current = node.parent
    while current is not None:
        if current.type == "func_literal":
            found = current
        if current == root:
            return found
        current = current.parent
    return None


def _declared_inside(symbol: Symbol, literal: Node) -> bool:
    declared = symbol.node
    return declared is not None and literal.start_byte <= declared.start_byte < literal.end_byte


def _is_deferred_literal(literal: Node, resolution: Resolution) -> bool:
    """`defer func() {...}()`, or a test's `t.Cleanup(func() {...})`, which
    runs when the test ends (after its defers, and after `t.Fatal` too)."""
    parent = literal.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if parent is not None and parent.type == "argument_list":
        return registers_cleanup(parent.parent, resolution)
    return parent is not None and parent.type == "call_expression" and syntax.statement_of_call(parent) == "defer_statement"


def registers_cleanup(call: Node | None, resolution: Resolution) -> bool:
    """`t.Cleanup(func() {...})` on a *testing.T (B, F, or a testing.TB): a
    statement registering one literal with a test's cleanups."""
    if call is None or call.type != "call_expression" or syntax.statement_of_call(call) != "expression_statement":
        return False
    function = syntax.unparen(call.child_by_field_name("function"))
    arguments = syntax.children(call.child_by_field_name("arguments"))
    return (
        function is not None and function.type == "selector_expression" and syntax.text(function.child_by_field_name("field")) == "Cleanup"
        and len(arguments) == 1 and syntax.unparen(arguments[0]).type == "func_literal"
        and (imported_type(resolution, resolution.symbol(function.child_by_field_name("operand"))) or ("", ""))[0] == "testing"
    )




USES: Analysis[VariableUses] = Analysis(
    "uses", __doc__ or "", lambda p: VariableUses(p.result_of(CALLS)), requires=(CALLS,),
)


def _given_callback(call: Node) -> bool:
    """A C call handed a C function as a pointer (`(*[0]byte)(C.onDone)`,
    cgo's spelling of a callback): the pointers passed beside it are the
    callback's user data (a payload its destructor frees), which C keeps."""
    for argument in syntax.children(call.child_by_field_name("arguments")):
        argument = syntax.unparen(argument)
        if argument is not None and argument.type in ("type_conversion_expression", "call_expression") and _CALLBACK.match(syntax.text(argument)):
            return True
    return False


def calls_parameter(function: Unit, index: int) -> bool:
    """Whether `function` calls its parameter `index` itself, on its own
    goroutine (`f()`, not `go f()` nor inside a literal)."""
    params = function.params
    if index >= len(params) or function.body is None:
        return False
    parameter = params[index]
    for call in syntax.calls_in(function.body):
        callee = syntax.unparen(call.child_by_field_name("function"))
        if (
            callee is not None and callee.type == "identifier" and syntax.enclosing_function(call) == function.node
            and syntax.statement_of_call(call) != "go_statement"
            and function.resolution.symbol(callee) is parameter
        ):
            return True
    return False
