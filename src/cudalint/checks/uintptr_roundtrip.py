"""CL501: a Go address kept as a uintptr variable and turned back into a pointer."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.provenance import PROVENANCE, Provenance
from cudalint.catalog import Level, Rule
from cudalint.framework import Pass, Ref
from cudalint.prefilter import all_of
from cudalint.scope import Resolution, SymbolKind


def check(p: Pass) -> None:
    memory = p.result_of(PROVENANCE)
    for unit, node in p.result_of(CALLS).calls_to("unsafe", "Pointer"):
        arguments = syntax.children(node.child_by_field_name("arguments"))
        if len(arguments) != 1:
            continue
        found = _stored_go_address(p.package.resolution, memory, arguments[0])
        if found is None:
            continue
        held, source = found
        p.report(
            unit, node,
            f"{syntax.text(node)} turns {held}, a uintptr held in a variable, back into a pointer: the Go object "
            f"whose address it took at @taken may have been moved or freed since; keep it "
            f"as an unsafe.Pointer until it is used",
            taken=Ref(source, "the address taken here"),
        )


def _stored_go_address(resolution: Resolution, memory: Provenance, expression: Node) -> tuple[str, Node] | None:
    """A uintptr variable, parameter, field or slice element in the
    expression (arithmetic included) that was given a Go object's address
    somewhere else (for a parameter: by a caller in the package)."""
    node = syntax.unparen(expression)
    if node is None:
        return None
    if node.type == "call_expression" and syntax.text(node.child_by_field_name("function")) == "uintptr":
        # `unsafe.Pointer(uintptr(arr))` of a value of a uintptr type of the package.
        arguments = syntax.children(node.child_by_field_name("arguments"))
        inner = syntax.unparen(arguments[0]) if len(arguments) == 1 else None
        return _stored_go_address(resolution, memory, inner) if inner is not None and inner.type != "call_expression" else None
    if node.type == "binary_expression":
        return _stored_go_address(resolution, memory, node.child_by_field_name("left")) or _stored_go_address(
            resolution, memory, node.child_by_field_name("right"),
        )
    if node.type == "identifier":
        symbol = resolution.symbol(node)
        if symbol is None or symbol.kind is not SymbolKind.VAR or not symbol.is_local:
            return None
        declared = syntax.text(symbol.type_node)
        if declared not in ("", "uintptr"):
            # `func (arr Array) c()` with `type Array uintptr` made of Go addresses.
            source = memory.named_uintptr_from_go(declared)
            return (symbol.name, source) if source is not None else None
        source = memory.uintptr_from_go(symbol)
        return (symbol.name, source) if source is not None else None
    if node.type == "selector_expression":
        source = memory.field_from_go(node)
        return (syntax.text(node), source) if source is not None else None
    if node.type == "index_expression":
        source = memory.element_from_go(node)
        return (syntax.text(node), source) if source is not None else None
    return None


RULE = Rule(
    "CL501", "uintptr-roundtrip", Level.WARNING,
    "`unsafe.Pointer(x)` where x is a uintptr held in a variable, taken from Go memory.",
    """
    ## What it does
    Reports `unsafe.Pointer(x)` where `x` (or arithmetic on it, `base + off`)
    is a `uintptr` variable, struct field or slice element that was given
    the address of a Go object somewhere (`uintptr(unsafe.Pointer(&buf[0]))`,
    `v.UnsafeAddr()`, `reflect.ValueOf(s).Index(i).UnsafeAddr()`, the `Data`
    of a `reflect.SliceHeader` over a Go slice, a composite literal's field,
    `addrs[i] = ...`), or a `uintptr` parameter that a caller
    in the package passes such an address. A value of a type of the package
    declared as `uintptr` (`type Array uintptr`) counts where the package
    makes one of such an address (`Array(uintptr(unsafe.Pointer(&a)))`, or of
    a pointer parameter its callers give `&a`).
    Arithmetic done entirely in one expression,
    `unsafe.Pointer(uintptr(unsafe.Pointer(p)) + off)`, is fine, and so are
    device addresses (`C.CUdeviceptr`, a `uintptr` from `cudaMalloc`): the GC
    does not manage them.

    ## Why is this bad?
    A `uintptr` is an integer: it does not keep the object alive and is not
    updated when the GC moves a stack. Between the two conversions the object
    may be freed or moved, and the pointer made back from the integer points
    into something else. `go vet`'s unsafeptr check finds some of these;
    cgo code that stores addresses to pass them to C finds many more.

    ## Example
    ```go
    addr := uintptr(unsafe.Pointer(&host[0]))
    C.consume(unsafe.Pointer(addr))
    ```

    ## Use instead
    Keep the pointer as an `unsafe.Pointer` (which the GC tracks) until the call:
    ```go
    p := unsafe.Pointer(&host[0])
    C.consume(p)
    ```

    """,
    tags=("correctness", "memory-safety"),
    check=check,
    requires=(CALLS, PROVENANCE),
    # reflect's Pointer and UnsafeAddr give a uintptr that only a file
    # converting with unsafe.Pointer can turn back.
    needles=lambda knowledge: frozenset({
        b"uintptr(unsafe.Pointer(", all_of(b"UnsafeAddr()", b"unsafe.Pointer("), all_of(b".Pointer()", b"unsafe.Pointer("),
    }),
    local_needles=True,
)
