"""Small, pure helpers over tree-sitter-go nodes.

Every later stage needs the same handful of questions answered about a node
(its text, its statements, its real children without comments); they live here
so that no stage grows its own slightly different copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter_go
from tree_sitter import Language, Node, Query, QueryCursor

# The grammar: the parser (cudalint.parse) and the queries here both use it.
GO = Language(tree_sitter_go.language())

# Nodes that tree-sitter may attach anywhere as "extras".
_EXTRAS = frozenset({"comment"})

# A declaration larger than this (generated tables, machine-written code) is
# skipped with a notification: no hand-written function comes near it.
MAX_DECLARATION_BYTES = 1024 * 1024
FUNCTION_NODES = frozenset({"function_declaration", "method_declaration", "func_literal"})


def text(node: Node | None) -> str:
    if node is None:
        return ""
    return node.text.decode("utf-8", "replace")


def is_address_of(node: Node | None) -> bool:
    """`&x`: the operand's address, which lets a callee write the operand."""
    return node is not None and node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "&"


def children(node: Node) -> list[Node]:
    """Named children without comments."""
    return [c for c in node.named_children if c.type not in _EXTRAS]


def unparen(node: Node | None) -> Node | None:
    while node is not None and node.type == "parenthesized_expression":
        inner = children(node)
        if not inner:
            return node
        node = inner[0]
    return node


def statements(container: Node | None) -> list[Node]:
    """Statements of a block or case clause (both wrap them in a statement_list)."""
    if container is None:
        return []
    for child in container.named_children:
        if child.type == "statement_list":
            return children(child)
    return []


def expressions(expression_list: Node | None) -> list[Node]:
    if expression_list is None:
        return []
    if expression_list.type != "expression_list":
        return [expression_list]
    return children(expression_list)


def equality(node: Node | None) -> tuple[Node, Node, bool] | None:
    """`a == b` -> (a, b, True), `a != b` -> (a, b, False), parentheses
    stepped through; None for anything else."""
    node = unparen(node)
    if node is None or node.type != "binary_expression":
        return None
    operator = text(node.child_by_field_name("operator"))
    left, right = unparen(node.child_by_field_name("left")), unparen(node.child_by_field_name("right"))
    if operator not in ("==", "!=") or left is None or right is None:
        return None
    return left, right, operator == "=="


def has_token(node: Node, token: str) -> bool:
    """Whether an anonymous child token (':=', 'range', ...) is present."""
    return any(not c.is_named and c.type == token for c in node.children)


def line(node: Node) -> int:
    """1-based line of a node's start."""
    return node.start_point[0] + 1


def walk(node: Node, *, into_functions: bool = True) -> Iterator[Node]:
    """Pre-order walk without recursion (bodies nest deeper than Python's
    stack), by a tree cursor: `Node.children` keeps the list it makes on the
    node, so a walk through it would leave the whole tree's nodes alive as
    long as the file's root (a fifth of the peak memory of a 5,000-function
    package)."""
    cursor = node.walk()
    depth = 0
    while True:
        current = cursor.node
        yield current
        descend = into_functions or depth == 0 or current.type not in FUNCTION_NODES
        if descend and cursor.goto_first_child():
            depth += 1
            continue
        while depth > 0 and not cursor.goto_next_sibling():
            cursor.goto_parent()
            depth -= 1
        if depth == 0:
            return


def call_name(call: Node) -> tuple[str | None, str] | None:
    """`pkg.F(...)` -> ("pkg", "F"); `F(...)` -> (None, "F"); other callees -> None."""
    function = unparen(call.child_by_field_name("function"))
    if function is None:
        return None
    if function.type == "identifier":
        return None, text(function)
    if function.type == "selector_expression":
        operand = unparen(function.child_by_field_name("operand"))
        field = function.child_by_field_name("field")
        if operand is not None and operand.type == "identifier" and field is not None:
            return text(operand), text(field)
    return None


