"""Collecting outcomes: each acquisition followed, its walk turned into findings' data.

An acquisition is born (origins), walked (walk) and its record read: the
first path that leaves the function with the handle held is the leak's
witness (with every statement after which some path leaves it held, where
a release could go, and a deferred release that does not cover the path);
otherwise a variable gone out of scope with it held; overwrites, double
releases, uses after release and mismatched releases, each once. A handle
that arrives as a parameter and is released here is walked too, for double
releases and uses after release (CL102, CL104).
"""

from __future__ import annotations

from dataclasses import replace

from cudalint import syntax
from cudalint.analyses.calls import CallIndex
from cudalint.analyses.lifetimes.closures import Closures
from cudalint.analyses.lifetimes.counted import Counted, error_variable, is_counted
from cudalint.analyses.lifetimes.testing import ends_test, testify_asserts
from cudalint.analyses.lifetimes.flags import flag_guarded
from cudalint.analyses.lifetimes.feasible import skips_a_ranged_collection
from cudalint.analyses.lifetimes.origins import Origins
from cudalint.analyses.lifetimes.outcomes import (
    DoubleRelease, GatedCallAfterRelease, Leak, Lost, Mismatch, Origin, Overwrite, UnitLifetimes, UseAfterRelease,
)
from cudalint.analyses.lifetimes.states import Phase, State, WalkRecord
from cudalint.analyses.lifetimes.walk import Walker, receiver_fields_released
from cudalint.analyses.uses import UseKind, VariableUses
from cudalint.cfg import CFG, ExitKind
from cudalint.functions import Unit
from cudalint.scope import Role, Symbol


