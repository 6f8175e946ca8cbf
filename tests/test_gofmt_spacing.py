"""gofmt.py prints a moved expression as gofmt would at its new depth: a
table checked once against gofmt (go 1.19), and, where gofmt is installed,
random expressions in several contexts compared with its output."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
import tree_sitter
import tree_sitter_go

from cudalint import syntax
from cudalint.fixes import gofmt

_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_go.language()))

# (statement as written, statement as gofmt prints it)
TABLE = [
    ("_ = n / 2", "_ = n / 2"),
    ("f(x, n / 2)", "f(x, n/2)"),
    ("f(x, int(p.length) / 2)", "f(x, int(p.length)/2)"),
    ("f(x, rows*cols + pad)", "f(x, rows*cols+pad)"),
    ("f(x, (n + 1) / 2)", "f(x, (n+1)/2)"),
    ("f(x, (n + m))", "f(x, (n + m))"),
    ("f(x, g(y, (n + m)))", "f(x, g(y, (n+m)))"),
    ("_ = a || b - c", "_ = a || b-c"),
    ("_ = a - b && c * d", "_ = a-b && c*d"),
    ("_ = f(a + b) * 2", "_ = f(a+b) * 2"),
    ("f(x, a - -b)", "f(x, a - -b)"),
    ("f(x, a / *p)", "f(x, a / *p)"),
    ("f(x, s[i + 1 : n - 1])", "f(x, s[i+1:n-1])"),
    ("_ = s[i + 1 : n - 1]", "_ = s[i+1 : n-1]"),
    ("_ = m[k + 1]", "_ = m[k+1]"),
    ("_, _ = a + b, c * d", "_, _ = a+b, c*d"),
    ("f(x, -a &^ b)", "f(x, -a&^b)"),
    ("f(x, uintptr(base) + offset)", "f(x, uintptr(base)+offset)"),
    ("return (((x.y)))", "return (x.y)"),
]


def _statements(body: str) -> list:
    tree = _PARSER.parse(f"package p\n\nfunc z() {{\n{body}\n}}\n".encode())
    block = next(node for node in syntax.walk(tree.root_node) if node.type == "statement_list")
    return syntax.children(block)


def _reprinted(statement) -> str:
    """The statement with each outermost expression re-printed by gofmt.py."""
    text = statement.text
    out, at = b"", statement.start_byte
    for node in _outermost(statement):
        out += text[at - statement.start_byte:node.start_byte - statement.start_byte]
        out += gofmt.expression(node, gofmt.depth_of(node)).encode()
        at = node.end_byte
    return (out + text[at - statement.start_byte:]).decode()


_EXPRESSIONS = ("binary_expression", "parenthesized_expression", "call_expression", "index_expression", "slice_expression")


def _outermost(statement) -> list:
    found, stack = [], [statement]
    while stack:
        node = stack.pop()
        if node is not statement and node.type in _EXPRESSIONS:
            found.append(node)
            continue
        stack.extend(reversed(node.named_children))
    return sorted(found, key=lambda node: node.start_byte)


@pytest.mark.parametrize(("written", "printed"), TABLE, ids=[row[0] for row in TABLE])
def test_binary_expressions_are_spaced_for_their_depth(written: str, printed: str) -> None:
    (statement,) = _statements("\t" + written)
    assert _reprinted(statement) == printed


def _random_expression(rng: random.Random, depth: int) -> str:
    atoms = ["a", "n", "2", "int(p.length)", "len(s)", "x.y", "f(a, b)", "g(a)", "s[i]", "-a", "*p", "^m", "v.(int)", "s[1:n]"]
    roll = rng.random()
    if depth == 0 or roll < 0.3:
        return rng.choice(atoms)
    if roll < 0.45:
        return f"({_random_expression(rng, depth - 1)})"
    if roll < 0.55:
        return f"{rng.choice(['int', 'uint64', 'h'])}({_random_expression(rng, depth - 1)})"
    if roll < 0.62:
        return f"k({_random_expression(rng, depth - 1)}, {_random_expression(rng, depth - 1)})"
    if roll < 0.66:
        return f"s[{_random_expression(rng, depth - 1)}]"
    if roll < 0.70:
        return f"s[{_random_expression(rng, depth - 1)}:{_random_expression(rng, depth - 1)}]"
    operators = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "&^", "==", "<", "&&", "||"]
    return f"{_random_expression(rng, depth - 1)} {rng.choice(operators)} {_random_expression(rng, depth - 1)}"


def test_random_expressions_match_gofmt(tmp_path: Path) -> None:
    gofmt_binary = shutil.which("gofmt")
    if gofmt_binary is None:
        pytest.skip("gofmt is not installed (Debian: golang-go): the spacing is checked against the table only")
    rng = random.Random(20)
    contexts = ["_ = {}", "f(x, {})", "f({})", "_ = q(x, h({}))", "return {}", "_, _ = y, {}", "_ = w[{}]", "_ = T{{L: {}}}"]
    lines = ["\t" + rng.choice(contexts).format(_random_expression(rng, 3)) for _ in range(600)]
    source = tmp_path / "p.go"
    source.write_text("package p\n\nfunc z() {\n" + "\n".join(lines) + "\n}\n")
    done = subprocess.run([gofmt_binary, str(source)], capture_output=True, text=True, check=True)
    wanted = [line.strip() for line in done.stdout.splitlines()[3:3 + len(lines)]]
    got = [_reprinted(statement) for statement in _statements("\n".join(lines))]
    assert [pair for pair in zip(got, wanted) if pair[0] != pair[1]] == []
