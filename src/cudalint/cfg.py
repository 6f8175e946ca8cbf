"""The control-flow graph of one function, with the semantics of
golang.org/x/tools/go/cfg (the graph `go vet` trusts), plus what the rules need
and go/cfg lacks:

* every conditional edge carries the leaf condition it tested and the value it
  took (`Edge.condition`, `Edge.polarity`), so a rule can tell the `st != C.cudaSuccess`
  branch from the other; `&&`, `||` and `!` are split as go/cfg splits them;
* switch and type-switch case edges carry the case clause and the tag;
* four distinct exits: normal return, goroutine exit (`runtime.Goexit`,
  `t.FailNow`), panic, process exit (`os.Exit`, `log.Fatal`). Deferred calls
  run on the first three only.

Nodes are statements (and conditions, case tests, loop heads); unreachable
code keeps its nodes, with no path from the entry, so "is this reachable" is a
graph question. Conditions are not constant-folded.
"""

from __future__ import annotations

import random

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.findings import Span
from cudalint.functions import Package, Unit, UnitKind
from cudalint.gotypes import imported_type
from cudalint.lazy import networkx as nx
from cudalint.scope import MAX_NESTING, Nesting, NestingTooDeep, Resolution, Symbol, SymbolKind


class ExitKind(str, Enum):
    RETURN = "return"
    GOEXIT = "goexit"
    PANIC = "panic"
    PROCESS = "process-exit"


DEFERS_RUN_ON = frozenset({ExitKind.RETURN, ExitKind.GOEXIT, ExitKind.PANIC})


class NodeKind(str, Enum):
    ENTRY = "entry"
    EXIT = "exit"
    STMT = "stmt"
    COND = "cond"
    SWITCH = "switch"
    CASE = "case"
    TYPESWITCH = "typeswitch"
    TYPECASE = "typecase"
    SELECT = "select"
    COMM = "comm"
    RANGE = "range"
    LOOP = "loop"
    LABEL = "label"
    GOTO = "goto"
    BREAK = "break"
    CONTINUE = "continue"
    FALLTHROUGH = "fallthrough"
    RETURN = "return"
    IMPLICIT_RETURN = "implicit-return"
    DEFER = "defer"
    GO = "go"


@dataclass(frozen=True)
class Edge:
    """A control-flow edge. A conditional edge says which leaf condition it
    tested (`condition`) and the value it took (`polarity`); a switch case
    edge says which clause (`case`) of which tag (`tag`, None for a tagless
    switch) it enters or skips; `branch` names the construct ("cond", "case",
    "default", "range", "comm", "goto", "break", "continue", "fallthrough"),
    None for plain sequencing."""

    source: int
    target: int
    branch: str | None = None
    condition: Node | None = None
    polarity: bool | None = None
    case: Node | None = None
    tag: Node | None = None

    @property
    def tests_case(self) -> bool:
        return self.branch in ("case", "default") and self.case is not None


S = TypeVar("S", bound=Hashable)


