"""The resource engine: what happens to every acquired handle on every path.

For each acquisition (an origin) the engine walks the function's CFG from
the acquiring call, carrying a small state: which variables hold the handle,
whether it is held or already released, the variable that carries the
acquire's status (a proxy) and whether a deferred release will run at exit.
The walk is a breadth-first search over (node, state) pairs, so it is exact
along each path up to the state's precision, terminates (states are finite),
and yields the shortest witness path for every finding.

The semantics are the design's (docs/design.md, *Resources*):

* held only on success: a branch on which the status proxy (or the handle
  itself, compared with nil) says the acquire failed holds nothing;
* released by a release call, by a `defer` of one registered after the
  acquisition (its arguments are evaluated then), or by a deferred closure
  that releases the variable at exit on any of its paths;
* transferred (the engine stops following it) when returned, stored in a
  field, index, map, global or through a pointer, sent, captured by an
  escaping closure, or passed to a function that is not known to borrow;
* passed to a function of this package: the callee's per-parameter summary
  decides (releases, retains, borrows), computed by this same walk;
* paths ending in panic or process exit leak nothing; goroutine exits do.

Rules (CL1xx, CL2xx, CL3xx, CL5xx) read the outcomes through the
`lifetimes` analysis; nothing here reports findings.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from enum import Enum

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex, unwrap
from cudalint.analyses.owners import OWNERS, Owners, owned_resource
from cudalint.analyses.resource_facts import ResourceEffects, exported_effects
from cudalint.analyses.status import STATUS, Outcome, Roles, StatusSemantics, StatusSource, Subject
from cudalint.analyses.uses import USES, Use, UseKind, VariableUses
from cudalint.cfg import CFG, Edge, ExitKind, NodeKind, PackageCFGs
from cudalint.framework import Analysis, FactView
from cudalint.functions import LiteralUse, Unit, UnitKind
from cudalint.gotypes import imported_type
from cudalint.knowledge import ApiFunction, CallRole, ResourceSpec, StatusSpec
from cudalint.scope import Role, Symbol

# -- states -------------------------------------------------------------------


class Phase(str, Enum):
    HELD = "held"
    RELEASED = "released"


@dataclass(frozen=True)
class State:
    phase: Phase
    names: frozenset[Symbol]
    # The status of the acquire, while it has not been tested: a variable
    # (`st := C.cudaMalloc(&p, n)`) or the call itself inside a condition.
    proxy: Symbol | Node | None = None
    # The `defer release(x)` registered while held (it captured the value).
    deferred_release: int | None = None
    # Variables a deferred closure will release at exit, whatever they hold then,
    # and the defer statements of those that release on every path.
    closure_released: frozenset[Symbol] = frozenset()
    closure_always: frozenset[tuple[Symbol, int]] = frozenset()
    # A variable that went out of scope was captured by such a closure: the
    # closure still sees the value and releases it at exit.
    captured_release: bool = False
    released_at: int | None = None  # the node that released it


class Effect(str, Enum):
    """What a function does with a handle passed to one of its parameters."""

    RELEASES = "releases"
    RETAINS = "retains"
    BORROWS = "borrows"


@dataclass(frozen=True)
class Summary:
    """How a function's paths treat a value it starts with."""

    releases_on_some_path: bool
    releases_on_every_path: bool
    hands_over: bool  # returned, stored, passed on, on some path

    @property
    def effect(self) -> Effect:
        if self.releases_on_every_path and not self.hands_over:
            return Effect.RELEASES
        if self.hands_over or self.releases_on_some_path:
            return Effect.RETAINS
        return Effect.BORROWS


# What a walk assumes of a value it cannot follow (a body not analysed, or
# recursion): the function keeps it.
_KEEPS = Summary(False, False, True)


def _keeps_all(unit: Unit) -> tuple[Summary, ...]:
    return tuple(_KEEPS for _ in unit.params)


# -- outcomes -----------------------------------------------------------------


@dataclass(frozen=True)
class Origin:
    unit: Unit
    node: int  # CFG node of the acquisition
    call: Node
    written: str  # the acquire call as written: "C.cudaMalloc"
    api: ApiFunction
    resource: ResourceSpec
    role: CallRole
    handle: str  # the handle as written in a message: "d", "cs"
    # Through a function of the package that hands the resource out (a
    # wrapper such as `alloc(n)`): the acquisition inside it; through a
    # function of another package of the module: where it acquires, said.
    via: Origin | None = None
    via_text: str = ""
    # Acquired inside a func literal into `captured`, a variable of this
    # function, by the literal's run at the call `through` (the literal
    # called in place, or passed to a function of the package that calls it).
    captured: Symbol | None = None
    through: Node | None = None

    @property
    def line(self) -> int:
        return self.call.start_point[0] + 1

    @property
    def innermost(self) -> Origin:
        """The API call that really acquired the resource."""
        origin = self
        while origin.via is not None:
            origin = origin.via
        return origin

    @property
    def status(self) -> StatusSpec | None:
        return self.api.status


class Lost(str, Enum):
    RETURN = "return"
    GOEXIT = "goexit"
    SCOPE = "scope"  # the variable holding it went out of scope (end of a loop iteration, a block)
    DISCARDED = "discarded"  # never stored in a variable at all


@dataclass(frozen=True)
class Leak:
    origin: Origin
    how: Lost
    node: int  # where it is lost: the return, the last node in scope, the acquire
    line: int
    path: tuple[int, ...]
    detail: str = ""  # DISCARDED: what happened to the temporary
    # A `defer` releasing this handle that does not cover this path: registered
    # before the acquisition (it released the old value), or never reached.
    other_defer: int | None = None  # its CFG node
    defer_too_early: bool = False
    # Every statement after which a path leaves the function with the
    # handle held (the first is `node`), and whether some path leaves
    # through one of them with it released: where a release could go.
    held_at: tuple[int, ...] = ()
    released_through_held: bool = False


@dataclass(frozen=True)
class Overwrite:
    origin: Origin
    node: int
    path: tuple[int, ...]


