"""Paths the graph has but no run takes: a loop that ranges over a
collection a loop before it ranged over, and that leaves without one
iteration.

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
    ranged: set[str] = set()
    entered: set[int] = set()
    for position, n in enumerate(path):
        if graph.kind(n) is not NodeKind.RANGE:
            continue
        clause = graph.ast(n)
        collection = _collection(clause)
        if collection is None:
            continue
        following = path[position + 1] if position + 1 < len(path) else None
        edge = graph.edge(n, following) if following is not None and graph.graph.has_edge(n, following) else None
        holds_acquisition = clause.parent is not None and _contains(clause.parent, acquired)
        if edge is not None and edge.branch == "range" and edge.polarity is True or holds_acquisition:
            entered.add(n)
            ranged.add(collection)
        elif edge is not None and edge.branch == "range" and edge.polarity is False and n not in entered:
            if collection in ranged and _unchanged(graph, collection):
                return True
    return False


def _collection(clause: Node | None) -> str | None:
    """The text of a ranged collection named by an identifier or a field
    chain (`classes`, `p.items`), else None."""
    right = syntax.unparen(clause.child_by_field_name("right")) if clause is not None else None
    node = right
    while node is not None and node.type == "selector_expression":
        node = syntax.unparen(node.child_by_field_name("operand"))
    return syntax.text(right) if node is not None and node.type == "identifier" else None


def _unchanged(graph: CFG, collection: str) -> bool:
    """No statement of the function writes the collection's root variable
    (its declaration as a parameter aside)."""
    root = collection.split(".", 1)[0]
    body = graph.unit.body
    for node in syntax.walk(body) if body is not None else ():
        if node.type not in _WRITES:
            continue
        left = node.child_by_field_name("left")
        targets = syntax.expressions(left) if left is not None else syntax.children(node)[:1]
        if any(syntax.text(target).split(".", 1)[0].split("[", 1)[0] == root for target in targets):
            return False
    return True


def _contains(outer: Node, inner: Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte
