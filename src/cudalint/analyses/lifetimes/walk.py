"""The path walk: one handle followed over a function's control-flow graph.

From the acquiring call (or a function's entry, for a summary) the walk is
a breadth-first search over (node, state) pairs, so it is exact along each
path up to the state's precision, terminates (states are finite), and its
parents give the shortest witness path for every finding. On each edge the
failure side of the acquire's status test is cut (`status` decides which
side that is), variables whose scope the edge leaves die, and the exits are
recorded; on each node the handle's uses apply: reads first (the right-hand
side is evaluated before the assignment), then copies, then writes.

A walk spends path states from the budget of the function being analysed;
beyond it the function is given up (`PathBudgetExceeded`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import argument_of
from cudalint.analyses.calls import CalleeKind, CallIndex, unwrap
from cudalint.analyses.lifetimes.closures import Closures
from cudalint.analyses.lifetimes.counted import Counted
from cudalint.analyses.lifetimes.effects import Effects
from cudalint.analyses.lifetimes.nils import NilLocals
from cudalint.analyses.lifetimes.outcomes import Effect, Origin
from cudalint.analyses.lifetimes.sides import converted_status, equal_to_earlier_value, error_of, hand_over, null_tested
from cudalint.analyses.owners import acquires_into_receiver
from cudalint.knowledge import ResourceSpec
from cudalint.analyses.lifetimes.resources import VariableResources
from cudalint.analyses.lifetimes.states import LeftControl, PathBudgetExceeded, Phase, State, WalkRecord, path_to, release
from cudalint.analyses.status import Outcome, Roles, StatusSemantics, StatusSource, Subject, struct_status_operand
from cudalint.analyses.uses import Use, UseKind, VariableUses
from cudalint.cfg import CFG, Edge, ExitKind, NodeKind
from cudalint.functions import Unit
from cudalint.scope import Role, Symbol, SymbolKind

_MAX_STATES = 20000  # per walk; a guard, far above what real functions need


class Walker:
    def __init__(
        self, calls: CallIndex, uses: VariableUses, status: StatusSemantics, resources: VariableResources,
        effects: Effects, closures: Closures, counted: Counted, nils: NilLocals,
    ):
        self._calls = calls
        self._uses = uses
        self._status = status
        self._resources = resources
        self._effects = effects
        self._closures = closures
        self._counted = counted
        self._nils = nils
        self._budget: int | None = None  # path states left for the function being analysed

    @contextmanager
    def budget(self, states: int) -> Iterator[None]:
        """Walks inside draw on a budget of this many path states (the
        function being analysed); the outer budget is restored after."""
        outer, self._budget = self._budget, states
        try:
            yield
        finally:
            self._budget = outer

    def walk(self, graph: CFG, origin: Origin | None, start: int, state: State, *, summary: bool) -> WalkRecord:
        """Follow the handle from node `start` in `state` (origin None: a
        value the function starts with, for a summary)."""
        record = WalkRecord()
        if origin is not None:
            state = self._closures.registered_before(graph, start, state)
        state = replace(state, nils=self._nils.at(graph, start))
        parents: dict[tuple[int, State], tuple[int, State] | None] = {(start, state): None}
        queue: deque[tuple[int, State]] = deque([(start, state)])
        reported_scope = False
        handleless = origin is not None and origin.role.handle == "none"
        while queue:
            if len(parents) >= _MAX_STATES and self._budget is not None:
                raise PathBudgetExceeded
            if len(parents) >= _MAX_STATES:
                break
            if self._budget is not None:
                self._budget -= 1
                if self._budget < 0:
                    raise PathBudgetExceeded
            node, current = queue.popleft()
            for edge in graph.out_edges(node):
                successor = edge.target
                following = self.through_edge(origin, current, edge)
                if following is None:
                    continue
                following, dead = self._scope_exit(graph, following, node, successor)
                if dead is not None and not following.names and not handleless:
                    if following.phase is Phase.HELD and not following.covered and not reported_scope and origin is not None:
                        reported_scope = True
                        path = path_to(parents, (node, current)) + (successor,)
                        record.lost_in_scope.append((node, _scope_end_line(graph, node, successor, dead), path))
                    continue
                if graph.kind(successor) is NodeKind.EXIT:
                    _at_exit(record, following, graph.exit_kind(successor), parents, (node, current), successor)
                    continue
                try:
                    after = self._through_node(graph, origin, following, successor, record, summary)
                except LeftControl:
                    continue
                known = self._nils.after(graph, successor, after.nils)
                if known != after.nils:
                    after = replace(after, nils=known)
                key = (successor, after)
                if key not in parents:
                    parents[key] = (node, current)
                    queue.append(key)
        return record

    def through_edge(self, origin: Origin | None, state: State, edge: Edge) -> State | None:
        """The state on the far side of an edge; None where the edge cannot
        be taken in this state (the failure side of the acquire's status
        test holds nothing, a constant-false condition is never true)."""
        condition = edge.condition
        if condition is not None:
            constant = self._calls.package.resolution.constant_bool(condition)
            if constant is not None and constant != edge.polarity:
                return None  # `if debug` with `const debug = false`: never taken
            if self._nils.contradicts(edge, state.nils):
                return None  # `if err != nil` where this path left err nil
            known = self._nils.through(edge, state.nils)
            if known != state.nils:
                state = replace(state, nils=known)
        if state.phase is not Phase.HELD:
            return state
        if equal_to_earlier_value(self._calls, edge, state):
            return None
        outcome = self.outcome(origin, state, edge)
        if state.pending:
            # The call that keeps the handle where it succeeds: on that side
            # it is the callee's; where it failed, still this function's.
            if outcome is Outcome.SUCCESS:
                return None
            return replace(state, proxy=None, pending_at=None) if outcome is Outcome.FAILURE else state
        if outcome is Outcome.FAILURE:
            return None
        if outcome is Outcome.SUCCESS:
            return replace(state, proxy=None)
        return state

    def outcome(self, origin: Origin | None, state: State, edge: Edge) -> Outcome | None:
        """What taking the edge says of the acquisition: its status (or the
        handle compared with nil) tested, success, failure or nothing."""
        source = _source(origin)
        if edge.condition is not None:
            return self._status.test(source, _with_ok(self._roles(state, source), origin, self._calls), edge.condition, bool(edge.polarity))
        if edge.tests_case:
            return self._status.case(source, _with_ok(self._roles(state, source), origin, self._calls), edge.tag, edge.case, bool(edge.polarity))
        return None

    def _roles(self, state: State, source: StatusSource | None) -> Roles:
        """What an expression tested on a path is to the walk: the status
        (the proxy: the status variable, or an error made of it; `r.err` of
        a result struct r), or the handle (compared with nil)."""
        resolution = self._calls.package.resolution

        def roles(subject: Node) -> Subject | None:
            subject = struct_status_operand(source, subject) or subject
            proxy = state.proxy
            if proxy is not None and (
                (isinstance(proxy, Node) and subject == proxy)
                or (subject.type == "identifier" and resolution.symbol(subject) is proxy)
            ):
                return Subject.STATUS
            if subject.type == "identifier" and resolution.symbol(subject) in state.names:
                return Subject.HANDLE
            if subject.type == "selector_expression" and state.fields and (
                resolution.symbol(subject.child_by_field_name("operand")), syntax.text(subject.child_by_field_name("field")),
            ) in state.fields:
                return Subject.HANDLE  # `st.buf == nil` where st holds it in that field
            if (pointed := _pointer_of(subject)) is not None and resolution.symbol(pointed) in state.names:
                return Subject.HANDLE  # `d.AsUnsafePointer() != nil`: the handle's own pointer tested
            if (tested := null_tested(self._calls, subject)) is not None and resolution.symbol(tested) in state.names:
                return Subject.NULL_TEST
            return None

        return roles

    def _scope_exit(self, graph: CFG, state: State, node: int, successor: int) -> tuple[State, Node | None]:
        """Variables whose scope the edge leaves die on it."""
        if not state.names or graph.kind(successor) is NodeKind.EXIT:
            return state, None
        here = graph.ast(node)
        there = graph.ast(successor)
        if there is None:
            return state, None
        dying = []
        for symbol in state.names:
            scope = symbol.scope_node
            if scope is None or symbol.role is not Role.LOCAL or scope == symbol.function:
                continue
            if _inside(there, scope):
                continue
            if here is None or _inside(here, scope) or graph.kind(node) is NodeKind.ENTRY:
                dying.append(symbol)
        if not dying:
            return state, None
        captured = state.captured_release or any(symbol in state.closure_released for symbol in dying)
        return replace(state, names=state.names - frozenset(dying), captured_release=captured), dying[0].scope_node

    def _through_node(self, graph: CFG, origin: Origin | None, state: State, n: int, record: WalkRecord, summary: bool) -> State:
        """Apply what node n does to the handle: reads first (the right-hand
        side is evaluated before the assignment), then copies, then writes."""
        uses = self._uses.uses(graph.evaluated(n))
        if origin is not None and origin.status is not None and origin.status.kind == "field":
            uses = [self._uses.as_payload(use, origin.status) for use in uses]  # `r.res` of a result struct r
        kind = graph.kind(n)
        if origin is not None and origin.role.handle == "none":
            # `ret := nvml.Init(); if err := check(ret); ...`: the status moves to err here too.
            return self._proxy_after(graph, origin, self._counted.through_node(graph, origin, state, n, record), n, uses)
        mine = [use for use in uses if use.symbol in state.names]
        resource = origin.resource if origin is not None else None
        aliases: set[Symbol] = set()
        applied_literals: set[tuple[Unit, Symbol]] = set()
        collected = state.collections
        for use in mine:
            if use.kind in (UseKind.WRITE, UseKind.ACQUIRE_OUT):
                continue
            if use.kind is UseKind.DISCARDED:
                continue  # `_ = cleanup`: silences the compiler, disposes of nothing
            if state.phase is Phase.RELEASED and use.kind is UseKind.PASS_API and _passed_by_address(use):
                raise LeftControl  # `C.bootstrap(h, &info)` again (a loop): C writes it anew, the freed field with it
            if use.symbol in state.collections and use.kind not in (UseKind.READ, UseKind.ALIAS, UseKind.PASS_API) and not (
                use.kind is UseKind.DEREF and (_assigned(use) or _element_lent(self._calls, use))
            ):
                # A slice holding it, indexed, sliced, passed or kept: what
                # happens to its elements is not followed.
                if state.phase is Phase.HELD:
                    record.transferred += 1
                    raise LeftControl
                continue
            if (
                resource is not None and resource.any_use_releases and not (use.kind is UseKind.ALIAS and use.call is not None)
                and not _compared_with_nil(use)
            ):
                # context.WithCancel's cancel: calling it, deferring it or
                # handing it on all dispose of it (appending it to a local
                # slice keeps it there: the slice is then followed). A call
                # of a function giving a count back releases it here, and a
                # second call gives back another (go-dcgm's cleanup; a
                # context's cancel does nothing the second time).
                if use.deferred:
                    state = replace(state, deferred_release=n)
                    continue
                if use.kind is UseKind.CALLED and not use.spawned and any(role.handle == "none" for role in resource.release):
                    state = release(origin, state, n, False, record, None)
                    continue
                record.transferred += 1
                raise LeftControl
            state = self._read(graph, origin, state, n, use, record, aliases, applied_literals)
        state = self._closures.bound_closures(origin, state, n, uses, record)
        if kind is NodeKind.RETURN and state.names & set(graph.unit.results) and not _returns_values(graph.ast(n)):
            record.transferred += 1
            raise LeftControl
        if aliases:
            collections = frozenset(use.target for use in mine if use.collects)
            # A deferred closure registered before that releases the alias
            # at exit covers it too (`defer func() { start.Close() }()`, then `start = next`).
            added = frozenset(aliases) - state.names
            covered = self._closures.registered_before(graph, n, replace(state, names=added)) if added else state
            state = replace(
                state, names=state.names | frozenset(aliases), collections=state.collections | collections,
                closure_released=state.closure_released | covered.closure_released, closure_always=state.closure_always | covered.closure_always,
            )
        if state.collections != collected:
            # A deferred closure registered earlier that releases what the
            # slice holds (`defer func() { for _, d := range all {...} }()`).
            state = self._closures.registered_before(graph, n, state)
        for use in mine:
            overwritten_field = use.kind is UseKind.DEREF and (use.symbol, use.field) in state.fields and _assigned(use)
            # The wrapper that filled the variable through `&ad` reached again (a loop): it fills it anew.
            refilled = use.kind is UseKind.PASS_LOCAL and origin is not None and origin.role.is_out and use.call == origin.call
            if (use.kind not in (UseKind.WRITE, UseKind.ACQUIRE_OUT) and not overwritten_field and not refilled) or use.symbol in aliases:
                continue
            if overwritten_field:
                state = replace(state, fields=state.fields - {(use.symbol, use.field)})
                if state.holds_in_field(use.symbol):
                    continue  # it still holds it in another field
            elif use.kind is UseKind.WRITE and state.phase is Phase.HELD and self._given_back(use):
                continue  # `mem, err = runtime.CopyToDevice(mem, src, n)`: the call hands back what it was given
            remaining = state.names - {use.symbol}
            if state.phase is Phase.HELD and not remaining and state.deferred_release is None:
                if origin is not None and not summary:
                    record.overwrites.append((n, ()))
                record.transferred += 1  # the walk ends here either way
                raise LeftControl
            if not remaining:
                raise LeftControl
            state = replace(
                state, names=remaining, proxy=None if use.symbol is state.proxy else state.proxy,
                fields=frozenset(held for held in state.fields if held[0] is not use.symbol),
            )
        return self._proxy_after(graph, origin, state, n, uses)

    def _refills(self, use: Use) -> bool:
        """A method of the package that makes something new into its
        receiver's fields (`a.alloc()` with `a.ptr = memAlloc(n)`)."""
        target = self._calls.callee(use.call).target if use.call is not None else None
        return target is not None and target.receiver is not None and target.body is not None and acquires_into_receiver(target, self._calls)

    def _given_back(self, use: Use) -> bool:
        """Whether the variable is written with the result of an API call it is
        an argument of (`mem, err = runtime.CopyToDevice(mem, src, n)`): a call
        the knowledge describes acquires nothing there, so what it returns is
        what it was given, and the variable still holds the resource. (A
        function of the module is summarised instead: `d, err = grow(d, n)`
        that returns new memory leaves the old one lost, CL103. A call that
        moves its argument into its result, `C.realloc`, is the knowledge's
        `moves`.)"""
        holder = use.node.parent
        statement = holder.parent if holder is not None and holder.type == "expression_list" else None
        if statement is None or statement.type not in ("assignment_statement", "short_var_declaration") or statement.child_by_field_name("left") != holder:
            return False
        targets = syntax.expressions(holder)
        values = syntax.expressions(statement.child_by_field_name("right"))
        index = next((i for i, target in enumerate(targets) if target.id == use.node.id), None)
        if index is None:
            return False
        value = values[0] if len(values) == 1 else values[index] if index < len(values) else None
        value = syntax.unparen(value) if value is not None else None
        if value is None or value.type != "call_expression" or self._calls.callee(value).kind not in (CalleeKind.API, CalleeKind.FAMILY):
            return False
        name = use.symbol.name
        return any(
            argument.type == "identifier" and syntax.text(argument) == name
            for argument in (syntax.unparen(a) for a in syntax.children(value.child_by_field_name("arguments")))
        )

    def _proxy_after(self, graph: CFG, origin: Origin | None, state: State, n: int, uses: list[Use]) -> State:
        """The variable that says whether the acquisition succeeded, after
        node n: the error a converter made of the status (`err :=
        check(st)`), or none where the status variable is written again."""
        if isinstance(state.proxy, Symbol) and origin is not None:
            converted = converted_status(self._calls, self._status, graph, origin, state.proxy, n)
            if converted is not None:
                return replace(state, proxy=converted)
        if isinstance(state.proxy, Symbol) and any(
            u.symbol is state.proxy and u.kind is UseKind.WRITE for u in uses
        ):
            if state.pending_at == n:
                return state  # (the call's own assignment of it)
            if state.pending:
                raise LeftControl  # the error that said whether it was kept is gone
            state = replace(state, proxy=None)
        return state

    def clears_handle(self, use: Use) -> bool:
        """Whether the call releasing what a variable holds is a method that
        checks and clears the handle (`c.cleanup()`): the value is empty after it."""
        called = use.method or _method_called(use)
        target = self._calls.callee(use.call).target if use.call is not None else None
        return _pointer_receiver(target) and bool(called) and self._resources.releases_idempotently(use.symbol, called, None)

    def releases_once(self, use: Use) -> bool:
        """Whether a method call releases what a parameter or receiver holds
        (`gi.Destroy()` on a GPU instance, `set.Free()`), or a function of
        the module releases the parameter passed to it, such that what
        follows it runs released: its status dropped, or tested by an `if`
        whose failure branch returns. A status kept in a variable may be
        retried on (`if ret == nvml.ERROR_IN_USE { ret = gi.Destroy() }`)."""
        if use.call is None:
            return False
        if use.kind is UseKind.METHOD and not self._resources.releases_by_method(use.symbol, use.method, None, use.call):
            return False
        if use.kind is not UseKind.METHOD and (use.kind is not UseKind.PASS_LOCAL or use.spawned or (
            use.unit is not None and not self._resources.may_release_parameter(use.unit, use.index)
        ) or self._effects.effect_of_use(use) is not Effect.RELEASES):
            return False  # (`freeDevice(p)`, a function that releases its parameter: the same)
        parent = use.call.parent
        if parent is not None and parent.type == "expression_statement":
            return True
        holder = parent.parent if parent is not None and parent.type == "expression_list" else None
        statement = holder.parent if holder is not None else None
        if holder is None or statement is None or holder.type not in ("assignment_statement", "short_var_declaration"):
            return False
        left = syntax.expressions(holder.child_by_field_name("left"))
        if all(syntax.text(target) == "_" for target in left):
            return True
        if statement.type != "if_statement" or statement.child_by_field_name("initializer") != holder:
            return False
        condition = syntax.unparen(statement.child_by_field_name("condition"))
        body = syntax.statements(statement.child_by_field_name("consequence"))
        return (
            condition is not None and condition.type == "binary_expression"
            and syntax.text(condition.child_by_field_name("operator")) == "!="
            and bool(body) and body[-1].type == "return_statement"
        )

    def _sentinel(self, statement: Node | None) -> bool:
        """Whether a return statement's error is a package-level variable."""
        values = syntax.returned(statement)
        last = syntax.unparen(values[-1]) if values else None
        symbol = self._calls.package.resolution.symbol(last) if last is not None and last.type == "identifier" else None
        return symbol is not None and not symbol.is_local and symbol.kind is SymbolKind.VAR

    def _holder_use(self, origin: Origin | None, state: State, n: int, use: Use, record: WalkRecord, aliases: set) -> State | None:
        """A use of a local struct that holds the handle in a field (`o.name =
        cs`): a release or read of that field is one of the handle, the struct
        lent to C or its other fields are not, and the struct handed on takes
        it along. None: a use like any other variable's."""
        kind = use.kind
        if kind is UseKind.DEREF and (use.symbol, use.field) in state.fields:
            if use.role is not None:
                return release(origin, state, n, use.deferred, record, use.role)  # `C.free(unsafe.Pointer(o.name))`
            return state if _assigned(use) else None  # overwritten (after the reads), or read
        if kind is UseKind.ALIAS and use.target is not None and not use.field:
            # `p := o`: p holds it in the same fields.
            aliases.add(use.target)
            fields = {(use.target, name) for holder, name in state.fields if holder is use.symbol}
            return replace(state, fields=state.fields | fields)
        if kind in (UseKind.METHOD, UseKind.PASS_LOCAL):
            if state.phase is Phase.HELD:
                # `o.free()`, `freeArgs(o)`: what the package does with the struct's fields is not followed.
                record.transferred += 1
                raise LeftControl
            if kind is UseKind.METHOD and use.call is not None and self.releases_once(use):
                # `m.Unload()` again, after a release of the same fields.
                target = self._calls.callee(use.call).target
                released = receiver_fields_released(self._calls, target) if target is not None else None
                if not released or released & {name for holder, name in state.fields if holder is use.symbol}:
                    return release(origin, state, n, use.deferred, record, None)
            return state
        if kind in (UseKind.DEREF, UseKind.PASS_API, UseKind.READ, UseKind.CALLED):
            return state
        if kind is UseKind.RELEASE and use.symbol not in state.names - {holder for holder, _ in state.fields}:
            # `C.free(unsafe.Pointer(tuple))` after `C.free(tuple.values)`:
            # the struct's own memory, not the handle in its field.
            return state
        return None

    def _read(
        self, graph: CFG, origin: Origin | None, state: State, n: int, use: Use, record: WalkRecord, aliases: set, applied: set,
    ) -> State:
        released = state.phase is Phase.RELEASED
        # Released by a method that clears the handle: the value is empty,
        # not dangling (`c.cleanup(); return c, nil`), though its methods
        # may still pass the cleared handle on.
        dangling = released and not state.cleared
        kind = use.kind
        if state.holds_in_field(use.symbol):
            handled = self._holder_use(origin, state, n, use, record, aliases)
            if handled is not None:
                return handled
        if kind is UseKind.RELEASE:
            return release(origin, state, n, use.deferred, record, use.role)
        if kind is UseKind.METHOD:
            if self._resources.releases_idempotently(use.symbol, use.method, origin):
                return _released_again_harmlessly(state, n, use)
            if self._resources.releases_by_method(use.symbol, use.method, origin, use.call):
                return release(origin, state, n, use.deferred, record, None)
            if self._resources.may_release_by_method(use.symbol, use.method, origin, use.call):
                hand_over(record, graph, n)  # `x.View(size, del)`: del decides, which is not known here
            if released and self._refills(use):
                raise LeftControl  # `a.Free(); a.alloc()`: the value holds new memory from here on
            if released and not self._resources.reads_only(use.symbol, use.method, origin) and (
                dangling or (use.call is not None and self._calls.callee(use.call).target is not None)  # not `c.cancel()`, a func field
            ):
                record.uses_after_release.append((n, use, state.released_at or 0))
            return state
        if kind is UseKind.CALLED:
            if released:
                record.uses_after_release.append((n, use, state.released_at or 0))
            return state
        if kind in (UseKind.RETURN, UseKind.TRANSFER_CALL):
            if released:
                if dangling:
                    record.uses_after_release.append((n, use, state.released_at or 0))
                return state
            if (
                kind is UseKind.RETURN and origin is not None and self._counted.fails(graph, origin, ExitKind.RETURN, n) is True
                and not self._sentinel(graph.ast(n)) and use.symbol not in state.closure_released
            ):
                # `return d, fmt.Errorf(...)`: handed out beside a failure, so
                # its callers hold it where the call failed too (beside a
                # sentinel, `return d, errPartial`, it may be a partial success;
                # a deferred `if err != nil { destroy(d) }` releases it first).
                record.returned_failing = True
            hand_over(record, graph, n)
        if kind in (UseKind.STORE, UseKind.PASS_UNKNOWN):
            if released or (kind is UseKind.PASS_UNKNOWN and use.symbol in state.pointers):
                return state
            hand_over(record, graph, n)
        if kind is UseKind.DEREF and use.role is not None and (
            self._resources.owns(use.symbol, use.role[0], origin) or _wraps(origin, use.role[0])
        ):
            return release(origin, state, n, use.deferred, record, None, use.role[0].name)  # `C.cudaFree(b.ptr)` of a value holding it
        if kind in (UseKind.PASS_API, UseKind.DEREF):
            # A field of a value its own method released is used where it
            # is handed to the API (`C.cudaMemcpy(b.ptr, ...)`), not where
            # another field is read (`log.Print(m.name)`) or written (`&b.ptr`).
            whole = kind is UseKind.DEREF and use.field and not state.fields
            # `if conn == node.Connection` after freeing it compares the
            # address: the memory is not touched.
            read_only = whole and (use.call is None or self._calls.callee(use.call).kind not in (CalleeKind.API, CalleeKind.FAMILY))
            if released and not read_only and not (use.call is None and _compared(use) is not None):
                record.uses_after_release.append((n, use, state.released_at or 0))
            return state
        if kind is UseKind.ALIAS and use.target is not None:
            aliases.add(use.target)
            if use.pointer:
                return replace(state, pointers=state.pointers | {use.target})
            if use.field:
                return replace(state, fields=state.fields | {(use.target, use.field)})
            return state
        if kind is UseKind.PASS_LOCAL and (use.unit is not None or use.callee is not None):
            source = _source(origin)
            if source is not None and source.status is not None and source.status.kind == "field" and use.call is not None and (
                use.node.parent is not None and use.node.parent.type == "argument_list"  # r itself, not r.res
                and self._status.converts_at(use.call, use.index, source)
            ):
                return state  # `resultError(op, r)` reads the result struct's status; what it frees is the message
            effect = self._effects.effect_of_use(use)
            if effect is Effect.RELEASES:
                if self.clears_handle(use):
                    return _released_again_harmlessly(state, n, use)  # `c.cleanup()` of a method that clears the handle
                return release(origin, state, n, use.deferred, record, None)
            if effect is Effect.KEEPS_ON_SUCCESS and not released and state.proxy is None and use.call is not None:
                error = error_of(self._calls, use.call)
                if error is not None:
                    record.kept_by = syntax.text(syntax.unparen(use.call.child_by_field_name("function")))
                    return replace(state, proxy=error, pending_at=n)  # kept where `err` says the call succeeded
            if effect in (Effect.RETAINS, Effect.KEEPS_ON_SUCCESS) and not released:
                record.transferred += 1
                raise LeftControl
            if effect is Effect.BORROWS and released:
                record.uses_after_release.append((n, use, state.released_at or 0))  # `gpu.Fill(p, 0, n)` after the free
            return state
        if kind is UseKind.CAPTURE and use.unit is not None:
            key = (use.unit, use.symbol)
            if key in applied:
                return state
            applied.add(key)
            return self._closures.literal(origin, state, n, use.unit, use.symbol, record)
        return state