@dataclass(frozen=True)
class DoubleRelease:
    origin: Origin | None
    node: int  # the second release (a defer statement when by_defer)
    first: int  # the first release
    by_defer: bool  # the second release is a deferred one, running at exit
    handle: str


@dataclass(frozen=True)
class UseAfterRelease:
    origin: Origin | None
    node: int
    use: Use
    released: int  # the node that released it


@dataclass(frozen=True)
class Mismatch:
    origin: Origin
    node: int
    release_call: str
    release_resource: ResourceSpec


@dataclass
class UnitLifetimes:
    unit: Unit
    origins: list[Origin] = field(default_factory=list)
    leaks: list[Leak] = field(default_factory=list)
    overwrites: list[Overwrite] = field(default_factory=list)
    double_releases: list[DoubleRelease] = field(default_factory=list)
    uses_after_release: list[UseAfterRelease] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    # (acquisition, variable of the enclosing function that holds it): what a
    # func literal hands to the function around it.
    handed_up: list[tuple[Origin, Symbol]] = field(default_factory=list)


# -- the engine ---------------------------------------------------------------

_MAX_STATES = 20000  # per origin; a guard, far above what real functions need
# Path states one function's lifetimes may visit, over all its origins and
# the summaries they need: beyond it the function is reported as too complex
# (a `too-complex` notification), never analysed in silence or in gigabytes.
UNIT_BUDGET = 100_000


class PathBudgetExceeded(Exception):
    """The function has more paths than the engine follows."""


class _Stop(Exception):
    """The followed handle left the function's control (transferred or failed)."""


@dataclass
class _Walk:
    """Result of following one origin (or one parameter, for a summary)."""

    held_exits: list[tuple[int, ExitKind, tuple[int, ...]]] = field(default_factory=list)
    released_exits: int = 0
    released_after: set[int] = field(default_factory=set)  # the statements those exits leave from
    transferred: int = 0
    lost_in_scope: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)  # (node, line, path)
    overwrites: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    double_releases: list[tuple[int, int, bool]] = field(default_factory=list)  # (second, first, by defer)
    uses_after_release: list[tuple[int, Use, int]] = field(default_factory=list)  # (node, use, released at)
    mismatches: list[tuple[int, str, ResourceSpec]] = field(default_factory=list)


