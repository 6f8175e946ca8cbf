"""Paths the graph has but no run takes: a loop that ranges over a
collection a loop before it ranged over (or counts to the same bound from
the same start), and that leaves without one iteration.

```go
for _, c := range classes {  // allocates one block per class into got
    ...
}
for i, c := range classes {  // hands each block on: got[i]
    ...
}
return nil
```

The graph lets the second loop run no iteration after the first ran one,
and the blocks reach the return still held; no run does that while
`classes` is unchanged between the loops. A leak found only on such paths
is no leak.
"""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.cfg import CFG, NodeKind

# The statements that write a variable.
_WRITES = ("assignment_statement", "short_var_declaration", "inc_statement", "dec_statement", "range_clause")


def skips_a_ranged_collection(graph: CFG, acquired: Node, path: tuple[int, ...]) -> bool:
    """Whether the path leaves a range loop without an iteration where an
    earlier loop over the same unchanged collection iterated (the loop
    holding the acquisition iterated: it ran)."""
    ranged: dict[tuple[str, ...], Node] = {}  # key -> the first loop that iterated
    entered: set[int] = set()
    for position, n in enumerate(path):
        kind = graph.kind(n)
        if kind is NodeKind.RANGE:
            clause = graph.ast(n)
            collection = _collection(clause)
            key = ("range", collection) if collection is not None else None
            branch = "range"
        elif kind is NodeKind.COND:
            clause = graph.ast(n)
            collection, key = _counted(clause)
            branch = "cond"
        else:
            continue
        if key is None or collection is None or clause is None:
            continue
        following = path[position + 1] if position + 1 < len(path) else None
        edge = graph.edge(n, following) if following is not None and graph.graph.has_edge(n, following) else None
        loop = clause.parent if kind is NodeKind.RANGE else clause.parent.parent  # the for statement
        holds_acquisition = loop is not None and _contains(loop, acquired)
        if edge is not None and edge.branch == branch and edge.polarity is True or holds_acquisition:
            entered.add(n)
            ranged.setdefault(key, clause)
        elif edge is not None and edge.branch == branch and edge.polarity is False and n not in entered:
            if key in ranged and _unchanged(graph, collection, ranged[key]):
                return True
    return False


def _counted(condition: Node | None) -> tuple[str | None, tuple[str, ...] | None]:
    """A counted loop's bound and key: `for i := 0; i < batch; i++` is
    ("batch", ("count", "0", "<", "batch")); a second loop of the same key
    over an unchanged bound iterates where the first did."""
    clause = condition.parent if condition is not None else None
    if clause is None or clause.type != "for_clause" or condition.type != "binary_expression":
        return None, None
    initializer = clause.child_by_field_name("initializer")
    sides = syntax.assignment_sides(initializer) if initializer is not None else []
    if len(sides) != 1 or len(sides[0][0]) != 1 or len(sides[0][1]) != 1:
        return None, None
    counter, start = syntax.text(sides[0][0][0]), syntax.unparen(sides[0][1][0])
    operator = syntax.text(condition.child_by_field_name("operator"))
    left, bound = syntax.unparen(condition.child_by_field_name("left")), syntax.unparen(condition.child_by_field_name("right"))
    if start is None or start.type != "int_literal" or syntax.text(left) != counter or operator not in ("<", "<=", "!="):
        return None, None
    measured = bound
    if bound is not None and bound.type == "call_expression" and syntax.text(bound.child_by_field_name("function")) == "len":
        arguments = syntax.children(bound.child_by_field_name("arguments"))
        measured = syntax.unparen(arguments[0]) if len(arguments) == 1 else None
    named = _named(measured)
    return (named, ("count", syntax.text(start), operator, syntax.text(bound))) if named is not None else (None, None)


def _collection(clause: Node | None) -> str | None:
    """The text of a ranged collection named by an identifier or a field
    chain (`classes`, `p.items`), else None."""
    return _named(syntax.unparen(clause.child_by_field_name("right")) if clause is not None else None)


def _named(value: Node | None) -> str | None:
    """The text of an identifier or a field chain rooted at one (`p.items`), else None."""
    node = value
    while node is not None and node.type == "selector_expression":
        node = syntax.unparen(node.child_by_field_name("operand"))
    return syntax.text(value) if node is not None and node.type == "identifier" else None


def _unchanged(graph: CFG, collection: str, first: Node) -> bool:
    """No statement of the function writes the collection's root variable
    once the first loop began (its declaration as a parameter aside; `batch
    = 1024` before both loops, in no loop around them, sets what both see)."""
    root = collection.split(".", 1)[0]
    body = graph.unit.body
    for node in syntax.walk(body) if body is not None else ():
        if node.type not in _WRITES or _settled_before(node, first):
            continue
        left = node.child_by_field_name("left")
        targets = syntax.expressions(left) if left is not None else syntax.children(node)[:1]
        if any(syntax.text(target).split(".", 1)[0].split("[", 1)[0] == root for target in targets):
            return False
    return True


def _settled_before(write: Node, first: Node) -> bool:
    """A write that ends before the first loop, in no loop that holds that loop."""
    if write.end_byte > first.start_byte:
        return False
    outer = write.parent
    while outer is not None:
        if outer.type == "for_statement" and _contains(outer, first):
            return False
        if outer.type in syntax.FUNCTION_NODES:
            break
        outer = outer.parent
    return True


def _contains(outer: Node, inner: Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte
