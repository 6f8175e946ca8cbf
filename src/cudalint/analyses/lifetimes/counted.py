"""Counted (handle-less) resources: `nvml.Init`/`nvml.Shutdown`, `dcgmInit`,
`cuDevicePrimaryCtxRetain` (docs/design.md, *Handle-less (counted) resources*).

An acquisition by kind takes one count of a process-wide reference counter;
it has no handle, so the walk follows the kind: any release of it (a release
call of the kind, deferred or not, a function of the package or module that
releases it, a func literal that does) ends what it follows, and a second
acquisition of the kind on the path is that acquisition's to follow. What a
path does with the count is then read off its exit:

* a *failing* return (a non-nil error, a failure status, a goroutine exit)
  with the count held leaks it: the caller sees a failure and will not
  release what it does not know it got (CL101), even in a function that
  never releases the kind;
* a succeeding return with the count held hands it to the caller: the
  function is an initialiser, and its callers acquire the kind at their
  call, held where it succeeds (`hands_on`), up to `main`, `init`,
  `TestMain` and exported functions, which may keep it for the process
  lifetime. Where some succeeding return releases and another keeps, the
  keeping one is a leak (the caller cannot know which it got), unless it
  hands out with the count a value whose type gives it back (a manager
  with a `Stop` that calls `nvml.Shutdown()`);
* a release registered (deferred) before the acquisition succeeded runs on
  the path where it failed, releasing a count this function never took
  (CL202), unless that path ends the process. The same holds for an
  acquisition whose release is a function it hands out (go-dcgm's
  `cleanup, err := dcgm.Init(mode)`): `defer cleanup()` above the error
  check calls a nil function when Init fails.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Any
from dataclasses import replace
from functools import partial

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CalleeKind, CallIndex
from cudalint.analyses.lifetimes.flags import counted_up, guarded_release, held_flag, package_flag, set_true
from cudalint.analyses.lifetimes.holders import released_untaken, value_holds_count
from cudalint.analyses.lifetimes.nils import NilLocals, holds_new_error
from cudalint.analyses.lifetimes.outcomes import EarlyRelease, Origin
from cudalint.analyses.lifetimes.unchecked import plain_release, status_dropped
from cudalint.analyses.lifetimes.testing import requires_success
from cudalint.analyses.lifetimes.states import LeftControl, Phase, State, WalkRecord, note_gated_call, path_to, release
from cudalint.analyses.status import Outcome, StatusSemantics, StatusSource
from cudalint.analyses.uses import UseKind, VariableUses
from cudalint.cfg import CFG, DEFERS_RUN_ON, ExitKind, NodeKind
from cudalint.functions import Unit, UnitKind
from cudalint.gotypes import imported_type, named_type
from cudalint.scope import SymbolKind
from cudalint.knowledge import StatusSpec

# The exported facts of a function of another package of the module.
Imported = Callable[[tuple[str, str] | None], Any]

# Functions that keep a count for the process lifetime: nobody calls them
# (exported functions are handed on to their importers instead).
_ENTRY_POINTS = ("main", "init", "TestMain")

# The parameters of a Prometheus collector's Collect and of an HTTP handler.
_COLLECTOR = re.compile(r"\(\s*(\w+\s+)?chan\s*<-\s*(\w+\.)?Metric\s*\)")
_HANDLER = re.compile(r"\(\s*(\w+\s+)?(\w+\.)?ResponseWriter\s*,\s*(\w+\s+)?\*\s*(\w+\.)?Request\s*\)")

# Calls whose result is a non-nil error.
_NEW_ERROR = re.compile(r"(fmt\.Errorf|errors\.(New|Errorf|Wrap|Wrapf|WithMessage|WithMessagef|WithStack))$")


def is_counted(origin: Origin | None) -> bool:
    return origin is not None and origin.role.handle == "none"


class Counted:
    def __init__(
        self, calls: CallIndex, uses: VariableUses, status: StatusSemantics, imported: Imported, nils: NilLocals,
        never_returns: Callable[[Unit], bool],
    ):
        self._calls = calls
        self._never_returns = never_returns  # a release in a function that then exits is no caller's
        self._nils = nils
        self._imported = imported  # the facts of a function of another package of the module
        self._status = status
        self._uses = uses
        self._releasing: dict[str, dict[Unit, bool]] = {}  # per kind
        self._error_makers: dict[Unit, bool] = {}
        self._release_names: dict[str, frozenset[str]] = {}
        self._taking: dict[tuple[Node, str], bool] = {}  # local initialisers, per kind

    # -- what a node does to a count ---------------------------------------------

    def through_node(self, graph: CFG, origin: Origin, state: State, n: int, record: WalkRecord) -> State:
        """Releases of the kind at node n (now, or deferred to the exit);
        a new acquisition of the kind ends the walk (it is followed on its
        own), and the same one reached again with the count held (a loop
        that takes it on every iteration) is recorded; a func literal that
        releases the kind and is kept or handed on takes the count with it."""
        name = origin.resource.name
        for root in graph.evaluated(n):
            for call in syntax.calls_in(root):
                if call == origin.call and state.phase is Phase.HELD and same_count(self._calls, call) and (
                    # A defer registered before the loop gives back one count, not one per iteration.
                    state.deferred_release is None or not graph.has_path(origin.node, state.deferred_release)
                ):
                    record.retaken.append((n,))
                if call == origin.call or self._takes(call, name):
                    raise LeftControl
                note_gated_call(self._calls.call(call), origin, state, n, call, record)
                function = syntax.unparen(call.child_by_field_name("function"))
                if function is not None and function.type == "func_literal":
                    continue  # a literal called in place: below, with the other literals
                bound = self._bound_cleanup(function, name)
                if bound is not None:
                    # `cleanup()` of `cleanup := func() { nvml.Shutdown() }`: the literal runs here.
                    state = release(origin, state, n, _statement_of(call) == "defer_statement", record, None)
                    continue
                if self._call_releases(call, name):
                    state = release(origin, state, n, _statement_of(call) == "defer_statement", record, None)
                elif _unseen(self._calls, call) and state.phase is Phase.HELD:
                    record.transferred += 1  # a method the analysis cannot see into may release it: silence
                    raise LeftControl
            for literal in syntax.outermost(root, "func_literal"):
                unit = self._calls.literal(literal)
                if unit is not None and unit.body is not None and state.phase is Phase.HELD and any(
                    _unseen(self._calls, call) for call in syntax.calls_in(unit.body)
                ):
                    record.transferred += 1
                    raise LeftControl
                if unit is None or not self.releases(unit, name) or _only_called(unit):
                    continue  # (a literal bound to a local that is only ever called runs where it is called)
                call = literal.parent if literal.parent is not None and literal.parent.type == "call_expression" else None
                statement = _statement_of(call) if call is not None else ""
                if call is not None and statement == "defer_statement":
                    state = release(origin, state, n, True, record, None)
                elif call is not None and statement != "go_statement":
                    state = release(origin, state, n, False, record, None)
                elif state.phase is Phase.HELD:
                    record.transferred += 1  # kept, or run by a goroutine: it owns the count now
                    raise LeftControl
        return state

    def _bound_cleanup(self, function: Node | None, name: str) -> Unit | None:
        """The func literal a called local is bound to, where it releases the
        kind and the local is only ever called."""
        if function is None or function.type != "identifier":
            return None
        symbol = self._calls.package.resolution.symbol(function)
        bound = self._calls.unit_of(symbol) if symbol is not None and symbol.is_local else None
        if bound is None or bound.kind is not UnitKind.LITERAL or bound.stored_in is not symbol or not _only_called(bound):
            return None
        return bound if self.releases(bound, name) else None

    def releases(self, unit: Unit, name: str) -> bool:
        """Whether some path of `unit` releases the kind `name`: a release
        call of it, a function of the package or module that releases it,
        in its body or a func literal of it; and `unit` takes no count of
        its own (one that does, Init and a deferred Shutdown, releases its
        own, not its caller's). Solved callees first (`fixpoint`), never by
        recursion along the call graph."""
        memo = self._releasing.setdefault(name, {})
        if unit not in memo:
            fixpoint.solve([unit], self._calls.local_callees, lambda u: self._releases_here(u, name, memo), memo, lambda _: False)
        return memo[unit]

    def _releases_here(self, unit: Unit, name: str, memo: dict[Unit, bool]) -> bool:
        """`releases`, reading the package's callees from the memo."""
        if unit.body is None:
            return False
        # Only a call by name can be an API's or a known function's: taken
        # from the file's index, not by walking the body again for each kind.
        calls = self._calls.named_calls_in(unit)
        if any(self._takes(call, name) for call in calls):
            return False  # it takes its own count (Init ... defer Shutdown): balanced, no release of the caller's
        for call in calls:
            callee = self._calls.callee(call)
            if callee.kind is CalleeKind.LOCAL and callee.target is not None:
                if memo.get(callee.target, False) and not self._never_returns(callee.target):
                    return True
            elif self._call_releases(call, name, local=False):
                return True
        return False

    def _call_releases(self, call: Node, name: str, local: bool = True) -> bool:
        fact = self._calls.calls.get(call)
        if fact is not None and fact.api is not None:
            return any(resource.name == name for resource, _ in fact.api.roles("release"))
        callee = self._calls.callee(call)
        if callee.kind is CalleeKind.MODULE:
            facts = self._imported(callee.imported)
            return facts is not None and any(resource == name for _, resource in getattr(facts, "counted_releases", ()))
        if self._named_release(call, name):
            return True
        if not local:
            return False  # a function of the package, or a literal of the body: read from the memo, or walked
        target = callee.target
        if callee.kind is CalleeKind.LOCAL and target is not None:
            return self.releases(target, name) and not self._never_returns(target)
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is not None and function.type == "identifier":
            bound = self._calls.unit_of(self._calls.package.resolution.symbol(function))
            return bound is not None and bound.kind is UnitKind.LITERAL and self.releases(bound, name)
        return False

    def _named_release(self, call: Node, name: str) -> bool:
        """`lib.Shutdown()` on a value a function of the module made, whose
        type is not known here (`lib, err := nvmllib.New()`): a method named
        as a release of the kind is one (the value is an initialiser's)."""
        operand = syntax.method_operand(call)
        if operand is None or operand.type != "identifier" or self._calls.callee(call).kind is not CalleeKind.UNKNOWN:
            return False
        if syntax.text(syntax.called(call).child_by_field_name("field")) not in self._release_methods(name):
            return False
        symbol = self._calls.package.resolution.symbol(operand)
        made = syntax.unparen(symbol.init) if symbol is not None and symbol.kind is SymbolKind.VAR and symbol.type_node is None else None
        return made is not None and made.type == "call_expression" and self._calls.callee(made).kind is CalleeKind.MODULE

    def _release_methods(self, name: str) -> frozenset[str]:
        """The last names of the kind's release calls (`Shutdown` of
        `nvml.Shutdown` and `nvml.Interface.Shutdown`)."""
        if name not in self._release_names:
            self._release_names[name] = frozenset(
                role.call.rsplit(".", 1)[-1] for family in self._calls.knowledge.families for resource in family.resources
                if resource.name == name for role in resource.release
            )
        return self._release_names[name]

    def _acquires(self, call: Node, name: str) -> bool:
        """A call that takes a count of the kind: the API's, or an
        initialiser of another package of the module (`telemetry.NewSampler()`)."""
        fact = self._calls.calls.get(call)
        if fact is not None and fact.api is not None:
            return any(resource.name == name for resource, _ in fact.api.roles("acquire"))
        callee = self._calls.callee(call)
        effects = self._imported(callee.imported) if callee.kind is CalleeKind.MODULE else None
        return effects is not None and any(handed.index < 0 and handed.resource == name for handed in effects.hands_out)

    def _takes(self, call: Node, name: str) -> bool:
        """`_acquires`, or a call of a local initialiser (`NvmlInit(lib)`
        calling `lib.Init()`): either way the count is the caller's own. A
        local function that takes and gives back (Init, then a deferred
        Shutdown, itself or through one function of its own) takes nothing.
        Read two calls deep, never by recursion along the call graph."""
        callee = self._calls.callee(call)
        target = callee.target if callee.kind is CalleeKind.LOCAL else None
        if target is None or target.body is None:
            return self._acquires(call, name)
        if (target.node, name) not in self._taking:
            self._taking[(target.node, name)] = _in_body(self._calls, target, partial(self._acquires, name=name)) and not _in_body(
                self._calls, target, partial(self._call_releases, name=name, local=False),
            )
        return self._taking[(target.node, name)]

    def registered_before(self, graph: CFG, origin: Origin, state: State, defers: list[int], taken: list[int]) -> State:
        """A deferred release of the kind registered on a path to the
        acquisition (and not after it) runs at the function's exit: it
        covers the count where the acquisition succeeded (and is CL202 where
        it failed), unless it follows another count taken before it
        (`nvml.Init(); defer nvml.Shutdown()`, then a component's own
        `New(); defer c.Close()`): then it is that count's."""
        name = origin.resource.name
        for n in defers:
            if n == origin.node or not graph.reachable(n) or not graph.has_path(n, origin.node) or graph.has_path(origin.node, n):
                continue
            if any(m != origin.node and not graph.has_path(origin.node, m) and (
                graph.has_path(m, n) or (graph.has_path(n, m) and graph.has_path(m, origin.node))
            ) for m in taken):
                continue  # registered after an earlier count of the kind, or just before one on the way here: that one's
            acquires = partial(self._acquires, name=name)
            if self._defer_releases(graph, n, name) and not (
                value_holds_count(graph.unit, self._calls.package.units, acquires) and released_untaken(graph, n, acquires)
            ):
                return replace(state, deferred_release=n)
        return state

    def _defer_releases(self, graph: CFG, n: int, name: str) -> bool:
        for root in graph.evaluated(n):
            for call in syntax.calls_in(root):
                if _statement_of(call) != "defer_statement":
                    continue
                function = syntax.unparen(call.child_by_field_name("function"))
                if function is not None and function.type == "func_literal":
                    literal = self._calls.literal(function)
                    if literal is not None and self.releases(literal, name):
                        return True
                elif self._call_releases(call, name):
                    return True
        return False

    # -- exits -----------------------------------------------------------------------

    def fails(self, graph: CFG, origin: Origin | None, kind: ExitKind, before: int) -> bool | None:
        """Whether the exit after node `before` is a failing one for the
        function's caller: True (a goroutine exit; a return of a non-nil
        error or of a failure status), False (it succeeds: a nil error, a
        success status, or a function with no failure result), None where
        it cannot be told (read as succeeding: no finding, no guess). With
        no origin, only an error or a comma-ok result can say it failed."""
        if kind is ExitKind.GOEXIT:
            return True
        unit = graph.unit
        failure = _failure_result(unit, origin.status if origin is not None else None)
        if failure is None:
            return False
        statement = graph.ast(before)
        if graph.kind(before) is not NodeKind.RETURN or statement is None:
            return None if graph.kind(before) is not NodeKind.IMPLICIT_RETURN else False
        expressions = syntax.returned(statement)
        if not expressions:
            results = unit.results
            return self._tested_failing(statement, origin, results[-1].name, failure) if results else None
        last = syntax.unparen(expressions[-1])
        if last is None:
            return None
        text = syntax.text(last)
        if failure == "ok":
            return True if text == "false" else False if text == "true" else None
        if failure == "error":
            if text == "nil":
                return False
            if self._new_error(last):
                return True
            if last.type == "identifier":
                symbol = self._calls.package.resolution.symbol(last)
                if symbol is not None and not symbol.is_local:
                    return True  # a sentinel error of the package
                tested = self._tested_failing(statement, origin, text, failure)
                return True if not tested and holds_new_error(symbol, self._calls, self._new_error) else tested
            if last.type == "call_expression":
                # `return wrapErr("init", err)` where err failed, `return
                # check("copy", st)` where the status st did: an error made of
                # a failure is one.
                for argument in syntax.children(last.child_by_field_name("arguments")):
                    argument = syntax.unparen(argument)
                    if argument is not None and argument.type == "identifier" and any(
                        self._tested_failing(statement, origin, syntax.text(argument), tested) for tested in (failure, "status")
                    ):
                        return True
            return None
        if self._is_success(origin, last):
            return False
        if last.type == "identifier":
            return self._tested_failing(statement, origin, text, failure)
        return None

    def _new_error(self, value: Node) -> bool:
        """A value that is a new error: `&Error{...}`, `fmt.Errorf(...)`,
        `errors.New(...)`, or a call of the package's function that builds
        one on every return (`nvmlErr("create", ret)`)."""
        if value.type in ("composite_literal", "unary_expression"):
            return "{" in syntax.text(value)
        if value.type != "call_expression":
            return False
        if _NEW_ERROR.search(syntax.text(value.child_by_field_name("function"))):
            return True
        target = self._calls.callee(value).target
        if target is None or target.body is None or target.kind is UnitKind.LITERAL or not target.returns_error or target.result_count != 1:
            return False
        if target not in self._error_makers:
            self._error_makers[target] = False  # while deciding (recursion)
            returned = [syntax.returned(r) for r in syntax.return_statements(target.body)]
            self._error_makers[target] = bool(returned) and all(
                len(values) == 1 and (made := syntax.unparen(values[0])) is not None and self._new_error(made) for values in returned
            )
        return self._error_makers[target]

    def _is_success(self, origin: Origin | None, value: Node | None) -> bool:
        """A success value of the acquisition's family (`nvml.SUCCESS`)."""
        return (
            origin is not None and value is not None
            and self._status.is_success_value(StatusSource.of(origin.api, origin.written), value)
        )

    def _tested_failing(self, statement: Node, origin: Origin | None, name: str, failure: str) -> bool | None:
        """`if err != nil { return err }`: the return sits on the side of
        an enclosing `if` where the variable it returns is a failure."""
        child, parent = statement, statement.parent
        while parent is not None and parent.type not in ("function_declaration", "method_declaration", "func_literal"):
            if parent.type == "if_statement":
                condition = syntax.unparen(parent.child_by_field_name("condition"))
                side = (
                    True if child == parent.child_by_field_name("consequence")
                    else False if child == parent.child_by_field_name("alternative") else None
                )
                if side is not None and condition is not None and condition.type == "binary_expression":
                    operator = syntax.text(condition.child_by_field_name("operator"))
                    left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
                    other = right if syntax.text(left) == name else left if syntax.text(right) == name else None
                    # An error variable holding a status (`n, ret := nvml.DeviceGetCount()` into
                    # `ret error`) is tested against the family's success value.
                    good = other is not None and (
                        (failure == "error" and (syntax.text(other) == "nil" or self._status.is_family_success(other)))
                        or self._is_success(origin, other)
                    )
                    if good and operator in ("==", "!="):
                        return (operator == "!=") == side
            child, parent = parent, parent.parent
        return None

    def replaces(self, graph: CFG, origin: Origin) -> bool:
        """Whether the function released a count of the kind on every path
        before it took this one (`nvml.Shutdown()` then `nvml.Init()`: a
        re-initialisation). The count it takes replaces the one it gave
        back, so a failing return that holds it leaves its caller's count as
        it was: no leak."""
        name = origin.resource.name
        releasing = {
            n for n in graph.statement_nodes() if n != origin.node and any(
                self._call_releases(call, name) and _statement_of(call) != "defer_statement"
                for root in graph.evaluated(n) for call in syntax.calls_in(root)
            )
        }
        return bool(releasing) and not graph.reachable_avoiding(origin.node, releasing)

    def recorded(self, graph: CFG, origin: Origin) -> bool:
        """Whether a path after the acquisition records it in a package-level
        flag (`initDone = true`) or reference count (`nvmlRefCount++`): the
        count is the package's then, held until whoever reads the flag (or
        counts down to zero) gives it back, and a later call does not take
        another; its callers neither hold it nor lose it on their failing
        returns."""
        resolution = self._calls.package.resolution
        for n in graph.statement_nodes():
            if n == origin.node or not graph.has_path(origin.node, n):
                continue
            statement = graph.ast(n)
            if any(package_flag(target, resolution) for target in set_true(statement) + counted_up(statement)):
                return True
        return False

    def recorded_on(self, graph: CFG, path: tuple[int, ...], name: str) -> bool:
        """Whether a node of this path records the count in a field of a
        value the function did not make (`nm.nvmlInitialized = true`; see
        `held_flag`): a return after it leaves the count to that value."""
        package = self._calls.package
        return any(
            target.type == "selector_expression"
            and held_flag(target, package.resolution, package.units, lambda unit: self.releases(unit, name), self._calls.types.type_of)
            for n in path for target in set_true(graph.ast(n))
        )

    def keeps(self, unit: Unit) -> bool:
        """main, init and TestMain may keep a count for the process lifetime."""
        return unit.kind is UnitKind.FUNCTION and unit.name in _ENTRY_POINTS

    def returns_owner(self, statement: Node | None, name: str) -> bool:
        """Whether a return hands out, with the count, a value of the
        package whose type gives it back (`return manager` where
        `(*gpuDeviceManager).shutdown` calls `nvml.Shutdown()`): the caller
        releases it through that value, so another return releasing the
        count itself (and handing out a no-op value) is no leak."""
        return statement is not None and statement.type == "return_statement" and any(
            self.releases(method, name) for method in _methods_of_returned(self._calls, statement)
        )

    def per_call(self, unit: Unit) -> str:
        """What a function is called on, where a framework calls it again and
        again and keeps nothing it returns: a Prometheus collector's
        `Collect(ch chan<- prometheus.Metric)` (every scrape), an HTTP
        handler `(w http.ResponseWriter, r *http.Request)` (every request).
        A count such a function takes and keeps is taken once more on each
        call: it is no process-lifetime initialisation. "" for any other."""
        parameters = unit.node.child_by_field_name("parameters")
        written = " ".join(syntax.text(parameters).split()) if parameters is not None else ""
        name = unit.name.rsplit(".", 1)[-1]
        if name == "Collect" and unit.kind is UnitKind.METHOD and _COLLECTOR.fullmatch(written):
            return "every scrape"
        if _HANDLER.fullmatch(written):
            return "every request"
        return ""

    # -- releases registered before the acquisition succeeded (CL202) ------------------

    def early_releases(self, graph: CFG, origin: Origin, state: State, outcome) -> list[EarlyRelease]:
        """The paths on which the acquisition failed and the function
        returns (or panics) with a release of it registered (deferred before the
        acquisition, or between it and its success check): a count it
        never took is released, or a nil cleanup function called. `outcome`
        says what an edge's condition says of the acquisition."""
        unchecked = state.proxy is None and is_counted(origin) and status_dropped(origin)
        if state.proxy is None and not unchecked:
            return []  # its status is never tested (nor dropped): nothing says it failed
        name = origin.resource.name
        start = (origin.node, state.deferred_release, unchecked, self._nils.at(graph, origin.node))
        parents: dict[tuple, tuple | None] = {start: None}
        queue = deque([start])
        found: dict[int, EarlyRelease] = {}
        while queue and len(parents) < 5000:
            node, deferred, failed, known = current = queue.popleft()
            for edge in graph.out_edges(node):
                if self._nils.contradicts(edge, known):
                    continue  # `if err != nil` where this path set err (or left it nil)
                said = outcome(origin, state, edge)
                if said is Outcome.SUCCESS:  # (after a failing verdict: a contradiction, `a && b` split)
                    continue
                now_failed = failed or said is Outcome.FAILURE
                target = edge.target
                if graph.kind(target) is NodeKind.EXIT:
                    # A panic unwinds through the defer too (HAMi's `panic(0)` on a failed nvml.Init);
                    # a return of the status itself (`return ret == nvml.SUCCESS`) comes after the
                    # defer on the path where it failed as on the other.
                    reported = not now_failed and _returns_status(graph.ast(node), state.proxy, self._calls)
                    if (now_failed or reported) and deferred is not None and graph.exit_kind(target) in DEFERS_RUN_ON:
                        path = path_to(parents, current) + (target,)
                        panics = graph.exit_kind(target) is ExitKind.PANIC
                        found.setdefault(deferred, EarlyRelease(origin, deferred, node, path, panics, unchecked=unchecked))
                    continue
                if self._reacquires(graph, target, origin) or (not now_failed and _overwrites(self._uses, graph, target, state)):
                    continue  # (once it failed, a new value of its status variable changes nothing)
                if deferred is not None and not now_failed and requires_success(graph.ast(target), error_variable(origin)):
                    # `require.NoError(t, err)`: where it fails, t.FailNow ends the
                    # goroutine and runs what was deferred; past it, it succeeded.
                    found.setdefault(deferred, EarlyRelease(origin, deferred, target, path_to(parents, current) + (target,), asserted=True))
                    continue
                registered = deferred
                if graph.kind(target) is NodeKind.DEFER and deferred is None and self._registers(graph, origin, state, target, name) and (
                    not unchecked or plain_release(graph.ast(target), origin, self._calls.package.resolution)
                ):
                    registered = target
                key = (target, registered, now_failed, self._nils.after(graph, target, self._nils.through(edge, known)))
                if key not in parents:
                    parents[key] = current
                    queue.append(key)
        return list(found.values())

    def _reacquires(self, graph: CFG, n: int, origin: Origin) -> bool:
        return any(
            call == origin.call or self._acquires(call, origin.resource.name)
            for root in graph.evaluated(n) for call in syntax.calls_in(root)
        )

    def _registers(self, graph: CFG, origin: Origin, state: State, n: int, name: str) -> bool:
        if is_counted(origin):
            return self._defer_releases(graph, n, name) and not guarded_release(graph.ast(n), origin.call, self._calls, self._call_releases, name)
        # A release handed out as a function (any use releases it): `defer
        # cleanup()`; a release of the handle (`defer dcgm.DestroyGroup(g)`)
        # or a release method of its value (`defer b.Free()`), which the
        # acquisition did not make where it failed.
        resource = origin.resource
        # Releasing the zero value a failed acquisition leaves is harmless
        # where the API says so (`free(NULL)`) or the method checks for it.
        harmless = (resource.owns or resource).zero_release_noop and not resource.nil_when_failed
        return any(
            use.deferred and use.symbol in state.names and (
                (use.kind is UseKind.CALLED and resource.any_use_releases)
                or (use.kind is UseKind.RELEASE and not harmless)
                or (
                    use.kind is UseKind.METHOD and resource.release_method(use.method) is not None
                    and (resource.nil_when_failed or not (harmless or use.method in resource.idempotent))
                )
            )
            for use in self._uses.uses(graph.evaluated(n))
        )


def _unseen(calls: CallIndex, call: Node) -> bool:
    """A call the analysis cannot see into that may release a count: a
    function value, or a method of a value whose type is no standard
    library's (an interface of the module: `defer provider.Cleanup()`,
    `nvmlprovider.Client().Cleanup()`). Functions of other packages
    (loggers) and methods of the standard library's types are not."""
    callee = calls.callee(call)
    if callee.kind is CalleeKind.VALUE:
        # `wrapErr(...)` of `wrapErr := func(...) error {...}`: the literal is seen.
        bound = calls.unit_of(callee.symbol) if callee.symbol is not None and callee.symbol.is_local else None
        return bound is None or bound.kind is not UnitKind.LITERAL or bound.stored_in is not callee.symbol or not _only_called(bound)
    if callee.kind is not CalleeKind.UNKNOWN:
        return False
    function = syntax.unparen(call.child_by_field_name("function"))
    if function is None or function.type != "selector_expression":
        return False
    operand = syntax.unparen(function.child_by_field_name("operand"))
    if operand is None:
        return False
    if operand.type == "call_expression":
        inner = calls.callee(operand)
        if inner.kind in (CalleeKind.LOCAL, CalleeKind.MODULE, CalleeKind.VALUE):
            return True
        fact = calls.call(operand)
        return inner.kind is CalleeKind.UNKNOWN and fact is not None and _outside_std(fact.import_path)
    if operand.type != "identifier":
        return False  # a field, an index: its type is not known here, no guess
    resolution = calls.package.resolution
    symbol = resolution.symbol(operand)
    if symbol is None or symbol.kind is not SymbolKind.VAR:
        return False  # a package's function, a type's method expression
    typed = imported_type(resolution, symbol)
    if typed is not None:
        return _outside_std(typed[0])
    return symbol.type_node is not None and named_type(symbol.type_node) is not None and calls.local_type(symbol) is not None


def hand_out_status(unit: Unit, origin: Origin) -> tuple[bool, StatusSpec | None] | None:
    """Whether an initialiser can hand its count on, and under which
    status its callers hold it: with a nil error, a success status of the
    acquisition's family (its last result), or always (no result says
    whether it worked: none at all, or values, its failures panicking).
    None where a last bool says whether it worked (no guess)."""
    failure = _failure_result(unit, origin.status)
    if failure == "error" or failure is None:
        return True, None
    if failure == "status" and origin.status is not None:
        return True, replace(origin.status, result="last")
    return None


def _failure_result(unit: Unit, status: StatusSpec | None) -> str | None:
    """"error", "status" (a status of the acquisition's family), "ok" (a
    last result of type bool, Go's comma-ok: `return 0, false` fails) or
    None: what the function's last result says of its success."""
    if unit.returns_error:
        return "error"
    result = unit.node.child_by_field_name("result")
    if result is not None and result.type == "parameter_list":
        declarations = syntax.children(result)
        if not declarations:
            return None
        result = declarations[-1].child_by_field_name("type")
    if result is None:
        return None
    if syntax.text(result) == "bool":
        return "ok"
    if status is not None and status.kind == "code" and _same_name(syntax.text(result), status.type):
        return "status"
    return None


def _same_name(written: str, status_type: str) -> bool:
    """`C.cudaError_t` and `cudaError_t`; `C.enum_ggml_status` (cgo's name
    for an enum without a typedef) and `ggml_status`."""
    return written.removeprefix("C.").removeprefix("enum_").rsplit(".", 1)[-1] == status_type.removeprefix("C.").rsplit(".", 1)[-1]


def _outside_std(import_path: str) -> bool:
    """An import path of a module, not of the standard library."""
    return "." in import_path.split("/", 1)[0]


def error_variable(origin: Origin) -> str:
    """The variable the acquisition's last result (its error) is assigned to
    (`err` of `client, err := newClient(...)`); "" where there is none."""
    statement = origin.call.parent
    while statement is not None and statement.type not in ("short_var_declaration", "assignment_statement", "block"):
        statement = statement.parent
    if statement is None or statement.type == "block":
        return ""
    targets = syntax.expressions(statement.child_by_field_name("left"))
    status = targets[-1] if targets else None
    return syntax.text(status) if status is not None and status.type == "identifier" and syntax.text(status) != "_" else ""


def _returns_status(statement: Node | None, proxy: Any, calls: CallIndex) -> bool:
    """A return whose values read the acquisition's status variable
    (`return ret == nvml.SUCCESS`, `return err`): nothing before it said
    whether the acquisition failed, and the caller is told."""
    if statement is None or statement.type != "return_statement" or proxy is None or isinstance(proxy, Node):
        return False
    resolution = calls.package.resolution
    return any(
        node.type == "identifier" and resolution.symbol(node) is proxy for node in syntax.walk(statement, into_functions=False)
    )


def _overwrites(uses: VariableUses, graph: CFG, n: int, state: State) -> bool:
    """The variable holding the acquisition's status gets a new value:
    from here on nothing says whether it failed."""
    proxy = state.proxy
    return proxy is not None and not isinstance(proxy, Node) and any(
        use.symbol is proxy and use.kind is UseKind.WRITE for use in uses.uses(graph.evaluated(n))
    )


def _in_body(calls: CallIndex, unit: Unit, found: Callable[[Node], bool]) -> bool:
    """A call of `unit`'s body (its func literals' too: `defer func() {
    lib.Shutdown() }()`), or of a local function it calls, is `found`."""
    made = calls.named_calls_in(unit)
    targets = [t for c in made if (t := calls.callee(c).target) is not None and t.body is not None]
    return any(found(c) for c in made) or any(found(c) for t in targets for c in calls.named_calls_in(t))



def _statement_of(call: Node | None) -> str:
    return syntax.statement_of_call(call) if call is not None else ""


def _only_called(literal: Unit) -> bool:
    """A func literal bound to a local (`cleanup := func() {...}`) that the
    function only ever calls (`cleanup()`, `defer cleanup()`): never hands
    on, stores or returns."""
    symbol = literal.stored_in
    if symbol is None or not symbol.is_local or symbol.function is None or literal.parent is None or literal.parent.body is None:
        return False
    resolution = literal.parent.resolution
    for node in syntax.walk(literal.parent.body):
        if node.type != "identifier" or syntax.text(node) != symbol.name or resolution.symbol(node) is not symbol:
            continue
        if node == symbol.node:
            continue
        call = node.parent
        if call is None or call.type != "call_expression" or call.child_by_field_name("function") != node or syntax.statement_of_call(call) == "go_statement":
            return False
    return True


def nil_when_failed(unit: Unit, index: int) -> bool:
    """Whether every failing return of a function that returns an error
    gives nil at result `index` (`return nil, err`), and one does."""
    if not unit.returns_error or unit.body is None or index < 0:
        return False
    failing = 0
    for statement in syntax.return_statements(unit.body):
        expressions = syntax.returned(statement)
        if len(expressions) != unit.result_count or syntax.text(expressions[-1]) == "nil":
            continue
        if syntax.text(syntax.unparen(expressions[index])) != "nil":
            return False
        failing += 1
    return failing > 0


def same_count(calls: CallIndex, call: Node) -> bool:
    """Whether a call takes the same count each time it runs: a function
    (not a method of a value a loop may change) given only constants
    (`nvml.Init()`, `dcgm.Init(dcgm.Embedded)`), not started as a
    goroutine. A count per device (`cuDevicePrimaryCtxRetain(&c, dev)`,
    a worker given its device) is another count each time."""
    if call.parent is not None and call.parent.type == "go_statement":
        return False
    function = syntax.unparen(call.child_by_field_name("function"))
    if function is None:
        return False
    if function.type == "selector_expression":
        operand = syntax.unparen(function.child_by_field_name("operand"))
        if operand is None or operand.type != "identifier" or not _is_package(calls, operand):
            return False
    elif function.type != "identifier":
        return False
    return all(_constant(calls, argument) for argument in syntax.children(call.child_by_field_name("arguments")))


def _is_package(calls: CallIndex, identifier: Node) -> bool:
    symbol = calls.package.resolution.symbol(identifier)
    return symbol is None or symbol.kind is SymbolKind.PACKAGE


def _constant(calls: CallIndex, argument: Node) -> bool:
    node = syntax.unparen(argument)
    if node is None:
        return False
    if node.type in ("int_literal", "float_literal", "interpreted_string_literal", "raw_string_literal", "true", "false", "nil"):
        return True
    if node.type == "identifier":
        symbol = calls.package.resolution.symbol(node)
        return symbol is not None and symbol.kind is SymbolKind.CONST
    if node.type == "selector_expression":
        operand = syntax.unparen(node.child_by_field_name("operand"))
        return operand is not None and operand.type == "identifier" and _is_package(calls, operand)
    return False


def _methods_of_returned(calls: CallIndex, statement: Node) -> list[Unit]:
    """The methods of the package's types of the values a return statement returns."""
    names = {calls.types.type_of(value) for value in syntax.returned(statement)} - {None}
    return [
        unit for unit in calls.package.units
        if unit.kind is UnitKind.METHOD and any(unit.name.startswith((f"({name}).", f"(*{name}).")) for name in names)
    ]
