"""Glue that returns a result struct: `typedef struct { void *res; const char
*err; } KernelResult;`, each entry point of a C library returning one
(`KernelResult DeviceAllocate(size_t n)`), the error a message that is NULL
where the call succeeded and the produced object in the other field.

Such a struct is the call's status (success: its message field is NULL), and
where the body's acquisition lands in what it returns (`cudaMalloc(&p, n);
return make_result(st, p);`, `cudaMalloc(&r.res, n); return r;`) the struct
is also the handle: the Go caller holds what `r.res` points to once
`r.err == nil`. What is read here is syntax only; cside.py records it and
analyses/c_helpers.py makes API functions of it.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from cudalint import syntax


def result_fields(struct: Node | None) -> tuple[str, str] | None:
    """(message, payload) of a result struct: its one `char *` field, and
    its other pointer field where it has one only ("" where several); None
    for a struct without a body, or with no such message and payload."""
    body = struct.child_by_field_name("body") if struct is not None and struct.type == "struct_specifier" else None
    if body is None:
        return None
    messages, payloads = [], []
    for declaration in body.named_children:
        if declaration.type != "field_declaration":
            continue
        base = syntax.text(declaration.child_by_field_name("type"))
        for declarator in declaration.children_by_field_name("declarator"):
            inner = declarator.child_by_field_name("declarator") if declarator.type == "pointer_declarator" else None
            if inner is not None and inner.type == "field_identifier":
                (messages if base == "char" else payloads).append(syntax.text(inner))
    if len(messages) != 1 or not payloads:
        return None
    return messages[0], payloads[0] if len(payloads) == 1 else ""


def into_result(body: Node, pointer: bool = False, kept: Callable[[set[str]], bool] = lambda _: False) -> tuple[tuple[str, int], ...]:
    """(callee, argument index) of each call whose out-argument is, or is
    carried into, what the function returns: `&p` where p is returned or
    passed to the returned call (`return kr_status(st, st == 0 ? p : NULL)`),
    `&r.res` where r is returned. For a function returning a pointer
    (`void *gpu_malloc(size_t n) { void *p = NULL; CHECK(cudaMalloc(&p, n));
    return p; }`), only a local of its own filled whole: `&j->buf` of a
    struct it returns is memory the struct's own release frees, and none
    where the pointer is also `kept` where it outlives the call (`registry[i]
    = p; return p;`: the caller borrows it)."""
    landed: set[str] = set()
    for node in syntax.walk(body):
        if node.type != "return_statement" or not node.named_children:
            continue
        value = unwrapped(node.named_children[0])
        if value is not None and value.type == "identifier":
            landed.add(syntax.text(value))
        elif not pointer and value is not None and value.type == "call_expression" and (
            arguments := value.child_by_field_name("arguments")
        ) is not None:
            landed.update(syntax.text(n) for n in syntax.walk(arguments) if n.type == "identifier")
    if pointer:
        landed &= declared_locals(body)
        if landed and kept(landed):
            return ()
    found: list[tuple[str, int]] = []
    for call in syntax.walk(body):
        if call.type != "call_expression" or call.child_by_field_name("function") is None or _returned(call):
            continue  # (`return ok(&dummy_stream);` hands out a static, filled by no call)
        for index, argument in enumerate((call.child_by_field_name("arguments") or call).named_children):
            target = _address_root(unwrapped(argument), whole=pointer)
            if target in landed:
                found.append((syntax.text(call.child_by_field_name("function")), index))
    return tuple(found)


def declared_locals(body: Node) -> set[str]:
    """The variables the body declares (`void *p = NULL;`, `float *d;`)."""
    return {syntax.text(name) for node in syntax.walk(body) if node.type == "declaration" for name in declared_names(node)}


def declared_names(declaration: Node) -> list[Node]:
    """Every name a C declaration declares (`float s = 0, v;`: s and v)."""
    found = []
    for declarator in declaration.children_by_field_name("declarator"):
        while declarator is not None and declarator.type != "identifier":
            declarator = declarator.child_by_field_name("declarator")
        if declarator is not None:
            found.append(declarator)
    return found


def _returned(node: Node) -> bool:
    while node.parent is not None and node.type not in ("return_statement", "compound_statement"):
        node = node.parent
    return node.type == "return_statement"


def _address_root(node: Node | None, whole: bool = False) -> str:
    """`p` of `&p`, `r` of `&r.res` (C's `&`: a pointer_expression; with
    `whole`, of the variable itself only)."""
    if node is None or node.type != "pointer_expression" or syntax.text(node.child_by_field_name("operator")) != "&":
        return ""
    operand = unwrapped(node.child_by_field_name("argument"))
    while not whole and operand is not None and operand.type == "field_expression":
        operand = unwrapped(operand.child_by_field_name("argument"))
    return syntax.text(operand) if operand is not None and operand.type == "identifier" else ""


def unwrapped(value: Node | None) -> Node | None:
    """A C expression without the parentheses and casts around it."""
    while value is not None and value.type in ("parenthesized_expression", "cast_expression"):
        value = value.named_children[-1] if value.named_children else None
    return value


def null_test(body: Node, params: tuple[str, ...]) -> int:
    """The parameter a function returns the NULL-ness of, as its one
    statement (`return p == NULL;`, `return !p;`): Go tests a pointer the
    glue made through it (`C.is_null(h) != 0`); -1 for any other body."""
    statements = [child for child in body.named_children if child.type != "comment"]
    if len(statements) != 1 or statements[0].type != "return_statement" or not statements[0].named_children:
        return -1
    value = unwrapped(statements[0].named_children[0])
    operand = None
    if value is not None and value.type == "unary_expression" and syntax.text(value.child_by_field_name("operator")) == "!":
        operand = value.child_by_field_name("argument")
    elif value is not None and value.type == "binary_expression" and syntax.text(value.child_by_field_name("operator")) == "==":
        left, right = (unwrapped(value.child_by_field_name(side)) for side in ("left", "right"))
        for candidate, other in ((left, right), (right, left)):
            if other is not None and syntax.text(other) in ("NULL", "0", "nullptr"):
                operand = candidate
    name = syntax.text(unwrapped(operand)) if operand is not None else ""
    return params.index(name) if name and name in params else -1