def _element_lent(calls: CallIndex, use: Use) -> bool:
    """`&argv[0]`, `argv[i]` an argument of a C or API call that does not
    release it: the collection's elements are lent, still held."""
    element = use.node.parent
    if element is None or element.type != "index_expression" or element.child_by_field_name("operand") != use.node:
        return False
    passed = argument_of(element, calls.callee)
    if passed is None:
        return False
    call, argument = passed
    callee = calls.callee(call)
    if callee.kind is CalleeKind.FAMILY:
        return True
    if callee.kind is not CalleeKind.API or callee.api is None:
        return False
    index = [c.id for c in syntax.children(call.child_by_field_name("arguments"))].index(argument.id)
    return not any(role.index == index for _, role in callee.api.roles("release") + callee.api.roles("transfer")) and index not in callee.api.kept_args


def _released_again_harmlessly(state: State, n: int, use: Use) -> State:
    """`b.Free()` of a method that checks and clears the handle: released,
    and a second call (now, or the `defer b.Free()` at exit) frees nothing."""
    if use.deferred:
        if state.phase is Phase.RELEASED or state.deferred_release is not None:
            return state
        return replace(state, deferred_release=n, deferred_idempotent=True)
    if state.phase is Phase.RELEASED:
        return state
    deferred = None if state.deferred_idempotent else state.deferred_release
    return replace(state, phase=Phase.RELEASED, released_at=n, proxy=None, deferred_release=deferred, cleared=True)