@dataclass
class CFG:
    """The graph of one function. Rules and analyses read it through these
    methods only; the networkx graph is this module's business."""

    unit: Unit
    graph: nx.DiGraph
    entry: int
    exits: dict[ExitKind, int]
    node_of: dict[Node, int] = field(default_factory=dict)
    # False for a func literal that sits in unreachable code of its enclosing
    # function: its body can never run, so none of its nodes is live.
    created: bool = True
    _live: frozenset[int] | None = field(default=None, repr=False)
    _loops: frozenset[int] | None = field(default=None, repr=False)

    def kind(self, n: int) -> NodeKind:
        return self.graph.nodes[n]["kind"]

    def ast(self, n: int) -> Node | None:
        return self.graph.nodes[n]["ast"]

    def line(self, n: int) -> int:
        return self.graph.nodes[n]["line"]

    def span(self, n: int) -> Span | None:
        """Where a node is in the source: its statement, or for the implicit
        return at the end of a body, the closing brace."""
        ast = self.ast(n)
        if ast is None:
            return None
        source = self.unit.file.source
        if self.kind(n) is NodeKind.IMPLICIT_RETURN:
            end = source.position(ast.end_point[0], max(ast.end_point[1] - 1, 0))
            return Span(end, source.position(ast.end_point[0], ast.end_point[1]))
        return source.span(ast)

    def node_containing(self, node: Node) -> int | None:
        """The graph node whose evaluation includes this syntax node."""
        current: Node | None = node
        while current is not None:
            found = self.node_of.get(current)
            if found is not None:
                return found
            current = current.parent
        return None

    def exit_kind(self, n: int) -> ExitKind | None:
        """How the goroutine ends at an exit node (None for other nodes)."""
        return self.graph.nodes[n].get("exit")

    def nodes(self) -> Iterable[int]:
        return self.graph.nodes

    def successors(self, n: int) -> Iterator[int]:
        return iter(self.graph.successors(n))

    def out_edges(self, n: int) -> Iterator[Edge]:
        for target in self.graph.successors(n):
            yield self.edge(n, target)

    def edge(self, source: int, target: int) -> Edge:
        attrs = self.graph.edges[source, target]
        return Edge(
            source, target, attrs.get("branch"), attrs.get("cond"), attrs.get("polarity"), attrs.get("case"), attrs.get("tag"),
        ) if attrs else Edge(source, target)

    def has_path(self, source: int, target: int) -> bool:
        """Whether some path leads from source to target (trivially so when
        they are the same node)."""
        return nx.has_path(self.graph, source, target)

    def in_loop(self, n: int) -> bool:
        """Whether a live node can run more than once: it lies on a cycle of
        the live part of the graph."""
        if self._loops is None:
            cyclic: set[int] = set()
            live = self.graph.subgraph(self.live)
            for component in nx.strongly_connected_components(live):
                if len(component) > 1:
                    cyclic |= component
            cyclic |= {m for m in self.live if self.graph.has_edge(m, m)}
            self._loops = frozenset(cyclic)
        return n in self._loops

    def walk(self, start: int, state: S, step: Callable[[int, S], Iterable[tuple[int, S]]]) -> Iterator[tuple[int, S]]:
        """The one worklist of every path search: breadth-first over (node,
        state) pairs from (start, state), each pair yielded once, before the
        pairs that `step(node, state)` says follow it (apply the node's
        effects, then follow `out_edges`, dropping infeasible ones). Stop
        early by leaving the loop."""
        seen = {(start, state)}
        queue = deque([(start, state)])
        while queue:
            n, current = queue.popleft()
            yield n, current
            for following in step(n, current):
                if following not in seen:
                    seen.add(following)
                    queue.append(following)

    def format(self) -> str:
        """A text dump in the spirit of go/cfg's Format: one block per node
        (id, kind, line, source) with its successors and edge labels; used by
        the CFG tests and `--debug`."""
        lines = [f"cfg {self.unit.name}: entry {self.entry}"]
        for n in self.graph.nodes:
            kind = self.kind(n)
            ast = self.ast(n)
            head = f".{n}: {kind.value}"
            if kind is NodeKind.EXIT:
                head += f" ({self.exit_kind(n).value})"
            elif ast is not None:
                text = "}" if kind is NodeKind.IMPLICIT_RETURN else " ".join(syntax.text(ast).split())
                head += f" line {self.line(n)}: {text[:60]}{'...' if len(text) > 60 else ''}"
            if n not in self.live:
                head += " [dead]"
            lines.append(head)
            for edge in self.out_edges(n):
                label = ""
                if edge.condition is not None:
                    label = f" if `{syntax.text(edge.condition)}` is {str(edge.polarity).lower()}"
                elif edge.tests_case:
                    label = f" {edge.branch} {'taken' if edge.polarity else 'not taken'}" if edge.branch == "case" else " default"
                elif edge.branch is not None:
                    label = f" {edge.branch}" + ("" if edge.polarity is None else f" {str(edge.polarity).lower()}")
                lines.append(f"    -> .{edge.target}{label}")
        return "\n".join(lines) + "\n"

    @property
    def live(self) -> frozenset[int]:
        """Nodes reachable from the entry."""
        if self._live is None:
            if self.created:
                self._live = frozenset(nx.descendants(self.graph, self.entry) | {self.entry})
            else:
                self._live = frozenset()
        return self._live

    def reachable(self, n: int) -> bool:
        return n in self.live

    def exit_reachable(self, kind: ExitKind) -> bool:
        return self.exits[kind] in self.live

    def evaluated(self, n: int) -> list[Node]:
        """The syntax evaluated when control passes through node n (a case
        node's clause holds its body too, but only its values are evaluated
        there; a select, loop head or label evaluates nothing of its own)."""
        kind = self.kind(n)
        ast = self.ast(n)
        if ast is None or kind in _EVALUATES_NOTHING:
            return []
        if kind is NodeKind.CASE:
            values = ast.child_by_field_name("value")
            return [values] if values is not None else []
        if kind is NodeKind.TYPESWITCH:
            value = ast.child_by_field_name("value")
            return [value] if value is not None else []
        return [ast]

    def statement_nodes(self) -> Iterable[int]:
        """Nodes that stand for source constructs, in creation (source) order."""
        for n, data in self.graph.nodes(data=True):
            if data["ast"] is not None and data["kind"] not in (NodeKind.ENTRY, NodeKind.EXIT):
                yield n