def is_call_of(node: Node | None, callee: str) -> bool:
    """Whether the node calls `callee` as written: `unsafe.Pointer(x)`, `uintptr(p)`."""
    return node is not None and node.type == "call_expression" and text(node.child_by_field_name("function")) == callee


def value_specs(declaration: Node) -> list[Node]:
    """The var_spec / const_spec nodes of a declaration, grouped or not (never
    those of a func literal nested inside an initializer)."""
    specs: list[Node] = []
    for child in children(declaration):
        if child.type in ("var_spec", "const_spec"):
            specs.append(child)
        elif child.type == "var_spec_list":
            specs.extend(c for c in children(child) if c.type == "var_spec")
    return specs


def element_values(literal: Node) -> list[Node]:
    """The values of a composite literal's elements, keyed or not (`T{h}`,
    `T{handle: h}`, `[]func(){f, g}`)."""
    body = literal.child_by_field_name("body")
    values = []
    for element in children(body) if body is not None else []:
        if element.type == "keyed_element":
            element = children(element)[-1] if children(element) else None
        if element is not None and element.type == "literal_element":
            element = children(element)[0] if children(element) else None
        if element is not None:
            values.append(unparen(element))
    return values


def outermost(node: Node, kind: str) -> list[Node]:
    """Descendants of type `kind` that are not inside another such descendant."""
    found: list[Node] = []
    stack = list(reversed(node.children))
    while stack:
        current = stack.pop()
        if current.type == kind:
            found.append(current)
            continue
        stack.extend(reversed(current.children))
    return found


def root_of(node: Node) -> Node:
    """The root of the tree a node is in (its file's)."""
    while node.parent is not None:
        node = node.parent
    return node


def enclosing_function(node: Node) -> Node | None:
    current = node.parent
    while current is not None and current.type not in FUNCTION_NODES:
        current = current.parent
    return current


_QUERIES: dict[str, QueryCursor] = {}


def _all_captures(source: str, root: Node, ranges: list[tuple[int, int]] | None = None) -> dict[str, list[Node]]:
    """Nodes captured by a tree-sitter query (C speed), by capture name, each
    list in source order; with `ranges`, only nodes starting in them."""
    cursor = _QUERIES.get(source)
    if cursor is None:
        cursor = _QUERIES[source] = QueryCursor(Query(GO, source))
    if ranges is None:
        ranges = [(root.start_byte, root.end_byte)]
    found: dict[str, list[Node]] = {}
    try:
        for start, end in ranges:
            cursor.set_byte_range(start, end)
            for name, nodes in cursor.captures(root).items():
                found.setdefault(name, []).extend(n for n in nodes if start <= n.start_byte < end)
    finally:
        cursor.set_byte_range(0, _WHOLE_FILE)
    return {name: sorted(nodes, key=lambda n: n.start_byte) for name, nodes in found.items()}


# What each capture of the file index needs in a declaration's text.
_INDEX_TOKENS = (b"(", b":", b"func")
_WHOLE_FILE = 2**32 - 1


def _indexed_ranges(root: Node, data: bytes) -> list[tuple[int, int]]:
    """The byte ranges of the top-level declarations worth querying, merged:
    a query walks every node of its range, and a 5 MB table literal (no call,
    no key, no func) or a declaration too large to analyse has nothing to give."""
    ranges: list[tuple[int, int]] = []
    extend = False
    for declaration in root.children:
        start, end = declaration.start_byte, declaration.end_byte
        if end - start > MAX_DECLARATION_BYTES or not any(data.find(t, start, end) >= 0 for t in _INDEX_TOKENS):
            extend = False
            continue
        if extend:
            ranges[-1] = (ranges[-1][0], end)
        else:
            ranges.append((start, end))
        extend = True
    return ranges