class Engine:
    def __init__(
        self, cfgs: PackageCFGs, facts: CallIndex, uses: VariableUses, owners: Owners, status: StatusSemantics, imported: FactView,
    ):
        self.cfgs = cfgs
        self.imported = imported  # the ResourceEffects of the other packages of the module
        self.facts = facts
        self.status = status
        self.uses = uses
        self.owners = owners
        self._summaries: dict[tuple[Unit, Symbol], Summary] = {}
        self._in_progress: set[tuple[Unit, Symbol]] = set()
        self._results: dict[Unit, UnitLifetimes] = {}
        self._defer_nodes: dict[Unit, list[int]] = {}
        self._budget: int | None = None  # path states left for the function being analysed
        self._analysing: set[Unit] = set()
        self._handing: dict[Unit, list[tuple[Origin, int]]] = {}
        self._by_parameter: dict[Unit, tuple[Summary, ...]] = {}
        self._acquiring: list[Unit] | None = None

    # -- public ----------------------------------------------------------------

    def lifetimes(self, unit: Unit) -> UnitLifetimes:
        found = self._results.get(unit)
        if found is None:
            outer, self._budget = self._budget, UNIT_BUDGET
            self._analysing.add(unit)
            try:
                found = self._analyse(unit)
            except PathBudgetExceeded:
                self.cfgs.failures.setdefault(unit, f"has too many paths to follow (over {UNIT_BUDGET:,} path states)")
                found = UnitLifetimes(unit)
            finally:
                self._budget = outer
                self._analysing.discard(unit)
            self._results[unit] = found
        return found

    def handed_out(self, unit: Unit) -> list[tuple[Origin, int]]:
        """What a function of the package hands its caller: (acquisition,
        result index) for each resource it acquires, never leaks, and
        returns as a bare variable, with a nil error where it returns one
        (`func alloc(n) (unsafe.Pointer, error)`). Its callers then acquire
        that resource at their call, held where the error is nil."""
        if unit in self._handing:
            return self._handing[unit]
        if unit in self._analysing or unit.kind is UnitKind.LITERAL or unit.body is None:
            return []  # recursion, or not a function its callers name
        # Callees first; a recursive wrapper hands out nothing (the answer
        # its callers got before it was known), so nothing in a cycle is
        # analysed under an assumption that changes afterwards.
        fixpoint.solve([unit], self.facts.local_callees, self._hand_outs, self._handing, lambda _: [], rounds=0)
        return self._handing[unit]

    def _hand_outs(self, unit: Unit) -> list[tuple[Origin, int]]:
        if unit.kind is UnitKind.LITERAL or unit.body is None:
            return []
        found = self.lifetimes(unit)
        lost = {leak.origin for leak in found.leaks} | {overwrite.origin for overwrite in found.overwrites}
        handed = []
        for origin in found.origins:
            if origin in lost or origin.role.handle == "none":
                continue
            index = _returned_at(unit, origin.handle) if origin.handle else self._returned_directly(unit, origin)
            if index is not None:
                handed.append((origin, index))
                continue
            constructed = self.owners.constructed(unit, origin.handle, origin.resource) if origin.handle else None
            if constructed is not None:
                index, owner = constructed
                handed.append((replace(origin, resource=owned_resource(origin.resource, owner.type_name, owner.methods)), index))
        return handed

    def _returned_directly(self, unit: Unit, origin: Origin) -> int | None:
        """`return C.CString(s)`: the position of the acquiring call among
        the returned values (with a nil error after it, if any)."""
        if not origin.role.is_result:
            return None
        child, parent = _value_parent(origin.call, self.facts)
        if parent is None or parent.type != "expression_list" or parent.parent is None or parent.parent.type != "return_statement":
            return None
        values = syntax.expressions(parent)
        if len(values) == 1 and unit.result_count > 1:
            return origin.role.index  # `return alloc(n)`: its results are the function's
        index = next((i for i, value in enumerate(values) if value.id == child.id), None)
        if index is None or (unit.returns_error and (index == len(values) - 1 or syntax.text(values[-1]) != "nil")):
            return None
        return index

    def units_with_acquisitions(self) -> list[Unit]:
        """The functions that acquire something: by an API call, or by a
        call of a function of the package that hands a resource out."""
        if self._acquiring is None:
            found = {unit.node: unit for unit in self.facts.units_calling_api() + self.facts.units_calling_module(self._hands_out)}
            # A literal may hand what it acquires to the function around it.
            for literal in list(found.values()):
                if literal.kind is UnitKind.LITERAL and literal.parent is not None:
                    found.setdefault(literal.parent.node, literal.parent)
            pending = list(found.values())
            by_node = {unit.node: unit for unit in self.facts.package.units}
            while pending:
                wrapper = pending.pop()
                if not self.handed_out(wrapper):
                    continue
                for call in self.facts.calls_of(wrapper):
                    caller = by_node.get(syntax.enclosing_function(call))
                    if caller is not None and caller.node not in found:
                        found[caller.node] = caller
                        pending.append(caller)
            self._acquiring = [unit for unit in self.facts.package.units if unit.node in found]
        return self._acquiring

    def effect(self, unit: Unit, symbol: Symbol) -> Effect:
        """What `unit` does with the value of `symbol` it starts with (a
        parameter, or a variable a func literal captures)."""
        return self.summary(unit, symbol).effect

    def summary(self, unit: Unit, symbol: Symbol) -> Summary:
        key = (unit, symbol)
        if key in self._summaries:
            return self._summaries[key]
        if unit.kind is not UnitKind.LITERAL and symbol in unit.params and key not in self._in_progress:
            # A parameter: solved with every function unit reaches, callees
            # first, so that a chain of calls handing a pointer on is no
            # chain of nested walks.
            fixpoint.solve([unit], self.facts.local_callees, self._parameter_summaries, self._by_parameter, _keeps_all)
            return self._by_parameter[unit][unit.params.index(symbol)]
        return self._walk_summary(unit, symbol)

    def _parameter_summaries(self, unit: Unit) -> tuple[Summary, ...]:
        return tuple(self._walk_summary(unit, param, memo=False) for param in unit.params)

    def _walk_summary(self, unit: Unit, symbol: Symbol, memo: bool = True) -> Summary:
        key = (unit, symbol)
        if key in self._in_progress or unit not in self.cfgs.graphs:
            # Recursion, or a body we could not analyse: assume it keeps it.
            return _KEEPS
        self._in_progress.add(key)
        try:
            graph = self.cfgs.graphs[unit]
            walk = self._walk(graph, None, graph.entry, State(Phase.HELD, frozenset({symbol})), summary=True)
        finally:
            self._in_progress.discard(key)
        summary = Summary(
            releases_on_some_path=walk.released_exits > 0,
            releases_on_every_path=walk.released_exits > 0 and not walk.held_exits and not walk.transferred,
            hands_over=walk.transferred > 0,
        )
        if memo:
            self._summaries[key] = summary
        return summary

    def effect_of_use(self, use: Use) -> Effect:
        """What the function a handle is passed to does with it: computed
        for the package's own functions, read from the summary for an
        exported function of another package of the module."""
        if use.unit is not None:
            return self.effect_of_argument(use.unit, use.index)
        summary = self._effects(use.callee.imported) if use.callee is not None else None
        if summary is None or not 0 <= use.index < len(summary.params):
            return Effect.RETAINS
        return Effect(summary.params[use.index])

    def _effects(self, function: tuple[str, str] | None) -> ResourceEffects | None:
        """The facts of a function of another package of the module."""
        return self.imported.get(*function) if function is not None else None

    def _hands_out(self, import_path: str, name: str) -> bool:
        effects = self.imported.get(import_path, name)
        return effects is not None and bool(effects.hands_out)

    def effect_of_argument(self, unit: Unit, index: int) -> Effect:
        params = unit.params
        if index < 0 or index >= len(params):
            return Effect.RETAINS
        declaration = params[index].node.parent if params[index].node is not None else None
        if declaration is not None and declaration.type == "variadic_parameter_declaration":
            return Effect.RETAINS
        return self.effect(unit, params[index])

    def returns_on_success(self, origin: Origin) -> list[int]:
        """The return statements reached from the acquisition on its success
        side (where the resource is held), in node order."""
        graph = self.cfgs.graphs[origin.unit]
        birth = self._birth(graph, origin)
        if birth is None or birth[1] is None:
            return []
        state = birth[1]

        def step(n: int, _: None):
            if n != origin.node and graph.kind(n) is NodeKind.RETURN:
                return
            for edge in graph.out_edges(n):
                if self.through_edge(origin, state, edge) is not None:
                    yield edge.target, None

        return sorted(n for n, _ in graph.walk(origin.node, None, step) if graph.kind(n) is NodeKind.RETURN)

    # -- origins ---------------------------------------------------------------

    def _analyse(self, unit: Unit) -> UnitLifetimes:
        result = UnitLifetimes(unit)
        graph = self.cfgs.graphs.get(unit)
        calls = self.facts.api_calls.get(unit.node, [])
        if graph is None:
            return result
        for origin in self._wrapper_origins(unit, graph) + self._literal_origins(unit, graph):
            self._follow(graph, origin, result)
        if not calls:
            return result
        releases = False
        for call in calls:
            fact = self.facts.calls[call]
            releases = releases or fact.api.is_release
            acquires = fact.api.roles("acquire")
            if not acquires:
                continue
            n = graph.node_containing(call)
            if n is None or not graph.reachable(n):
                continue
            for resource, role in acquires:
                self._follow(graph, Origin(unit, n, call, fact.written, fact.api, resource, role, ""), result)
        if releases:
            self._released_parameters(graph, result)
        return result

    def _wrapper_origins(self, unit: Unit, graph: CFG) -> list[Origin]:
        """Acquisitions by calls of the package's functions that hand a
        resource out, as if each were an API call returning it."""
        if unit.body is None:
            return []
        origins = []
        for call in syntax.calls_in(unit.body):
            callee = self.facts.callee(call)
            target = callee.target
            if callee.kind is CalleeKind.MODULE and self._hands_out(*callee.imported):
                origins.extend(self._module_origins(unit, graph, call, callee))
                continue
            if callee.kind is not CalleeKind.LOCAL or target is None or target is unit or target.kind is UnitKind.LITERAL:
                continue
            n = graph.node_containing(call)
            if n is None or not graph.reachable(n):
                continue
            for inner, index in self.handed_out(target):
                api = ApiFunction(
                    inner.api.family, target.name, _WRAPPER_STATUS if target.returns_error else None,
                    False, (), (inner.resource,),
                )
                origins.append(Origin(
                    unit, n, call, callee.written, api, inner.resource, CallRole(target.name, f"result{index}"), "", via=inner,
                ))
        return origins

    def _literal_origins(self, unit: Unit, graph: CFG) -> list[Origin]:
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
                for inner, symbol in self.lifetimes(literal).handed_up:
                    if symbol.function != unit.node:
                        continue
                    api = ApiFunction(inner.api.family, inner.written, _WRAPPER_STATUS, False, (), (inner.resource,))
                    origins.append(Origin(
                        unit, n, inner.call, inner.written, api, inner.resource, CallRole(inner.written, "captured"),
                        symbol.name, captured=symbol, through=call,
                    ))
        return origins

    def _literals_run_by(self, call: Node) -> list[Unit]:
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is not None and function.type == "func_literal":
            found = self.facts.literal(function)
            return [found] if found is not None else []
        arguments = call.child_by_field_name("arguments")
        if arguments is None or not any(syntax.unparen(a).type == "func_literal" for a in syntax.children(arguments)):
            return []  # nothing to run: spare classifying the call
        callee = self.facts.callee(call)
        target = callee.target
        if callee.kind is not CalleeKind.LOCAL or target is None or not target.returns_error:
            return []
        literals = []
        for index, argument in enumerate(syntax.children(call.child_by_field_name("arguments"))):
            argument = syntax.unparen(argument)
            if argument is not None and argument.type == "func_literal" and _calls_parameter(target, index):
                found = self.facts.literal(argument)
                if found is not None:
                    literals.append(found)
        return literals

    def _module_origins(self, unit: Unit, graph: CFG, call: Node, callee) -> list[Origin]:
        """`gpu.Alloc(n)` of another package of the module that hands out a
        resource: an acquisition here, as its summary says."""
        n = graph.node_containing(call)
        if n is None or not graph.reachable(n):
            return []
        origins = []
        for handed in self._effects(callee.imported).hands_out:
            found = self.facts.knowledge.resource(handed.family, handed.resource)
            if found is None:
                continue
            family, resource = found
            if handed.owner:
                qualifier = callee.written.rsplit(".", 1)[0]
                resource = owned_resource(resource, f"{qualifier}.{handed.owner}", handed.methods)
            api = ApiFunction(family, callee.written, _WRAPPER_STATUS if handed.returns_error else None, False, (), (resource,))
            origins.append(Origin(
                unit, n, call, callee.written, api, resource, CallRole(callee.written, f"result{handed.index}"), "",
                via_text=handed.via,
            ))
        return origins

    def _follow(self, graph: CFG, origin: Origin, result: UnitLifetimes) -> None:
        start = self._birth(graph, origin)
        if start is None:
            return
        origin, state, leak_detail = start
        result.origins.append(origin)
        if leak_detail is not None:
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
        walk = self._walk(graph, origin, origin.node, state, summary=False)
        self._collect(graph, origin, walk, result)

    def _birth(self, graph: CFG, origin: Origin) -> tuple[Origin, State | None, str | None] | None:
        """The state right after the acquiring call: who holds the handle and
        which variable carries the status. None: nothing to follow."""
        call, role = origin.call, origin.role
        if origin.captured is not None:
            return origin, State(Phase.HELD, frozenset({origin.captured}), self._proxy(replace(origin, call=origin.through))), None
        proxy = self._proxy(origin)
        if role.handle == "none":
            return origin, State(Phase.HELD, frozenset(), proxy), None
        if role.is_result:
            return self._result_birth(graph, origin, proxy)
        arguments = syntax.children(call.child_by_field_name("arguments"))
        if role.index >= len(arguments):
            return None
        argument = unwrap(arguments[role.index], self.facts)
        if argument is None:
            return None
        if role.is_out:
            if argument.type != "unary_expression" or syntax.text(argument.child_by_field_name("operator")) != "&":
                return None  # stored through a pointer the caller gave: handed over at once
            target = unwrap(argument.child_by_field_name("operand"), self.facts)
        else:
            target = argument
        if target is None or target.type != "identifier":
            return None  # `&b.ptr`: owned by the struct from the start
        symbol = self.facts.package.resolution.symbol(target)
        if symbol is None or not symbol.is_local:
            return None  # a global: the package owns it
        origin = replace(origin, handle=symbol.name)
        return origin, State(Phase.HELD, frozenset({symbol}), proxy), None

    def _result_birth(self, graph: CFG, origin: Origin, proxy) -> tuple[Origin, State | None, str | None] | None:
        call = origin.call
        child, parent = _value_parent(call, self.facts)
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
                    if syntax.text(target) == "_":
                        return origin, State(Phase.HELD, frozenset()), "its result is assigned to _"
                    symbol = self.facts.package.resolution.symbol(target)
                    if symbol is not None and symbol.is_local:
                        return replace(origin, handle=symbol.name), State(Phase.HELD, frozenset({symbol}), proxy), None
                return origin, None, None
            return None
        if parent.type == "expression_statement":
            return origin, State(Phase.HELD, frozenset()), "its result is discarded"
        if parent.type == "argument_list":
            return self._temporary(origin, parent.parent, [c.id for c in syntax.children(parent)].index(child.id))
        if parent.type in ("binary_expression", "if_statement", "unary_expression"):
            return origin, State(Phase.HELD, frozenset()), "its result is only compared, never stored"
        return origin, None, None

    def _temporary(self, origin: Origin, call: Node, index: int):
        """`C.puts(C.CString(s))`: the result is handed straight to a call."""
        callee = self.facts.callee(call)
        if callee.kind is CalleeKind.API and callee.api is not None:
            if any(role.index == index for _, role in callee.api.roles("release")):
                return origin, None, None
            if any(role.index == index for _, role in callee.api.roles("transfer")):
                return origin, None, None
            return origin, State(Phase.HELD, frozenset()), f"it is passed to {callee.written} and then lost"
        if callee.kind in (CalleeKind.FAMILY, CalleeKind.STD_BORROW):
            return origin, State(Phase.HELD, frozenset()), f"it is passed to {callee.written} and then lost"
        if callee.kind is CalleeKind.LOCAL and callee.target is not None:
            if self.effect_of_argument(callee.target, index) is Effect.BORROWS:
                return origin, State(Phase.HELD, frozenset()), f"it is passed to {callee.written}, which does not free it, and then lost"
        return origin, None, None

    def _proxy(self, origin: Origin) -> Symbol | Node | None:
        """The variable (or call, inside a condition) whose test says whether
        the acquire succeeded."""
        status = origin.status
        current: Node = origin.call
        while True:
            child, parent = _value_parent(current, self.facts)
            if parent is None:
                return None
            if parent.type == "binary_expression":
                return current
            if parent.type == "argument_list":
                current = parent.parent  # a helper converting the status: its result carries it
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
                if not 0 <= index < len(left) or (current is origin.call and origin.role.is_result and index == origin.role.index):
                    return None
                target = syntax.unparen(left[index])
                if target is None or target.type != "identifier" or syntax.text(target) == "_":
                    return None
                return self.facts.package.resolution.symbol(target)
            return None

    # -- the walk ---------------------------------------------------------------

    def _walk(self, graph: CFG, origin: Origin | None, start: int, state: State, *, summary: bool) -> _Walk:
        walk = _Walk()
        if origin is not None:
            state = self._closures_registered_before(graph, start, state)
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
                    if following.phase is Phase.HELD and not self._covered(following) and not reported_scope and origin is not None:
                        reported_scope = True
                        path = _path(parents, (node, current)) + (successor,)
                        walk.lost_in_scope.append((node, _scope_end_line(graph, node, successor, dead), path))
                    continue
                if graph.kind(successor) is NodeKind.EXIT:
                    self._at_exit(graph, walk, origin, following, graph.exit_kind(successor), parents, (node, current), successor)
                    continue
                try:
                    after = self._through_node(graph, origin, following, successor, walk, summary)
                except _Stop:
                    continue
                key = (successor, after)
                if key not in parents:
                    parents[key] = (node, current)
                    queue.append(key)
        return walk

    def _covered(self, state: State) -> bool:
        return state.deferred_release is not None or state.captured_release or bool(state.names & state.closure_released)

    def _at_exit(self, graph, walk: _Walk, origin, state: State, kind: ExitKind, parents, previous, exit_node) -> None:
        if kind not in (ExitKind.RETURN, ExitKind.GOEXIT):
            return
        if state.phase is not Phase.RELEASED and not self._covered(state):
            walk.held_exits.append((exit_node, kind, _path(parents, previous) + (exit_node,)))
            return
        walk.released_exits += 1
        if previous is not None:
            walk.released_after.add(previous[0])
        if state.phase is Phase.RELEASED and state.released_at is not None:
            if state.deferred_release is not None:
                walk.double_releases.append((state.deferred_release, state.released_at, True))
            for symbol, defer_node in state.closure_always:
                if symbol in state.names:
                    walk.double_releases.append((defer_node, state.released_at, True))

    def through_edge(self, origin: Origin | None, state: State, edge: Edge) -> State | None:
        """The state on the far side of an edge; None where the edge cannot
        be taken in this state (the failure side of the acquire's status
        test holds nothing, a constant-false condition is never true)."""
        condition = edge.condition
        if condition is not None:
            constant = self.facts.package.resolution.constant_bool(condition)
            if constant is not None and constant != edge.polarity:
                return None  # `if debug` with `const debug = false`: never taken
        if state.phase is not Phase.HELD:
            return state
        outcome = None
        source = _source(origin)
        if condition is not None:
            outcome = self.status.test(source, self._roles(state), condition, bool(edge.polarity))
        elif edge.tests_case:
            outcome = self.status.case(source, self._roles(state), edge.tag, edge.case, bool(edge.polarity))
        if outcome is Outcome.FAILURE:
            return None
        if outcome is Outcome.SUCCESS:
            return replace(state, proxy=None)
        return state

    def _roles(self, state: State) -> Roles:
        """What an expression tested on a path is to the walk: the status
        (the proxy: the status variable, or an error made of it), or the
        handle (compared with nil)."""
        resolution = self.facts.package.resolution

        def roles(subject: Node) -> Subject | None:
            proxy = state.proxy
            if proxy is not None and (
                (isinstance(proxy, Node) and subject == proxy)
                or (subject.type == "identifier" and resolution.symbol(subject) is proxy)
            ):
                return Subject.STATUS
            if subject.type == "identifier" and resolution.symbol(subject) in state.names:
                return Subject.HANDLE
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

    def _through_node(self, graph: CFG, origin: Origin | None, state: State, n: int, walk: _Walk, summary: bool) -> State:
        """Apply what node n does to the handle: reads first (the right-hand
        side is evaluated before the assignment), then copies, then writes."""
        uses = self.uses.uses(graph.evaluated(n))
        kind = graph.kind(n)
        if origin is not None and origin.role.handle == "none":
            return self._handleless_node(graph, origin, state, n, walk)
        mine = [use for use in uses if use.symbol in state.names]
        resource = origin.resource if origin is not None else None
        aliases: set[Symbol] = set()
        applied_literals: set[tuple[Unit, Symbol]] = set()
        for use in mine:
            if use.kind in (UseKind.WRITE, UseKind.ACQUIRE_OUT):
                continue
            if resource is not None and resource.any_use_releases:
                # context.WithCancel's cancel: calling it, deferring it or
                # handing it on all dispose of it.
                if use.deferred:
                    state = replace(state, deferred_release=n)
                    continue
                walk.transferred += 1
                raise _Stop
            state = self._read(graph, origin, state, n, use, walk, aliases, applied_literals)
        state = self._bound_closures(graph, origin, state, n, uses, walk)
        if kind is NodeKind.RETURN and state.names & set(graph.unit.results) and not _returns_values(graph.ast(n)):
            walk.transferred += 1
            raise _Stop
        if aliases:
            state = replace(state, names=state.names | frozenset(aliases))
        for use in mine:
            if use.kind not in (UseKind.WRITE, UseKind.ACQUIRE_OUT) or use.symbol in aliases:
                continue
            remaining = state.names - {use.symbol}
            if state.phase is Phase.HELD and not remaining and state.deferred_release is None:
                if origin is not None and not summary:
                    walk.overwrites.append((n, ()))
                walk.transferred += 1  # the walk ends here either way
                raise _Stop
            if not remaining:
                raise _Stop
            state = replace(state, names=remaining, proxy=None if use.symbol is state.proxy else state.proxy)
        if isinstance(state.proxy, Symbol) and origin is not None:
            converted = self._converted(graph, origin, state.proxy, n)
            if converted is not None:
                return replace(state, proxy=converted)
        if isinstance(state.proxy, Symbol) and any(
            u.symbol is state.proxy and u.kind is UseKind.WRITE for u in uses
        ):
            state = replace(state, proxy=None)
        return state

    def _converted(self, graph: CFG, origin: Origin, proxy: Symbol, n: int) -> Symbol | None:
        """`err = errorString(st)` where errorString is a converter of the
        package: from here on, err says whether the acquisition succeeded."""
        statement = graph.ast(n)
        if statement is None or graph.kind(n) is not NodeKind.STMT:
            return None
        for left, right in syntax.assignment_sides(statement):
            if len(right) != 1 or not left:
                continue
            call = syntax.unparen(right[0])
            if call is None or call.type != "call_expression":
                continue
            arguments = syntax.children(call.child_by_field_name("arguments"))
            index = next((i for i, a in enumerate(arguments) if a.type == "identifier" and self.facts.package.resolution.symbol(a) is proxy), None)
            callee = self.facts.callee(call)
            if index is None or callee.kind is not CalleeKind.LOCAL or callee.target is None:
                continue
            target = syntax.unparen(left[-1])
            if target is None or target.type != "identifier" or syntax.text(target) == "_":
                continue
            if self.status.converts(callee.target, index, _source(origin)):
                return self.facts.package.resolution.symbol(target)
        return None

    def _read(self, graph, origin, state: State, n: int, use: Use, walk: _Walk, aliases: set, applied: set) -> State:
        released = state.phase is Phase.RELEASED
        kind = use.kind
        if kind is UseKind.RELEASE:
            return self._release(origin, state, n, use.deferred, walk, use.role)
        if kind is UseKind.METHOD:
            if self._is_release_method(origin, use.symbol, use.method):
                return self._release(origin, state, n, use.deferred, walk, None)
            if released:
                walk.uses_after_release.append((n, use, state.released_at or 0))
            return state
        if kind is UseKind.CALLED:
            if released:
                walk.uses_after_release.append((n, use, state.released_at or 0))
            return state
        if kind in (UseKind.RETURN, UseKind.TRANSFER_CALL):
            if released:
                walk.uses_after_release.append((n, use, state.released_at or 0))
                return state
            walk.transferred += 1
            raise _Stop
        if kind in (UseKind.STORE, UseKind.PASS_UNKNOWN):
            if released:
                return state
            walk.transferred += 1
            raise _Stop
        if kind in (UseKind.PASS_API, UseKind.DEREF):
            if released:
                walk.uses_after_release.append((n, use, state.released_at or 0))
            return state
        if kind is UseKind.ALIAS and use.target is not None:
            aliases.add(use.target)
            return state
        if kind is UseKind.PASS_LOCAL and (use.unit is not None or use.callee is not None):
            effect = self.effect_of_use(use)
            if effect is Effect.RELEASES:
                return self._release(origin, state, n, use.deferred, walk, None)
            if effect is Effect.RETAINS and not released:
                walk.transferred += 1
                raise _Stop
            return state
        if kind is UseKind.CAPTURE and use.unit is not None:
            key = (use.unit, use.symbol)
            if key in applied:
                return state
            applied.add(key)
            return self._literal(graph, origin, state, n, use.unit, use.symbol, walk)
        return state

    def resources_of(self, symbol: Symbol, origin: Origin | None = None) -> list[ResourceSpec]:
        """The resources a variable may hold: the followed origin's, or those
        its declared type or its initialising call say."""
        if origin is not None:
            return [origin.resource]
        found: list[ResourceSpec] = []
        owner = self.owners.of(self.facts.local_type(symbol))
        if owner is not None:
            found.extend(owned_resource(resource, owner.type_name, owner.methods) for resource in owner.resources)
        declared = imported_type(self.facts.package.resolution, symbol)
        if declared is not None:
            path, type_name = declared
            found.extend(self._owned_elsewhere(symbol, path, type_name))
            for family in self.facts.knowledge.families:
                if family.import_path != path:
                    continue
                for resource in family.resources:
                    if any(r.handle == "receiver" and r.call.startswith(f"{family.qualifier}.{type_name}.") for r in resource.release):
                        found.append(resource)
        init = syntax.unparen(symbol.init)
        fact = self.facts.calls.get(init) if init is not None else None
        if fact is not None and fact.api is not None:
            found.extend(resource for resource, _ in fact.api.roles("acquire"))
        return found

    def _owned_elsewhere(self, symbol: Symbol, path: str, type_name: str) -> list[ResourceSpec]:
        """`b *gpu.Buffer`: the resources an owning type of another package of
        the module holds, as its summary says."""
        summary = self.owners.elsewhere(path, type_name)
        if summary is None or not summary.owns:
            return []
        qualifier = syntax.text(symbol.type_node).lstrip("*").rsplit(".", 1)[0]
        found = []
        for family_name, resource_name in summary.owns:
            known = self.facts.knowledge.resource(family_name, resource_name)
            if known is not None:
                found.append(owned_resource(known[1], f"{qualifier}.{type_name}", summary.methods))
        return found

    def _is_release_method(self, origin: Origin | None, symbol: Symbol, method: str) -> bool:
        return any(resource.release_method(method) is not None for resource in self.resources_of(symbol, origin))

    def _closure_release(self, state: State, literal: Unit, symbol: Symbol, defer_node: int) -> State:
        """A deferred closure (or deferred call of a local closure) that may
        release the variable at exit."""
        summary = self.summary(literal, symbol)
        if summary.effect is Effect.BORROWS:
            return state
        state = replace(state, closure_released=state.closure_released | {symbol})
        if summary.releases_on_every_path:
            state = replace(state, closure_always=state.closure_always | {(symbol, defer_node)})
        return state

    def _literal(self, graph, origin, state: State, n: int, literal: Unit, symbol: Symbol, walk: _Walk) -> State:
        """A func literal that refers to the handle's variable."""
        use = literal.use
        if use is LiteralUse.DEFERRED:
            return self._closure_release(state, literal, symbol, n)
        if use is LiteralUse.CALLED:
            effect = self.effect(literal, symbol)
            if effect is Effect.RELEASES:
                return self._release(origin, state, n, False, walk, None)
            if effect is Effect.BORROWS:
                return state
        if use is LiteralUse.STORED and literal.stored_in is not None and literal.stored_in.is_local:
            return state  # a local closure: its calls (`cleanup()`, `defer cleanup()`) decide
        if state.phase is Phase.RELEASED:
            return state
        walk.transferred += 1
        raise _Stop

    def _bound_closures(self, graph, origin, state: State, n: int, uses: list[Use], walk: _Walk) -> State:
        """`defer cleanup()` / `cleanup()` / `return cleanup` where cleanup is a
        local variable bound to a func literal that refers to the handle."""
        for use in uses:
            literal = self.facts.unit_of(use.symbol)
            if literal is None or literal.stored_in is not use.symbol:
                continue
            captured = self.uses.captures(literal) & state.names
            if not captured:
                continue
            if use.kind is UseKind.CALLED:
                for symbol in captured:
                    effect = self.effect(literal, symbol)
                    if use.deferred:
                        state = self._closure_release(state, literal, symbol, n)
                    elif effect is Effect.RELEASES:
                        state = self._release(origin, state, n, False, walk, None)
                    elif effect is Effect.RETAINS and state.phase is Phase.HELD:
                        walk.transferred += 1
                        raise _Stop
            elif use.kind in (UseKind.RETURN, UseKind.STORE, UseKind.PASS_UNKNOWN, UseKind.PASS_LOCAL, UseKind.CAPTURE):
                if state.phase is Phase.HELD:
                    walk.transferred += 1
                    raise _Stop
        return state

    def _release(self, origin, state: State, n: int, deferred: bool, walk: _Walk, role) -> State:
        if role is not None and origin is not None:
            resource, _ = role
            if resource != origin.resource and resource.name != origin.resource.name:
                walk.mismatches.append((n, role[1].call, resource))
        if deferred:
            if state.phase is Phase.RELEASED:
                walk.double_releases.append((n, state.released_at or 0, False))
                return state
            if state.deferred_release is not None:
                walk.double_releases.append((n, state.deferred_release, True))
                return state
            return replace(state, deferred_release=n)
        if state.phase is Phase.RELEASED:
            walk.double_releases.append((n, state.released_at or 0, False))
            return state
        return replace(state, phase=Phase.RELEASED, released_at=n, proxy=None)

    def _handleless_node(self, graph, origin: Origin, state: State, n: int, walk: _Walk) -> State:
        """nvmlInit / nvmlShutdown: no handle, so any release of the kind counts."""
        for root in graph.evaluated(n):
            for call in syntax.calls_in(root):
                fact = self.facts.calls.get(call)
                if fact is None or fact.api is None:
                    continue
                if any(resource.name == origin.resource.name for resource, _ in fact.api.roles("release")):
                    deferred = _is_deferred_call(call)
                    if deferred:
                        state = replace(state, deferred_release=n)
                    elif state.phase is Phase.HELD:
                        state = replace(state, phase=Phase.RELEASED, released_at=n, proxy=None)
        return state

    def _closures_registered_before(self, graph: CFG, start: int, state: State) -> State:
        """Deferred closures that release a variable at exit cover it even
        when registered before the acquisition (they read it at exit)."""
        if not state.names:
            return state
        for n in self._defers(graph):
            if n == start or not graph.has_path(n, start):
                continue
            for use in self.uses.uses(graph.evaluated(n)):
                if use.symbol in state.names and use.kind is UseKind.CAPTURE and use.deferred and use.unit is not None:
                    state = self._closure_release(state, use.unit, use.symbol, n)
                literal = self.facts.unit_of(use.symbol)
                if use.kind is UseKind.CALLED and use.deferred and literal is not None and literal.stored_in is use.symbol:
                    for symbol in self.uses.captures(literal) & state.names:
                        state = self._closure_release(state, literal, symbol, n)
        return state

    def _defers(self, graph: CFG) -> list[int]:
        found = self._defer_nodes.get(graph.unit)
        if found is None:
            found = self._defer_nodes[graph.unit] = [n for n in graph.statement_nodes() if graph.kind(n) is NodeKind.DEFER]
        return found

    def _released_parameters(self, graph: CFG, result: UnitLifetimes) -> None:
        """A handle that arrives as a parameter and is released here: a second
        release, or a use after it, is a finding too (CL102, CL104)."""
        acquired = {origin.handle for origin in result.origins}
        seen: set[tuple[Symbol, int]] = set()
        for n in graph.statement_nodes():
            if not graph.reachable(n):
                continue
            for use in self.uses.uses(graph.evaluated(n)):
                if use.kind is not UseKind.RELEASE or use.deferred:
                    continue
                symbol = use.symbol
                if symbol.role not in (Role.PARAM, Role.RECEIVER) or symbol.name in acquired or (symbol, n) in seen:
                    continue
                seen.add((symbol, n))
                state = State(Phase.RELEASED, frozenset({symbol}), released_at=n)
                walk = self._walk(graph, None, n, state, summary=False)
                for node, first, by_defer in walk.double_releases:
                    result.double_releases.append(DoubleRelease(None, node, first, by_defer, symbol.name))
                for node, late_use, released_line in walk.uses_after_release:
                    result.uses_after_release.append(UseAfterRelease(None, node, late_use, released_line))

    # -- outcomes -----------------------------------------------------------------

    def _collect(self, graph: CFG, origin: Origin, walk: _Walk, result: UnitLifetimes) -> None:
        handleless = origin.role.handle == "none"
        if handleless:
            # No handle to hand over: a function that never releases the kind
            # is an intentional initialisation; only inconsistency is a leak.
            if walk.held_exits and walk.released_exits:
                exit_node, kind, path = walk.held_exits[0]
                result.leaks.append(self._leak(graph, origin, kind, path))
            return
        if walk.held_exits:
            exit_node, kind, path = walk.held_exits[0]
            leak = self._leak(graph, origin, kind, path)
            held_at = tuple(dict.fromkeys(path[-2] for _, _, path in walk.held_exits if len(path) >= 2))
            result.leaks.append(replace(leak, held_at=held_at, released_through_held=bool(walk.released_after & set(held_at))))
        elif walk.lost_in_scope:
            node, line, path = walk.lost_in_scope[0]
            result.leaks.append(Leak(origin, Lost.SCOPE, node, line, path))
        if walk.overwrites:
            node, _ = walk.overwrites[0]
            result.overwrites.append(Overwrite(origin, node, ()))
        for node, first, by_defer in _unique(walk.double_releases):
            result.double_releases.append(DoubleRelease(origin, node, first, by_defer, origin.handle))
        for node, use, released_line in _unique(walk.uses_after_release, key=lambda item: item[0]):
            result.uses_after_release.append(UseAfterRelease(origin, node, use, released_line))
        for node, call, resource in _unique(walk.mismatches):
            result.mismatches.append(Mismatch(origin, node, call, resource))

    def _leak(self, graph: CFG, origin: Origin, kind: ExitKind, path: tuple[int, ...]) -> Leak:
        last = path[-2] if len(path) >= 2 else origin.node
        how = Lost.GOEXIT if kind is ExitKind.GOEXIT else Lost.RETURN
        other, early = None, False
        for n in self._defers(graph):
            for use in self.uses.uses(graph.evaluated(n)):
                if use.kind is UseKind.RELEASE and use.deferred and use.symbol.name == origin.handle and n not in path:
                    other = n
                    early = graph.reachable(n) and not graph.has_path(origin.node, n)
        return Leak(origin, how, last, graph.line(last), path, other_defer=other, defer_too_early=early)