_EVALUATES_NOTHING = frozenset({
    NodeKind.ENTRY, NodeKind.EXIT, NodeKind.SELECT, NodeKind.LOOP, NodeKind.LABEL, NodeKind.IMPLICIT_RETURN,
    NodeKind.BREAK, NodeKind.CONTINUE, NodeKind.FALLTHROUGH, NodeKind.GOTO, NodeKind.TYPECASE,
})

# Standard-library calls that never return, and how the goroutine ends.
_NO_RETURN_FUNCS: dict[tuple[str, str], ExitKind] = {
    ("os", "Exit"): ExitKind.PROCESS,
    ("syscall", "Exit"): ExitKind.PROCESS,
    ("log", "Fatal"): ExitKind.PROCESS,
    ("log", "Fatalf"): ExitKind.PROCESS,
    ("log", "Fatalln"): ExitKind.PROCESS,
    ("log", "Panic"): ExitKind.PANIC,
    ("log", "Panicf"): ExitKind.PANIC,
    ("log", "Panicln"): ExitKind.PANIC,
    ("runtime", "Goexit"): ExitKind.GOEXIT,
}
_TESTING_GOEXIT = frozenset({"Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow"})
_NO_RETURN_METHODS: dict[tuple[str, str], dict[str, ExitKind]] = {
    **{("testing", t): {m: ExitKind.GOEXIT for m in _TESTING_GOEXIT} for t in ("T", "B", "F", "TB")},
    ("log", "Logger"): {
        "Fatal": ExitKind.PROCESS, "Fatalf": ExitKind.PROCESS, "Fatalln": ExitKind.PROCESS,
        "Panic": ExitKind.PANIC, "Panicf": ExitKind.PANIC, "Panicln": ExitKind.PANIC,
    },
}


