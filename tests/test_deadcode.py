"""The dead-code oracle: in tests/fixtures/cfg/deadcode, every statement that
calls live() must be reachable from its function's entry and every statement
that calls dead() unreachable (go/cfg semantics plus no-return calls)."""

from __future__ import annotations

import pytest

from cudalint import syntax
from cudalint.cfg import build_package_cfgs
from gosrc import calls_to, enclosing_function, package_from_file

FIXTURE = "cfg/deadcode/deadcode.go"


@pytest.fixture(scope="module")
def oracle(request):
    from conftest import FIXTURES

    package = package_from_file(FIXTURES / FIXTURE)
    built = build_package_cfgs(package)
    assert not built.failures
    by_node = {unit.node: graph for unit, graph in built.graphs.items()}
    markers = []
    for parsed in package.files:
        for expected, name in ((True, "live"), (False, "dead")):
            for statement in calls_to(parsed.root, name):
                graph = by_node[enclosing_function(statement)]
                markers.append((syntax.line(statement), graph.unit.name, expected, graph, statement))
    return package, markers


def test_fixture_is_substantial(oracle):
    package, markers = oracle
    functions = {unit for _, unit, _, _, _ in markers}
    assert len(functions) >= 12
    assert sum(1 for m in markers if m[2]) >= 100
    assert sum(1 for m in markers if not m[2]) >= 50


def test_every_marker_has_the_expected_reachability(oracle):
    _, markers = oracle
    wrong = []
    for line, unit, expected, graph, statement in markers:
        node = graph.node_of.get(statement)
        if node is None:
            wrong.append(f"line {line} in {unit}: statement not in the graph")
        elif graph.reachable(node) != expected:
            wrong.append(f"line {line} in {unit}: expected {'reachable' if expected else 'unreachable'}")
    assert not wrong, "\n".join(wrong)


def test_no_return_functions_are_found_across_the_package(oracle):
    package, _ = oracle
    built = build_package_cfgs(package)
    for unit in package.units:  # verdicts are decided as graphs are built
        built.graphs.get(unit)
    names = {symbol.name for symbol, verdict in built.no_return.items() if verdict is not None}
    assert {"fatalf", "spin", "block", "boom", "die", "fatalChain"} <= names
    assert not names & {"maybeExit", "spinUntil", "live", "dead"}