# -- helpers --------------------------------------------------------------------


def _path(parents: dict, key) -> tuple[int, ...]:
    nodes = []
    while key is not None:
        nodes.append(key[0])
        key = parents.get(key)
    return tuple(reversed(nodes))


def _unique(items, key=lambda item: item):
    seen = set()
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            yield item


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




_WRAPPER_STATUS = StatusSpec("error", ("nil",), "last", "error")


def _returned_at(unit: Unit, handle: str) -> int | None:
    """The result position at which the function returns the variable
    `handle` itself, if every return that returns it does so there with a
    nil error (when the last result is an error); None otherwise."""
    index = None
    returns_error = unit.returns_error
    for statement in syntax.return_statements(unit.body):
        values = next((c for c in statement.named_children if c.type == "expression_list"), None)
        expressions = syntax.expressions(values) if values is not None else []
        positions = [i for i, e in enumerate(expressions) if e.type == "identifier" and syntax.text(e) == handle]
        if not positions:
            continue
        if len(positions) > 1 or (index is not None and positions[0] != index):
            return None
        if returns_error and syntax.text(expressions[-1]) != "nil":
            return None
        index = positions[0]
    return index


def _calls_parameter(function: Unit, index: int) -> bool:
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


def _is_deferred_call(call: Node) -> bool:
    parent = call.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return parent is not None and parent.type == "defer_statement"


def _value_parent(node: Node, facts: CallIndex) -> tuple[Node, Node | None]:
    """The node that consumes a value, skipping parentheses and conversions."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type == "parenthesized_expression":
            child, parent = parent, parent.parent
            continue
        if parent.type == "argument_list":
            call = parent.parent
            if call is not None and facts.callee(call).kind is CalleeKind.CONVERSION:
                child, parent = call, call.parent
                continue
        return child, parent
    return child, None


LIFETIMES: Analysis[Engine] = Analysis(
    "lifetimes", __doc__ or "",
    lambda p: Engine(
        p.cfgs, p.result_of(CALLS), p.result_of(USES), p.result_of(OWNERS), p.result_of(STATUS), p.imported_facts(LIFETIMES),
    ),
    requires=(CALLS, USES, OWNERS, STATUS),
    facts=lambda p: exported_effects(p.result_of(LIFETIMES)), fact_type=ResourceEffects,
)


def _source(origin: Origin | None) -> StatusSource | None:
    """The status an acquisition's call reports (None on a summary walk)."""
    return StatusSource.of(origin.api, origin.written) if origin is not None else None