class ExitOracle:
    """Answers "does this call return?" for the CFG builder: builtins, the
    standard library's no-return functions, and functions of the same package
    whose bodies cannot return (decided on demand by PackageCFGs)."""

    def __init__(
        self, resolution: Resolution, package_exits: Callable[[Symbol], frozenset[ExitKind] | None],
        imported_exits: Mapping[tuple[str, str], frozenset[ExitKind]] | None = None,
    ):
        self.resolution = resolution
        self.package_exits = package_exits
        # Exported functions of other packages of the module that never
        # return, as their summaries say: (import path, name) -> exits.
        self.imported_exits = imported_exits or {}

    def exits_of(self, call: Node) -> frozenset[ExitKind] | None:
        """None if the call may return; otherwise how it ends the goroutine
        (an empty set for a call that blocks forever)."""
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is None:
            return None
        res = self.resolution
        if function.type == "identifier":
            symbol = res.symbol(function)
            if symbol is None:
                return None
            if symbol.kind is SymbolKind.BUILTIN and symbol.name == "panic":
                return frozenset({ExitKind.PANIC})
            if symbol.kind is SymbolKind.FUNC:
                return self.package_exits(symbol)
            return None
        if function.type == "selector_expression":
            operand = syntax.unparen(function.child_by_field_name("operand"))
            name = syntax.text(function.child_by_field_name("field"))
            if operand is None or operand.type != "identifier":
                return None
            path = res.package_of(operand)
            if path is not None:
                kind = _NO_RETURN_FUNCS.get((path, name))
                return frozenset({kind}) if kind is not None else self.imported_exits.get((path, name))
            declared = imported_type(res, res.symbol(operand))
            if declared is not None:
                kind = _NO_RETURN_METHODS.get(declared, {}).get(name)
                return frozenset({kind}) if kind is not None else None
        return None


Pending = list[tuple[int, dict]]


@dataclass
class _Target:
    label: str | None
    is_loop: bool
    breaks: Pending = field(default_factory=list)
    continues: Pending = field(default_factory=list)


_SIMPLE = frozenset({
    "short_var_declaration", "assignment_statement", "inc_statement", "dec_statement",
    "send_statement", "var_declaration", "const_declaration", "type_declaration",
})


