"""How gofmt prints an expression that a fix moves into another context.

gofmt spaces a binary expression by its depth (go/printer, nodes.go): at
the top of a statement `n / 2` keeps its blanks, but as an argument of a
call with more than one argument it is printed `n/2`, and a binary
expression that mixes precedences keeps blanks only around the operators
that bind less (`a*b + c`). Text copied from a header literal into
`unsafe.Slice(p, n)` must be re-spaced for its new depth, or `gofmt -l`
fails after `--fix`. This module follows go/printer's rules (binaryExpr,
cutoff, walkBinary, diffPrec, reduceDepth and the depth each composite
expression passes down); expressions whose spacing never depends on the
context (literals, composite literals, func literals, types) are copied as
written.
"""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax

_PRECEDENCE = {
    "||": 1, "&&": 2,
    "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
    "+": 4, "-": 4, "|": 4, "^": 4,
    "*": 5, "/": 5, "%": 5, "<<": 5, ">>": 5, "&": 5, "&^": 5,
}


def expression(node: Node, depth: int) -> str | None:
    """The expression as gofmt prints it at `depth`; None where it spans
    lines or holds a comment (gofmt's line breaking is not followed)."""
    if b"\n" in node.text or any(n.type == "comment" for n in syntax.walk(node)):
        return None
    return _print(node, depth)


def depth_of(node: Node) -> int:
    """The depth gofmt prints the node at, counted from its statement (1)."""
    chain = []
    while node.parent is not None and node.parent.type not in _CONTEXTS:
        chain.append(node)
        node = node.parent
    depth = _start(node)
    for child in reversed(chain):
        depth = _passed_down(child.parent, child, depth)
    return depth


# Where an expression starts afresh at depth 1 (or 2, for a tuple assignment).
_CONTEXTS = frozenset({
    "expression_list", "expression_statement", "return_statement", "keyed_element", "literal_element",
    "send_statement", "inc_statement", "dec_statement", "var_spec", "const_spec", "if_statement", "for_clause",
    "expression_switch_statement", "expression_case", "block", "statement_list", "source_file", "go_statement",
    "defer_statement", "range_clause",
})


def _start(node: Node) -> int:
    """1, or 2 for the values of `a, b = x, y` (go/printer's AssignStmt)."""
    values = node.parent
    statement = values.parent if values is not None and values.type == "expression_list" else None
    if statement is not None and statement.type in ("assignment_statement", "short_var_declaration"):
        left, right = statement.child_by_field_name("left"), statement.child_by_field_name("right")
        if right == values and left is not None and len(syntax.children(left)) > 1 and len(syntax.children(right)) > 1:
            return 2
    return 1


def _passed_down(parent: Node, child: Node, depth: int) -> int:
    """The depth `parent`, printed at `depth`, prints `child` at."""
    kind = parent.type
    if kind == "argument_list":
        return depth  # the call counted its arguments already
    if kind == "call_expression":  # the function too, as go/printer's CallExpr
        return depth + 1 if len(syntax.children(parent.child_by_field_name("arguments"))) > 1 else depth
    if kind == "binary_expression":
        if child == parent.child_by_field_name("left"):
            return depth + _diff_precedence(child, _PRECEDENCE[_operator(parent)])
        return depth + 1
    if kind == "parenthesized_expression":
        return depth if child.type == "parenthesized_expression" else _reduce(depth)
    if kind == "unary_expression":
        return 1 if _operator(parent) == "*" else depth
    if kind in ("index_expression", "slice_expression"):
        return 1 if child == parent.child_by_field_name("operand") else depth + 1
    return depth


def _print(node: Node, depth: int) -> str:
    kind = node.type
    if kind == "binary_expression":
        return _binary(node, depth)
    if kind == "parenthesized_expression":
        inner = syntax.children(node)[0]
        if inner.type == "parenthesized_expression":
            return _print(inner, depth)  # gofmt prints one pair of parentheses
        return f"({_print(inner, _reduce(depth))})"
    if kind == "call_expression":
        return _call(node, depth)
    if kind == "type_conversion_expression":
        operand = node.child_by_field_name("operand")
        return f"{syntax.text(node.child_by_field_name('type'))}({_print(operand, depth)})"
    if kind == "unary_expression":
        operator = _operator(node)
        return operator + _after(operator, "", _print(node.child_by_field_name("operand"), 1 if operator == "*" else depth))
    if kind == "selector_expression":
        return f"{_print(node.child_by_field_name('operand'), depth)}.{syntax.text(node.child_by_field_name('field'))}"
    if kind == "type_assertion_expression":
        return f"{_print(node.child_by_field_name('operand'), depth)}.({syntax.text(node.child_by_field_name('type'))})"
    if kind == "index_expression":
        index = node.child_by_field_name("index")
        return f"{_print(node.child_by_field_name('operand'), 1)}[{_print(index, depth + 1)}]"
    if kind == "slice_expression":
        return _slice(node, depth)
    return syntax.text(node)


