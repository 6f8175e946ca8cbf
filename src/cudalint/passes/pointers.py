"""Unsafe and cgo pointers (CL5xx): the GC may move or free Go memory that
C still holds, device memory travels as bare integers nobody owns, and
finalizers run on threads without a CUDA context."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyzer import Analyzer, Pass
from cudalint.catalog import Level, Rule
from cudalint.facts import CalleeKind
from cudalint.cfg import NodeKind
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
    Reports `unsafe.Pointer(x)` where `x` (or arithmetic on it, `base + off`)
    is a `uintptr` variable or struct field that was given the address of a
    Go object somewhere (`uintptr(unsafe.Pointer(&buf[0]))`, `v.UnsafeAddr()`,
    `reflect.ValueOf(s).Index(i).UnsafeAddr()`, a composite literal's field).
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
    returned (also as a named result), allocated straight into a
    package-level variable, stored into one, or into a package-level map or
    slice, or into a map or slice the caller passed in. Storing it in a
    struct field, or in a map or slice held by one (an owning Go type with a
    `Close` method), is the fix, not a finding; a local map is no escape, and
    neither is a func literal returning it to the function that made it.
    What a callee does with a pointer it receives is the callee's business.

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
    `cudaHostRegister`. Go memory is the address of any Go variable (of a C
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
    a function registered with `runtime.SetFinalizer`, or a function of the
    package it calls, when none of them makes a context current
    (`cuCtxSetCurrent`, `cuCtxPushCurrent`). Releases that name what they
    release need no current context and are not reported (`cuCtxDestroy`,
    `cuDevicePrimaryCtxRelease`: `needs_context = false` in the knowledge).

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
        if C.cuCtxPushCurrent(b.ctx) != C.CUDA_SUCCESS {
            return
        }
        _ = C.cuMemFree(b.ptr)
        var old C.CUcontext
        _ = C.cuCtxPopCurrent(&old)
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
        self._fields: dict[str, list[tuple[Node, Node, Node]]] | None = None

    def assigned_values(self, symbol: Symbol) -> list[Node]:
        """Values assigned to a variable with `=` anywhere in the package."""
        values = []
        for node in self.p.facts.references(symbol):
            parent = node.parent
            holder = parent.parent if parent is not None and parent.type == "expression_list" else None
            if holder is None or holder.type != "assignment_statement" or holder.child_by_field_name("left") != parent:
                continue
            left = syntax.expressions(parent)
            right = syntax.expressions(holder.child_by_field_name("right"))
            if len(left) == len(right):
                values.append(right[[c.id for c in left].index(node.id)])
        return values

    def is_go_memory(self, expression: Node | None, depth: int = 0) -> bool:
        """&x of any Go variable (of a C type too: it lives in Go memory),
        &s[i] / unsafe.SliceData(s) of a slice or array backed by Go memory,
        or a pointer variable assigned from one of those."""
        node = unwrap(expression, self.p.facts)
        if node is None or depth > 6:
            return False
        if node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) == "&":
            operand = syntax.unparen(node.child_by_field_name("operand"))
            if operand is not None and operand.type == "identifier":
                symbol = self.resolution.symbol(operand)
                return symbol is not None and symbol.kind is SymbolKind.VAR
            return self.backing(_root(operand), depth + 1) == "go"
        if node.type == "call_expression":
            fact = self.p.facts.calls.get(node)
            if fact is not None and fact.import_path == "unsafe" and fact.name in ("SliceData", "StringData"):
                arguments = syntax.children(node.child_by_field_name("arguments"))
                return bool(arguments) and self.backing(arguments[0], depth + 1) == "go"
            return False
        if node.type == "identifier":
            symbol = self.resolution.symbol(node)
            if symbol is None or symbol.kind is not SymbolKind.VAR:
                return False
            values = ([symbol.init] if symbol.init is not None and symbol.init_index < 0 else []) + self.assigned_values(symbol)
            return any(self.is_go_memory(value, depth + 1) for value in values)
        return False

    def backing(self, expression: Node | None, depth: int = 0) -> str | None:
        """Where the elements of a slice or array live: "go", "c", or None
        when the syntax does not say (a field, a call's result)."""
        node = syntax.unparen(expression)
        if node is None or depth > 6:
            return None
        if node.type == "slice_expression":
            operand = syntax.unparen(node.child_by_field_name("operand"))
            if operand is not None and operand.type in ("call_expression", "type_conversion_expression") and self._views_a_pointer(operand):
                return "c"  # (*[1 << 30]T)(p)[:n:n]
            return self.backing(operand, depth + 1)
        if node.type == "type_conversion_expression":
            return "c" if self._views_a_pointer(node) else "go"  # []byte(s) copies
        if node.type in ("composite_literal", "interpreted_string_literal", "raw_string_literal"):
            return "go"
        if node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) == "&":
            inner = syntax.unparen(node.child_by_field_name("operand"))
            return "go" if inner is not None and inner.type == "composite_literal" else None
        if node.type == "call_expression":
            function = syntax.unparen(node.child_by_field_name("function"))
            if syntax.text(function) in ("make", "append", "new"):
                return "go"
            fact = self.p.facts.calls.get(node)
            if fact is not None and fact.import_path == "unsafe" and fact.name == "Slice":
                return "c"
            if fact is not None and fact.import_path == "C" and fact.name in ("GoBytes", "GoString", "GoStringN"):
                return "go"
            return "c" if self._views_a_pointer(node) else None
        if node.type == "identifier":
            symbol = self.resolution.symbol(node)
            if symbol is None or symbol.kind is not SymbolKind.VAR:
                return None
            if symbol.role in (Role.PARAM, Role.RECEIVER):
                declared = symbol.type_node.type if symbol.type_node is not None else ""
                return "go" if declared in ("slice_type", "array_type") else None
            if symbol.type_node is not None and symbol.type_node.type not in ("pointer_type", "slice_type", "map_type", "qualified_type"):
                return "go"  # var buf [256]byte, var h header: the variable is the storage
            values = ([symbol.init] if symbol.init is not None and symbol.init_index < 0 else []) + self.assigned_values(symbol)
            kinds = {self.backing(value, depth + 1) for value in values}
            if kinds == {"go"}:
                return "go"
            if "c" in kinds:
                return "c"
        return None

    def _views_a_pointer(self, conversion: Node) -> bool:
        """`(*[1 << 30]C.float)(p)`: a conversion of a pointer to an array type."""
        target = conversion.child_by_field_name("function" if conversion.type == "call_expression" else "type")
        return target is not None and target.type in ("parenthesized_expression", "parenthesized_type") and "[" in syntax.text(target)

    def field_from_go(self, selector: Node) -> Node | None:
        """A value with a Go object's address given to the same field of the
        same struct type anywhere in the package
        (`req{host: uintptr(unsafe.Pointer(&b[0]))}`, `r.host = ...`)."""
        owner = self.p.facts.type_of(selector.child_by_field_name("operand"))
        if owner is None:
            return None
        if self._fields is None:
            self._fields = {}
            for parsed in self.p.package.files:
                for name, stores in syntax.field_stores(parsed.index).items():
                    self._fields.setdefault(name, []).extend((parsed.root, holder, value) for holder, value in stores)
        resolution, facts = self.p.package.resolution, self.p.facts
        for root, holder, value in self._fields.get(syntax.text(selector.child_by_field_name("field")), []):
            resolution.ensure(root, holder)
            if facts.type_of(holder) == owner and self._go_address(value):
                return value
        return None

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
        # reflect.ValueOf(v).Elem().Index(i): walk the chain down to its start.
        while operand is not None and operand.type == "call_expression":
            fact = self.p.facts.calls.get(operand)
            if fact is not None:
                return fact.import_path == "reflect"
            function = syntax.unparen(operand.child_by_field_name("function"))
            if function is None or function.type != "selector_expression":
                return False
            operand = syntax.unparen(function.child_by_field_name("operand"))
        if operand is None:
            return False
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
    by_node = {unit.node: unit for unit in p.package.units}
    for call, fact in p.facts.calls.items():
        if fact.import_path == import_path and fact.name == name:
            unit = by_node.get(syntax.enclosing_function(call))
            if unit is not None:
                yield unit, call