class _Builder:
    def __init__(self, unit: Unit, oracle: ExitOracle):
        self.unit = unit
        self.oracle = oracle
        self.g = nx.DiGraph()
        self.node_of: dict[Node, int] = {}
        self.entry = self._node(NodeKind.ENTRY, None, syntax.line(unit.node))
        self.exits = {kind: self._node(NodeKind.EXIT, None, 0, exit=kind) for kind in ExitKind}
        self.pending: Pending = [(self.entry, {})]
        self.targets: list[_Target] = []
        self.labels: dict[str, int] = {}
        self.gotos: list[tuple[int, str]] = []
        self.fallthrough: Pending = []
        self.nesting = Nesting()

    # -- graph primitives ---------------------------------------------------

    def _node(self, kind: NodeKind, ast: Node | None, line: int, **attrs) -> int:
        n = self.g.number_of_nodes()
        self.g.add_node(n, kind=kind, ast=ast, line=line, **attrs)
        if ast is not None and ast not in self.node_of:
            self.node_of[ast] = n
        return n

    def _edge(self, source: int, target: int, attrs: dict) -> None:
        existing = self.g.get_edge_data(source, target)
        if existing is None:
            self.g.add_edge(source, target, **attrs)
        elif existing != attrs:
            # Both outcomes of a test reach the same node: the edge constrains nothing.
            self.g.remove_edge(source, target)
            self.g.add_edge(source, target)

    def connect(self, pending: Pending, target: int) -> None:
        for source, attrs in pending:
            self._edge(source, target, attrs)

    def add(self, kind: NodeKind, ast: Node | None, line: int | None = None, **attrs) -> int:
        n = self._node(kind, ast, line if line is not None else syntax.line(ast), **attrs)
        self.connect(self.pending, n)
        self.pending = [(n, {})]
        return n

    def end_at(self, n: int, kinds: Iterable[ExitKind]) -> None:
        for kind in kinds:
            self._edge(n, self.exits[kind], {})
        self.pending = []

    # -- function -----------------------------------------------------------

    def build(self) -> CFG:
        body = self.unit.body
        if body is not None:
            self.statements(syntax.statements(body))
            if self.pending:
                n = self.add(NodeKind.IMPLICIT_RETURN, body, line=body.end_point[0] + 1)
                self.node_of.pop(body, None)
                self.end_at(n, [ExitKind.RETURN])
        for n, label in self.gotos:
            if label in self.labels:
                self._edge(n, self.labels[label], {"branch": "goto"})
        return CFG(self.unit, self.g, self.entry, self.exits, self.node_of)

    def statements(self, statements: list[Node]) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: Node | None, label: str | None = None) -> None:
        if node is None:
            return
        with self.nesting(node):
            kind = node.type
            if kind in _SIMPLE:
                self.add(NodeKind.STMT, node)
            elif kind == "expression_statement":
                self.expression_statement(node)
            elif kind == "block":
                self.statements(syntax.statements(node))
            elif kind == "return_statement":
                self.end_at(self.add(NodeKind.RETURN, node), [ExitKind.RETURN])
            elif kind == "defer_statement":
                self.add(NodeKind.DEFER, node)
            elif kind == "go_statement":
                self.add(NodeKind.GO, node)
            elif kind == "if_statement":
                self.if_statement(node)
            elif kind == "for_statement":
                self.for_statement(node, label)
            elif kind == "expression_switch_statement":
                self.switch_statement(node, label, typed=False)
            elif kind == "type_switch_statement":
                self.switch_statement(node, label, typed=True)
            elif kind == "select_statement":
                self.select_statement(node, label)
            elif kind == "labeled_statement":
                self.labeled_statement(node)
            elif kind == "goto_statement":
                n = self.add(NodeKind.GOTO, node)
                self.gotos.append((n, _label_of(node)))
                self.pending = []
            elif kind == "break_statement":
                self.jump(node, NodeKind.BREAK)
            elif kind == "continue_statement":
                self.jump(node, NodeKind.CONTINUE)
            elif kind == "fallthrough_statement":
                self.fallthrough = [(self.add(NodeKind.FALLTHROUGH, node), {"branch": "fallthrough"})]
                self.pending = []
            elif kind == "empty_statement":
                pass
            else:
                self.add(NodeKind.STMT, node)

    def expression_statement(self, node: Node) -> None:
        n = self.add(NodeKind.STMT, node)
        inner = syntax.children(node)
        call = syntax.unparen(inner[0]) if inner else None
        if call is not None and call.type == "call_expression":
            exits = self.oracle.exits_of(call)
            if exits is not None:
                self.end_at(n, exits)

    def jump(self, node: Node, kind: NodeKind) -> None:
        n = self.add(kind, node)
        self.pending = []
        label = _label_of(node)
        for target in reversed(self.targets):
            if label is not None and target.label != label:
                continue
            if kind is NodeKind.CONTINUE and not target.is_loop:
                continue
            edge = (n, {"branch": kind.value})
            (target.continues if kind is NodeKind.CONTINUE else target.breaks).append(edge)
            return

    # -- conditions ---------------------------------------------------------

    def cond(self, expression: Node | None) -> tuple[Pending, Pending]:
        """Evaluate a boolean expression; return the pending edges taken when
        it is true and when it is false."""
        with self.nesting(expression):
            e = syntax.unparen(expression)
            if e is not None and e.type == "binary_expression":
                operator = syntax.text(e.child_by_field_name("operator"))
                if operator == "&&":
                    true_left, false_left = self.cond(e.child_by_field_name("left"))
                    self.pending = true_left
                    true_right, false_right = self.cond(e.child_by_field_name("right"))
                    return true_right, false_left + false_right
                if operator == "||":
                    true_left, false_left = self.cond(e.child_by_field_name("left"))
                    self.pending = false_left
                    true_right, false_right = self.cond(e.child_by_field_name("right"))
                    return true_left + true_right, false_right
            if e is not None and e.type == "unary_expression" and syntax.text(e.child_by_field_name("operator")) == "!":
                when_true, when_false = self.cond(e.child_by_field_name("operand"))
                return when_false, when_true
            n = self.add(NodeKind.COND, e, line=syntax.line(e) if e is not None else None)
            return [(n, {"branch": "cond", "cond": e, "polarity": True})], [(n, {"branch": "cond", "cond": e, "polarity": False})]

    # -- compound statements -------------------------------------------------

    def if_statement(self, node: Node) -> None:
        self.statement(node.child_by_field_name("initializer"))
        when_true, when_false = self.cond(node.child_by_field_name("condition"))
        self.pending = when_true
        self.statement(node.child_by_field_name("consequence"))
        after = self.pending
        self.pending = when_false
        self.statement(node.child_by_field_name("alternative"))
        self.pending = after + self.pending

    def loop_body(self, node: Node, label: str | None, entry: Pending) -> _Target:
        target = _Target(label, is_loop=True)
        self.targets.append(target)
        self.pending = entry
        self.statement(node.child_by_field_name("body"))
        self.targets.pop()
        return target

    def for_statement(self, node: Node, label: str | None) -> None:
        header = next((c for c in syntax.children(node) if c.type != "block"), None)
        if header is not None and header.type == "range_clause":
            head = self.add(NodeKind.RANGE, header)
            target = self.loop_body(node, label, [(head, {"branch": "range", "polarity": True})])
            self.connect(self.pending + target.continues, head)
            self.pending = [(head, {"branch": "range", "polarity": False})] + target.breaks
            return
        condition = update = None
        if header is not None and header.type == "for_clause":
            self.statement(header.child_by_field_name("initializer"))
            condition = header.child_by_field_name("condition")
            update = header.child_by_field_name("update")
        elif header is not None:
            condition = header
        if condition is not None:
            first = self.g.number_of_nodes()
            when_true, when_false = self.cond(condition)
            head = first
        else:
            head = self.add(NodeKind.LOOP, node)
            when_true, when_false = [(head, {})], []
        target = self.loop_body(node, label, when_true)
        self.pending = self.pending + target.continues
        if update is not None:
            self.add(NodeKind.STMT, update)
        self.connect(self.pending, head)
        self.pending = when_false + target.breaks

    def switch_statement(self, node: Node, label: str | None, typed: bool) -> None:
        self.statement(node.child_by_field_name("initializer"))
        tag = node.child_by_field_name("value")
        if typed:
            self.add(NodeKind.TYPESWITCH, node)
        elif tag is not None:
            self.add(NodeKind.SWITCH, tag)
        case_types = ("type_case", "default_case") if typed else ("expression_case", "default_case")
        clauses = [c for c in syntax.children(node) if c.type in case_types]
        entries: dict[Node, Pending] = {}
        for clause in clauses:
            if clause.type == "default_case":
                continue
            if tag is None and not typed:
                entries[clause], self.pending = self.any_of(syntax.expressions(clause.child_by_field_name("value")))
            else:
                n = self.add(NodeKind.TYPECASE if typed else NodeKind.CASE, clause)
                edge = {"branch": "case", "case": clause, "tag": tag}
                entries[clause] = [(n, {**edge, "polarity": True})]
                self.pending = [(n, {**edge, "polarity": False})]
        no_match = self.pending
        after: Pending = []
        default = next((c for c in clauses if c.type == "default_case"), None)
        if default is not None:
            entries[default] = [(source, {**attrs, "branch": "default"}) for source, attrs in no_match]
        else:
            after = no_match
        target = _Target(label, is_loop=False)
        self.targets.append(target)
        falling: Pending = []
        for clause in clauses:
            # A second `default` (invalid Go, but it parses) is never entered.
            self.pending = entries.get(clause, []) + falling
            self.fallthrough = []
            self.statements(syntax.statements(clause))
            falling = self.fallthrough
            self.fallthrough = []
            after = after + self.pending
        self.targets.pop()
        self.pending = after + target.breaks

    def any_of(self, values: list[Node]) -> tuple[Pending, Pending]:
        """`case a, b:` of a tagless switch: true if any value is true."""
        matched: Pending = []
        for value in values:
            when_true, when_false = self.cond(value)
            matched += when_true
            self.pending = when_false
        return matched, self.pending

    def select_statement(self, node: Node, label: str | None) -> None:
        head = self.add(NodeKind.SELECT, node)
        target = _Target(label, is_loop=False)
        self.targets.append(target)
        after: Pending = []
        for clause in syntax.children(node):
            if clause.type == "communication_case":
                self.pending = [(head, {"branch": "comm"})]
                self.add(NodeKind.COMM, clause.child_by_field_name("communication") or clause)
            elif clause.type == "default_case":
                self.pending = [(head, {"branch": "default"})]
            else:
                continue
            self.statements(syntax.statements(clause))
            after = after + self.pending
        self.targets.pop()
        self.pending = after + target.breaks

    def labeled_statement(self, node: Node) -> None:
        name = syntax.text(node.child_by_field_name("label"))
        self.labels[name] = self.add(NodeKind.LABEL, node, label=name)
        for inner in syntax.children(node):
            if inner.type != "label_name":
                self.statement(inner, label=name)


