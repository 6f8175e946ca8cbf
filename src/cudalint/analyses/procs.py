"""Functions of a C API called by name through the shared library that
exports it, without cgo. Windows code loads `nvml.dll` or `nvcuda.dll` and
binds each function it needs to a procedure (`nvmlInit :=
dll.NewProc("nvmlInit_v2")`, `FindProc`, `MustFindProc`, or a helper of the
package that is handed the name), then calls it: `ret, _, _ :=
nvmlInit.Call()`. Such a call is that API function. Its status is the first
of `Call`'s results (r1, a uintptr: 0 is success in every C family), as
`result = "first"` says of the C families; whether the function releases
says whether `_ =` discards the status on purpose (CL304 rather than
CL302). Handles passed as `uintptr(unsafe.Pointer(&h))` are not followed:
the call has no acquisition or release roles of its own.

The same binding done with `dlsym` from Go (`fn, err := dlsym(lib,
"cuDeviceGetName")`) is called through a trampoline of the package's C
(`static int call_get_name(void *fn, char *n, int len, int dev) { return
((get_name_fn)fn)(n, len, dev); }`): `C.call_get_name(fn, ...)` is then that
function too, its status the trampoline's result.

Only packages that name one of the shared libraries the knowledge lists
(`libraries` of a C family) are searched, the same needles that let them
through the prefilter."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache

from tree_sitter import Node

from cudalint import syntax
from cudalint.cside import CView
from cudalint.analyses.call_kinds import CallFact
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import Package
from cudalint.knowledge import ApiFunction, Knowledge
from cudalint.scope import Role, Symbol


def loaded_procedure_calls(package: Package, knowledge: Knowledge, c_view: CView | None, imported: FactView | None = None) -> list[CallFact]:
    """The `.Call(...)` of each procedure the package bound to a function of
    a C family that a shared library exports, and the calls of the package's
    C trampolines handed such a procedure (`c_view`: the package's own C);
    and the calls of another package's function variables bound so
    (`driver.MemAlloc(&d, n)`, as that package's facts say)."""
    found = _imported_bound_calls(package, knowledge, imported) if imported is not None else []
    bound, calls_of_call = _bindings(package, knowledge, c_view)
    for root, node in calls_of_call if bound else ():
        function = syntax.unparen(node.child_by_field_name("function"))
        arguments = syntax.children(node.child_by_field_name("arguments"))
        trampoline = syntax.text(function.child_by_field_name("field")) if syntax.text(function.child_by_field_name("operand")) == "C" else ""
        syscall = syntax.text(function.child_by_field_name("field")) in _SYSCALLS
        if trampoline:
            index = _called_parameter(c_view, trampoline)
            operand = syntax.unparen(arguments[index]) if 0 <= index < len(arguments) else None
        elif syscall:  # `purego.SyscallN(pShutdown)`, `syscall.Syscall(p, ...)`
            operand = syntax.unparen(arguments[0]) if arguments else None
        elif function.type == "identifier":  # `nvmlInit()` of `purego.RegisterLibFunc(&nvmlInit, lib, "nvmlInit")`
            operand = function
        else:
            operand = syntax.unparen(function.child_by_field_name("operand"))
        if operand is None or operand.type != "identifier":
            continue
        package.resolution.ensure(root, operand)
        symbol = package.resolution.symbol(operand)
        if symbol not in bound:
            continue
        name, api = bound[symbol]
        variable = syntax.text(operand)
        if trampoline:
            written, blanks = f"C.{trampoline} ({name})", "_"
        elif function.type == "identifier":
            written, blanks = (variable if variable == name else f"{variable} ({name})"), "_"
        elif syscall:
            written, blanks = f"{syntax.text(function)}({variable}) ({name})", "_, _, _"
        else:
            written, blanks = (f"{variable}.Call" if variable == name else f"{variable}.Call ({name})"), "_, _, _"
        status = replace(api.status, success=("0",)) if api.status is not None else None
        # A typed function variable (`var MemAlloc func(dptr *DevicePtr, size uintptr) Result`)
        # takes the C function's arguments in order: its roles hold as they are.
        typed = function.type == "identifier" and _typed_function(symbol)
        bound_api = replace(api, status=status) if typed else _bound_api(api, written, status)
        found.append(CallFact(node, "C", name, written, bound_api, on_value=True, blanks=blanks))
    return found


@lru_cache(maxsize=4)
def _libraries(names: tuple[str, ...]) -> re.Pattern[bytes] | None:
    """One pattern for the shared libraries' names (a file is searched once)."""
    return re.compile(b"|".join(re.escape(name.encode()) for name in names)) if names else None


def _bindings(package: Package, knowledge: Knowledge, c_view: CView | None) -> tuple[dict[Symbol, tuple[str, ApiFunction]], list[tuple[Node, Node]]]:
    """The variables the package binds to C API functions by name, and the calls that may call through one."""
    bound: dict[Symbol, tuple[str, ApiFunction]] = {}
    calls_of_call: list[tuple[Node, Node]] = []
    named = _libraries(tuple(library for family in knowledge.families for library in family.libraries))
    if named is None or not any(named.search(parsed.source.data) for parsed in package.files):
        return bound, calls_of_call
    constants = _string_constants(package)
    for parsed in package.files:
        for node in syntax.walk(parsed.root):
            if node.type == "literal_value":
                # `{"nvmlShutdown", &pShutdown}` of a table of symbols to look up.
                entry = _table_entry(node, knowledge)
                if entry is not None:
                    package.resolution.ensure(parsed.root, entry[0])
                    symbol = package.resolution.symbol(entry[0])
                    if symbol is not None:
                        bound[symbol] = entry[1]
                continue
            if node.type != "call_expression":
                continue
            function = syntax.unparen(node.child_by_field_name("function"))
            if function is not None and (function.type == "identifier" or (function.type == "selector_expression" and _calls_bound(function, c_view))):
                calls_of_call.append((parsed.root, node))
                if function.type != "identifier":
                    continue
            named = _named_function(node, knowledge, constants)
            target = (_assigned_to(node) or _registered(node)) if named is not None else None
            if target is None:
                continue
            package.resolution.ensure(parsed.root, target)
            symbol = package.resolution.symbol(target)
            if symbol is not None:
                bound[symbol] = named
    return bound, calls_of_call


@dataclass(frozen=True)
class BoundFunction:
    """The fact about an exported package-level function variable bound to
    a C API function by name (`purego.RegisterLibFunc(&MemAlloc, lib,
    "cuMemAlloc_v2")`): the function, and the package's exported constants
    that stand for success (`Success Result = 0`)."""

    name: str
    zero_constants: tuple[str, ...] = ()

    def concerns_callers(self) -> bool:
        return True


def exported_bound_functions(p: Pass) -> dict[str, BoundFunction]:
    package = p.package
    if not _declares_function_variables(package):
        return {}  # (no need to look for bindings: the calls' index did, and this is every package)
    bound, _ = _bindings(package, p.knowledge, None)
    return {
        symbol.name: BoundFunction(name, _zero_constants(package, symbol))
        for symbol, (name, _) in bound.items()
        if symbol.name[:1].isupper() and symbol.role is Role.GLOBAL and _typed_function(symbol)
    }


BOUND_FUNCTIONS: Analysis[None] = Analysis(
    "bound_functions", "Exported function variables bound to C API functions by name, for importers' calls of them.",
    lambda p: None, facts=exported_bound_functions, fact_type=BoundFunction,
)


def bound_status_types(package: Package, knowledge: Knowledge) -> dict[str, str]:
    """The package's own types that its bound function variables return for
    a C family's status (`type Result int32` of `var MemAlloc func(...)
    Result` bound to cuMemAlloc_v2): each, as that status is written
    (`C.CUresult`), so that a converter taking one (`func Check(r Result)
    error`) converts the family's status."""
    found: dict[str, str] = {}
    if not _declares_function_variables(package):
        return found
    for symbol, (_, api) in _bindings(package, knowledge, None)[0].items():
        result = _function_result(symbol)
        if result is not None and result.type == "type_identifier" and api.status is not None and api.status.kind == "code":
            found[syntax.text(result)] = f"C.{api.status.type}"
    return found


def _declares_function_variables(package: Package) -> bool:
    """Whether the package declares a variable of a function type at its top
    level (`var MemAlloc func(...) Result`): only such a package can bind
    one for its importers."""
    return any(_typed_function(symbol) for symbol in package.resolution.package_symbols.values())


def _typed_function(symbol: Symbol) -> bool:
    """A variable declared with a function type (`func(dptr *DevicePtr, size uintptr) Result`)."""
    return symbol.type_node is not None and symbol.type_node.type == "function_type"


def _function_result(symbol: Symbol) -> Node | None:
    """The result type a variable of a function type is declared with (`Result`)."""
    return symbol.type_node.child_by_field_name("result") if _typed_function(symbol) else None


def _zero_constants(package: Package, symbol: Symbol) -> tuple[str, ...]:
    """The exported constants of the function's result type that are 0
    (`Success Result = 0`): success, as the C function's 0 is."""
    result = _function_result(symbol)
    type_name = syntax.text(result) if result is not None else ""
    return tuple(
        name for name, declared, value in _constant_specs(package) if declared == type_name and syntax.text(value) == "0" and name[:1].isupper()
    )


def _constant_specs(package: Package) -> Iterator[tuple[str, str, Node]]:
    """(name, declared type as written, value) of each package-level constant given a value."""
    for parsed in package.files:
        for declaration in syntax.children(parsed.root):
            if declaration.type != "const_declaration":
                continue
            for spec in syntax.children(declaration):
                names = spec.children_by_field_name("name")
                values = syntax.expressions(spec.child_by_field_name("value"))
                if spec.type == "const_spec" and len(names) == len(values):
                    declared = syntax.text(spec.child_by_field_name("type"))
                    yield from ((syntax.text(n), declared, v) for n, v in zip(names, values))


def _imported_bound_calls(package: Package, knowledge: Knowledge, imported: FactView) -> list[CallFact]:
    """`driver.MemAlloc(&d, n)`: a call of another package's function
    variable bound to `cuMemAlloc_v2`, that function with its roles; its
    status is success where it is 0 or the binding's constant for it
    (`driver.Success`)."""
    found: list[CallFact] = []
    binding = {
        path for path in imported.packages()
        if any(imported.fact(BoundFunction, path, name) is not None for name in imported.objects(path))
    }
    for parsed in package.files:
        if not binding or not any(i.path in binding for i in parsed.imports):
            continue
        for node in parsed.index.qualified_calls:
            function = syntax.unparen(node.child_by_field_name("function"))
            operand = syntax.unparen(function.child_by_field_name("operand")) if function is not None else None
            if operand is None or operand.type != "identifier":
                continue
            package.resolution.ensure(parsed.root, node)
            path = package.resolution.package_of(operand)
            name = syntax.text(function.child_by_field_name("field"))
            bound = imported.fact(BoundFunction, path, name) if path is not None else None
            api = knowledge.lookup("C", bound.name) if bound is not None else None
            if api is None or api.status is None:
                continue
            qualifier = syntax.text(operand)
            status = replace(api.status, success=(*(f"{qualifier}.{constant}" for constant in bound.zero_constants), "0"))
            written = f"{qualifier}.{name} ({bound.name})"
            found.append(CallFact(node, "C", bound.name, written, replace(api, status=status), on_value=True))
    return found


def _bound_api(api: ApiFunction, written: str, status) -> ApiFunction:
    """The API function as called by name: a pairing by kind with no handle
    (nvmlInit / nvmlShutdown) keeps its roles, as the API's own call would;
    a handle passed as a uintptr is not followed (no roles), though a
    release stays one for CL302/CL304. A call that binds the thread's
    context (`cuCtxPushCurrent`) binds it however it is called."""
    roles = api.roles("acquire") + api.roles("release")
    if roles and all(role.handle == "none" for _, role in roles):
        return replace(api, status=status)
    return ApiFunction(
        api.family, written, status, api.discardable, api.releases, (),
        thread_bound=api.thread_bound, context_setter=api.context_setter,
    )


# Calls that run the procedure at an address they are given first.
_SYSCALLS = frozenset({"SyscallN", "Syscall", "Syscall6", "Syscall9", "Syscall12", "Syscall15", "Syscall18"})


def _calls_bound(function: Node, c_view: CView | None) -> bool:
    """`p.Call(...)`, `purego.SyscallN(p, ...)`, or `C.trampoline(...)` of a
    C function that calls one of its parameters."""
    field = syntax.text(function.child_by_field_name("field"))
    if field == "Call" or field in _SYSCALLS:
        return True
    return syntax.text(function.child_by_field_name("operand")) == "C" and _called_parameter(c_view, field) >= 0


def _called_parameter(c_view: CView | None, name: str) -> int:
    """The index of the parameter a C helper calls through and returns the
    result of (`return ((fn_t)fn)(a, b);`), or -1."""
    function = c_view.functions.get(name) if c_view is not None else None
    if function is None or not function.wraps or function.wraps not in function.params:
        return -1
    return function.params.index(function.wraps)


def _named_function(call: Node, knowledge: Knowledge, constants: dict[str, Node]) -> tuple[str, ApiFunction] | None:
    """The C API function the call's first string argument names, where a
    shared library of its family exports it (`dll.NewProc("nvmlInit_v2")`),
    also through a string constant of the package (`purego.RegisterLibFunc(&nvmlInit_v2,
    lib, sym_nvmlInit_v2)` with `const sym_nvmlInit_v2 = "nvmlInit_v2"`)."""
    for argument in syntax.children(call.child_by_field_name("arguments")):
        if argument.type == "identifier" and syntax.text(argument) in constants:
            argument = constants[syntax.text(argument)]
        if argument.type == "interpreted_string_literal":
            return _loadable(argument, knowledge)
    return None


def _string_constants(package: Package) -> dict[str, Node]:
    """The package's constants given a string literal, by name (the names
    of a loader's `sym_` tables)."""
    return {name: value for name, _, value in _constant_specs(package) if value.type == "interpreted_string_literal"}


def _loadable(literal: Node, knowledge: Knowledge) -> tuple[str, ApiFunction] | None:
    """The function a string literal names, where it is a status call of a
    C family that a shared library exports."""
    name = syntax.text(literal)[1:-1]
    api = knowledge.lookup("C", name) if name.isidentifier() else None
    return (name, api) if api is not None and api.status is not None and api.family.libraries else None


def _table_entry(literal: Node, knowledge: Knowledge) -> tuple[Node, tuple[str, ApiFunction]] | None:
    """A composite literal that pairs a described function's name with the
    address of the variable to fill (`{"nvmlShutdown", &pShutdown}`, keyed or
    not): a table of symbols a loader looks up in turn."""
    values = []
    for element in syntax.children(literal):
        if element.type == "keyed_element":
            element = element.child_by_field_name("value") or (syntax.children(element) or [element])[-1]
        inner = syntax.children(element) if element.type == "literal_element" else [element]
        values.extend(syntax.unparen(value) for value in inner[:1])
    names = [value for value in values if value is not None and value.type == "interpreted_string_literal"]
    addresses = [_registered_operand(value) for value in values if value is not None and value.type == "unary_expression"]
    addresses = [address for address in addresses if address is not None]
    if len(names) != 1 or len(addresses) != 1:
        return None
    named = _loadable(names[0], knowledge)
    return (addresses[0], named) if named is not None else None


def _registered_operand(value: Node) -> Node | None:
    """The variable `&v` takes the address of."""
    if syntax.text(value.child_by_field_name("operator")) != "&":
        return None
    operand = syntax.unparen(value.child_by_field_name("operand"))
    return operand if operand is not None and operand.type == "identifier" else None


def _registered(call: Node) -> Node | None:
    """The function variable a call binds through its first argument, given
    by address: `purego.RegisterLibFunc(&nvmlInit, lib, "nvmlInit")`."""
    arguments = syntax.children(call.child_by_field_name("arguments"))
    first = syntax.unparen(arguments[0]) if arguments else None
    return _registered_operand(first) if first is not None and first.type == "unary_expression" else None


def _assigned_to(call: Node) -> Node | None:
    """The variable a call's (first) result is assigned to: `p = d.NewProc(n)`,
    `p, err := findProc(d, n)`, `var p = d.NewProc(n)`."""
    holder = call.parent
    if holder is None or holder.type != "expression_list" or syntax.children(holder)[0] != call:
        return None
    statement = holder.parent
    if statement is None:
        return None
    if statement.type in ("assignment_statement", "short_var_declaration") and statement.child_by_field_name("right") == holder:
        left = syntax.expressions(statement.child_by_field_name("left"))
    elif statement.type == "var_spec" and statement.child_by_field_name("value") == holder:
        left = statement.children_by_field_name("name")
    else:
        return None
    return left[0] if left and left[0].type == "identifier" else None