def _check_roundtrips(p: Pass, memory: _Memory) -> None:
    """CL501."""
    for unit, node in _calls_to(p, "unsafe", "Pointer"):
        arguments = syntax.children(node.child_by_field_name("arguments"))
        if len(arguments) != 1:
            continue
        found = _stored_go_address(p, memory, arguments[0])
        if found is None:
            continue
        held, source = found
        p.report(
            "CL501", unit, node,
            f"{syntax.text(node)} turns {held}, a uintptr held in a variable, back into a pointer: the Go object "
            f"whose address it took at line {syntax.line(source)} may have been moved or freed since; keep it "
            f"as an unsafe.Pointer until it is used",
        )


def _stored_go_address(p: Pass, memory: _Memory, expression: Node) -> tuple[str, Node] | None:
    """A uintptr variable or field in the expression (arithmetic included)
    that was given a Go object's address somewhere else."""
    node = syntax.unparen(expression)
    if node is None:
        return None
    if node.type == "binary_expression":
        return _stored_go_address(p, memory, node.child_by_field_name("left")) or _stored_go_address(
            p, memory, node.child_by_field_name("right"),
        )
    if node.type == "identifier":
        symbol = p.package.resolution.symbol(node)
        if symbol is None or symbol.kind is not SymbolKind.VAR or not symbol.is_local:
            return None
        if syntax.text(symbol.type_node) not in ("", "uintptr"):
            return None
        source = memory.uintptr_from_go(symbol)
        return (symbol.name, source) if source is not None else None
    if node.type == "selector_expression":
        source = memory.field_from_go(node)
        return (syntax.text(node), source) if source is not None else None
    return None


