"""Each function's summary: the releases it makes, directly or through
the functions of the package it calls, func literals it calls in place,
defers, or passes to `sync.Once.Do`, each on an access path from one of its
variables, with the guards around it."""

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CalleeKind, CallIndex
from cudalint.analyses.finalizers.access import AccessPaths
from cudalint.analyses.finalizers.guards import Guards
from cudalint.analyses.finalizers.model import Access, Guard, GuardKind, Release
from cudalint.analyses.owners import Owners
from cudalint.cfg import CFG, PackageCFGs
from cudalint.functions import LiteralUse, Package, Unit, UnitKind
from cudalint.scope import Symbol

# The longest access path a release is followed along (fields of fields): a
# chain of 5,000 owners each freeing the next (`t.n.Free()`) would otherwise
# give each summary every release below it, paths as long as the chain.
_DEEPEST_PATH = 6

_RUNS_WITH_PARENT = frozenset({LiteralUse.CALLED, LiteralUse.DEFERRED, LiteralUse.GO, LiteralUse.PASSED})


class Summaries:
    """The release summaries of one package's functions, solved callees first."""

    def __init__(
        self, package: Package, cfgs: PackageCFGs, calls: CallIndex, access_paths: AccessPaths, guards: Guards, owners: Owners,
    ):
        self.package = package
        self.owners = owners
        self.cfgs = cfgs
        self.calls = calls
        self.resolution = package.resolution
        self.access_paths = access_paths
        self.guards = guards
        self.literals: dict[Node, Unit] = {u.node: u for u in package.units if u.kind is UnitKind.LITERAL}
        self.children: dict[Unit, list[Unit]] = {}
        for unit in package.units:
            if unit.parent is not None:
                self.children.setdefault(unit.parent, []).append(unit)
        self._summaries: dict[Unit, list[Release]] = {}
        self._feasible_nodes: dict[Unit, set[int]] = {}

    def summary(self, unit: Unit) -> list[Release]:
        """The releases `unit` makes, on access paths from its variables
        (and those it captures), with the guards around each."""
        if unit not in self._summaries:
            fixpoint.solve([unit], self.calls.local_callees, self._summarise, self._summaries, lambda _: [])
        return self._summaries[unit]

    def _summarise(self, unit: Unit) -> list[Release]:
        if unit.problem is not None or unit.body is None:
            return []
        raw: list[tuple[Node, Release]] = []  # (node in unit the guards are computed at, release)
        for call in syntax.calls_in(unit.body):
            raw.extend((call, r) for r in self._releases_of_call(unit, call))
        for literal in self.children.get(unit, []):
            raw.extend(self._releases_of_literal(unit, literal))
        if not raw:
            return []
        graph = self.cfgs.graphs.get(unit)
        if graph is None or not graph.created:
            return []
        out = []
        live = self.feasible(graph)
        for at, release in raw:
            n = graph.node_containing(at)
            if n is None or n not in live:
                continue
            guards = self.guards.of(unit, graph, n, at, release)
            out.append(replace(release, unit=unit, node=at, guards=release.guards | guards))
        return out

    def feasible(self, graph: CFG) -> set[int]:
        """The nodes reachable from the entry when conditions on constants
        are folded (`if setfinalizer || b.gogc { return nil }` with `const
        setfinalizer = true` never reaches what follows): a release there
        never runs."""
        if graph.unit in self._feasible_nodes:
            return self._feasible_nodes[graph.unit]

        def step(n: int, state: None):
            for edge in graph.out_edges(n):
                if edge.condition is not None and edge.polarity is not None:
                    value = self.resolution.constant_bool(edge.condition)
                    if value is not None and value != edge.polarity:
                        continue
                yield edge.target, None

        found = {n for n, _ in graph.walk(graph.entry, None, step)} if graph.created else set()
        self._feasible_nodes[graph.unit] = found
        return found

    def _releases_of_call(self, unit: Unit, call: Node) -> list[Release]:
        callee = self.calls.callee(call)
        if callee.kind is CalleeKind.API and callee.api is not None and callee.api.is_release:
            return self._api_release(unit, call, callee.api)
        function = syntax.unparen(call.child_by_field_name("function"))
        arguments = syntax.children(call.child_by_field_name("arguments"))
        if (
            function is not None and function.type == "selector_expression"
            and syntax.text(function.child_by_field_name("field")) == "Do" and len(arguments) == 1
        ):
            return self._once(unit, call, function, arguments[0])
        if callee.kind in (CalleeKind.LOCAL, CalleeKind.VALUE) and callee.target is not None:
            if callee.target.kind is UnitKind.LITERAL and callee.target.parent is unit:
                return []  # a literal of this function: handled with the literals
            receiver = syntax.method_operand(call)
            return self._through(unit, call, callee.target, receiver, arguments)
        out = []
        for handle, family, resource in self.owners.module_releases(call):
            # `w.ptr.Free()` with `ptr gpu.DevicePtr`, `gpu.Free(w.ptr)`: another package's release.
            where = self.access_paths.access(handle)
            if where is not None:
                out.append(Release(unit, call, call, unit, syntax.text(function), resource, family, where.root, where.root_type, where.path))
        return out

    def _api_release(self, unit: Unit, call: Node, api) -> list[Release]:
        function = syntax.unparen(call.child_by_field_name("function"))
        arguments = syntax.children(call.child_by_field_name("arguments"))
        out = []
        for resource, role in api.roles("release"):
            if role.handle == "receiver":
                handle = function.child_by_field_name("operand") if function is not None and function.type == "selector_expression" else None
            elif role.handle.startswith("arg") and role.index < len(arguments):
                handle = arguments[role.index]
            else:
                continue
            where = self.access_paths.access(handle)
            if where is None:
                continue
            out.append(Release(
                unit, call, call, unit, syntax.text(function), resource, api.family.name,
                where.root, where.root_type, where.path,
            ))
        return out

    def _through(self, unit: Unit, call: Node, target: Unit, receiver: Node | None, arguments: list[Node]) -> list[Release]:
        """The releases of a function of the package, mapped to this call."""
        out = []
        params = target.params
        for release in self.summary(target):
            root = release.root
            if root is None:
                continue
            if root is target.receiver:
                argument = receiver
            elif root in params:
                index = params.index(root)
                argument = arguments[index] if index < len(arguments) else None
            elif root.function is not None and root.function != target.node and not _declared_inside(root, target):
                out.append(replace(release, through=(target.name, *release.through)))  # captured: the same variable here
                continue
            else:
                continue  # a local of the callee: it is that function's business
            where = self.access_paths.access(argument)
            if where is None:
                if argument is None:
                    continue
                where = Access(None, self.calls.types.type_of(argument), ())
            prefix = where.path
            if len(prefix) + len(release.path) > _DEEPEST_PATH:
                continue  # `t.n.n.n.n.n.n.p` of a chain of owners: no finalizer design reaches so deep
            out.append(replace(
                release, root=where.root, root_type=where.root_type, path=prefix + release.path,
                guards=frozenset(Guard(g.kind, prefix + g.path) for g in release.guards),
                through=(target.name, *release.through),
            ))
        return out

    def _once(self, unit: Unit, call: Node, function: Node, argument: Node) -> list[Release]:
        """`x.once.Do(f)`: f's releases, guarded by that Once."""
        once = self.access_paths.access(function.child_by_field_name("operand"))
        argument = syntax.unparen(argument)
        if argument is None:
            return []
        if argument.type == "func_literal":
            literal = self.literals.get(argument)
            found = self._through(unit, call, literal, None, []) if literal is not None else []
        elif argument.type == "selector_expression":  # a method value: b.release
            operand = syntax.unparen(argument.child_by_field_name("operand"))
            target = self.access_paths.method(self.calls.types.type_of(operand), syntax.text(argument.child_by_field_name("field")))
            found = self._through(unit, call, target, operand, []) if target is not None else []
        elif argument.type == "identifier":
            target = self.calls.unit_of(self.resolution.symbol(argument))
            found = self._through(unit, call, target, None, []) if target is not None else []
        else:
            found = []
        if once is None or not once.path:
            return found
        out = []
        for release in found:
            if release.root is once.root and release.root is not None:
                release = replace(release, guards=release.guards | {Guard(GuardKind.ONCE, once.path)})
            out.append(release)
        return out

    def _releases_of_literal(self, unit: Unit, literal: Unit) -> list[tuple[Node, Release]]:
        """A literal runs as part of `unit` when it is called in place,
        deferred, started with `go`, or passed to a call (a worker's
        `w.Work(func() error {...})`: it runs only when `unit` does); not
        when it is the finalizer being registered, or a Once's function
        (the call of `Do` lifts it, with its guard)."""
        if literal.use_node is None or literal.use not in _RUNS_WITH_PARENT:
            return []
        if literal.use is LiteralUse.PASSED and (is_once_do(literal.use_node) or self._is_registration(literal.use_node)):
            return []
        if literal.use is LiteralUse.CALLED:
            call: Node | None = literal.use_node
        elif literal.use in (LiteralUse.DEFERRED, LiteralUse.GO):
            call = _deferred_call(literal.use_node)
        else:
            call = None  # passed: the callee supplies the arguments
        arguments = syntax.children(call.child_by_field_name("arguments")) if call is not None else []
        return [(literal.use_node, r) for r in self._through(unit, literal.use_node, literal, None, arguments)]

    def _is_registration(self, call: Node) -> bool:
        fact = self.calls.call(call)
        return fact is not None and fact.import_path == "runtime" and fact.name == "SetFinalizer"


def is_once_do(call: Node) -> bool:
    function = syntax.unparen(call.child_by_field_name("function"))
    return function is not None and function.type == "selector_expression" and syntax.text(function.child_by_field_name("field")) == "Do"


def _deferred_call(statement: Node) -> Node | None:
    for child in syntax.children(statement):
        if child.type == "call_expression":
            return child
    return None


def _declared_inside(symbol: Symbol, unit: Unit) -> bool:
    node = symbol.node
    return node is not None and unit.node.start_byte <= node.start_byte < unit.node.end_byte