class Collector:
    def __init__(self, origins: Origins, walker: Walker, closures: Closures, uses: VariableUses, counted: Counted):
        self._counted = counted
        self._origins = origins
        self._walker = walker
        self._closures = closures
        self._uses = uses

    def follow(self, graph: CFG, origin: Origin, result: UnitLifetimes, counted: list[tuple[int, str]]) -> None:
        """Follow one acquisition and add what happens to it to `result`
        (`counted`: where the function takes counts, and of which kind)."""
        start = self._origins.birth(origin)
        if start is None:
            return
        origin, state, leak_detail = start
        result.origins.append(origin)
        if _asserted_to_fail(origin, self._uses.facts):
            return  # the test fails where the acquisition succeeds: nothing is held past it
        if leak_detail is not None:
            if not origin.resource.outlives:  # `_, ret = gi.CreateComputeInstance(...)` keeps it, by design
                result.leaks.append(Leak(origin, Lost.DISCARDED, origin.node, origin.line, (origin.node,), leak_detail))
            return
        if state is None:
            return  # transferred at birth (stored in a field, returned, ...)
        outer = [symbol for symbol in state.names if symbol.function is not None and symbol.function != origin.unit.node]
        if outer:
            # A func literal acquiring into a variable of its enclosing
            # function hands the resource to that function, which reads the
            # variable after the literal has run.
            result.handed_up.extend((origin, symbol) for symbol in outer)
            return
        if is_counted(origin):
            taken = [node for node, name in counted if name == origin.resource.name and node != origin.node]
            state = self._counted.registered_before(graph, origin, state, self._closures.defers(graph), taken)
        record = self._walker.walk(graph, origin, origin.node, state, summary=False)
        self._collect(graph, origin, record, result)
        if not origin.resource.callable_when_failed:
            # A release registered before the acquisition succeeded (CL202):
            # a count never taken, a nil cleanup called, a handle never made released.
            result.early_releases.extend(self._counted.early_releases(graph, origin, state, self._walker.outcome))

    def released_parameters(self, graph: CFG, result: UnitLifetimes) -> None:
        """A handle that arrives as a parameter and is released here (by an
        API release, or by its own release method where what follows runs
        released: `gi.Destroy()`), or one held in a field of a variable and
        released here (`C.cuModuleUnload(m.mod)`): a second release, or a
        use after it, is a finding too (CL102, CL104)."""
        acquired = {origin.handle for origin in result.origins}
        seen: set[tuple[Symbol, int]] = set()
        for n in graph.statement_nodes():
            if not graph.reachable(n):
                continue
            for use in self._uses.uses(graph.evaluated(n)):
                if use.deferred or not (
                    use.kind is UseKind.RELEASE or _field_released(use) or self._walker.releases_once(use) or self._closures.releases_in_place(use)
                ):
                    continue
                symbol = use.symbol
                if _declared_inside(symbol, graph.unit):
                    continue  # a literal's own variable: its walk, not this function's, follows it
                if use.kind in (UseKind.RELEASE, UseKind.METHOD, UseKind.PASS_LOCAL, UseKind.CAPTURE):
                    fields: frozenset[tuple[Symbol, str]] = frozenset()
                    handle = symbol.name
                    target = self._uses.facts.callee(use.call).target if use.kind is UseKind.METHOD and use.call is not None else None
                    released = receiver_fields_released(self._uses.facts, target) if target is not None else None
                    if released:
                        # `cb.freeAll()` frees some of cb's fields: a later free of another
                        # field (`C.cudaFree(cb.packets)`) is no second release.
                        fields = frozenset((symbol, name) for name in released)
                    if symbol.role not in (Role.PARAM, Role.RECEIVER, Role.LOCAL):
                        continue
                else:
                    # `C.cuModuleUnload(m.mod)`: a handle in a field of a value the function has.
                    fields, handle = frozenset({(symbol, use.field)}), f"{symbol.name}.{use.field}"
                if handle in acquired or (symbol, n) in seen:
                    continue
                seen.add((symbol, n))
                kind = use.role[0].name if use.role is not None else None
                state = State(
                    Phase.RELEASED, frozenset({symbol}), released_at=n, fields=fields, released_kind=kind,
                    cleared=use.kind in (UseKind.METHOD, UseKind.PASS_LOCAL) and self._walker.clears_handle(use),
                )
                record = self._walker.walk(graph, None, n, state, summary=False)
                for node, first, by_defer in record.double_releases:
                    result.double_releases.append(DoubleRelease(None, node, first, by_defer, handle))
                for node, late_use, released_line in record.uses_after_release:
                    result.uses_after_release.append(UseAfterRelease(None, node, late_use, released_line))

    def _collect(self, graph: CFG, origin: Origin, record: WalkRecord, result: UnitLifetimes) -> None:
        if record.returned_failing:
            result.returned_failing.append(origin)
        if is_counted(origin):
            self._collect_count(graph, origin, record, result)
            return
        if origin.resource.outlives:
            self._collect_outliving(graph, origin, record, result)
            return
        if origin.call is not None:
            record.held_exits = [held for held in record.held_exits if not skips_a_ranged_collection(graph, origin.call, held[2])]
        if record.held_exits:
            exit_node, kind, path = record.held_exits[0]
            leak = self._leak(graph, origin, kind, path)
            holders = record.held_in.get(exit_node, frozenset())
            if holders:
                leak = replace(leak, held_in=", ".join(sorted(holders)))
            held_at = tuple(dict.fromkeys(path[-2] for _, _, path in record.held_exits if len(path) >= 2))
            on_failure = all(
                len(p) >= 2 and self._counted.fails(graph, origin, k, p[-2]) is True for _, k, p in record.held_exits
            )
            result.leaks.append(replace(
                leak, held_at=held_at, released_through_held=bool(record.released_after & set(held_at)), on_failure=on_failure,
                kept_by=record.kept_by,
            ))
        elif record.lost_in_scope:
            node, line, path = record.lost_in_scope[0]
            result.leaks.append(Leak(origin, Lost.SCOPE, node, line, path))
        if record.overwrites:
            node, _ = record.overwrites[0]
            result.overwrites.append(Overwrite(origin, node, ()))
        for node, first, by_defer in _unique(record.double_releases):
            result.double_releases.append(DoubleRelease(origin, node, first, by_defer, origin.handle))
        for node, use, released_line in _unique(record.uses_after_release, key=lambda item: item[0]):
            result.uses_after_release.append(UseAfterRelease(origin, node, use, released_line))
        for node, call, resource in _unique(record.mismatches):
            result.mismatches.append(Mismatch(origin, node, call, resource))

    def _collect_outliving(self, graph: CFG, origin: Origin, record: WalkRecord, result: UnitLifetimes) -> None:
        """A resource that outlives the process by design (a MIG instance) is
        kept wherever the function succeeds; a failing return after it was
        made leaves it behind with nobody to destroy it (the caller sees the
        failure and no handle). Releasing it twice or using it after is as
        for any handle."""
        fails = self._counted.fails
        failing = [(kind, path) for _, kind, path in record.held_exits if len(path) >= 2 and fails(graph, origin, kind, path[-2])]
        # A function that only leaves what it made in place as it goes (a
        # configuration applier creating instances in a loop) leaves a partial
        # result where it fails, as its contract says; one that hands the
        # instance on, or destroys it, where it succeeds, or makes just this
        # one (a partition of a GPU instance and its compute instance), loses
        # it where it fails.
        handed_on = record.transferred > len(record.overwrites)  # an overwrite ends a walk as a hand-over does
        if failing and (handed_on or record.released_exits or not graph.in_loop(origin.node)):
            kind, path = failing[0]
            result.leaks.append(replace(self._leak(graph, origin, kind, path), failing=True))
        # Overwriting the handle is leaving it in place, unless the function
        # keeps its handles: then the one overwritten is lost to it.
        if record.overwrites and (handed_on or record.released_exits):
            node, _ = record.overwrites[0]
            result.overwrites.append(Overwrite(origin, node, ()))
        for node, first, by_defer in _unique(record.double_releases):
            result.double_releases.append(DoubleRelease(origin, node, first, by_defer, origin.handle))
        for node, use, released_line in _unique(record.uses_after_release, key=lambda item: item[0]):
            result.uses_after_release.append(UseAfterRelease(origin, node, use, released_line))

    def _collect_count(self, graph: CFG, origin: Origin, record: WalkRecord, result: UnitLifetimes) -> None:
        """A count held on a failing return leaks (the caller will not
        release it); held on succeeding returns it is handed to the caller,
        unless another succeeding return released it (the caller cannot know
        which it got) outside main, init and TestMain; see `counted`."""
        if self._counted.recorded(graph, origin):
            for node, first, by_defer in _unique(record.double_releases):
                result.double_releases.append(DoubleRelease(origin, node, first, by_defer, ""))
            return  # the package's, by its flag
        for node, call, released in _unique(record.gated_after_release, key=lambda item: item[1].id):
            if call.id not in record.gated_while_held:
                result.gated_after_release.append(GatedCallAfterRelease(origin, node, call, released))
        fails = self._counted.fails
        # A test that never gives the count back keeps it for the test binary,
        # on t.Fatal as on its normal return; one that does should have deferred it.
        kept_by_test = not record.released_exits
        held_exits = [(kind, path) for _, kind, path in record.held_exits if not (kept_by_test and ends_test(graph.unit, kind))]
        # A return after the count was recorded on a value that gives it back leaves it there.
        held_exits = [(kind, path) for kind, path in held_exits if not self._counted.recorded_on(graph, path, origin.resource.name)]
        failing = [(kind, path) for kind, path in held_exits if len(path) >= 2 and fails(graph, origin, kind, path[-2])]
        succeeding = [(kind, path) for kind, path in held_exits if (kind, path) not in failing]
        if failing and not self._counted.replaces(graph, origin):
            kind, path = failing[0]
            result.leaks.append(replace(self._leak(graph, origin, kind, path), failing=True))
        released_on_success = any(
            fails(graph, origin, ExitKind.RETURN, n) is False for n in record.released_after
        )
        if released_on_success:
            # A return handing out the value that gives the count back hands the count on with it.
            succeeding = [
                (kind, path) for kind, path in succeeding
                if len(path) < 2 or not self._counted.returns_owner(graph.ast(path[-2]), origin.resource.name)
            ]
        for node, first, by_defer in _unique(record.double_releases):
            result.double_releases.append(DoubleRelease(origin, node, first, by_defer, ""))
        # A flag the function sets and tests (`if !c.inited { Init(); c.inited =
        # true }`) says it takes the count once, whatever the paths look like.
        guarded = flag_guarded(graph.unit)
        if record.retaken and not guarded and not self._counted.replaces(graph, origin):
            # Taken on every iteration of a loop and never given back in it.
            result.leaks.append(replace(self._leak(graph, origin, ExitKind.RETURN, (origin.node,)), retaken=True))
            return
        per_call = "" if guarded else self._counted.per_call(graph.unit)
        if succeeding and ((released_on_success and not self._counted.keeps(graph.unit)) or per_call):
            kind, path = succeeding[0]
            result.leaks.append(replace(self._leak(graph, origin, kind, path), per_call=per_call))
        elif succeeding:
            result.counted_out.append(origin)

    def _leak(self, graph: CFG, origin: Origin, kind: ExitKind, path: tuple[int, ...]) -> Leak:
        last = path[-2] if len(path) >= 2 else origin.node
        how = Lost.GOEXIT if kind is ExitKind.GOEXIT else Lost.RETURN
        other, early = None, False
        for n in self._closures.defers(graph):
            for use in self._uses.uses(graph.evaluated(n)):
                if use.kind is UseKind.RELEASE and use.deferred and use.symbol.name == origin.handle and n not in path:
                    other = n
                    early = graph.reachable(n) and not graph.has_path(origin.node, n)
        return Leak(origin, how, last, graph.line(last), path, other_defer=other, defer_too_early=early)