def _escape_message(written: str, line: int, unit: Unit, where: str) -> str:
    return (
        f"device memory from {written} (line {line}) leaves {unit.name} as a bare pointer ({where}): "
        f"nothing says who frees it; wrap it in a struct that owns it (with a Close method) and hand that out instead"
    )


def _check_escapes(p: Pass) -> None:
    """CL502: device memory returned, or stored in a package-level variable,
    map or slice, as a bare pointer. A func literal is no boundary: what it
    returns stays with the function that made it."""
    lifetimes = engine(p)
    resolution = p.package.resolution
    for unit, graph in p.graphs_of(p.units_with_api_calls()):
        with p.isolating(unit):
            for call in p.facts.api_calls.get(unit.node, []):
                fact = p.facts.calls[call]
                for resource, role in fact.api.roles("acquire"):
                    target = _out_target(p, call, role) if resource.device_memory and role.is_out else None
                    symbol = resolution.symbol(target) if target is not None else None
                    if symbol is not None and symbol.role is Role.GLOBAL:
                        p.report("CL502", unit, call, _escape_message(
                            fact.written, syntax.line(call), unit, f"stored in the package-level variable {symbol.name}",
                        ))
            origins = [o for o in lifetimes.lifetimes(unit).origins if o.resource.device_memory and o.handle]
            if not origins:
                continue
            reported: set[int] = set()
            for n in graph.statement_nodes():
                if n in reported:
                    continue
                for use in lifetimes.uses.uses(graph.evaluated(n)):
                    origin = next((o for o in origins if o.handle == use.symbol.name and use.symbol.function == unit.node), None)
                    where = _bare_escape(p, unit, use) if origin is not None else None
                    if where is not None:
                        reported.add(n)
                        p.report("CL502", unit, graph.ast(n), _escape_message(origin.written, origin.line, unit, where))
                        break
            if unit.kind is UnitKind.LITERAL:
                continue
            named = {r.name for r in unit.results}
            for origin in origins:
                if origin.handle not in named:
                    continue
                for n in _bare_returns_holding(lifetimes, graph, origin):
                    if n not in reported:
                        reported.add(n)
                        p.report("CL502", unit, graph.ast(n), _escape_message(
                            origin.written, origin.line, unit, f"returned as the named result {origin.handle}",
                        ))


def _bare_returns_holding(lifetimes, graph, origin) -> list[int]:
    """Bare returns reached from the acquisition on its success side."""
    birth = lifetimes._birth(graph, origin)
    if birth is None or birth[1] is None:
        return []
    state = birth[1]
    found, seen, queue = [], {origin.node}, [origin.node]
    while queue:
        n = queue.pop()
        for successor in graph.graph.successors(n):
            if successor in seen or lifetimes._through_edge(origin, state, graph.graph.edges[n, successor]) is None:
                continue
            seen.add(successor)
            if graph.kind(successor) is NodeKind.RETURN:
                statement = graph.ast(successor)
                if statement is not None and not any(c.type == "expression_list" for c in statement.named_children):
                    found.append(successor)
                continue
            queue.append(successor)
    return sorted(found)


