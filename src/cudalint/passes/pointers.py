"""Unsafe and cgo pointers (CL5xx): the GC may move or free Go memory that
C still holds, device memory travels as bare integers nobody owns, and
finalizers run on threads without a CUDA context."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyzer import Analyzer, Pass
from cudalint.catalog import Level, Rule
from cudalint.facts import CalleeKind
from cudalint.functions import LiteralUse, Unit, UnitKind
from cudalint.handles import UseKind
from cudalint.knowledge import Knowledge
from cudalint.lifetimes import unwrap
from cudalint.passes.resources import engine
from cudalint.scope import Role, Symbol, SymbolKind

CL501 = Rule(
    "CL501", "uintptr-roundtrip", Level.WARNING,
    "`unsafe.Pointer(x)` where x is a uintptr held in a variable, taken from Go memory.",
    """
    ## What it does
    Reports `unsafe.Pointer(x)` where `x` is a variable of type `uintptr` whose
    value was taken from a Go pointer (`uintptr(unsafe.Pointer(&buf[0]))`,
    `v.UnsafeAddr()`, `reflect.Value.Pointer()`). Arithmetic in a single
    expression, `unsafe.Pointer(uintptr(p) + off)`, is fine, and so are
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
    addr := uintptr(unsafe.Pointer(&buf[0]))
    ...
    C.consume(unsafe.Pointer(addr))
    ```

    ## Use instead
    Keep the pointer as an `unsafe.Pointer` (which the GC tracks) until the
    call: `p := unsafe.Pointer(&buf[0]); C.consume(p)`.
    """,
    tags=("correctness", "memory-safety"),
)

CL502 = Rule(
    "CL502", "raw-device-pointer-escape", Level.WARNING,
    "Device memory leaves the allocating function as a bare pointer or integer.",
    """
    ## What it does
    Reports device memory (from `cudaMalloc`, `cuMemAlloc`, ... as
    `rules/*.toml` marks with `device_memory = true`) that leaves the function
    that allocated it as a bare `unsafe.Pointer`, `uintptr` or C pointer:
    returned, or stored into a package-level variable, a map or a slice.
    Storing it in a struct field (an owning Go type with a `Close` method) is
    the fix, not a finding; what a callee does with a pointer it receives is
    the callee's business.

    ## Why is this bad?
    A bare device address says nothing about who frees it or how much memory
    it spans. Every caller must remember to call `cudaFree` on every path,
    and the leak rules can no longer follow it.

    ## Example
    ```go
    func alloc(n int) (unsafe.Pointer, error) {
        var d unsafe.Pointer
        if st := C.cudaMalloc(&d, C.size_t(n)); st != C.cudaSuccess {
            return nil, cudaError(st)
        }
        return d, nil
    }
    ```

    ## Use instead
    ```go
    type DeviceBuffer struct{ ptr unsafe.Pointer; size int }

    func NewDeviceBuffer(n int) (*DeviceBuffer, error) { ... return &DeviceBuffer{ptr: d, size: n}, nil }
    func (b *DeviceBuffer) Close() error { return cudaError(C.cudaFree(b.ptr)) }
    ```
    """,
    tags=("maintainability", "resource-leak"),
)

CL503 = Rule(
    "CL503", "slice-header", Level.WARNING,
    "Use of `reflect.SliceHeader` or `reflect.StringHeader`.",
    """
    ## What it does
    Reports every use of `reflect.SliceHeader` and `reflect.StringHeader`,
    typically to view C memory as a Go slice.

    ## Why is this bad?
    The headers' `Data` field is a `uintptr`: the GC does not see it, so a
    header built by hand does not keep its memory alive, and code that
    fills one in is easy to get subtly wrong. Both types are deprecated.

    ## Example
    ```go
    var s []float32
    h := (*reflect.SliceHeader)(unsafe.Pointer(&s))
    h.Data, h.Len, h.Cap = uintptr(p), n, n
    ```

    ## Use instead
    ```go
    s := unsafe.Slice((*float32)(p), n)
    ```
    (and `unsafe.String` / `unsafe.StringData` for strings).
    """,
    tags=("correctness", "memory-safety"),
)

CL504 = Rule(
    "CL504", "go-memory-async", Level.ERROR,
    "Go memory passed as the host buffer of an asynchronous copy or memset, or registered with cudaHostRegister.",
    """
    ## What it does
    Reports Go-allocated memory (`&buf[0]` of a Go slice, `unsafe.Pointer(&x)`,
    `unsafe.SliceData(buf)`) passed as a host-memory argument of a call that
    keeps using it after it returns: the asynchronous copies and memsets
    listed under `[[async]]` in `rules/*.toml` (`cudaMemcpyAsync`,
    `cuMemcpyHtoDAsync`, `cublasSetVectorAsync`, ...) and
    `cudaHostRegister`. Memory from `C.malloc` or `cudaMallocHost`, also seen
    through `unsafe.Slice`, is fine; so are scalars passed by address to
    cuBLAS (`&alpha`), which are read before the call returns.

    ## Why is this bad?
    cgo forbids C from keeping a Go pointer after the call returns. The copy
    runs later on the stream, when the GC may have moved or freed the
    buffer: the device receives garbage, or the copy writes into memory that
    now belongs to something else. It also runs unpinned, synchronously.

    ## Example
    ```go
    C.cudaMemcpyAsync(d, unsafe.Pointer(&weights[0]), n, C.cudaMemcpyHostToDevice, stream)
    ```

    ## Use instead
    Copy through pinned memory that C owns:
    ```go
    staging := unsafe.Slice((*float32)(pinned), len(weights)) // pinned from cudaMallocHost
    copy(staging, weights)
    C.cudaMemcpyAsync(d, pinned, n, C.cudaMemcpyHostToDevice, stream)
    ```
    or use the synchronous `cudaMemcpy`.
    """,
    tags=("correctness", "memory-safety"),
)

CL505 = Rule(
    "CL505", "finalizer-no-context", Level.ERROR,
    "A driver-API release in a runtime.SetFinalizer function that never makes a context current.",
    """
    ## What it does
    Reports a release of the CUDA driver API (`cuMemFree`, `cuStreamDestroy`,
    `cuModuleUnload`, ... from families marked `releases_need_context`) inside
    a function registered with `runtime.SetFinalizer` that never makes a
    context current (`cuCtxSetCurrent`, `cuCtxPushCurrent`).

    ## Why is this bad?
    Finalizers run on the GC's finalizer goroutine, on an arbitrary OS
    thread with no CUDA context current. The release fails with
    `CUDA_ERROR_INVALID_CONTEXT` and the resource leaks, silently, since
    nothing checks a finalizer's status.

    ## Example
    ```go
    runtime.SetFinalizer(b, func(b *Buffer) { C.cuMemFree(b.ptr) })
    ```

    ## Use instead
    Release explicitly in a `Close` method; if a finalizer must stay as a
    safety net, make the buffer's context current in it first:
    ```go
    runtime.SetFinalizer(b, func(b *Buffer) {
        runtime.LockOSThread()
        defer runtime.UnlockOSThread()
        if C.cuCtxPushCurrent(b.ctx) == C.CUDA_SUCCESS {
            C.cuMemFree(b.ptr)
            var old C.CUcontext
            C.cuCtxPopCurrent(&old)
        }
    })
    ```
    """,
    tags=("correctness", "resource-leak"),
)

_GO_POINTER_METHODS = frozenset({"UnsafeAddr", "Pointer", "UnsafePointer"})


class _Memory:
    """Where pointer values come from, as far as the syntax says."""

    def __init__(self, p: Pass):
        self.p = p
        self.resolution = p.package.resolution
        self._assigned: dict[Symbol, list[Node]] | None = None

    def assigned_values(self, symbol: Symbol) -> list[Node]:
        """Values assigned to a variable with `=` anywhere in the package."""
        if self._assigned is None:
            self._assigned = {}
            for node, found in self.resolution.refs.items():
                parent = node.parent
                holder = parent.parent if parent is not None and parent.type == "expression_list" else None
                if holder is None or holder.type != "assignment_statement" or holder.child_by_field_name("left") != parent:
                    continue
                left = syntax.expressions(parent)
                right = syntax.expressions(holder.child_by_field_name("right"))
                if len(left) == len(right):
                    self._assigned.setdefault(found, []).append(right[[c.id for c in left].index(node.id)])
        return self._assigned.get(symbol, [])

    def is_go_memory(self, expression: Node | None, depth: int = 0) -> bool:
        """&x, &s[i], &s.f of Go values, unsafe.SliceData(s) / StringData(s),
        or a variable initialised from one of those."""
        node = unwrap(expression, self.p.facts)
        if node is None or depth > 4:
            return False
        if node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) == "&":
            return not self.c_backed(_root(node.child_by_field_name("operand")))
        if node.type == "call_expression":
            fact = self.p.facts.calls.get(node)
            if fact is not None and fact.import_path == "unsafe" and fact.name in ("SliceData", "StringData"):
                arguments = syntax.children(node.child_by_field_name("arguments"))
                return bool(arguments) and not self.c_backed(_root(arguments[0]))
            return False
        if node.type == "identifier":
            symbol = self.resolution.symbol(node)
            if symbol is not None and symbol.kind is SymbolKind.VAR and symbol.init is not None and symbol.init_index < 0:
                return self.is_go_memory(symbol.init, depth + 1)
        return False

    def c_backed(self, root: Node | None) -> bool:
        """A value that lives in C memory: a C type, a slice made over a C
        pointer with unsafe.Slice or an array-pointer conversion, or one whose
        origin cudalint cannot see (a field)."""
        if root is None:
            return True
        if root.type != "identifier":
            return True
        symbol = self.resolution.symbol(root)
        if symbol is None or symbol.kind is not SymbolKind.VAR:
            return True
        if symbol.role is Role.GLOBAL:
            return True
        declared = syntax.text(symbol.type_node)
        if declared.lstrip("*[]0123456789").startswith("C."):
            return True
        init = symbol.init
        if init is not None:
            text = syntax.text(init)
            if "unsafe.Slice" in text or "(*[" in text or "C." in text:
                return True
        if symbol.role in (Role.PARAM, Role.RECEIVER):
            return not declared.startswith(("[]", "["))  # a Go slice or array parameter is Go memory
        return False

    def uintptr_from_go(self, symbol: Symbol) -> Node | None:
        """The assignment that gave a uintptr variable a Go object's address."""
        candidates = ([symbol.init] if symbol.init is not None else []) + self.assigned_values(symbol)
        for value in candidates:
            if value is not None and self._go_address(value):
                return value
        return None

    def _go_address(self, value: Node | None) -> bool:
        """uintptr(<Go memory>), a reflect value's address, or arithmetic on
        one of those; not a uintptr that merely passed through a call."""
        node = syntax.unparen(value)
        if node is None:
            return False
        if node.type == "binary_expression":
            return self._go_address(node.child_by_field_name("left")) or self._go_address(node.child_by_field_name("right"))
        if node.type != "call_expression":
            return False
        function = syntax.unparen(node.child_by_field_name("function"))
        if function is not None and function.type == "identifier" and syntax.text(function) == "uintptr":
            arguments = syntax.children(node.child_by_field_name("arguments"))
            return bool(arguments) and self.is_go_memory(arguments[0])
        if function is not None and function.type == "selector_expression":
            return syntax.text(function.child_by_field_name("field")) in _GO_POINTER_METHODS and self._is_reflect_value(function)
        return False

    def _is_reflect_value(self, selector: Node) -> bool:
        operand = syntax.unparen(selector.child_by_field_name("operand"))
        if operand is None:
            return False
        if operand.type == "call_expression":
            fact = self.p.facts.calls.get(operand)
            return fact is not None and fact.import_path == "reflect"
        if operand.type == "identifier":
            symbol = self.resolution.symbol(operand)
            declared = self.resolution.declared_type(symbol)
            if declared == ("reflect", "Value"):
                return True
            init = syntax.unparen(symbol.init) if symbol is not None else None
            fact = self.p.facts.calls.get(init) if init is not None else None
            return fact is not None and fact.import_path == "reflect"
        return False


def _root(node: Node | None) -> Node | None:
    """The variable at the root of s[i].f[j]."""
    node = syntax.unparen(node)
    while node is not None and node.type in ("index_expression", "selector_expression", "slice_expression"):
        node = syntax.unparen(node.child_by_field_name("operand"))
    return node


def _calls_to(p: Pass, import_path: str, name: str):
    """(unit, call) for each call of import_path.name in the package's functions."""
    by_node = {unit.node: unit for unit in p.cfgs.graphs}
    for call, fact in p.facts.calls.items():
        if fact.import_path == import_path and fact.name == name:
            unit = by_node.get(syntax.enclosing_function(call))
            if unit is not None:
                yield unit, call


def _check_roundtrips(p: Pass, memory: _Memory) -> None:
    """CL501."""
    for unit, node in _calls_to(p, "unsafe", "Pointer"):
        arguments = syntax.children(node.child_by_field_name("arguments"))
        argument = syntax.unparen(arguments[0]) if len(arguments) == 1 else None
        if argument is None or argument.type != "identifier":
            continue
        symbol = p.package.resolution.symbol(argument)
        if symbol is None or symbol.kind is not SymbolKind.VAR or not symbol.is_local:
            continue
        if syntax.text(symbol.type_node) not in ("", "uintptr"):
            continue
        source = memory.uintptr_from_go(symbol)
        if source is None:
            continue
        p.report(
            "CL501", unit, node,
            f"unsafe.Pointer({symbol.name}) turns a uintptr held in a variable back into a pointer: the Go "
            f"object whose address it took at line {syntax.line(source)} may have been moved or freed since; "
            f"keep it as an unsafe.Pointer until it is used",
        )


def _check_escapes(p: Pass) -> None:
    """CL502: device memory returned or stored as a bare pointer."""
    lifetimes = engine(p)
    for unit, graph in p.cfgs.graphs.items():
        with p.isolating(unit):
            origins = [o for o in lifetimes.lifetimes(unit).origins if o.resource.device_memory and o.handle]
            if not origins:
                continue
            reported: set[int] = set()
            for n in graph.statement_nodes():
                for use in lifetimes.uses.uses(graph.evaluated(n)):
                    origin = next((o for o in origins if o.handle == use.symbol.name and use.symbol.function == unit.node), None)
                    if origin is None or n in reported:
                        continue
                    where = _bare_escape(p, use)
                    if where is None:
                        continue
                    reported.add(n)
                    p.report(
                        "CL502", unit, graph.ast(n),
                        f"device memory from {origin.written} (line {origin.line}) leaves {unit.name} as a bare "
                        f"pointer ({where}): nothing says who frees it; wrap it in a struct that owns it "
                        f"(with a Close method) and hand that out instead",
                    )


def _bare_escape(p: Pass, use) -> str | None:
    identifier = use.node
    value = identifier
    parent = value.parent
    while parent is not None and (
        parent.type == "parenthesized_expression"
        or (parent.type == "argument_list" and p.facts.callee(parent.parent).kind is CalleeKind.CONVERSION)
    ):
        value = parent if parent.type == "parenthesized_expression" else parent.parent
        parent = value.parent
    if parent is None or parent.type != "expression_list":
        return None
    holder = parent.parent
    if holder is not None and holder.type == "return_statement" and use.kind is UseKind.RETURN:
        return "returned"
    if holder is not None and holder.type == "assignment_statement" and holder.child_by_field_name("right") == parent:
        left = syntax.expressions(holder.child_by_field_name("left"))
        right = syntax.children(parent)
        if len(left) != len(right):
            return None
        target = syntax.unparen(left[[c.id for c in right].index(value.id)])
        if target is None:
            return None
        if target.type == "index_expression":
            return "stored in a map or slice"
        if target.type == "identifier":
            symbol = p.package.resolution.symbol(target)
            if symbol is not None and symbol.role is Role.GLOBAL:
                return f"stored in the package-level variable {symbol.name}"
    return None


def _check_headers(p: Pass) -> None:
    """CL503."""
    for parsed in p.package.files:
        if not any(i.path == "reflect" for i in parsed.imports) or b"Header" not in parsed.source.data:
            continue
        file_scope = p.package.resolution.file_scopes.get(parsed.root)
        units = [u for u in p.package.units if u.file is parsed]
        for node in syntax.header_references(parsed.root):
            if node.type == "qualified_type":
                package, name = node.child_by_field_name("package"), node.child_by_field_name("name")
            else:
                package, name = node.child_by_field_name("operand"), node.child_by_field_name("field")
            header = syntax.text(name)
            if header not in ("SliceHeader", "StringHeader"):
                continue
            imported = file_scope.names.get(syntax.text(package)) if file_scope is not None and package is not None else None
            if imported is None or imported.import_path != "reflect":
                continue
            if node.type == "selector_expression" and p.package.resolution.symbol(package) is not imported:
                continue
            unit = _innermost(units, node)
            replacement = "unsafe.Slice / unsafe.SliceData" if header == "SliceHeader" else "unsafe.String / unsafe.StringData"
            p.report_in(
                "CL503", parsed, unit.name if unit is not None else "", node,
                f"reflect.{header} hides the data pointer from the GC and is deprecated; use {replacement}",
            )


def _innermost(units: list[Unit], node: Node) -> Unit | None:
    found = None
    for unit in units:
        if unit.node.start_byte <= node.start_byte < unit.node.end_byte:
            if found is None or unit.node.start_byte >= found.node.start_byte:
                found = unit
    return found


def _check_async(p: Pass, memory: _Memory) -> None:
    """CL504."""
    for unit, graph in p.cfgs.graphs.items():
        with p.isolating(unit):
            for call in p.facts.api_calls.get(unit.node, []):
                fact = p.facts.calls[call]
                if not fact.api.async_host_args:
                    continue
                arguments = syntax.children(call.child_by_field_name("arguments"))
                for index in fact.api.async_host_args:
                    if index < len(arguments) and memory.is_go_memory(arguments[index]):
                        p.report(
                            "CL504", unit, arguments[index],
                            f"Go memory ({syntax.text(arguments[index])}) is passed to {fact.written}, which may still "
                            f"use it after the call returns, when the GC may have moved or freed it (cgo forbids C "
                            f"keeping Go pointers); stage it in pinned memory from cudaMallocHost, or use a synchronous call",
                        )


def _check_finalizers(p: Pass) -> None:
    """CL505."""
    for _, call in _calls_to(p, "runtime", "SetFinalizer"):
        arguments = syntax.children(call.child_by_field_name("arguments"))
        finalizer = _function_of(p, arguments[1]) if len(arguments) == 2 else None
        if finalizer is None:
            continue
        calls = [p.facts.calls[c] for c in p.facts.api_calls.get(finalizer.node, [])]
        if any(fact.api.context_setter for fact in calls):
            continue
        for fact in calls:
            if fact.api.is_release and fact.api.family.releases_need_context:
                p.report(
                    "CL505", finalizer, fact.node,
                    f"{fact.written} runs in a finalizer, on whatever OS thread the GC picks, with no CUDA "
                    f"context current: it fails and the resource leaks; release it in a Close method, or make "
                    f"its context current here first (cuCtxPushCurrent ... cuCtxPopCurrent on a locked thread)",
                )


def _function_of(p: Pass, expression: Node) -> Unit | None:
    node = syntax.unparen(expression)
    if node is None:
        return None
    if node.type == "func_literal":
        return next((u for u in p.package.units if u.node == node and u.use is LiteralUse.PASSED), None)
    if node.type == "identifier":
        return p.facts.unit_of(p.package.resolution.symbol(node))
    if node.type == "selector_expression":
        method = syntax.text(node.child_by_field_name("field"))
        operand = syntax.text(syntax.unparen(node.child_by_field_name("operand")))
        names = {f"{operand}.{method}", f"({operand}).{method}"}
        return next((u for u in p.package.units if u.kind is UnitKind.METHOD and u.name in names), None)
    return None


def run(p: Pass) -> None:
    memory = _Memory(p)
    if "CL501" in p.enabled:
        _check_roundtrips(p, memory)
    if "CL502" in p.enabled:
        _check_escapes(p)
    if "CL503" in p.enabled:
        _check_headers(p)
    if "CL504" in p.enabled:
        _check_async(p, memory)
    if "CL505" in p.enabled:
        _check_finalizers(p)


def _needles(knowledge: Knowledge) -> frozenset[bytes]:
    # CL501 needs an address turned into an integer, CL503 a header type; the
    # others need an API the knowledge describes.
    specific = {b"uintptr(unsafe.Pointer(", b"UnsafeAddr()", b".Pointer()", b"SliceHeader", b"StringHeader"}
    return frozenset(specific) | frozenset(
        f'"{family.import_path}"'.encode() for family in knowledge.families
        if family.async_host or family.releases_need_context or any(r.device_memory for r in family.resources)
    )


ANALYZER = Analyzer(
    name="pointers",
    doc=__doc__ or "",
    rules=(CL501, CL502, CL503, CL504, CL505),
    run=run,
    needles=_needles,
)