def _binary(node: Node, depth: int) -> str:
    """go/printer's binaryExpr: blanks around the operator where its
    precedence is below the cutoff of the expression at this depth."""
    operator = _operator(node)
    precedence = _PRECEDENCE[operator]
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    blank = " " if precedence < _cutoff(node, depth) else ""
    return f"{_print(left, depth + _diff_precedence(left, precedence))}{blank}{operator}{_after(operator, blank, _print(right, depth + 1))}"


def _cutoff(node: Node, depth: int) -> int:
    has4, has5, problem = _walk_binary(node)
    if problem > 0:
        return problem + 1
    if has4 and has5:
        return 5 if depth == 1 else 4
    return 6 if depth == 1 else 4


def _walk_binary(node: Node) -> tuple[bool, bool, int]:
    """go/printer's walkBinary: whether the expression mixes precedences 4
    and 5, and the precedence at which operators would run into each other
    without blanks (`x / *p`, `x - -y`)."""
    operator = _operator(node)
    precedence = _PRECEDENCE[operator]
    has4, has5, problem = precedence == 4, precedence == 5, 0
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    for side in (left, right):
        if side.type == "binary_expression":
            h4, h5, p = _walk_binary(side)
            has4, has5, problem = has4 or h4, has5 or h5, max(problem, p)
    if right.type == "unary_expression":
        pair = operator + _operator(right)
        if pair in ("/*", "&&", "&^"):
            problem = 5
        elif pair in ("++", "--"):
            problem = max(problem, 4)
    return has4, has5, problem


def _call(node: Node, depth: int) -> str:
    function = node.child_by_field_name("function")
    arguments = node.child_by_field_name("arguments")
    type_arguments = node.child_by_field_name("type_arguments")
    values = syntax.children(arguments)
    inner = depth + 1 if len(values) > 1 else depth
    printed = [
        _print(syntax.children(value)[0], inner) + "..." if value.type == "variadic_argument" else _print(value, inner)
        for value in values
    ]
    generic = syntax.text(type_arguments) if type_arguments is not None else ""
    return f"{_print(function, inner)}{generic}({', '.join(printed)})"


def _slice(node: Node, depth: int) -> str:
    """go/printer's SliceExpr: blanks around ':' at depth 1 where there are
    two indices or more and one of them is a binary expression."""
    indices = [node.child_by_field_name(name) for name in ("start", "end", "capacity")]
    if indices[2] is None:
        indices.pop()
    given = [index for index in indices if index is not None]
    blanks = depth <= 1 and len(given) > 1 and any(index.type == "binary_expression" for index in given)
    out = _print(node.child_by_field_name("operand"), 1) + "["
    for position, index in enumerate(indices):
        if position > 0:
            out += (" " if blanks and indices[position - 1] is not None else "") + ":"
            out += " " if blanks and index is not None else ""
        if index is not None:
            out += _print(index, depth + 1)
    return out + "]"


# go/printer's mayCombine: an operator, and the characters that would make
# one token of it and what follows (`- -a` is not `--a`).
_COMBINES = {"+": "+", "-": "-", "/": "*", "<": "-<", "&": "&^"}


def _after(operator: str, blank: str, text: str) -> str:
    """What follows the operator: a blank where gofmt puts one, or where
    the two would read as another token."""
    if not blank and text[:1] and text[0] in _COMBINES.get(operator, ""):
        blank = " "
    return blank + text


def _diff_precedence(node: Node, precedence: int) -> int:
    if node.type != "binary_expression" or _PRECEDENCE[_operator(node)] != precedence:
        return 1
    return 0


def _reduce(depth: int) -> int:
    return max(depth - 1, 1)


def _operator(node: Node) -> str:
    operator = node.child_by_field_name("operator")
    return syntax.text(operator) if operator is not None else ""
