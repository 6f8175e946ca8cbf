"""The graph of one function (`CFG`), its nodes, edges and exits, and the
path questions rules and analyses ask of it. The networkx graph is this
package's business: nothing outside cudalint.cfg reads it."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from tree_sitter import Node

from cudalint import syntax
from cudalint.findings import Span
from cudalint.functions import Unit
from cudalint.lazy import networkx as nx


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
    methods only; the networkx graph is cudalint.cfg's business."""

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

    def reachable_avoiding(self, target: int, avoided: set[int]) -> bool:
        """Whether some path from the entry reaches target without passing
        through a node of `avoided` (False: every path to it goes through one)."""
        if self.entry in avoided:
            return False
        kept = self.graph.subgraph(n for n in self.graph.nodes if n not in avoided or n == target)
        return nx.has_path(kept, self.entry, target)

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
        if kind is NodeKind.RANGE:
            # Each iteration assigns the loop's variables; the range expression
            # was evaluated once, by the node before the head.
            variables = ast.child_by_field_name("left")
            return [variables] if variables is not None else []
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

