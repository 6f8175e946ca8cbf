"""CL506: a Go slice or array reinterpreted as a C array of another element size."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.catalog import Level, Rule
from cudalint.framework import Pass
from cudalint.gotypes import element_name, slice_element_name
from cudalint.scope import SymbolKind

# Element sizes on the 64-bit platforms CUDA supports (LP64).
_GO_SIZES = {
    "int": 8, "uint": 8, "uintptr": 8, "int64": 8, "uint64": 8, "float64": 8, "complex64": 8,
    "int32": 4, "uint32": 4, "float32": 4, "rune": 4, "int16": 2, "uint16": 2, "complex128": 16,
}
_C_SIZES = {
    "short": 2, "ushort": 2, "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8, "longlong": 8,
    "ulonglong": 8, "double": 8, "size_t": 8, "ssize_t": 8, "intptr_t": 8, "uintptr_t": 8,
    "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8,
}


def check(p: Pass) -> None:
    # From the unsafe.Pointer calls the call index already holds to the
    # conversion around each: walking every node of every cgo file cost a
    # Node object per node, 90 MB on a 5,000-function file.
    for unit, pointer in p.result_of(CALLS).calls_to("unsafe", "Pointer"):
        arguments = pointer.parent
        node = arguments.parent if arguments is not None and arguments.type == "argument_list" else None
        if node is None or node.type != "call_expression" or not any(i.path == "C" for i in unit.file.imports):
            continue
        found = _mismatch(p, node)
        if found is None or _size_checked(node):
            continue
        name, go_type, go_size, c_type, c_size = found
        p.report(
            unit, node,
            f"{name} is []{go_type} ({go_size}-byte elements) but is passed as *{c_type} ({c_size}-byte "
            f"elements): C reads each element with the wrong width; declare {name} as []{c_type}, or copy it "
            f"into a []{c_type}",
        )


def _mismatch(p: Pass, call: Node) -> tuple[str, str, int, str, int] | None:
    """`(*C.int)(unsafe.Pointer(&dims[0]))`, or `(*unsafe.Pointer)(...)` for
    a `void **` of option values: (variable, Go element type, size, target
    element type as written, size) where both sizes are known and differ."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "parenthesized_expression":
        return None
    target = syntax.unparen(function)
    if target is None or target.type not in ("pointer_type", "unary_expression"):
        return None
    element = syntax.children(target)[-1] if syntax.children(target) else None
    if element is None or element.type not in ("qualified_type", "selector_expression"):
        return None
    spelled = syntax.text(element)
    if not spelled.startswith("C.") and spelled != "unsafe.Pointer":
        return None  # `*unsafe.Pointer`: C reads an array of pointers (`void **`)
    c_type = spelled
    arguments = syntax.children(call.child_by_field_name("arguments"))
    inner = syntax.unparen(arguments[0]) if len(arguments) == 1 else None
    if inner is None or not syntax.is_call_of(inner, "unsafe.Pointer"):
        return None
    pointed = syntax.children(inner.child_by_field_name("arguments"))
    variable = _backing_variable(syntax.unparen(pointed[0])) if len(pointed) == 1 else None
    if variable is None:
        return None
    if variable.type == "selector_expression":
        # A field of one of the package's structs (`t.shape`): its declaration says.
        go_type = slice_element_name(p.result_of(CALLS).types.declared_type_of(variable))
    else:
        symbol = p.package.resolution.symbol(variable)
        if symbol is None or symbol.kind is not SymbolKind.VAR:
            return None
        go_type = element_name(symbol)
    if go_type is None:
        return None
    go_size = _GO_SIZES.get(go_type) or (_C_SIZES.get(go_type[2:]) if go_type.startswith("C.") else None)
    c_size = 8 if c_type == "unsafe.Pointer" else _C_SIZES.get(c_type[2:])
    if go_size is None or c_size is None or go_size == c_size:
        return None
    return syntax.text(variable), go_type, go_size, c_type, c_size