def _pointer_receiver(method: Unit | None) -> bool:
    """A value receiver's method clears only its copy."""
    receiver = method.receiver if method is not None else None
    return receiver is not None and receiver.type_node is not None and receiver.type_node.type == "pointer_type"


def _method_called(use: Use) -> str:
    """"cleanup" for `c.cleanup()` where the use is c, the receiver."""
    function = use.call.child_by_field_name("function") if use.call is not None else None
    if function is None or function.type != "selector_expression" or syntax.unparen(function.child_by_field_name("operand")) != use.node:
        return ""
    return syntax.text(function.child_by_field_name("field"))


def _passed_by_address(use: Use) -> bool:
    """`&info` handed to the call (the whole variable, not a field's address)."""
    parent = use.node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return syntax.is_address_of(parent)


def _assigned(use: Use) -> bool:
    """`o.name = ...`, `argv[i] = ...`: the field or element is written, not
    read; or its address given (`C.cuStreamCreate(&l.stream, 0)`), which C
    writes through."""
    selector = use.node.parent
    if selector is not None and selector.type == "selector_expression" and selector.parent is not None and selector.parent.type == "unary_expression":
        return syntax.text(selector.parent.child_by_field_name("operator")) == "&"
    holder = selector.parent if selector is not None else None
    statement = holder.parent if holder is not None and holder.type == "expression_list" else None
    return statement is not None and statement.type == "assignment_statement" and statement.child_by_field_name("left") == holder


