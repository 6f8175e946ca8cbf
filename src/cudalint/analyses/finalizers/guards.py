"""The guards around a release: the handle cleared on every path through
it, the object's finalizer cancelled, a Once, a flag checked or set (the
marks a function makes on its variables' objects, its callees' included)."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CalleeKind, CallIndex
from cudalint.analyses.finalizers.access import AccessPaths
from cudalint.analyses.finalizers.model import Guard, GuardKind, Release
from cudalint.analyses.status import StatusSemantics
from cudalint.cfg import CFG, ExitKind, NodeKind
from cudalint.functions import Unit
from cudalint.scope import Role, Symbol

# sync/atomic functions and methods of its types that write their operand.
_ATOMIC_WRITES = ("Store", "Swap", "CompareAndSwap", "Add", "And", "Or")


class Guards:
    """The guards of the releases of one package's functions."""

    def __init__(self, calls: CallIndex, status: StatusSemantics, access_paths: AccessPaths):
        self.calls = calls
        self.status = status
        self.resolution = access_paths.resolution
        self.access_paths = access_paths
        self._marks: dict[Unit, set[tuple[GuardKind, Symbol, tuple[str, ...]]]] = {}

    def of(self, unit: Unit, graph: CFG, n: int, at: Node, release: Release) -> frozenset[Guard]:
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
            if ast.type == "expression_statement":
                for location in self._cleared_by_method(syntax.unparen(ast.named_children[0]), root, path):
                    clears.setdefault(location, set()).add(statement)
        failed = self._failure_edges(unit, graph, at)
        return {
            location for location, nodes in clears.items()
            if not (_reaches(graph, graph.entry, {n}, nodes) and _reaches(graph, n, {graph.exits[ExitKind.RETURN]}, nodes, failed))
        }

    def _cleared_by_method(self, call: Node | None, root: Symbol, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        """`m.meta.reset()` where reset's body starts by clearing a field of
        its receiver (`r.engines = nil`, not under a condition): that field
        of `m.meta` is cleared here."""
        target = self.calls.local_target(call) if call is not None and call.type == "call_expression" else None
        operand = syntax.method_operand(call) if target is not None else None
        where = self.access_paths.access(operand) if operand is not None else None
        if target is None or target.receiver is None or where is None or where.root is not root:
            return []
        found = []
        for statement in syntax.statements(target.body):
            left = syntax.expressions(statement.child_by_field_name("left")) if statement.type == "assignment_statement" else []
            right = syntax.expressions(statement.child_by_field_name("right")) if left else []
            for target_node, value in zip(left, right) if len(left) == len(right) else ():
                fields = syntax.text(target_node).split(".")
                if fields[0] == target.receiver.name and len(fields) > 1 and syntax.text(value) in ("nil", "0"):
                    location = where.path + tuple(fields[1:])
                    if location == path[: len(location)]:
                        found.append(location)
        return found

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
            where = self.access_paths.access(target)
            if where is None or where.root is not root:
                continue
            value = right[index] if len(right) == len(left) else None
            same = self.access_paths.access(value) if value is not None else None
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
                where = self.access_paths.access(target)
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
        receiver = syntax.method_operand(call)
        params = target.params
        for kind, symbol, path in self.marks(target):
            if symbol is target.receiver:
                argument = receiver
            elif symbol in params and params.index(symbol) < len(arguments):
                argument = arguments[params.index(symbol)]
            else:
                continue
            where = self.access_paths.access(argument)
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
                where = self.access_paths.access(node)
                if where is not None and where.root is root and where.path and where.path != path and not where.path[-1].endswith("()"):
                    conditions.setdefault(where.path, set()).add(m)
        return {flag for flag, nodes in conditions.items() if not _reaches(graph, graph.entry, {n}, nodes)}


def _is_copy(symbol: Symbol) -> bool:
    """A struct received by value (`func (b Buffer) Free()`): assigning its
    fields changes the copy, not the caller's object."""
    declared = symbol.type_node
    return symbol.role in (Role.PARAM, Role.RECEIVER) and declared is not None and declared.type in (
        "type_identifier", "qualified_type", "generic_type",
    )


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