def header_references(root: Node) -> list[Node]:
    """`x.SliceHeader` / `x.StringHeader`, as a type or an expression."""
    return _all_captures(
        """[(qualified_type name: (type_identifier) @name) @ref
            (selector_expression field: (field_identifier) @name) @ref]
           (#any-of? @name "SliceHeader" "StringHeader")""",
        root,
    ).get("ref", [])


def selectors(root: Node) -> list[Node]:
    """Every `x.f` under root."""
    return _all_captures("(selector_expression) @selector", root).get("selector", [])


def generic_conversion_arguments(root: Node) -> list[Node]:
    """The type arguments of every conversion to a generic type under root
    (`[float32]` of `Vec[float32](v)`, and of `Alloc[float32](n)`, which
    parses the same)."""
    return _all_captures(
        "(type_conversion_expression type: (generic_type type_arguments: (type_arguments) @arguments))", root,
    ).get("arguments", [])


_INDEX_QUERY = """
(func_literal) @literal
(defer_statement) @defer
(call_expression function: (selector_expression operand: (identifier))) @qualified
(call_expression function: (index_expression operand: (selector_expression operand: (identifier)))) @qualified
(call_expression function: [(identifier) @callee (selector_expression field: (field_identifier) @callee)])
(call_expression function: (index_expression operand: [(identifier) @callee (selector_expression field: (field_identifier) @callee)]))
(keyed_element) @keyed
(assignment_statement left: (expression_list (selector_expression))) @store
(assignment_statement left: (expression_list (index_expression operand: (selector_expression)))) @store
"""


@dataclass
class FileIndex:
    """The nodes passes look up by kind, found by one query over the file:
    a query costs a walk of the whole tree however little it matches, so
    the kinds are gathered together, once, and shared by every pass."""

    func_literals: list[Node]
    defer_statements: list[Node]
    qualified_calls: list[Node]  # `x.f(...)`
    callee_names: list[Node]  # the f of `f(...)` and `x.f(...)`
    keyed_elements: list[Node]
    selector_stores: list[Node]  # assignments to `x.f` and `x.f[i]`


def index_file(root: Node, data: bytes) -> FileIndex:
    found = _all_captures(_INDEX_QUERY, root, _indexed_ranges(root, data))
    return FileIndex(
        func_literals=found.get("literal", []),
        defer_statements=found.get("defer", []),
        qualified_calls=found.get("qualified", []),
        callee_names=found.get("callee", []),
        keyed_elements=found.get("keyed", []),
        selector_stores=found.get("store", []),
    )


def calls_by_name(index: FileIndex) -> dict[str, list[Node]]:
    """Calls `f(...)` and `x.f(...)`, by the name f."""
    found: dict[str, list[Node]] = {}
    for name in index.callee_names:
        call = name.parent
        while call is not None and call.type != "call_expression":
            call = call.parent  # `x.f(...)`, and `f[T](...)`, `x.f[T](...)` instantiating a generic function
        if call is not None:
            found.setdefault(text(name), []).append(call)
    return found


def called(call: Node) -> Node | None:
    """The function a call names, without parentheses and without the type
    arguments of a generic function's instantiation (`device.CudaMalloc[uint64]`
    parses as an index expression): `device.CudaMalloc`. Whether an index
    expression is an instantiation or an element of a slice of functions
    (`handlers[i](x)`) is the resolver's to say; see instantiated."""
    return unparen(call.child_by_field_name("function"))


def statement_callee(statement: Node | None) -> Node | None:
    """The function a `defer` or `go` statement calls (`shutdown` of `defer
    shutdown()`, `nvml.Shutdown` of `defer nvml.Shutdown()`, the literal of
    `defer func() {...}()`); None where it holds no call."""
    call = statement.named_children[0] if statement is not None and statement.named_children else None
    return called(call) if call is not None and call.type == "call_expression" else None