def _at_exit(record: WalkRecord, state: State, kind: ExitKind, parents, previous, exit_node: int) -> None:
    if kind not in (ExitKind.RETURN, ExitKind.GOEXIT):
        return
    if state.pending:
        record.transferred += 1  # its error never tested: it may have been kept
        return
    if state.phase is not Phase.RELEASED and not state.covered:
        record.held_exits.append((exit_node, kind, path_to(parents, previous) + (exit_node,)))
        record.held_in.setdefault(exit_node, frozenset(symbol.name for symbol in state.names & state.collections))
        return
    record.released_exits += 1
    if previous is not None:
        record.released_after.add(previous[0])
    if state.phase is Phase.RELEASED and state.released_at is not None:
        if state.deferred_release is not None:
            record.double_releases.append((state.deferred_release, state.released_at, True))
        for symbol, defer_node in state.closure_always:
            if symbol in state.names:
                record.double_releases.append((defer_node, state.released_at, True))


def _source(origin: Origin | None) -> StatusSource | None:
    """The status an acquisition's call reports (None on a summary walk)."""
    return StatusSource.of(origin.api, origin.written) if origin is not None else None


def _inside(node: Node | None, scope: Node | None) -> bool:
    if node is None or scope is None:
        return False
    return scope.start_byte <= node.start_byte < scope.end_byte


