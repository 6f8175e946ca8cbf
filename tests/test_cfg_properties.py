"""Property tests: random Go function bodies, built from every statement kind
at random depth, must give graphs that keep the CFG's invariants, and the
builder must never raise."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudalint import syntax
from cudalint.cfg import ExitKind, NodeKind
from gosrc import graphs_of
import pytest

pytestmark = pytest.mark.slow

SIMPLE = [
    "x++", "live()", "x = f(x)", "ch <- x", "defer live()", "go live()", "var y int; _ = y",
    "panic(\"boom\")", "os.Exit(1)", "return", "runtime.Goexit()",
]


def _block(body: list[str], depth: int) -> str:
    pad = "\t" * depth
    return "{\n" + "".join(f"{pad}\t{line}\n" for statement in body for line in statement.split("\n")) + pad + "}"


@st.composite
def statements(draw, depth: int = 0, in_loop: bool = False) -> str:
    """A valid statement: break and continue only appear inside loops."""
    if depth >= 4:
        return draw(st.sampled_from(SIMPLE))
    inner = st.lists(statements(depth=depth + 1, in_loop=in_loop), min_size=0, max_size=3)
    loop_body = st.lists(statements(depth=depth + 1, in_loop=True), min_size=0, max_size=3)
    kind = draw(st.sampled_from([
        "simple", "simple", "if", "ifelse", "for3", "forcond", "forever", "range", "switch", "typeswitch",
        "select", "labeled", "block", "jump",
    ]))
    if kind == "simple":
        return draw(st.sampled_from(SIMPLE))
    if kind == "if":
        return f"if c(x) {_block(draw(inner), 0)}"
    if kind == "ifelse":
        return f"if y := f(x); y > 0 && c(y) {_block(draw(inner), 0)} else if !c(x) {_block(draw(inner), 0)} else {_block(draw(inner), 0)}"
    if kind == "for3":
        return f"for i := 0; i < x; i++ {_block(draw(loop_body), 0)}"
    if kind == "forcond":
        return f"for c(x) {_block(draw(loop_body), 0)}"
    if kind == "forever":
        return f"for {_block(draw(loop_body) + [draw(st.sampled_from(['break', 'return', 'live()']))], 0)}"
    if kind == "range":
        return f"for _, v := range xs {_block(draw(loop_body) + ['_ = v'], 0)}"
    if kind == "switch":
        heads = [f"case {index}:" for index in range(draw(st.integers(0, 3)))]
        if draw(st.booleans()):
            heads.insert(draw(st.integers(0, len(heads))), "default:")
        cases = []
        for position, head in enumerate(heads):
            body = draw(inner)
            if position < len(heads) - 1 and draw(st.booleans()):
                body = body + ["fallthrough"]  # never in the final clause, as Go requires
            cases.append(head + "\n" + "\n".join(body))
        return "switch f(x) {\n" + "\n".join(cases) + "\n}"
    if kind == "typeswitch":
        return "switch t := a.(type) {\ncase int:\n" + "\n".join(draw(inner) + ["_ = t"]) + "\ndefault:\n" + "\n".join(draw(inner)) + "\n}"
    if kind == "select":
        clauses = [f"case v := <-ch:\n_ = v\n" + "\n".join(draw(inner)) for _ in range(draw(st.integers(0, 2)))]
        if draw(st.booleans()):
            clauses.append("default:\n" + "\n".join(draw(inner)))
        return "select {\n" + "\n".join(clauses) + "\n}"
    if kind == "labeled":
        return f"L{depth}:\nfor _, v := range xs {_block(draw(loop_body) + ['_ = v', f'continue L{depth}'], 0)}"
    if kind == "block":
        return _block(draw(inner), 0)
    return draw(st.sampled_from(["break", "continue", "goto end", "return"] if in_loop else ["goto end", "return"]))


@st.composite
def functions(draw) -> str:
    body = draw(st.lists(statements(), min_size=0, max_size=6))
    lines = "\n".join(body)
    return f"""package p

import (
\t"os"
\t"runtime"
)

func live()          {{}}
func c(int) bool     {{ return true }}
func f(x int) int    {{ return x }}

func g(x int, xs []int, ch chan int, a any) {{
{lines}
end:
\tlive()
}}
"""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(functions())
def test_random_functions_keep_the_cfg_invariants(source: str) -> None:
    graph = graphs_of(source)["g"]
    nodes = set(graph.nodes())
    assert not any(graph.entry in set(graph.successors(n)) for n in nodes)
    for kind, exit_node in graph.exits.items():
        assert graph.exit_kind(exit_node) is kind
        assert not list(graph.successors(exit_node))
    for n in graph.live:
        kind = graph.kind(n)
        if kind is NodeKind.EXIT:
            continue
        if kind is NodeKind.RETURN:
            assert set(graph.successors(n)) == {graph.exits[ExitKind.RETURN]}
        if not list(graph.successors(n)):
            # Only `select {}` blocks for ever without a successor.
            assert kind is NodeKind.SELECT and not syntax.children(graph.ast(n)), (kind, graph.line(n))
        for edge in graph.out_edges(n):
            assert edge.source == n and edge.target in nodes
            assert (edge.condition is None) == (edge.branch != "cond")
    for n in graph.statement_nodes():
        if n in graph.live and n != graph.entry:
            assert graph.has_path(graph.entry, n)
    # every statement of the body has a node (blocks and empty statements excepted)
    body = graph.unit.body
    for node in syntax.walk(body, into_functions=False):
        if node.type in ("expression_statement", "return_statement", "defer_statement", "go_statement", "inc_statement"):
            assert node in graph.node_of, syntax.text(node)