def method_operand(call: Node) -> Node | None:
    """The value a method call is made on: `a` of `a.alloc()`, `status(x)` of
    `status(x).error("c")` (also a package's name, `nvml` of `nvml.Init()`,
    which the resolver tells apart); None for a call that names no selector."""
    function = called(call)
    return unparen(function.child_by_field_name("operand")) if function is not None and function.type == "selector_expression" else None


def instantiated(function: Node | None) -> Node | None:
    """The generic function an index expression in call position names
    (`CudaMalloc[int]`, `device.CudaMalloc[uint64]`); None for any other node."""
    if function is None or function.type != "index_expression":
        return None
    operand = unparen(function.child_by_field_name("operand"))
    return operand if operand is not None and operand.type in ("identifier", "selector_expression") else None


def field_stores(index: FileIndex) -> dict[str, list[tuple[Node, Node | None]]]:
    """Values stored into a field, by field name: `T{f: v}` and `x.f = v`,
    each as (the node whose type names the struct, the value); into an
    element of a field by the field's name and `[]`: `x.f[i] = v`."""
    found: dict[str, list[tuple[Node, Node]]] = {}
    for keyed in index.keyed_elements:
        key, value = keyed.child_by_field_name("key"), keyed.child_by_field_name("value")
        literal = keyed.parent.parent if keyed.parent is not None else None
        inner = children(value) if value is not None else []
        if key is not None and inner and literal is not None and literal.type == "composite_literal":
            found.setdefault(text(key), []).append((literal, inner[0]))
    for assignment in index.selector_stores:
        left = expressions(assignment.child_by_field_name("left"))
        right = expressions(assignment.child_by_field_name("right"))
        # `c.vals, err = pinned(n)`: stored, of a value the syntax does not give (None).
        for target, value in zip(left, right) if len(left) == len(right) else ((t, None) for t in left):
            suffix = ""
            if target.type == "index_expression":
                target, suffix = unparen(target.child_by_field_name("operand")), "[]"
            if target is not None and target.type == "selector_expression":
                found.setdefault(text(target.child_by_field_name("field")) + suffix, []).append(
                    (target.child_by_field_name("operand"), value),
                )
    return found


def assignment_of(target: Node, declarations: bool = False) -> Node | None:
    """The `=` assignment statement (`x = v`, `a, x = f()`) whose left side
    the expression `target` is, if any; with `declarations`, also the `:=`
    declaration (`x := v`) whose left side it is."""
    holder = target.parent
    statement = holder.parent if holder is not None and holder.type == "expression_list" else None
    kinds = ("assignment_statement", "short_var_declaration") if declarations else ("assignment_statement",)
    if statement is None or statement.type not in kinds or statement.child_by_field_name("left") != holder:
        return None
    return statement


def assigned_value(target: Node, declarations: bool = False) -> tuple[Node, int | None] | None:
    """What the `=` assignment (with `declarations`, or the `:=`) whose left
    side `target` is gives it: (the value, None) one to one (`x = v`); (the
    call, i) where one call gives every target (`a, x = f()`: x is f's result
    i, counted from the end, so -1 is the last); None for any other shape, or
    no such statement."""
    statement = assignment_of(target, declarations)
    if statement is None:
        return None
    left = expressions(statement.child_by_field_name("left"))
    right = expressions(statement.child_by_field_name("right"))
    position = [node.id for node in left].index(target.id)
    if len(left) == len(right):
        return right[position], None
    if len(right) == 1:
        return right[0], position - len(left)
    return None


def assignment_sides(statement: Node) -> list[tuple[list[Node], list[Node]]]:
    """(targets, values) of `a, b := f()`, `x = g()` and each spec of a `var`
    declaration; nothing for other statements (`+=` included)."""
    kind = statement.type
    if kind == "short_var_declaration" or (
        kind == "assignment_statement" and text(statement.child_by_field_name("operator")) == "="
    ):
        return [(expressions(statement.child_by_field_name("left")), expressions(statement.child_by_field_name("right")))]
    if kind == "var_declaration":
        return [
            (spec.children_by_field_name("name"), expressions(spec.child_by_field_name("value")))
            for spec in value_specs(statement)
        ]
    return []