def _label_of(node: Node) -> str | None:
    for child in syntax.children(node):
        if child.type == "label_name":
            return syntax.text(child)
    return None


def build_cfg(unit: Unit, oracle: ExitOracle) -> CFG:
    return _Builder(unit, oracle).build()


class PackageCFGs:
    """The graphs of a package's functions, built on demand and kept in a
    bounded cache: a rule asks only for the functions it has something to
    say about, and a huge generated package never holds every graph at once.

    Whether a function of the package can return is decided on demand too,
    when a caller's graph needs it: every variant of the function (one per
    platform file, build constraints being ignored) must be unable to return.
    A function of a recursive cycle is taken to return."""

    def __init__(
        self, package: Package, node_budget: int = 120_000, imported_exits: Mapping[tuple[str, str], frozenset[ExitKind]] | None = None,
    ):
        self.package = package
        self.imported_exits = imported_exits or {}
        self.failures: dict[Unit, str] = {}
        self.no_return: dict[Symbol, frozenset[ExitKind] | None] = {}
        self.graphs = _LazyGraphs(self, node_budget)
        self._variants: dict[Symbol, list[Unit]] = {}
        for unit in package.units:
            if unit.kind is UnitKind.FUNCTION and unit.symbol is not None:
                self._variants.setdefault(unit.symbol, []).append(unit)

    def analysable(self, unit: Unit) -> bool:
        return unit.problem is None and unit.body is not None and unit not in self.failures

    def give_up(self, unit: Unit, problem: str) -> None:
        """An analysis cannot follow this function (too many paths): as for a
        function whose graph cannot be built, no graph of it is built from
        now on, and it is reported as too complex (the first problem found
        is the one said)."""
        self.failures.setdefault(unit, problem)

    def build(self, unit: Unit) -> CFG | None:
        if not self.analysable(unit):
            return None
        try:
            graph = build_cfg(unit, ExitOracle(self.package.resolution, self.exits_of_function, self.imported_exits))
        except NestingTooDeep:
            self.failures[unit] = f"nests deeper than {MAX_NESTING} levels"
            return None
        except RecursionError:
            self.failures[unit] = "nests too deeply for the analysis"
            return None
        if unit.parent is not None:
            outer = self.graphs.get(unit.parent)
            if outer is not None and not outer.created or (outer is not None and _in_dead_code(unit, outer)):
                graph.created = False
        return graph

    def exits_of_function(self, symbol: Symbol) -> frozenset[ExitKind] | None:
        """None if a call of this package function may return; otherwise how
        it ends the goroutine (empty: it blocks for ever). Decided callees
        first (a function's graph needs its callees' verdicts), so that a
        chain of calls is never a chain of nested graph builds; functions of
        a recursive cycle may return."""
        if symbol not in self.no_return:
            fixpoint.solve([symbol], self._called_functions, self._verdict, self.no_return, lambda _: None, rounds=0)
        return self.no_return[symbol]

    def _called_functions(self, symbol: Symbol) -> list[Symbol]:
        """The package functions called by name in the bodies of symbol's
        definitions (literals' bodies are graphs of their own)."""
        resolution = self.package.resolution
        found = []
        for unit in self._variants.get(symbol, []):
            if not self.analysable(unit):
                continue
            for call in syntax.calls_in(unit.body):
                function = syntax.unparen(call.child_by_field_name("function"))
                called = resolution.symbol(function) if function is not None and function.type == "identifier" else None
                if called is not None and called.kind is SymbolKind.FUNC and called in self._variants:
                    found.append(called)
        return found

    def _verdict(self, symbol: Symbol) -> frozenset[ExitKind] | None:
        variants = [self.graphs.get(unit) for unit in self._variants.get(symbol, [])]
        if variants and all(g is not None and not g.exit_reachable(ExitKind.RETURN) for g in variants):
            return frozenset(
                k for k in ExitKind if k is not ExitKind.RETURN and any(g.exit_reachable(k) for g in variants)
            )
        return None


