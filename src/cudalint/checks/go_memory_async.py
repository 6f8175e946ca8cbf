"""CL504: Go memory handed to an asynchronous C call."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.async_params import ASYNC_PARAMS
from cudalint.analyses.calls import CALLS, CallIndex, unwrap
from cudalint.analyses.provenance import PROVENANCE, root_variable
from cudalint.catalog import Level, Rule
from cudalint.prefilter import imports_of
from cudalint.framework import Pass


def check(p: Pass) -> None:
    calls = p.result_of(CALLS)
    memory = p.result_of(PROVENANCE)
    _through_wrappers(p, memory)
    for unit in calls.units_calling_api():
        with p.isolating(unit):
            for fact in calls.api_facts_in(unit):
                call = fact.node
                if not fact.api.async_host_args:
                    continue
                arguments = syntax.children(call.child_by_field_name("arguments"))
                for index in fact.api.async_host_args:
                    if index < len(arguments) and memory.is_go_memory(arguments[index]) and not _pinned(calls, arguments[index]):
                        p.report(
                            unit, arguments[index],
                            f"Go memory ({syntax.text(arguments[index])}) is passed to {fact.written}, which may still "
                            f"use it after the call returns, when the GC may have moved or freed it (cgo forbids C "
                            f"keeping Go pointers); stage it in pinned memory from cudaMallocHost, or use a synchronous call",
                        )


def _pinned(calls: CallIndex, argument: Node) -> bool:
    """`pin.Pin(&host[0])` of a `runtime.Pinner` the function declares,
    in a block holding the call, before it, with no `pin.Unpin()` between
    them: the memory stays where it is for the duration, which cgo allows
    C to keep."""
    variable = _memory_variable(calls, argument)
    function = syntax.enclosing_function(argument)
    if variable is None or function is None:
        return False
    pinners = _pinners(function)
    pinned = False
    for call in syntax.calls_in(function):
        if call.start_byte >= argument.start_byte:
            break
        method = syntax.unparen(call.child_by_field_name("function"))
        if method is None or method.type != "selector_expression" or syntax.text(method.child_by_field_name("operand")) not in pinners:
            continue
        name = syntax.text(method.child_by_field_name("field"))
        pinned_argument = syntax.children(call.child_by_field_name("arguments"))
        if name == "Pin" and len(pinned_argument) == 1 and _holds(call.parent.parent if call.parent is not None else None, argument):
            pinned_variable = _memory_variable(calls, pinned_argument[0])
            pinned = pinned or (pinned_variable is not None and syntax.text(pinned_variable) == syntax.text(variable))
        elif name == "Unpin" and syntax.statement_of_call(call) != "defer_statement":
            pinned = False
    return pinned


def _pinners(function: Node) -> set[str]:
    """The function's variables of type runtime.Pinner (`var pin
    runtime.Pinner`, `pin := runtime.Pinner{}`, `new(runtime.Pinner)`)."""
    found = set()
    for node in syntax.walk(function):
        if node.type == "var_spec" and syntax.text(node.child_by_field_name("type")) == "runtime.Pinner":
            found.update(syntax.text(name) for name in node.children_by_field_name("name"))
        elif node.type == "short_var_declaration":
            left = syntax.expressions(node.child_by_field_name("left"))
            right = syntax.expressions(node.child_by_field_name("right"))
            for target, value in zip(left, right):
                if syntax.text(value).replace(" ", "") in ("runtime.Pinner{}", "&runtime.Pinner{}", "new(runtime.Pinner)"):
                    found.add(syntax.text(target))
    return found


def _holds(block: Node | None, node: Node) -> bool:
    """Whether the syntax holding a statement (its block) holds the node too."""
    return block is not None and block.start_byte <= node.start_byte and node.end_byte <= block.end_byte


def _memory_variable(calls: CallIndex, expression: Node) -> Node | None:
    """The variable whose memory an expression addresses: `host` of
    `unsafe.Pointer(&host[0])`, `&host`, `unsafe.SliceData(host)`."""
    node = unwrap(expression, calls)
    if syntax.is_address_of(node):
        node = node.child_by_field_name("operand")
    root = root_variable(node)
    return root if root is not None and root.type == "identifier" else None


def _through_wrappers(p: Pass, memory) -> None:
    """Go memory given to a function of the package or of the module that
    hands that parameter to an asynchronous call (`cu.MemcpyHtoDAsync(d,
    unsafe.Pointer(&host[0]), n, s)` of a binding)."""
    calls = p.result_of(CALLS)
    for unit, call, found, written in p.result_of(ASYNC_PARAMS).calls_of_wrappers():
        with p.isolating(unit):
            arguments = syntax.children(call.child_by_field_name("arguments"))
            for index in found.indexes:
                if index < len(arguments) and memory.is_go_memory(arguments[index]) and not _pinned(calls, arguments[index]):
                    p.report(
                        unit, arguments[index],
                        f"Go memory ({syntax.text(arguments[index])}) is passed to {written}, which hands it to "
                        f"{found.via}, which may still use it after the call returns, when the GC may have moved or "
                        f"freed it (cgo forbids C keeping Go pointers); stage it in pinned memory from cudaMallocHost, "
                        f"or use a synchronous call",
                    )


RULE = Rule(
    "CL504", "go-memory-async", Level.ERROR,
    "Go memory passed as the host buffer of an asynchronous copy or memset, or registered with cudaHostRegister.",
    """
    ## What it does
    Reports Go-allocated memory (`&buf[0]` of a Go slice, `unsafe.Pointer(&x)`,
    `unsafe.SliceData(buf)`) passed as a host-memory argument of a call that
    keeps using it after it returns: the asynchronous copies and memsets
    listed under `[[async]]` in `rules/*.toml` (`cudaMemcpyAsync`,
    `cuMemcpyHtoDAsync`, `cublasSetVectorAsync`, ...) and
    `cudaHostRegister`; and the same argument of a function of the package
    or of the module that hands that parameter to such a call (a binding's
    `MemcpyHtoDAsync(dst, src, n, stream)`, `MemHostRegister(p, n, flags)`),
    or of a C function of the package's own C that does, unless that C
    synchronises after the call (`cudaStreamSynchronize(s)`): it is done
    with the memory when it returns.
    Go memory is the address of any Go variable (of a C
    type too: `var n C.int` lives in Go memory), an element of a slice or
    array made in Go (`make`, a literal, a Go slice parameter, re-slices of
    those), or a pointer variable assigned one of those. Memory from
    `C.malloc` or `cudaMallocHost`, also seen through `unsafe.Slice` or an
    array-pointer conversion, is fine; so are scalars passed by address to
    cuBLAS (`&alpha`), which are read before the call returns. Where the
    syntax does not say where memory lives (a struct field, a call's
    result), nothing is reported.

    ## Why is this bad?
    cgo forbids C from keeping a Go pointer after the call returns. The copy
    runs later on the stream, when the GC may have moved or freed the
    buffer: the device receives garbage, or the copy writes into memory that
    now belongs to something else. It also runs unpinned, synchronously.

    ## Example
    ```go
    if st := C.cudaMemcpyAsync(d, unsafe.Pointer(&host[0]), n, C.cudaMemcpyHostToDevice, stream); st != C.cudaSuccess {
        return errors.New("cudaMemcpyAsync failed")
    }
    ```

    ## Use instead
    Copy through pinned memory that C owns:
    ```go
    staging := unsafe.Slice((*byte)(pinned), len(host)) // pinned from cudaMallocHost
    copy(staging, host)
    if st := C.cudaMemcpyAsync(d, pinned, n, C.cudaMemcpyHostToDevice, stream); st != C.cudaSuccess {
        return errors.New("cudaMemcpyAsync failed")
    }
    ```
    or use the synchronous `cudaMemcpy`.

    """,
    tags=("correctness", "memory-safety"),
    check=check,
    requires=(CALLS, PROVENANCE, ASYNC_PARAMS),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.async_host)),
)