def _out_target(p: Pass, call: Node, role) -> Node | None:
    arguments = syntax.children(call.child_by_field_name("arguments"))
    if role.index >= len(arguments):
        return None
    argument = unwrap(arguments[role.index], p.facts)
    if argument is None or argument.type != "unary_expression" or syntax.text(argument.child_by_field_name("operator")) != "&":
        return None
    target = syntax.unparen(argument.child_by_field_name("operand"))
    return target if target is not None and target.type == "identifier" else None


def _bare_escape(p: Pass, unit: Unit, use) -> str | None:
    identifier = use.node
    value = identifier
    parent = value.parent
    while parent is not None and (
        parent.type == "parenthesized_expression"
        or (parent.type == "argument_list" and p.facts.callee(parent.parent).kind is CalleeKind.CONVERSION)
    ):
        value = parent if parent.type == "parenthesized_expression" else parent.parent
        parent = value.parent
    if parent is not None and parent.type == "argument_list":
        call = parent.parent
        callee = p.facts.callee(call)
        if callee.kind is CalleeKind.BUILTIN and callee.written == "append" and syntax.children(parent)[0] != value:
            value, parent = call, call.parent  # s = append(s, d): where does s go?
    if parent is None or parent.type != "expression_list":
        return None
    holder = parent.parent
    if holder is not None and holder.type == "return_statement" and use.kind is UseKind.RETURN:
        return None if unit.kind is UnitKind.LITERAL else "returned"
    if holder is not None and holder.type == "assignment_statement" and holder.child_by_field_name("right") == parent:
        left = syntax.expressions(holder.child_by_field_name("left"))
        right = syntax.children(parent)
        if len(left) != len(right):
            return None
        target = syntax.unparen(left[[c.id for c in right].index(value.id)])
        if target is not None and target.type == "identifier":
            symbol = p.package.resolution.symbol(target)
            if symbol is not None and symbol.role is Role.GLOBAL:
                return f"stored in the package-level variable {symbol.name}"
        if target is not None and target.type == "index_expression":
            container = syntax.unparen(target.child_by_field_name("operand"))
            symbol = p.package.resolution.symbol(container) if container is not None and container.type == "identifier" else None
            # A package-level map or slice, or the caller's (a parameter); a
            # local one never leaves, and one in a struct field is owned.
            if symbol is not None and symbol.role is Role.GLOBAL:
                return f"stored in the package-level map or slice {symbol.name}"
            if symbol is not None and symbol.role is Role.PARAM:
                return f"stored in the caller's map or slice {symbol.name}"
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
            if node.type == "selector_expression":
                p.package.resolution.ensure(parsed.root, node)
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
    for unit in p.units_with_api_calls():
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
    """CL505: a finalizer, with the functions of the package it calls."""
    for _, call in _calls_to(p, "runtime", "SetFinalizer"):
        arguments = syntax.children(call.child_by_field_name("arguments"))
        finalizer = _function_of(p, arguments[1]) if len(arguments) == 2 else None
        if finalizer is None:
            continue
        reached = _reached(p, finalizer)
        api = [(unit, via, p.facts.calls[c]) for unit, via in reached for c in p.facts.api_calls.get(unit.node, [])]
        if any(fact.api.context_setter for _, _, fact in api):
            continue
        for unit, via, fact in api:
            needs = [r for r in fact.api.releases if r.needs_context]
            if not (needs and fact.api.family.releases_need_context):
                continue
            where = fact.node if via is None else via
            through = "" if via is None else f" (through {unit.name})"
            p.report(
                "CL505", finalizer, where,
                f"{fact.written}{through} runs in a finalizer, on whatever OS thread the GC picks, with no CUDA "
                f"context current: it fails and the {needs[0].name} leaks; release it in a Close method, or make "
                f"its context current here first (cuCtxPushCurrent ... cuCtxPopCurrent on a locked thread)",
            )


def _reached(p: Pass, start: Unit) -> list[tuple[Unit, Node | None]]:
    """The function and the functions of the package it calls (with the call
    in `start` that leads to each), transitively."""
    found: list[tuple[Unit, Node | None]] = [(start, None)]
    seen = {start}
    index = 0
    while index < len(found):
        unit, via = found[index]
        index += 1
        body = unit.body
        for node in syntax.walk(body, into_functions=False) if body is not None else ():
            if node.type != "call_expression":
                continue
            callee = p.facts.callee(node)
            if callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target not in seen:
                seen.add(callee.target)
                found.append((callee.target, via if via is not None else node))
    return found


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
