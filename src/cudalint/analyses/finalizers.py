"""Finalizers: what `runtime.SetFinalizer` registers, what the registered
function releases, what guards those releases, and which other functions of
the package release the same handles.

A handle is named by an access path from a variable: `b.ptr` is the field
`ptr` of `b`, `mem.Ptr()` the accessor `Ptr` of `mem`. Each function gets a
summary: the releases it makes (API releases from the knowledge, directly or
through functions of the package it calls, func literals it calls in place,
defers, or passes to `sync.Once.Do`), each on an access path from one of its
variables, with the guards around it:

* CLEARED: the field (or what holds it: the slice of handles, the whole
  struct with `*b = T{}`) is assigned on every path through the release,
  after it or (with the handle copied to a local first) before it: set to
  nil or zero, or to a new handle, it no longer holds the freed one;
* CANCELLED: the function calls `runtime.SetFinalizer(x, nil)`;
* ONCE: the release runs inside `x.once.Do(...)`;
* CHECKED / SET: the release is reached only through a condition that reads
  a flag field of the same object (plain, atomic or under a mutex), and the
  function writes that flag.

A release in a callee is mapped to the caller through the argument it was
passed (`b.free()` releases the receiver's `ptr`, so the call releases
`b.ptr`), and picks up the caller's guards around the call.

The result pairs each registration's releases with the explicit releases of
the same handle (same owner type, same path) in functions that can run other
than as the finalizer: exported functions and methods, `main`/`init`,
functions used as values, and, through their callers, the helpers those call.
A release guarded against running after the other is not a double release.
Rules read `double_releases()` (CL507) and `finalizer_only()` (CL508).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex, unwrap
from cudalint.analyses.status import STATUS, StatusSemantics
from cudalint.cfg import CFG, ExitKind, NodeKind
from cudalint.framework import Analysis, Pass
from cudalint.functions import LiteralUse, Unit, UnitKind
from cudalint.gotypes import Paths, short_type
from cudalint.knowledge import ResourceSpec
from cudalint.scope import Role, Symbol, SymbolKind

# sync/atomic functions and methods of its types that write their operand.
_ATOMIC_WRITES = ("Store", "Swap", "CompareAndSwap", "Add", "And", "Or")
_ENTRY_NAMES = frozenset({"main", "init"})
_RUNS_WITH_PARENT = frozenset({LiteralUse.CALLED, LiteralUse.DEFERRED, LiteralUse.GO, LiteralUse.PASSED})


class GuardKind(str, Enum):
    CLEARED = "cleared"
    CANCELLED = "cancelled"
    ONCE = "once"
    CHECKED = "checked"
    SET = "set"


@dataclass(frozen=True)
class Guard:
    kind: GuardKind
    # ONCE, CHECKED, SET: the field (path from the release's root);
    # CANCELLED: the object whose finalizer is cancelled; CLEARED: the
    # location assigned, a prefix of the handle's path ("*" for `*b = T{}`).
    path: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Release:
    """A release of the handle at `root.path`, made in `unit` at `node`
    (the API call itself, or the call or statement that leads to it)."""

    unit: Unit
    node: Node
    api_call: Node  # the API release call, in whatever function it is
    api_unit: Unit
    written: str  # "C.cudaFree"
    resource: ResourceSpec
    family: str  # the knowledge family of the release: "cuda-runtime"
    root: Symbol | None
    root_type: str | None
    path: tuple[str, ...]
    guards: frozenset[Guard] = frozenset()
    through: tuple[str, ...] = ()  # the functions called on the way, outermost first

    def has(self, kind: GuardKind, path: tuple[str, ...] | None = None) -> bool:
        return any(g.kind is kind and (path is None or g.path == path) for g in self.guards)


class Form(str, Enum):
    METHOD = "method expression"
    FUNCTION = "function"
    LITERAL = "func literal"
    VARIABLE = "func literal in a variable"


@dataclass
class Registration:
    """One `runtime.SetFinalizer(obj, f)` whose f the analysis can follow."""

    unit: Unit  # the function that registers
    call: Node
    obj: Node  # the first argument
    finalizer: Unit
    form: Form
    type_name: str | None  # the finalized object's type, pointers stripped
    object_text: str  # how messages name the object: "b"
    releases: list[Release] = field(default_factory=list)  # on the object, paths relative to it
    # Fields of the object the registering code sets (`b.gogc = true`, `&T{gogc: true}`).
    flags: set[tuple[str, ...]] = field(default_factory=set)

    @property
    def finalizer_label(self) -> str:
        """How messages name the finalizer: "the finalizer (*Buffer).Free"."""
        if self.form is Form.LITERAL:
            return "the finalizer literal"
        if self.form is Form.VARIABLE:
            stored = self.finalizer.stored_in
            return f"the finalizer literal in {stored.name if stored is not None else 'a variable'}"
        return f"the finalizer {self.finalizer.name}"

    def handle(self, path: tuple[str, ...]) -> str:
        return self.object_text + "".join("[i]" if p == "[]" else "." + p for p in path)


@dataclass(frozen=True)
class FinalizerDoubleRelease:
    registration: Registration
    finalizer_release: Release
    explicit: Release


@dataclass(frozen=True)
class FinalizerOnly:
    registration: Registration
    release: Release


@dataclass
class Finalizers:
    registrations: list[Registration] = field(default_factory=list)
    _double_releases: list[FinalizerDoubleRelease] = field(default_factory=list)
    _finalizer_only: list[FinalizerOnly] = field(default_factory=list)

    def double_releases(self) -> list[FinalizerDoubleRelease]:
        """Finalizers that can free what an explicit release already freed (CL507)."""
        return self._double_releases

    def finalizer_only(self) -> list[FinalizerOnly]:
        """GPU resources that only a finalizer releases (CL508)."""
        return self._finalizer_only


# -- the analysis ------------------------------------------------------------------


@dataclass
class _Access:
    root: Symbol | None
    root_type: str | None
    path: tuple[str, ...]


class _Builder:
    def __init__(self, p: Pass):
        self.p = p
        self.package = p.package
        self.calls: CallIndex = p.result_of(CALLS)
        self.status: StatusSemantics = p.result_of(STATUS)
        self.resolution = p.package.resolution
        self.types = self.calls.types.paths()
        self.literals: dict[Node, Unit] = {u.node: u for u in p.package.units if u.kind is UnitKind.LITERAL}
        self.children: dict[Unit, list[Unit]] = {}
        for unit in p.package.units:
            if unit.parent is not None:
                self.children.setdefault(unit.parent, []).append(unit)
        self._summaries: dict[Unit, list[Release]] = {}
        self._registration_args: set[Node] = set()
        self._by_node: dict[Node, Unit] = {u.node: u for u in p.package.units}
        self._feasible_nodes: dict[Unit, set[int]] = {}
        self._marks: dict[Unit, set[tuple[GuardKind, Symbol, tuple[str, ...]]]] = {}

    # -- access paths --

    def symbol_type(self, symbol: Symbol | None) -> str | None:
        if symbol is None:
            return None
        declared = short_type(symbol.type_node)
        if declared is not None:
            return declared
        if symbol.node is not None:
            return self.calls.types.type_of(symbol.node)
        return None

    def access(self, expression: Node | None, depth: int = 0) -> _Access | None:
        node = unwrap(expression, self.calls)
        path: list[str] = []
        while node is not None and depth < 16:
            depth += 1
            if node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) in ("&", "*"):
                node = unwrap(node.child_by_field_name("operand"), self.calls)
            elif node.type == "selector_expression":
                path.append(syntax.text(node.child_by_field_name("field")))
                node = unwrap(node.child_by_field_name("operand"), self.calls)
            elif node.type == "index_expression":
                path.append("[]")
                node = unwrap(node.child_by_field_name("operand"), self.calls)
            elif node.type == "call_expression":
                function = syntax.unparen(node.child_by_field_name("function"))
                arguments = syntax.children(node.child_by_field_name("arguments"))
                if function is None or function.type != "selector_expression" or arguments:
                    return None
                if self.calls.callee(node).kind in (CalleeKind.API, CalleeKind.CONVERSION):
                    return None
                path.append(syntax.text(function.child_by_field_name("field")) + "()")
                node = unwrap(function.child_by_field_name("operand"), self.calls)
            elif node.type == "identifier":
                symbol = self.resolution.symbol(node)
                if symbol is None or symbol.kind is not SymbolKind.VAR:
                    return None
                copied = self._copied_from(symbol, depth)
                if copied is not None:
                    return _Access(copied.root, copied.root_type, copied.path + tuple(reversed(path)))
                return _Access(symbol, self.symbol_type(symbol), tuple(reversed(path)))
            else:
                return None
        return None

    def _copied_from(self, symbol: Symbol, depth: int) -> _Access | None:
        """`p := b.ptr`: a local that copies a field is that field."""
        if not symbol.is_local or symbol.role is not Role.LOCAL or symbol.init is None or symbol.init_index >= 0:
            return None
        init = unwrap(symbol.init, self.calls)
        if init is None or init.type not in ("selector_expression", "index_expression"):
            return None
        found = self.access(init, depth + 1)
        return found if found is not None and found.path else None

    def method(self, type_name_: str | None, name: str) -> Unit | None:
        if type_name_ is None:
            return None
        names = {f"(*{type_name_}).{name}", f"{type_name_}.{name}"}
        return next((u for u in self.package.units if u.kind is UnitKind.METHOD and u.name in names), None)

    # -- summaries --

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
        graph = self.p.cfgs.graphs.get(unit)
        if graph is None or not graph.created:
            return []
        out = []
        live = self._feasible(graph)
        for at, release in raw:
            n = graph.node_containing(at)
            if n is None or n not in live:
                continue
            guards = self._guards(unit, graph, n, at, release)
            out.append(replace(release, unit=unit, node=at, guards=release.guards | guards))
        return out

    def _feasible(self, graph: CFG) -> set[int]:
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
            receiver = syntax.unparen(function.child_by_field_name("operand")) if function is not None and function.type == "selector_expression" else None
            return self._through(unit, call, callee.target, receiver, arguments)
        return []

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
            where = self.access(handle)
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
            where = self.access(argument)
            if where is None:
                if argument is None:
                    continue
                where = _Access(None, self.calls.types.type_of(argument), ())
            prefix = where.path
            out.append(replace(
                release, root=where.root, root_type=where.root_type, path=prefix + release.path,
                guards=frozenset(Guard(g.kind, prefix + g.path) for g in release.guards),
                through=(target.name, *release.through),
            ))
        return out

    def _once(self, unit: Unit, call: Node, function: Node, argument: Node) -> list[Release]:
        """`x.once.Do(f)`: f's releases, guarded by that Once."""
        once = self.access(function.child_by_field_name("operand"))
        argument = syntax.unparen(argument)
        if argument is None:
            return []
        if argument.type == "func_literal":
            literal = self.literals.get(argument)
            found = self._through(unit, call, literal, None, []) if literal is not None else []
        elif argument.type == "selector_expression":  # a method value: b.release
            operand = syntax.unparen(argument.child_by_field_name("operand"))
            target = self.method(self.calls.types.type_of(operand), syntax.text(argument.child_by_field_name("field")))
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
        if literal.use is LiteralUse.PASSED and (_is_once_do(literal.use_node) or self._is_registration(literal.use_node)):
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

    # -- guards --

    def _guards(self, unit: Unit, graph: CFG, n: int, at: Node, release: Release) -> frozenset[Guard]:
        root, path = release.root, release.path
        if root is None:
            return frozenset()
        found: set[Guard] = set()
        deferred = at.type == "defer_statement" or syntax.statement_of_call(at) == "defer_statement"
        if not deferred and path:
            found |= {Guard(GuardKind.CLEARED, q) for q in self._cleared(unit, graph, n, at, root, path)}
        for kind, symbol, marked in self.marks(unit):
            if symbol is root:
                found.add(Guard(kind, marked))
        for flag in self._checked_fields(unit, graph, n, root, path):
            found.add(Guard(GuardKind.CHECKED, flag))
        return frozenset(found)

    def _cleared(self, unit: Unit, graph: CFG, n: int, at: Node, root: Symbol, path: tuple[str, ...]) -> set[tuple[str, ...]]:
        """The locations holding the handle (the field, or what holds it)
        that every path through node n assigns, before or after it: in a
        statement, or in a closure deferred on the way (it runs at the
        return). After n, a path through the failure side of the release's
        own status test needs no clearing: nothing was freed there."""
        clears: dict[tuple[str, ...], set[int]] = {}
        for statement in graph.statement_nodes():
            ast = graph.ast(statement)
            if ast is None:
                continue
            if ast.type == "defer_statement":
                assignments = [a for a in syntax.walk(ast) if a.type == "assignment_statement"]
            else:
                assignments = [ast] if ast.type == "assignment_statement" else []
            for assignment in assignments:
                for location in self._assigned(assignment, root, path):
                    clears.setdefault(location, set()).add(statement)
        failed = self._failure_edges(unit, graph, at)
        return {
            location for location, nodes in clears.items()
            if not (_reaches(graph, graph.entry, {n}, nodes) and _reaches(graph, n, {graph.exits[ExitKind.RETURN]}, nodes, failed))
        }

    def _failure_edges(self, unit: Unit, graph: CFG, release: Node) -> set[tuple[int, int]]:
        """(source, target) of the edges on which the status of the release
        call at `release` has been tested as a failure."""
        found: set[tuple[int, int]] = set()
        for source in graph.statement_nodes():
            for edge in graph.out_edges(source):
                if edge.condition is None or not edge.polarity:
                    continue
                fact = self.status.failed_test(unit, edge.condition)
                if fact is not None and release.start_byte <= fact.node.start_byte and fact.node.end_byte <= release.end_byte:
                    found.add((source, edge.target))
        return found

    def _assigned(self, assignment: Node, root: Symbol, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        """Which locations on the handle's path an assignment overwrites: the
        handle's field (`b.ptr = nil`), a field holding it (`p.options = nil`),
        the struct itself (`*b = Buffer{}`, "*" marking its contents); the
        handle itself copied back in (`b.ptr = b.ptr`) overwrites nothing."""
        if syntax.text(assignment.child_by_field_name("operator")) != "=" or _is_copy(root):
            return []
        left = syntax.expressions(assignment.child_by_field_name("left"))
        right = syntax.expressions(assignment.child_by_field_name("right"))
        found = []
        for index, target in enumerate(left):
            target = syntax.unparen(target)
            if target is None:
                continue
            deref = target.type == "unary_expression" and syntax.text(target.child_by_field_name("operator")) == "*"
            where = self.access(target)
            if where is None or where.root is not root:
                continue
            value = right[index] if len(right) == len(left) else None
            same = self.access(value) if value is not None else None
            if same is not None and same.root is root and same.path == where.path:
                continue
            if deref:
                if where.path == path[: len(where.path)] and len(where.path) < len(path):
                    found.append(where.path + ("*",))
            elif where.path and where.path == path[: len(where.path)]:
                found.append(where.path)
        return found

    def marks(self, unit: Unit) -> set[tuple[GuardKind, Symbol, tuple[str, ...]]]:
        """What a function does to its variables' objects that guards a
        release: the fields it writes (SET: assigned, incremented, changed
        through sync/atomic, `atomic.StoreInt32(&b.f, 1)`, `b.f.Store(true)`)
        and the objects whose finalizer it cancels (CANCELLED:
        `runtime.SetFinalizer(b, nil)`), its callees' included."""
        if unit in self._marks:
            return self._marks[unit]
        self._marks[unit] = found = set()
        if unit.problem is not None or unit.body is None:
            return found
        for node in syntax.walk(unit.body, into_functions=False):
            targets: list[Node] = []
            kind = GuardKind.SET
            if node.type == "assignment_statement":
                targets = syntax.expressions(node.child_by_field_name("left"))
            elif node.type in ("inc_statement", "dec_statement"):
                targets = syntax.children(node)[:1]
            elif node.type == "call_expression":
                targets, kind = self._call_marks(unit, node, found)
            for target in targets:
                where = self.access(target)
                if where is not None and where.root is not None and (where.path or kind is GuardKind.CANCELLED):
                    found.add((kind, where.root, where.path))
        return found

    def _call_marks(self, unit: Unit, call: Node, found: set) -> tuple[list[Node], GuardKind]:
        function = syntax.unparen(call.child_by_field_name("function"))
        arguments = syntax.children(call.child_by_field_name("arguments"))
        if function is None or function.type != "selector_expression":
            function_name = ""
        else:
            function_name = syntax.text(function.child_by_field_name("field"))
        fact = self.calls.call(call)
        if fact is not None and fact.import_path == "runtime" and fact.name == "SetFinalizer":
            if len(arguments) == 2 and syntax.unparen(arguments[1]) is not None and syntax.unparen(arguments[1]).type == "nil":
                return arguments[:1], GuardKind.CANCELLED
            return [], GuardKind.SET
        if function_name.startswith(_ATOMIC_WRITES):
            operand = syntax.unparen(function.child_by_field_name("operand"))
            if operand is not None and operand.type == "identifier" and self.resolution.package_of(operand) == "sync/atomic":
                return arguments[:1], GuardKind.SET
            return [operand], GuardKind.SET
        callee = self.calls.callee(call)
        target = callee.target if callee.kind in (CalleeKind.LOCAL, CalleeKind.VALUE) else None
        if target is None or target is unit:
            return [], GuardKind.SET
        receiver = syntax.unparen(function.child_by_field_name("operand")) if function is not None and function.type == "selector_expression" else None
        params = target.params
        for kind, symbol, path in self.marks(target):
            if symbol is target.receiver:
                argument = receiver
            elif symbol in params and params.index(symbol) < len(arguments):
                argument = arguments[params.index(symbol)]
            else:
                continue
            where = self.access(argument)
            if where is not None and where.root is not None:
                found.add((kind, where.root, where.path + path))
        return [], GuardKind.SET

    def _checked_fields(self, unit: Unit, graph: CFG, n: int, root: Symbol, path: tuple[str, ...]) -> set[tuple[str, ...]]:
        """Flags of `root` (other than the handle itself) such that every path
        from the entry to node n passes a condition reading the flag."""
        conditions: dict[tuple[str, ...], set[int]] = {}
        for m in graph.nodes():
            if graph.kind(m) is not NodeKind.COND or not graph.reachable(m):
                continue
            ast = graph.ast(m)
            if ast is None:
                continue
            for node in syntax.walk(ast, into_functions=False):
                if node.type != "selector_expression":
                    continue
                where = self.access(node)
                if where is not None and where.root is root and where.path and where.path != path and not where.path[-1].endswith("()"):
                    conditions.setdefault(where.path, set()).add(m)
        return {flag for flag, nodes in conditions.items() if not _reaches(graph, graph.entry, {n}, nodes)}

    # -- registrations --

    def registrations(self) -> list[Registration]:
        found = []
        for unit, call in self.calls.calls_to("runtime", "SetFinalizer"):
            arguments = syntax.children(call.child_by_field_name("arguments"))
            if len(arguments) != 2:
                continue
            graph = self.p.cfgs.graphs.get(unit)
            n = graph.node_containing(call) if graph is not None else None
            if n is None or n not in self._feasible(graph):
                continue  # never runs (`if contextsetfinalizer {` with the constant false)
            self._registration_args.add(arguments[1])
            resolved = self._finalizer(arguments[1])
            if resolved is None:
                continue
            finalizer, form = resolved
            self._registration_args.add(finalizer.node)
            obj_symbol = finalizer.receiver if finalizer.kind is UnitKind.METHOD else (finalizer.params[0] if finalizer.params else None)
            if obj_symbol is None:
                continue
            obj = unwrap(arguments[0], self.calls)
            while obj is not None and obj.type == "unary_expression" and syntax.text(obj.child_by_field_name("operator")) == "&":
                obj = unwrap(obj.child_by_field_name("operand"), self.calls)
            registration = Registration(
                unit, call, arguments[0], finalizer, form, self.symbol_type(obj_symbol),
                syntax.text(obj) if obj is not None and obj.type in ("identifier", "selector_expression") else obj_symbol.name,
            )
            for release in self.summary(finalizer):
                if release.root is obj_symbol:
                    registration.releases.append(release)
            registration.flags = self._flags_set(unit, registration.obj)
            found.append(registration)
        return found

    def _flags_set(self, unit: Unit, obj: Node) -> set[tuple[str, ...]]:
        """Fields of the registered object that the registering function (or
        the functions around a literal that registers) sets."""
        where = self.access(obj)
        if where is None or where.root is None or where.path:
            return set()
        symbol = where.root
        found: set[tuple[str, ...]] = set()
        current: Unit | None = unit
        while current is not None:
            found |= {path for kind, root, path in self.marks(current) if kind is GuardKind.SET and root is symbol}
            current = current.parent
        init = unwrap(symbol.init, self.calls) if symbol.init is not None and symbol.init_index < 0 else None
        while init is not None and init.type == "unary_expression" and syntax.text(init.child_by_field_name("operator")) == "&":
            init = unwrap(init.child_by_field_name("operand"), self.calls)
        if init is not None and init.type == "composite_literal":
            body = init.child_by_field_name("body")
            for element in syntax.children(body) if body is not None else []:
                parts = syntax.children(element) if element.type == "keyed_element" else []
                if len(parts) == 2:
                    found.add((syntax.text(parts[0]),))
        return found

    def _finalizer(self, expression: Node) -> tuple[Unit, Form] | None:
        node = syntax.unparen(expression)
        if node is None:
            return None
        if node.type == "func_literal":
            literal = self.literals.get(node)
            return (literal, Form.LITERAL) if literal is not None else None
        if node.type == "identifier":
            target = self.calls.unit_of(self.resolution.symbol(node))
            if target is None:
                return None
            return target, (Form.VARIABLE if target.kind is UnitKind.LITERAL else Form.FUNCTION)
        if node.type == "selector_expression":
            method = syntax.text(node.child_by_field_name("field"))
            operand = syntax.unparen(node.child_by_field_name("operand"))
            if operand is None:
                return None
            base = syntax.text(operand).lstrip("*").strip("()").lstrip("*")
            names = {f"(*{base}).{method}", f"{base}.{method}"}  # (*T).m names value-receiver methods too
            target = next((u for u in self.package.units if u.kind is UnitKind.METHOD and u.name in names), None)
            return (target, Form.METHOD) if target is not None else None
        return None

    # -- who can release explicitly --

    def finalizer_only_units(self, registrations: list[Registration]) -> set[Unit]:
        """Functions that run only as a finalizer: the registered ones that
        nothing outside can call, and the helpers only those call."""
        only = {r.finalizer for r in registrations if not self._callable_from_outside(r.finalizer)}
        changed = True
        while changed:
            changed = False
            for unit in self.package.units:
                if unit in only or unit.kind is UnitKind.LITERAL or self._callable_from_outside(unit):
                    continue
                users = self._users(unit)
                if users and all(user in only for user in users):
                    only.add(unit)
                    changed = True
        return only

    def _callable_from_outside(self, unit: Unit) -> bool:
        if unit.kind is UnitKind.LITERAL:
            return False
        name = unit.name.rsplit(".", 1)[-1]
        return name[:1].isupper() or (unit.kind is UnitKind.FUNCTION and name in _ENTRY_NAMES)

    def _users(self, unit: Unit) -> list[Unit] | None:
        """The functions that call or name `unit`; None when some use is
        not a plain call (a value handed on: anyone may call it)."""
        by_node = self._by_node
        users: list[Unit] = []
        for call in self.calls.calls_of(unit):
            user = by_node.get(syntax.enclosing_function(call))
            if user is not None:
                users.append(user)
        values: list[Node] = []
        if unit.kind is UnitKind.METHOD:
            values = self.calls.method_values(unit)
        elif unit.symbol is not None:
            for reference in self.calls.references(unit.symbol):
                parent = reference.parent
                if reference == unit.node.child_by_field_name("name"):
                    continue
                if parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == reference:
                    continue
                values.append(reference)
        for value in values:
            holder = value.parent.parent if value.parent is not None and value.parent.type == "argument_list" else None
            if value in self._registration_args or (holder is not None and _is_once_do(holder)):
                user = by_node.get(syntax.enclosing_function(value))
                if user is not None:
                    users.append(user)
                continue
            return None
        return users

    def is_entry(self, unit: Unit, only: set[Unit]) -> bool:
        """Whether code outside the package's own calls can run `unit`."""
        if unit in only:
            return False
        if unit.kind is UnitKind.LITERAL:
            # Stored or returned, it may run anywhere; otherwise it runs with its function.
            return unit.node not in self._registration_args and unit.use in (LiteralUse.STORED, LiteralUse.RETURNED)
        if self._callable_from_outside(unit):
            return True
        return self._users(unit) is None

    def explicit_releases(self, registrations: list[Registration]) -> list[Release]:
        only = self.finalizer_only_units(registrations)
        registered_on = {}
        for registration in registrations:
            symbol = self.resolution.symbol(registration.obj) if syntax.unparen(registration.obj).type == "identifier" else None
            if symbol is not None:
                registered_on.setdefault((registration.unit, symbol), []).append(registration.call)
        out = []
        for unit in self.package.units:
            if unit in only or (unit.kind is UnitKind.LITERAL and not self.is_entry(unit, only)):
                continue
            entry = None
            for release in self.summary(unit):
                root = release.root
                if root is not None and root.role in (Role.PARAM, Role.RECEIVER) and root.function == unit.node:
                    if entry is None:
                        entry = self.is_entry(unit, only)
                    if not entry:
                        continue
                if root is not None and root.role is Role.LOCAL and root.function == unit.node:
                    if not self._registered_before(unit, root, release, registered_on.get((unit, root), [])):
                        continue
                out.append(release)
        return out

    def _registered_before(self, unit: Unit, root: Symbol, release: Release, registrations: list[Node]) -> bool:
        """A release of a local object: does a finalizer guard that object
        by then? One registered in this function counts only if it can run
        before the release; a fresh `&T{}` has none (a constructor freeing
        on its error path before registering is fine)."""
        graph = self.p.cfgs.graphs.get(unit)
        if registrations and graph is not None:
            n = graph.node_containing(release.node)
            return any(
                (m := graph.node_containing(call)) is not None and n is not None and m != n and graph.has_path(m, n)
                for call in registrations
            )
        init = unwrap(root.init, self.calls) if root.init is not None and root.init_index < 0 else None
        while init is not None and init.type == "unary_expression" and syntax.text(init.child_by_field_name("operator")) == "&":
            init = unwrap(init.child_by_field_name("operand"), self.calls)
        if init is not None and init.type == "composite_literal":
            return False
        if init is not None and init.type == "call_expression" and syntax.text(syntax.unparen(init.child_by_field_name("function"))) == "new":
            return False
        if root.init is None and root.type_node is not None:
            return False  # `var b Buffer`: a fresh zero value
        return True


def _is_copy(symbol: Symbol) -> bool:
    """A struct received by value (`func (b Buffer) Free()`): assigning its
    fields changes the copy, not the caller's object."""
    declared = symbol.type_node
    return symbol.role in (Role.PARAM, Role.RECEIVER) and declared is not None and declared.type in (
        "type_identifier", "qualified_type", "generic_type",
    )


def _is_once_do(call: Node) -> bool:
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


def _reaches(graph: CFG, start: int, goals: set[int], blocked: set[int], cut: set[tuple[int, int]] = frozenset()) -> bool:
    """Whether some path from start reaches a goal without passing a
    blocked node or a cut edge."""

    def step(n: int, state: None):
        if n != start and n in blocked:
            return []
        return [(m, None) for m in graph.successors(n) if (n, m) not in cut]

    for n, _ in graph.walk(start, None, step):
        if n in goals and (n == start or n not in blocked):
            return True
    return False


# -- pairing --------------------------------------------------------------------


def gpu_resource(resource: ResourceSpec) -> bool:
    """Whether a resource occupies the GPU's resources (CL508 reports
    finalizer-only releases of these): not what the knowledge calls
    host-side (C heap memory, descriptors), not a handle-less pairing."""
    return not (resource.host_side or resource.any_use_releases or resource.handleless)


def _relative(types: Paths, release: Release, type_name_: str | None, path: tuple[str, ...]) -> tuple[str, ...] | None:
    """If `release` frees the handle `path` of an object of type
    `type_name_` (its root, or an object its path goes through), the prefix
    that leads from its root to that object."""
    if type_name_ is None or len(release.path) < len(path):
        return None
    along = types.along(release.root_type, release.path)
    k = len(release.path) - len(path)
    if release.path[k:] == path and along[k] == type_name_:
        return release.path[:k]
    return None


def _guarded(explicit: Release, prefix: tuple[str, ...], finalizer: Release, registration: Registration) -> bool:
    """Whether the explicit release cannot be followed by the finalizer's:
    it overwrites the handle inside the object, cancels the object's
    finalizer, shares a Once with the finalizer, sets a flag the finalizer
    checks, or checks a flag that the registration sets (the object is
    marked as owned by its finalizer: `b.gogc = true`)."""
    if explicit.has(GuardKind.CANCELLED, prefix):
        return True
    relative = {
        Guard(g.kind, g.path[len(prefix):]) for g in explicit.guards
        if g.path[: len(prefix)] == prefix and len(g.path) > len(prefix)
    }
    if any(g.kind is GuardKind.CLEARED for g in relative):
        return True
    if any(g.kind is GuardKind.CHECKED and g.path in registration.flags for g in relative):
        return True
    for guard in finalizer.guards:
        if guard.kind is GuardKind.ONCE and guard in relative:
            return True
        if guard.kind is GuardKind.CHECKED and Guard(GuardKind.SET, guard.path) in relative:
            return True
    return False


def find_finalizers(p: Pass) -> Finalizers:
    result = Finalizers()
    builder = _Builder(p)
    if not any(True for _ in builder.calls.calls_to("runtime", "SetFinalizer")):
        return result
    result.registrations = builder.registrations()
    if not any(r.releases for r in result.registrations):
        return result
    explicit = builder.explicit_releases(result.registrations)
    for registration in result.registrations:
        seen_paths: set[tuple[str, ...]] = set()
        for release in registration.releases:
            if release.path in seen_paths:
                continue
            seen_paths.add(release.path)
            matching = [
                (e, prefix) for e in explicit
                if (prefix := _relative(builder.types, e, registration.type_name, release.path)) is not None
            ]
            if not matching:
                if gpu_resource(release.resource):
                    result._finalizer_only.append(FinalizerOnly(registration, release))
                continue
            for e, prefix in matching:
                if not _guarded(e, prefix, release, registration):
                    result._double_releases.append(FinalizerDoubleRelease(registration, release, e))
                    break
    return result


FINALIZERS: Analysis[Finalizers] = Analysis("finalizers", __doc__ or "", find_finalizers, requires=(CALLS, STATUS))