def _size_checked(node: Node) -> bool:
    """Inside `if cintsize == gointsize { ... }` (or an `unsafe.Sizeof`
    comparison): the code checked the widths before reinterpreting."""
    child, parent = node, node.parent
    while parent is not None and parent.type not in ("function_declaration", "method_declaration", "func_literal"):
        if parent.type == "if_statement" and parent.child_by_field_name("consequence") == child:
            condition = syntax.text(parent.child_by_field_name("condition")).lower()
            if "==" in condition and ("size" in condition or "sizeof" in condition):
                return True
        child, parent = parent, parent.parent
    return False


def _backing_variable(node: Node | None) -> Node | None:
    """`&s[0]`, `&s[i]`, `&arr` (an array), `unsafe.SliceData(s)`, with `s`
    a variable or a field (`&t.shape[0]`): the variable or the field selector."""
    if node is None:
        return None
    if syntax.is_address_of(node):
        operand = syntax.unparen(node.child_by_field_name("operand"))
        if operand is not None and operand.type == "index_expression":
            operand = syntax.unparen(operand.child_by_field_name("operand"))
        return operand if operand is not None and operand.type in _BACKINGS else None
    if node.type == "call_expression" and syntax.text(node.child_by_field_name("function")) == "unsafe.SliceData":
        arguments = syntax.children(node.child_by_field_name("arguments"))
        argument = syntax.unparen(arguments[0]) if arguments else None
        return argument if argument is not None and argument.type in _BACKINGS else None
    return None


_BACKINGS = ("identifier", "selector_expression")


RULE = Rule(
    "CL506", "go-c-width-mismatch", Level.ERROR,
    "A Go slice or array reinterpreted as a C array whose element has another size.",
    """
    ## What it does
    Reports a conversion `(*C.T)(unsafe.Pointer(&s[0]))` (also `&s[i]`,
    `&arr` for an array, `unsafe.SliceData(s)`, with `s` a variable or a
    field of one of the package's structs such as `&t.shape[0]`) where the Go element type of
    `s` and the C type `T` have different sizes on the 64-bit platforms CUDA
    runs on: `[]int` (8 bytes) as `*C.int` (4), `[]float64` as `*C.float`,
    `[]int32` as `*C.long`, and `[]C.uint` as `*unsafe.Pointer` (a `void **`
    of option values, 8-byte elements). The element type comes from the variable's or the
    field's declaration or the variable's initialiser (`make([]int, n)`, `[]int{...}`); a type the
    rule cannot size (a struct, a named type, a C typedef it does not know,
    `byte` buffers) is not reported, nor is a conversion under a check of
    the sizes (`if cintsize == gointsize { ... }`). Reported at the
    conversion.

    ## Why is this bad?
    C reads the Go memory with its own element width: a `[]int{2, 3}` read as
    `int *` is `{2, 0, 3, 0}` on little-endian machines, so a cuFFT plan or a
    cuDNN descriptor gets garbage dimensions, with no error from the
    compiler or from cgo.

    ## Example
    ```go
    dims := []int{nx, ny}
    if r := C.cufftPlanMany(&plan, 2, (*C.int)(unsafe.Pointer(&dims[0])), nil, 1, 0, nil, 1, 0, C.CUFFT_C2C, batch); r != C.CUFFT_SUCCESS {
        return errPlan
    }
    ```

    ## Use instead
    ```go
    dims := []C.int{C.int(nx), C.int(ny)}
    if r := C.cufftPlanMany(&plan, 2, &dims[0], nil, 1, 0, nil, 1, 0, C.CUFFT_C2C, batch); r != C.CUFFT_SUCCESS {
        return errPlan
    }
    ```
    """,
    tags=("correctness", "memory-safety"),
    since="0.2.0",
    check=check,
    requires=(CALLS,),
    needles=lambda knowledge: frozenset({b"unsafe.Pointer"}),
    local_needles=True,
)