def _returns_values(statement: Node | None) -> bool:
    return statement is not None and any(c.type == "expression_list" for c in statement.named_children)


def _scope_end_line(graph: CFG, node: int, successor: int, scope: Node) -> int:
    if graph.kind(node) in (NodeKind.CONTINUE, NodeKind.BREAK, NodeKind.GOTO):
        return graph.line(node)
    return scope.end_point[0] + 1


def _wraps(origin: Origin | None, resource: ResourceSpec) -> bool:
    """Whether a value whose field an API call releases holds that resource:
    a wrapped handle (`GroupHandle{h}` handed out, released by
    `C.dcgmGroupDestroy(conn, g.handle)`), or a value a summary's walk
    starts with (`func Destroy(g GroupHandle)` releases what it is given)."""
    return origin is None or origin.resource.name == resource.name or (
        origin.resource.owns is not None and origin.resource.owns.name == resource.name
    )


_POINTER_METHOD = re.compile(r"(?i).*(pointer|ptr|handle|addr)")


def _pointer_of(expression: Node) -> Node | None:
    """h of `h.AsUnsafePointer()`, `h.Ptr()`, `h.Handle()`: a method without
    arguments that, by its name, gives the value's own pointer."""
    if expression.type != "call_expression" or syntax.children(expression.child_by_field_name("arguments")):
        return None
    function = syntax.unparen(expression.child_by_field_name("function"))
    if function is None or function.type != "selector_expression":
        return None
    operand = syntax.unparen(function.child_by_field_name("operand"))
    method = syntax.text(function.child_by_field_name("field"))
    return operand if operand is not None and operand.type == "identifier" and _POINTER_METHOD.fullmatch(method) else None


def _compared(use: Use) -> Node | None:
    """The `==`/`!=` comparison the used value (`x`, or `x.field` of a DEREF)
    is a side of, if any."""
    node = use.node
    if use.field and node.parent is not None and node.parent.type == "selector_expression":
        node = node.parent
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if parent is None or parent.type != "binary_expression" or syntax.text(parent.child_by_field_name("operator")) not in ("==", "!="):
        return None
    return parent


def _compared_with_nil(use: Use) -> bool:
    """`cleanup != nil`: a look at a function value that disposes of nothing."""
    comparison = _compared(use)
    return comparison is not None and "nil" in (
        syntax.text(comparison.child_by_field_name("left")), syntax.text(comparison.child_by_field_name("right"))
    )


def receiver_fields_released(calls: CallIndex, method: Unit, depth: int = 0) -> frozenset[str] | None:
    """The fields of its receiver a method of the package frees (`C.cudaFree(
    c.buf)`, or through another method of it on the receiver), where that is
    all it frees of it; None where it frees the receiver itself, or cannot
    be told."""
    receiver = method.receiver
    if receiver is None or method.body is None or depth > 4:
        return None
    found: set[str] = set()
    for call in syntax.calls_in(method.body):
        callee = calls.callee(call)
        if callee.api is not None and callee.api.roles("release"):
            for field in _fields_released(calls, call, callee.api, receiver.name):
                if field is None:
                    return None
                found.add(field)
        elif callee.target is not None and callee.target.receiver is not None and syntax.method_operand(call) is not None and (
            syntax.text(syntax.method_operand(call)) == receiver.name
        ):
            inner = receiver_fields_released(calls, callee.target, depth + 1)
            if inner is None:
                return None
            found |= inner
        elif callee.kind not in (CalleeKind.API, CalleeKind.FAMILY, CalleeKind.CONVERSION, CalleeKind.BUILTIN, CalleeKind.STD_BORROW) and any(
            _receiver_field(calls, part, receiver.name) is not None
            for part in [syntax.method_operand(call), *syntax.children(call.child_by_field_name("arguments"))] if part is not None
        ):
            return None  # `freePtr(s.b)`, `s.sub.Free()`: what else it frees is not said here
    return frozenset(found)


def tears_down(calls: CallIndex, method: Unit) -> bool:
    """Whether a method frees what its receiver holds (an API release of a
    field of it) and acquires nothing: a teardown (`func (r *Rank) Abort()
    error`), a release whatever status it reports (a `Resize` that frees,
    then allocates again, is none)."""
    receiver = method.receiver
    if receiver is None or method.body is None:
        return False
    frees = False
    for call in syntax.calls_in(method.body):
        api = calls.callee(call).api
        if api is None:
            continue
        if api.roles("acquire"):
            return False
        frees = frees or any(field is not None for field in _fields_released(calls, call, api, receiver.name))
    return frees


def _fields_released(calls: CallIndex, call: Node, api, receiver: str) -> list[str | None]:
    """Per release role of an API call, the receiver's field it frees (None
    for a value that is none of them, or no argument: `w.set.Free()`)."""
    arguments = syntax.children(call.child_by_field_name("arguments"))
    found = []
    for _, role in api.roles("release"):
        value = unwrap(arguments[role.index], calls) if role.handle.startswith("arg") and role.index < len(arguments) else None
        found.append(_receiver_field(calls, value, receiver) if value is not None else None)
    return found


def _receiver_field(calls: CallIndex, value: Node, receiver: str, depth: int = 0) -> str | None:
    """The receiver's field a released value is in: `c.buf`, `c.bufs[i]`,
    `c.auto.table`, or through a local taken from one (`a := c.autos[name];
    C.cudaFree(a.table)`)."""
    node, field = syntax.unparen(value), None
    while node is not None and node.type in ("selector_expression", "index_expression"):
        if node.type == "selector_expression":
            field = syntax.text(node.child_by_field_name("field"))
        node = syntax.unparen(node.child_by_field_name("operand"))
    if node is None or node.type != "identifier" or depth > 4:
        return None
    if syntax.text(node) == receiver:
        return field
    symbol = calls.package.resolution.symbol(node)
    init = symbol.init if symbol is not None and symbol.is_local and symbol.init_index < 0 else None
    return _receiver_field(calls, init, receiver, depth + 1) if init is not None else None


def _with_ok(roles: Roles, origin: Origin | None, calls: CallIndex) -> Roles:
    """The roles, and the first of two results of a count's acquisition whose
    last is its error (`installed, err := initNVML(lib)`: false where the
    library is missing and nothing was taken, with a nil error): the bool
    says whether the count was taken."""
    targets = syntax.assigned_from(origin.call) if origin is not None and origin.role.handle == "none" else []
    if len(targets) != 2 or targets[0].type != "identifier" or syntax.text(targets[0]) == "_":
        return roles
    ok = calls.package.resolution.symbol(targets[0])

    def with_ok(subject: Node) -> Subject | None:
        found = roles(subject)
        if found is None and subject.type == "identifier" and ok is not None and calls.package.resolution.symbol(subject) is ok:
            return Subject.OK
        return found

    return with_ok