def _declared_inside(symbol: Symbol, unit: Unit) -> bool:
    """Whether the variable belongs to a func literal inside the function
    (released by a literal called in place, each call makes its own)."""
    function = symbol.function
    return function is not None and function.id != unit.node.id and unit.node.start_byte <= function.start_byte < unit.node.end_byte


def _unique(items, key=lambda item: item):
    seen = set()
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            yield item


# testify's packages, and its assertions that an error is non-nil (`require.Error(t, err)`).
_TESTIFY = ("require", "assert")
_ERROR_ASSERTIONS = frozenset({"Error", "Errorf", "ErrorIs", "ErrorIsf", "ErrorAs", "ErrorAsf", "ErrorContains", "EqualError", "NotNil"})


def _asserted_to_fail(origin: Origin, calls: CallIndex) -> bool:
    """`group, err := CreateGroup(ctx, name)` then `require.Error(t, err)`
    (or a helper of the package that asserts it so on its parameter): the
    code asserts that the acquisition fails, so a path where it succeeded is
    the test failing, and what it would hold is no leak of the code (a
    result dropped with `_` there is no defect either)."""
    if not origin.unit.file.source.path.name.endswith("_test.go"):
        return False  # testify asserts in tests
    name = error_variable(origin)
    if not name or origin.unit.body is None:
        return False
    if _fatal_on_success(origin, name):
        return True
    for call in syntax.calls_in(origin.unit.body):
        if call.start_byte <= origin.call.end_byte:
            continue
        if testify_asserts(call, _TESTIFY, _ERROR_ASSERTIONS, name):
            return True
        arguments = [syntax.text(syntax.unparen(a)) for a in syntax.children(call.child_by_field_name("arguments"))]
        target = calls.callee(call).target
        if target is not None and target.body is not None and name in arguments:
            parameter = target.params[arguments.index(name)].name if arguments.index(name) < len(target.params) else ""
            if parameter and any(testify_asserts(inner, _TESTIFY, _ERROR_ASSERTIONS, parameter) for inner in syntax.calls_in(target.body)):
                return True
    return False


