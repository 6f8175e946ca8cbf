"""The facts stage: what each call in a package is, as the API knowledge sees it.

Computed once per package and read by every pass: `C.cudaMalloc(...)` is a
status call of the cuda-runtime family that acquires device memory; `cu.MemFree`
through an aliased import is the same wrapper function under another name; a
call through a local variable that shadows a package name is nothing the
knowledge knows (except `C.name`, which cgo reads by spelling); `C.CUdeviceptr(p)` is a conversion; `upload(d)` is a function of this
package, whose effect on `d` the resource engine summarises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tree_sitter import Node

from cudalint import syntax
from cudalint.functions import Package, Unit, UnitKind
from cudalint.knowledge import ApiFunction, Knowledge, StatusSpec
from cudalint.scope import Role, Symbol, SymbolKind

# Standard-library packages whose functions only read their arguments
# (formatting, logging, errors, conversions): passing a handle to them borrows it.
BORROWING_STD = frozenset({
    "fmt", "log", "errors", "strconv", "strings", "bytes", "unicode/utf8", "math", "sort", "unsafe",
})
_BORROWING_STD_FUNCS = frozenset({("runtime", "KeepAlive")})
_CONVERSIONS = frozenset({("unsafe", "Pointer")})


class CalleeKind(str, Enum):
    API = "api"  # a function the knowledge describes (status, acquire, release, transfer)
    FAMILY = "family"  # another function of a package the knowledge covers, or any C function
    CONVERSION = "conversion"  # a type: T(x) converts, the value flows through
    LOCAL = "local"  # a function or method of this package: summarised
    BUILTIN = "builtin"
    STD_BORROW = "std-borrow"
    VALUE = "value"  # a call through a variable holding a function
    UNKNOWN = "unknown"  # another package, an interface method, anything else


@dataclass(frozen=True)
class CallFact:
    node: Node
    import_path: str
    name: str
    written: str  # the callee as written, e.g. "C.cudaMalloc" or "cuda.MemFree"
    api: ApiFunction | None

    @property
    def status(self) -> StatusSpec | None:
        return self.api.status if self.api is not None else None

    @property
    def is_release(self) -> bool:
        return self.api is not None and self.api.is_release


@dataclass(frozen=True)
class Callee:
    kind: CalleeKind
    written: str
    api: ApiFunction | None = None
    target: Unit | None = None  # LOCAL: the unit called
    symbol: Symbol | None = None  # VALUE: the variable called through


@dataclass
class Facts:
    package: Package
    knowledge: Knowledge
    calls: dict[Node, CallFact] = field(default_factory=dict)
    _callees: dict[Node, Callee] = field(default_factory=dict, repr=False)
    # Calls the knowledge describes, by the function (node) whose body holds them.
    api_calls: dict[Node, list[Node]] = field(default_factory=dict, repr=False)
    _units_by_symbol: dict[Symbol, Unit] = field(default_factory=dict, repr=False)
    _literals: dict[Node, Unit] = field(default_factory=dict, repr=False)
    _calls_by_name: dict[str, list[Node]] | None = field(default=None, repr=False)
    _references: dict[Symbol, list[Node]] | None = field(default=None, repr=False)

    def calls_of(self, unit: Unit) -> list[Node]:
        """The calls in this package whose callee is `unit`."""
        if self._calls_by_name is None:
            self._calls_by_name = {}
            for parsed in self.package.files:
                for name, calls in syntax.calls_by_name(parsed.root).items():
                    self._calls_by_name.setdefault(name, []).extend(calls)
        name = unit.name.rsplit(".", 1)[-1]
        return [call for call in self._calls_by_name.get(name, []) if self.callee(call).target is unit]

    def references(self, symbol: Symbol) -> list[Node]:
        """The identifiers that refer to a symbol (its declarations included)."""
        if self._references is None:
            self._references = {}
            for node, found in self.package.resolution.refs.items():
                self._references.setdefault(found, []).append(node)
        return self._references.get(symbol, [])
    _methods: dict[str, list[Unit]] = field(default_factory=dict, repr=False)

    def call(self, node: Node | None) -> CallFact | None:
        if node is None:
            return None
        return self.calls.get(syntax.unparen(node))

    def unit_of(self, symbol: Symbol | None) -> Unit | None:
        """The function a package-level function symbol, or a local variable
        bound to a func literal, stands for."""
        if symbol is None:
            return None
        return self._units_by_symbol.get(symbol)

    def callee(self, call: Node) -> Callee:
        found = self._callees.get(call)
        if found is None:
            found = self._callees[call] = self._classify(call)
        return found

    def _classify(self, call: Node) -> Callee:
        fact = self.calls.get(call)
        raw = call.child_by_field_name("function")
        function = syntax.unparen(raw)
        written = syntax.text(function)
        if fact is not None:
            if fact.api is not None:
                return Callee(CalleeKind.API, written, fact.api)
            if self.knowledge.is_type(fact.import_path, fact.name) or (fact.import_path, fact.name) in _CONVERSIONS:
                return Callee(CalleeKind.CONVERSION, written)
            if fact.import_path in self.knowledge.import_paths:
                return Callee(CalleeKind.FAMILY, written)
            if fact.import_path in BORROWING_STD or (fact.import_path, fact.name) in _BORROWING_STD_FUNCS:
                return Callee(CalleeKind.STD_BORROW, written)
            return Callee(CalleeKind.UNKNOWN, written)
        if function is None:
            return Callee(CalleeKind.UNKNOWN, written)
        if raw is not None and raw.type == "parenthesized_expression" and function.type in ("unary_expression", "pointer_type"):
            return Callee(CalleeKind.CONVERSION, written)  # (*C.char)(p), (*[1 << 30]byte)(p)
        if function.type == "func_literal":
            target = self._literals.get(function)
            return Callee(CalleeKind.LOCAL, written, target=target) if target is not None else Callee(CalleeKind.UNKNOWN, written)
        if function.type in ("array_type", "slice_type", "map_type", "pointer_type", "qualified_type", "generic_type"):
            return Callee(CalleeKind.CONVERSION, written)
        resolution = self.package.resolution
        if function.type == "identifier":
            symbol = resolution.symbol(function)
            if symbol is None:
                return Callee(CalleeKind.UNKNOWN, written)
            if symbol.kind is SymbolKind.TYPE:
                return Callee(CalleeKind.CONVERSION, written)
            if symbol.kind is SymbolKind.BUILTIN:
                return Callee(CalleeKind.BUILTIN, written)
            target = self._units_by_symbol.get(symbol)
            if target is not None:
                kind = CalleeKind.LOCAL if symbol.kind is SymbolKind.FUNC else CalleeKind.VALUE
                return Callee(kind, written, target=target, symbol=symbol)
            return Callee(CalleeKind.VALUE if symbol.kind is SymbolKind.VAR else CalleeKind.UNKNOWN, written, symbol=symbol)
        if function.type == "selector_expression":
            operand = syntax.unparen(function.child_by_field_name("operand"))
            method = syntax.text(function.child_by_field_name("field"))
            target = self._method(operand, method)
            if target is not None:
                return Callee(CalleeKind.LOCAL, written, target=target)
        return Callee(CalleeKind.UNKNOWN, written)

    def _method(self, operand: Node | None, method: str) -> Unit | None:
        """A method of this package: by the receiver's declared type where it
        is written, else by a method name no other type of the package uses."""
        candidates = self._methods.get(method, [])
        if not candidates or operand is None:
            return None
        symbol = self.package.resolution.symbol(operand) if operand.type == "identifier" else None
        type_node = symbol.type_node if symbol is not None else None
        while type_node is not None and type_node.type in ("pointer_type", "parenthesized_type"):
            inner = syntax.children(type_node)
            type_node = inner[0] if inner else None
        if type_node is not None and type_node.type == "type_identifier":
            type_name = syntax.text(type_node)
            for unit in candidates:
                if unit.name in (f"{type_name}.{method}", f"(*{type_name}).{method}"):
                    return unit
            return None
        return candidates[0] if len(candidates) == 1 else None


def _qualified_call(node: Node, package: Package, knowledge: Knowledge) -> CallFact | None:
    function = syntax.unparen(node.child_by_field_name("function"))
    if function is None or function.type != "selector_expression":
        return None
    operand = syntax.unparen(function.child_by_field_name("operand"))
    if operand is None or operand.type != "identifier":
        return None
    import_path = package.resolution.package_of(operand)
    if import_path is None:
        return None
    name = syntax.text(function.child_by_field_name("field"))
    written = f"{syntax.text(operand)}.{name}"
    return CallFact(node, import_path, name, written, knowledge.lookup(import_path, name))


def compute_facts(package: Package, knowledge: Knowledge) -> Facts:
    """Classify every package-qualified call of the package (`pkg.F(...)`);
    other callees are classified on demand by Facts.callee."""
    facts = Facts(package, knowledge)
    for parsed in package.files:
        for node in syntax.qualified_calls(parsed.root):
            fact = _qualified_call(node, package, knowledge)
            if fact is not None:
                facts.calls[node] = fact
                if fact.api is not None:
                    function = syntax.enclosing_function(node)
                    if function is not None:
                        facts.api_calls.setdefault(function, []).append(node)
    for unit in package.units:
        facts._literals[unit.node] = unit
        if unit.symbol is not None:
            facts._units_by_symbol[unit.symbol] = unit
        elif unit.stored_in is not None and unit.stored_in.role is Role.LOCAL:
            facts._units_by_symbol.setdefault(unit.stored_in, unit)
        if unit.kind is UnitKind.METHOD:
            method = unit.name.rsplit(".", 1)[-1]
            facts._methods.setdefault(method, []).append(unit)
    return facts