def returned_first_element(element: Node) -> bool:
    """`return &arr[0]`: the address of the first element is the address of
    the memory (a C block viewed as an array, a slice's backing array)."""
    address = element.parent
    if text(element.child_by_field_name("index")) != "0" or address is None or not is_address_of(address):
        return False
    values = address.parent
    return values is not None and values.type == "expression_list" and values.parent is not None and values.parent.type == "return_statement"


def assigned_whole(target: Node) -> bool:
    """Whether the expression is a target of a plain assignment (`*buf = nb`,
    not `*n += 1`)."""
    statement = assignment_of(target)
    return statement is not None and text(statement.child_by_field_name("operator")) == "="


def assigned_from(call: Node) -> list[Node]:
    """The left-hand side of the assignment or declaration whose whole
    right-hand side is this call (`n, err := w.Write(b)`); empty otherwise."""
    values = call.parent
    holder = values.parent if values is not None and values.type == "expression_list" else None
    if holder is None or holder.type not in ("assignment_statement", "short_var_declaration") or len(children(values)) != 1:
        return []
    return expressions(holder.child_by_field_name("left")) if holder.child_by_field_name("right") == values else []


def returned_list(statement: Node | None) -> Node | None:
    """The expression list a return statement returns (None for a bare
    `return`, or no statement)."""
    if statement is None:
        return None
    return next((c for c in statement.named_children if c.type == "expression_list"), None)


def returned(statement: Node | None) -> list[Node]:
    """The values a return statement returns (none for a bare `return`)."""
    return expressions(returned_list(statement))


def return_statements(body: Node | None) -> Iterator[Node]:
    """The return statements of a body, not those of its func literals."""
    stack = [body] if body is not None else []
    while stack:
        node = stack.pop()
        if node.type == "return_statement":
            yield node
        elif node.type != "func_literal":
            stack.extend(node.children)


def calls_in(root: Node) -> Iterator[Node]:
    """The calls evaluated by a piece of syntax, in source order (the bodies
    of func literals run elsewhere and are skipped)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "call_expression":
            yield node
        if node.type == "func_literal":
            continue
        stack.extend(reversed(node.children))


def all_calls(root: Node | None) -> list[Node]:
    """The calls of a piece of syntax, those in its func literals too
    (`defer func() { lib.Shutdown() }()`), in source order."""
    return [node for node in walk(root) if node.type == "call_expression"] if root is not None else []


def holding_statement(node: Node) -> tuple[Node, Node | None]:
    """The statement of a statement list that holds `node`, and the
    statement whose block that list is (the `if` of `if c { f(x) }`; None at
    a function body's top or in a case clause)."""
    statement = node
    while statement.parent is not None and statement.parent.type not in ("block", "statement_list"):
        statement = statement.parent
    listing = statement.parent
    block = listing.parent if listing is not None and listing.type == "statement_list" else listing
    owner = block.parent if block is not None and block.type == "block" else None
    return statement, owner


def statement_of_call(call: Node) -> str:
    """The type of the syntax that holds a call, parentheses skipped:
    "defer_statement", "go_statement", "expression_statement", ..."""
    parent = call.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return parent.type if parent is not None else ""


def deeper_than(node: Node, limit: int) -> bool:
    """Whether the syntax tree below `node` is more than `limit` nodes deep
    (a cursor walk at C speed per step, left as soon as it gets there)."""
    cursor = node.walk()
    depth = 0
    while True:
        if cursor.goto_first_child():
            depth += 1
            if depth > limit:
                return True
            continue
        while not cursor.goto_next_sibling():
            if depth == 0 or not cursor.goto_parent():
                return False
            depth -= 1