class _LazyGraphs(Mapping):
    """unit -> CFG, built when first asked for; over a bound on graph nodes,
    graphs are evicted at random (with a fixed seed).

    Rules and analyses visit every function in turn, again and again: with
    a package larger than the bound, evicting the least recently used graph
    evicts each one just before it is asked for again, so every rule rebuilt
    every graph. Random eviction keeps a share of them as large as the bound
    allows, whatever the order of the visits."""

    def __init__(self, owner: PackageCFGs, node_budget: int):
        self._owner = owner
        self._budget = node_budget
        self._held = 0
        self._cache: dict[Unit, CFG] = {}
        self._order: list[Unit] = []  # the cached units, for picking one at random
        self._position: dict[Unit, int] = {}
        self._random = random.Random(0)

    def __getitem__(self, unit: Unit) -> CFG:
        graph = self._cache.get(unit)
        if graph is not None:
            return graph
        graph = self._owner.build(unit)
        if graph is None:
            raise KeyError(unit)
        while self._held + graph.graph.number_of_nodes() > self._budget and self._order:
            self._evict(self._random.randrange(len(self._order)))
        self._cache[unit] = graph
        self._position[unit] = len(self._order)
        self._order.append(unit)
        self._held += graph.graph.number_of_nodes()
        return graph

    def _evict(self, index: int) -> None:
        victim = self._order[index]
        last = self._order.pop()
        if last is not victim:
            self._order[index] = last
            self._position[last] = index
        del self._position[victim]
        self._held -= self._cache.pop(victim).graph.number_of_nodes()

    def __contains__(self, unit: object) -> bool:
        try:
            self[unit]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[Unit]:
        return (unit for unit in self._owner.package.units if unit in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def build_package_cfgs(
    package: Package, imported_exits: Mapping[tuple[str, str], frozenset[ExitKind]] | None = None,
) -> PackageCFGs:
    return PackageCFGs(package, imported_exits=imported_exits)


def _in_dead_code(unit: Unit, outer: CFG) -> bool:
    """Whether the statement holding a literal in its enclosing function is
    unreachable (then the literal is never created)."""
    holder = unit.node.parent
    while holder is not None and holder not in outer.node_of:
        holder = holder.parent
    return holder is not None and not outer.reachable(outer.node_of[holder])
