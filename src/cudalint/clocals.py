"""What a C function's body says of its locals, read from its syntax: the
call a returned local holds, and the parameter a local is a copy of. The
C side (cside.py) reads wrappers through them: `void *res = nullptr; try {
res = llama_init_from_file(...); } catch (...) { return res; } return res;`
returns that call's result; `T *ctx = (T *)state_ptr; llama_free(ctx);`
frees its parameter."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.cresult import unwrapped


def assigned_call(body: Node, name: str) -> Node | None:
    """The call a local variable is given (`cudaError_t st = cudaMalloc(p,
    n);`, `job_t *j = calloc(1, n);` or `st = ...;`); where it is given
    several calls' results, the first, if the variable is returned before
    the second (`st = cublasCreate(h); if (st != ...) return st; st =
    cublasSetStream(*h, s);`: made, then configured), else none."""
    values = []
    for node in syntax.walk(body):  # in source order
        if node.type == "init_declarator" and declared_text(node.child_by_field_name("declarator")) == name:
            values.append(node.child_by_field_name("value"))
        elif node.type == "assignment_expression" and syntax.text(node.child_by_field_name("left")) == name:
            values.append(node.child_by_field_name("right"))
    calls = [unwrapped(value) for value in values]
    if len(calls) > 1 and syntax.text(calls[0]) in _NULL_POINTERS:
        calls = calls[1:]  # `void *res = nullptr; try { res = llama_init_from_file(...); } catch ...`: NULL is its failure
    if not calls or any(call is None or call.type != "call_expression" for call in calls):
        return None
    if len(calls) > 1 and not any(
        node.type == "return_statement" and syntax.text(unwrapped(next(iter(node.named_children), None))) == name
        and calls[0].end_byte < node.start_byte < calls[1].start_byte
        for node in syntax.walk(body)
    ):
        return None
    return calls[0]


_NULL_POINTERS = {"NULL", "nullptr", "(void *)0", "(void*)0"}


def declared_text(declarator: Node | None) -> str:
    """The name a declarator declares: `j` of `*j`."""
    while declarator is not None and declarator.type == "pointer_declarator":
        declarator = declarator.child_by_field_name("declarator")
    return syntax.text(declarator)


def local_copy_of(body: Node, name: str) -> str:
    """The identifier a local is declared with and never assigned again
    (`T *ctx = (T *)state_ptr;`), "" for any other local."""
    values = [
        node.child_by_field_name("value") for node in syntax.walk(body)
        if node.type == "init_declarator" and declared_text(node.child_by_field_name("declarator")) == name
    ]
    assigned = any(
        node.type == "assignment_expression" and syntax.text(node.child_by_field_name("left")) == name for node in syntax.walk(body)
    )
    value = unwrapped(values[0]) if len(values) == 1 and not assigned else None
    return syntax.text(value) if value is not None and value.type == "identifier" else ""
