"""Per-function facts computed callees first, as bounded fixpoints.

A fact of one function often depends on the same fact of the functions it
calls (is this a lock wrapper? does it release its parameter?). Asked
recursively, such a question recurses in Python along the call graph of the
code analysed: a chain of 5,000 calls, or a ring of 5,000 mutually recursive
functions, is then 5,000 nested questions deep and ends in RecursionError,
or in quadratic re-evaluation. Instead, the functions a question reaches
are ordered into strongly connected components, callees first (networkx's
component and ordering algorithms are iterative), and each function's fact
is computed once its callees' are known. Inside a recursive component the
facts start from an assumption (what the old recursion guard answered) and
are recomputed in rounds until nothing changes; a component that has not
settled within the bound falls back to the assumption for all its members,
the conservative answer. The computation of one function then reads its
callees' facts from the memo and never recurses.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, MutableMapping
from typing import TypeVar

from cudalint.lazy import networkx as nx

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Rounds a recursive component gets to settle: a ring settles in two when its
# members are visited callees first, so more rounds only mean oscillation.
ROUNDS = 4


def reachable(roots: Iterable[K], callees: Callable[[K], Iterable[K]], known: MutableMapping[K, object]) -> nx.DiGraph:
    """The call graph below the roots, without what is already known."""
    graph: nx.DiGraph = nx.DiGraph()
    pending = [root for root in roots if root not in known]
    graph.add_nodes_from(pending)
    while pending:
        caller = pending.pop()
        for callee in callees(caller):
            if callee in known:
                continue
            if callee not in graph:
                graph.add_node(callee)
                pending.append(callee)
            graph.add_edge(caller, callee)
    return graph


def components_callees_first(graph: nx.DiGraph) -> list[list]:
    """Strongly connected components, each after every component it calls;
    the members of a component in depth-first postorder (callees first)."""
    condensed = nx.condensation(graph)
    ordered = []
    for component in reversed(list(nx.topological_sort(condensed))):
        members = condensed.nodes[component]["members"]
        if len(members) == 1:
            ordered.append(list(members))
        else:
            ordered.append(list(nx.dfs_postorder_nodes(graph.subgraph(members))))
    return ordered


def solve(
    roots: Iterable[K],
    callees: Callable[[K], Iterable[K]],
    compute: Callable[[K], V],
    memo: MutableMapping[K, V],
    assumed: Callable[[K], V],
    rounds: int = ROUNDS,
) -> None:
    """Fill memo for the roots and everything they reach. compute(k) may
    read memo for k's callees (they are there); it must not recurse. While
    k is computed, memo holds the assumption for it."""
    roots = [root for root in roots if root not in memo]
    if not roots:
        return  # (asked again of what is known: most questions are)
    graph = reachable(roots, callees, memo)
    if graph.number_of_nodes() == 1 and graph.number_of_edges() == 0:
        (only,) = graph.nodes
        memo[only] = assumed(only)
        memo[only] = compute(only)
        return
    for members in components_callees_first(graph):
        if len(members) == 1 and not graph.has_edge(members[0], members[0]):
            # Seeded all the same: a question that reaches it back through an
            # edge callees() does not list (a literal asking for the function
            # around it) gets the assumption, not a second computation.
            memo[members[0]] = assumed(members[0])
            memo[members[0]] = compute(members[0])
            continue
        for member in members:
            memo[member] = assumed(member)
        for _ in range(rounds):
            changed = False
            for member in members:
                value = compute(member)
                if value != memo[member]:
                    memo[member] = value
                    changed = True
            if not changed:
                break
        else:
            for member in members:
                memo[member] = assumed(member)