# What fails a test where it is called (`t.Fatal`, `b.FailNow`; `t.Error`
# marks it failed and goes on, as testify's assert.Error does).
_FAILS_TEST = (".Fatal", ".Fatalf", ".FailNow", ".Error", ".Errorf", ".Fail")


def _fatal_on_success(origin: Origin, name: str) -> bool:
    """`_, err := NewEngine(cfg)` then `if err == nil { t.Fatal("expected an
    error") }` (or `t.Error`; also `if _, err := NewEngine(cfg); err == nil`):
    the test fails where the acquisition succeeded."""
    for node in syntax.walk(origin.unit.body):
        if node.type != "if_statement":
            continue
        initializer = node.child_by_field_name("initializer")
        made_here = initializer is not None and initializer.start_byte <= origin.call.start_byte < initializer.end_byte
        if node.start_byte <= origin.call.end_byte and not made_here:
            continue
        condition = " ".join(syntax.text(node.child_by_field_name("condition")).split())
        if condition not in (f"{name} == nil", f"nil == {name}"):
            continue
        consequence = node.child_by_field_name("consequence")
        if consequence is not None and any(
            syntax.text(call.child_by_field_name("function")).endswith(_FAILS_TEST) for call in syntax.calls_in(consequence)
        ):
            return True
    return False


def _field_released(use) -> bool:
    """`C.cudaFree(b.ptr)` of a variable's field (not a global's)."""
    return use.kind is UseKind.DEREF and use.role is not None and bool(use.field) and use.symbol.is_local
