"""Call classification: what each call in a package is, as the API knowledge sees it.

Computed once per package (the `calls` analysis) and read by every other
analysis and rule: `C.cudaMalloc(...)` is a
status call of the cuda-runtime family that acquires device memory; `cu.MemFree`
through an aliased import is the same wrapper function under another name; a
call through a local variable that shadows a package name is nothing the
knowledge knows (except `C.name`, which cgo reads by spelling); `C.CUdeviceptr(p)` is a conversion; `upload(d)` is a function of this
package, whose effect on `d` the resource engine summarises; `gpu.Alloc(n)`
of another package of the module is a MODULE call when some analysis
exported a fact about `gpu.Alloc` (`Pass.imported_facts`).

The analysis exports one fact itself: for an exported function, the
package's own types its results are declared with (`ResultTypes`), where a
method of such a type is something importers have facts about, so that
`dev.Alloc(n)` with `dev, err := gpu.Open(0)` names `gpu.Device.Alloc`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import islice

from tree_sitter import Node

from cudalint import syntax
from cudalint.framework import Analysis, ImportedFacts
from cudalint.functions import Package, Unit, UnitKind
from cudalint.gotypes import TypeOracle, named_type, sole_implementations
from cudalint.analyses.api_aliases import index_api_aliases
from cudalint.analyses.c_helpers import c_side_calls
from cudalint.analyses.type_facts import NamedType
from cudalint.analyses.procs import loaded_procedure_calls
from cudalint.analyses.dot_imports import index_dot_imports
from cudalint.analyses.typed_methods import api_of, index_described_methods, index_interface_statuses, promoted, unclassified
from cudalint.analyses.call_kinds import Callee, CalleeKind, CallFact, ResultTypes, as_written, described_type_conversion, logs
from cudalint.analyses.result_facts import api_result_type, exported_result_types, imported_field_type, imported_variable_type, module_call_typed, module_result_typed
from cudalint.cside import CView
from cudalint.knowledge import Knowledge
from cudalint.scope import Symbol, SymbolKind

# Standard-library packages whose functions only read their arguments
# (formatting, logging, errors, conversions): passing a handle to them borrows it.
BORROWING_STD = frozenset({
    "fmt", "log", "errors", "strconv", "strings", "bytes", "unicode/utf8", "math", "sort", "unsafe",
})
_BORROWING_STD_FUNCS = frozenset({("runtime", "KeepAlive")})
_CONVERSIONS = frozenset({("unsafe", "Pointer")})


@dataclass
class CallIndex:
    package: Package
    knowledge: Knowledge
    # The facts of the module's packages this one imports.
    imported: ImportedFacts = field(default_factory=ImportedFacts)
    # Qualified calls of the packages rules watch (the knowledge's, runtime,
    # unsafe, reflect), found up front.
    calls: dict[Node, CallFact] = field(default_factory=dict)
    _callees: dict[Node, Callee] = field(default_factory=dict, repr=False)
    # Calls the knowledge describes, by the function (node) whose body holds them.
    api_calls: dict[Node, list[Node]] = field(default_factory=dict, repr=False)
    _units_by_symbol: dict[Symbol, Unit] = field(default_factory=dict, repr=False)
    _literals: dict[Node, Unit] = field(default_factory=dict, repr=False)
    _calls_by_name: dict[str, list[Node]] | None = field(default=None, repr=False)
    _references: dict[Symbol, list[Node]] | None = field(default=None, repr=False)
    _selectors: dict[str, list[tuple[Node, Node]]] | None = field(default=None, repr=False)
    _references_size: int = field(default=0, repr=False)
    _literals_by_parent: dict[Node, list[Unit]] = field(default_factory=dict, repr=False)
    _no_literal: set[Symbol] = field(default_factory=set, repr=False)
    _unwatched: dict[Node, CallFact | None] = field(default_factory=dict, repr=False)
    # Calls of a name, and method values of a name, by the unit they name.
    _calls_by_target: dict[str, dict[Unit, list[Node]]] = field(default_factory=dict, repr=False)
    _values_by_method: dict[str, dict[Unit, list[Node]]] = field(default_factory=dict, repr=False)
    _methods_by_type: dict[str, list[Unit]] | None = field(default=None, repr=False)
    _by_name_per_file: dict[Node, dict[str, list[Node]]] = field(default_factory=dict, repr=False)
    # Per file (root): the named calls and their start bytes, in order.
    _named_calls: dict[Node, tuple[list[int], list[Node]]] = field(default_factory=dict, repr=False)
    _accessors: dict[Unit, bool] = field(default_factory=dict, repr=False)
    # The package's own C (preambles, local headers and C files), if it uses cgo.
    c_view: CView | None = field(default=None, repr=False)
    # The type oracle: the package types of expressions, struct fields.
    types: TypeOracle = field(init=False, repr=False)

    def __post_init__(self) -> None:
        typed = partial(_result_typed, self)
        self.types = TypeOracle(
            self.package, self._units_by_symbol.get, typed, partial(typed, elements=True), self.knowledge.interface_types,
            partial(imported_field_type, self), partial(imported_variable_type, self),
        )

    def record(self, fact: CallFact) -> None:
        """Classify a call: a call the knowledge describes joins the calls
        of the function whose body holds it."""
        fact = as_written(fact)
        previous = self.calls.get(fact.node)
        self.calls[fact.node] = fact
        if fact.api is None and (previous is None or previous.api is None):
            return
        enclosing = syntax.enclosing_function(fact.node)
        if enclosing is not None and fact.api is not None:
            calls = self.api_calls.setdefault(enclosing, [])
            if fact.node not in calls:
                calls.append(fact.node)
        elif enclosing is not None and fact.node in self.api_calls.get(enclosing, ()):
            self.api_calls[enclosing].remove(fact.node)  # classified again: no API after all (its C says so)

    def accessed(self, call: Node) -> Node | None:
        """`p.ptr()`, where the package's method only returns its receiver
        reinterpreted for C (`func (p DevPtr) ptr() unsafe.Pointer { return
        unsafe.Pointer(p) }`: a pointer or a C type), or `raw(p)` where a
        function only returns its parameter so: the value read, `p`. None
        for any other call (`d.Uintptr()` reads the address as a number)."""
        target = self.callee(call).target
        if target is None or target.body is None or target.kind is UnitKind.LITERAL:
            return None
        if target not in self._accessors:
            self._accessors[target] = False  # while deciding
            value = target.receiver if target.kind is UnitKind.METHOD and not target.params else (
                target.params[0] if target.kind is UnitKind.FUNCTION and len(target.params) == 1 else None
            )
            # What C is handed (`unsafe.Pointer`, `*T`, `C.CUdeviceptr`), not the address read as a number.
            result = syntax.text(target.node.child_by_field_name("result"))
            for_c = result.startswith(("*", "unsafe.Pointer", "C."))
            self._accessors[target] = for_c and value is not None and self._returns_only(target, value.name)
        if not self._accessors[target]:
            return None
        function = syntax.unparen(call.child_by_field_name("function"))
        if target.kind is UnitKind.METHOD:
            return syntax.unparen(function.child_by_field_name("operand")) if function.type == "selector_expression" else None
        arguments = syntax.children(call.child_by_field_name("arguments"))
        return syntax.unparen(arguments[0]) if len(arguments) == 1 else None

    def _returns_only(self, target: Unit, name: str) -> bool:
        """Whether every return of `target` gives back the value `name`, a
        handle it holds (`return s.sel`) or the address of memory inside it
        (`return unsafe.Pointer(&h.host[0])`), and nothing else does."""
        found = False
        for statement in syntax.return_statements(target.body):
            if syntax.enclosing_function(statement) != target.node:
                continue
            returned = syntax.returned(statement)
            read = _inside(unwrap(returned[0], self)) if len(returned) == 1 else None
            if read is not None and read.type == "selector_expression":
                read = syntax.unparen(read.child_by_field_name("operand"))
            if read is None or read.type != "identifier" or syntax.text(read) != name:
                return False
            found = True
        return found

    def api_facts_in(self, unit: Unit) -> list[CallFact]:
        """The calls the knowledge describes in unit's own body (its func
        literals are units of their own), in source order."""
        return [self.calls[call] for call in self.api_calls.get(unit.node, [])]

    def module_function(self, fact: CallFact | None) -> tuple[str, str] | None:
        """(import path, name) of the function of another package of the
        module that this call names, if its package exported facts about it
        (None for anything else, and where the knowledge describes it)."""
        if fact is None or fact.api is not None or not self.imported.knows(fact.import_path, fact.name):
            return None
        return fact.import_path, fact.name

    def units_calling_module(self, wanted: Callable[[str, str], bool]) -> list[Unit]:
        """The functions that call a function of another package of the
        module for which `wanted(import path, name)`."""
        by_node = {unit.node: unit for unit in self.package.units}
        found: dict[Node, Unit] = {}
        for call, fact in self.calls.items():
            if self.imported.knows(fact.import_path, fact.name) and wanted(fact.import_path, fact.name):
                unit = by_node.get(syntax.enclosing_function(call))
                if unit is not None:
                    found[unit.node] = unit
        return list(found.values())

    def units_calling_api(self) -> list[Unit]:
        """The functions that call something the API knowledge describes:
        the only ones the resource and status rules have anything to say about."""
        return [unit for unit in self.package.units if unit.node in self.api_calls]

    def calls_to(self, import_path: str, name: str) -> Iterator[tuple[Unit, Node]]:
        """(unit, call) for each call of import_path.name in the package's functions."""
        by_node = {unit.node: unit for unit in self.package.units}
        for call, fact in self.calls.items():
            if fact.import_path == import_path and fact.name == name:
                unit = by_node.get(syntax.enclosing_function(call))
                if unit is not None:
                    yield unit, call

    def status_call(self, expression: Node | None) -> CallFact | None:
        """The call, if the expression is a call that returns a status."""
        expression = syntax.unparen(expression)
        if expression is None or expression.type != "call_expression":
            return None
        fact = self.call(expression)
        return fact if fact is not None and fact.status is not None else None

    def status_targets(self, left: list[Node], right: list[Node]) -> list[tuple[Node, CallFact]]:
        """Where the statuses of an assignment go: one multi-valued call, or one to one."""
        if len(right) == 1:
            fact = self.status_call(right[0])
            if fact is None:
                return []
            index = fact.status.result_index(len(left))
            return [(left[index], fact)] if 0 <= index < len(left) else []
        if len(left) == len(right):
            return [(target, fact) for target, value in zip(left, right) if (fact := self.status_call(value)) is not None]
        return []

    def calls_of(self, unit: Unit) -> list[Node]:
        """The calls in this package whose callee is `unit`."""
        # A package-level variable's literal is called by the variable's name.
        stored = unit.stored_in if unit.kind is UnitKind.LITERAL and not unit.nested else None
        name = stored.name if stored is not None else unit.name.rsplit(".", 1)[-1]
        by_target = self._grouped(self._calls_by_target, self._by_name(), name, lambda call: self.callee(call).target)
        return list(by_target.get(unit, ()))

    def calls_named(self, name: str) -> list[Node]:
        """The calls `name(...)` and `x.name(...)` of the package (conversions
        too), in file and source order, from the files' indexes."""
        return [call for _, call in self._by_name().get(name, ())]

    def _by_name(self) -> dict[str, list[tuple[Node, Node]]]:
        if self._calls_by_name is None:
            self._calls_by_name = {}
            for parsed in self.package.files:
                for name, calls in self._file_calls(parsed).items():
                    self._calls_by_name.setdefault(name, []).extend((parsed.root, call) for call in calls)
        return self._calls_by_name

    def named_calls_in(self, unit: Unit) -> list[Node]:
        """The calls `f(...)` and `x.f(...)` anywhere in unit's body, its
        func literals included: taken from the file's index by position,
        never by walking the body (a walk per function of a 10,000-function
        package holds a million node objects)."""
        body = unit.body
        if body is None:
            return []
        root = unit.file.root
        ordered = self._named_calls.get(root)
        if ordered is None:
            by_name = self._file_calls(unit.file)
            calls = sorted((call for found in by_name.values() for call in found), key=lambda call: call.start_byte)
            ordered = self._named_calls[root] = ([call.start_byte for call in calls], calls)
        starts, calls = ordered
        low = bisect.bisect_left(starts, body.start_byte)
        high = bisect.bisect_left(starts, body.end_byte)
        return calls[low:high]

    def _file_calls(self, parsed) -> dict[str, list[Node]]:
        """A file's calls by callee name, gathered once for calls_of and
        named_calls_in alike."""
        found = self._by_name_per_file.get(parsed.root)
        if found is None:
            found = self._by_name_per_file[parsed.root] = syntax.calls_by_name(parsed.index)
        return found

    def literals_of(self, unit: Unit) -> list[Unit]:
        """The func literals written directly in a function."""
        return self._literals_by_parent.get(unit.node, [])

    def local_callees(self, unit: Unit) -> list[Unit]:
        """The named functions and methods of the package called anywhere in
        unit's body, its func literals included: the edges along which the
        per-function facts of the analyses are solved, callees first."""
        found = []
        for call in self.named_calls_in(unit):
            target = self.callee(call).target
            if target is not None and target.kind is not UnitKind.LITERAL:
                found.append(target)
        return found

    def method_values(self, unit: Unit) -> list[Node]:
        """`d.pushForJob` used as a value (not called): a method handed on."""
        if self._selectors is None:
            self._selectors = {}
            for parsed in self.package.files:
                for selector in syntax.selectors(parsed.root):
                    name = syntax.text(selector.child_by_field_name("field"))
                    self._selectors.setdefault(name, []).append((parsed.root, selector))
        method = unit.name.rsplit(".", 1)[-1]
        by_method = self._grouped(
            self._values_by_method, self._selectors, method, lambda selector: self._method_value(selector, method),
        )
        return list(by_method.get(unit, ()))

    def _method_value(self, selector: Node, method: str) -> Unit | None:
        """The method `x.method` names where it is not called, else None."""
        parent = selector.parent
        if parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == selector:
            return None
        return self._method(syntax.unparen(selector.child_by_field_name("operand")), method)

    def _grouped(
        self, memo: dict[str, dict[Unit, list[Node]]], candidates: dict[str, list[tuple[Node, Node]]], name: str,
        target_of: Callable[[Node], Unit | None],
    ) -> dict[Unit, list[Node]]:
        """The nodes that spell `name`, grouped by the function they name:
        classified once for all the functions and methods of that name
        (4,000 types with a Run method asked one by one made this quadratic)."""
        grouped = memo.get(name)
        if grouped is None:
            grouped = memo[name] = {}
            for root, node in candidates.get(name, []):
                self.package.resolution.ensure(root, node)
                target = target_of(node)
                if target is not None:
                    grouped.setdefault(target, []).append(node)
        return grouped

    def references(self, symbol: Symbol) -> list[Node]:
        """The identifiers that refer to a symbol (its declarations included).
        A package-level symbol can be referred to anywhere its name is
        written: those declarations are resolved first; a local one only in
        its (resolved) function."""
        resolution = self.package.resolution
        if not symbol.is_local:
            resolution.ensure_mentioning(symbol.name)
        if self._references is None:
            self._references = {}
        if self._references_size != len(resolution.refs):
            # refs only grow, in insertion order: index just the new ones.
            for node, found in islice(resolution.refs.items(), self._references_size, None):
                self._references.setdefault(found, []).append(node)
            self._references_size = len(resolution.refs)
        return self._references.get(symbol, [])
    _methods: dict[str, list[Unit]] = field(default_factory=dict, repr=False)
    _implementations: dict[str, str] | None = field(default=None, repr=False)

    def call(self, node: Node | None) -> CallFact | None:
        if node is None:
            return None
        return self.calls.get(syntax.unparen(node))

    def unit_of(self, symbol: Symbol | None) -> Unit | None:
        """The function a package-level function symbol, or a local variable
        bound to a func literal, stands for."""
        if symbol is None:
            return None
        found = self._units_by_symbol.get(symbol)
        if found is None and symbol.is_local and symbol.function is not None and symbol not in self._no_literal:
            for unit in self._literals_by_parent.get(symbol.function, []):
                if unit.stored_in is symbol:
                    self._units_by_symbol[symbol] = found = unit
                    break
            else:
                self._no_literal.add(symbol)
        return found

    def callee(self, call: Node) -> Callee:
        found = self._callees.get(call)
        if found is None:
            found = self._callees[call] = self._classify(call)
        return found

    def qualified(self, call: Node) -> CallFact | None:
        """What `pkg.F(...)` names, watched package or not (`fmt.Errorf` as
        well as `C.cudaMalloc`): the unwatched ones kept apart, so that
        `calls` is the same set whatever the rules asked before."""
        fact = self.calls.get(call)
        if fact is None:
            if call not in self._unwatched:
                self._unwatched[call] = _qualified_call(call, self.package, self.knowledge)
            fact = self._unwatched[call]
        return fact

    def _classify(self, call: Node) -> Callee:
        fact = self.qualified(call)
        raw = call.child_by_field_name("function")
        function = self._generic(syntax.unparen(raw))
        written = syntax.text(function)
        if fact is not None:
            if fact.api is not None:
                return Callee(CalleeKind.API, written, fact.api)
            if (
                self.knowledge.is_type(fact.import_path, fact.name) or (fact.import_path, fact.name) in _CONVERSIONS
                or described_type_conversion(self.knowledge, fact, call)
                or (fact.import_path == "C" and self.c_view is not None and self.c_view.is_type(fact.name))
            ):
                return Callee(CalleeKind.CONVERSION, written)
            if self.imported.fact(NamedType, fact.import_path, fact.name) is not None:
                return Callee(CalleeKind.CONVERSION, written)  # `cuvs.CuvsError(st)`: a type of that package
            # What the knowledge leaves undescribed in a package whose source
            # was summarised (go-dcgm's CreateGroup beside its Init) is what
            # the summary says: source wins.
            if self.imported.knows(fact.import_path, fact.name):
                return Callee(CalleeKind.MODULE, written, imported=(fact.import_path, fact.name))
            if fact.import_path in self.knowledge.import_paths:
                return Callee(CalleeKind.FAMILY, written)
            if fact.import_path in BORROWING_STD or (fact.import_path, fact.name) in _BORROWING_STD_FUNCS:
                return Callee(CalleeKind.STD_BORROW, written)
            if raw is not None and raw.type == "parenthesized_expression" and fact.name[:1].isupper():
                return Callee(CalleeKind.CONVERSION, written)  # `(cr.CudaError)(ret)`: a type of that package
            return Callee(CalleeKind.STD_BORROW if logs(call) else CalleeKind.UNKNOWN, written)
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
            bound = self._bound_function(symbol)
            if bound is not None:
                return Callee(CalleeKind.LOCAL, written, target=bound, symbol=symbol)
            return Callee(CalleeKind.VALUE if symbol.kind is SymbolKind.VAR else CalleeKind.UNKNOWN, written, symbol=symbol)
        if function.type == "selector_expression":
            operand = syntax.unparen(function.child_by_field_name("operand"))
            method = syntax.text(function.child_by_field_name("field"))
            target = self._method(operand, method)
            if target is not None:
                return Callee(CalleeKind.LOCAL, written, target=target)
        return Callee(CalleeKind.STD_BORROW if logs(call) else CalleeKind.UNKNOWN, written)

    def _bound_function(self, symbol: Symbol) -> Unit | None:
        """The func literal a package-level variable is initialised with
        (`var dcgmInit = func(args ...string) (func(), error) { return
        dcgm.Init(...) }`, kept in a variable so that tests can swap it),
        where no file but a test assigns the variable: a call of it runs
        that literal, as a call of a function does."""
        if symbol.kind is not SymbolKind.VAR or symbol.is_local or symbol.init is None or symbol.init_index >= 0:
            return None
        literal = self._literals.get(syntax.unparen(symbol.init))
        if literal is None or self.swapped_outside_tests(symbol):
            return None  # swapped outside tests: which function runs is not known
        return literal

    def swapped_outside_tests(self, symbol: Symbol) -> bool:
        """Whether a file other than a test assigns the package-level
        variable, or takes its address: a function kept in a variable so
        that tests can swap it is otherwise the function it is initialised
        with."""
        for reference in self.references(symbol):
            if reference == symbol.node or reference.parent is None:
                continue
            holder = reference.parent.parent if reference.parent.type == "expression_list" else None
            assigned = holder is not None and holder.type == "assignment_statement" and holder.child_by_field_name("left") == reference.parent
            taken = syntax.is_address_of(reference.parent)
            if (assigned or taken) and not self._in_test_file(reference):
                return True
        return False

    def _in_test_file(self, node: Node) -> bool:
        root = syntax.root_of(node)
        return any(parsed.root == root and parsed.source.path.name.endswith("_test.go") for parsed in self.package.files)

    def _generic(self, function: Node | None) -> Node | None:
        """`CudaMalloc[int]` in call position, where CudaMalloc is a function
        of the package: that function, instantiated; anything else as it is
        (`handlers[i]` is an element of a slice of functions)."""
        named = syntax.instantiated(function)
        if named is not None and named.type == "identifier":
            symbol = self.package.resolution.symbol(named)
            if symbol is not None and symbol.kind is SymbolKind.FUNC:
                return named
        return function

    def local_target(self, call: Node) -> Unit | None:
        """The function or method of this package a call runs, whatever the
        knowledge says of it: inside a described package (gorgonia.org/cu
        analysed itself) its own API is both."""
        function = self._generic(syntax.called(call))
        if function is None:
            return None
        if function.type == "identifier":
            symbol = self.package.resolution.symbol(function)
            return self._units_by_symbol.get(symbol) if symbol is not None and symbol.kind is SymbolKind.FUNC else None
        if function.type == "selector_expression":
            operand = syntax.unparen(function.child_by_field_name("operand"))
            return self._method(operand, syntax.text(function.child_by_field_name("field")))
        return None

    def _method(self, operand: Node | None, method: str) -> Unit | None:
        """A method of this package, found through the receiver's type (declared,
        a literal's, a constructor's, a field's, promoted, an interface's one
        implementation); a receiver of unknown or another package's type: None."""
        if not self._methods.get(method) or operand is None:
            return None
        type_name = self.types.type_of(operand)
        if type_name is None:
            return None
        return self._method_of(self.implementation(type_name), method)

    def implementation(self, type_name: str) -> str:
        """The package's one type implementing the interface `type_name`, whose
        methods its values' calls run (`*faissIndex` of `Index`); or the name."""
        if self._implementations is None:
            self._implementations = sole_implementations(self.package, with_tests=True)
        return self._implementations.get(type_name, type_name)

    def literal(self, node: Node | None) -> Unit | None:
        """The unit of a func literal node."""
        return self._literals.get(node) if node is not None else None

    def local_type(self, symbol: Symbol | None) -> str | None:
        """The package-declared type a variable is declared with (`b *Buffer`)."""
        return named_type(symbol.type_node) if symbol is not None and symbol.type_node is not None else None

    def struct_types(self) -> list[str]:
        """The names of the package's struct types, in declaration order."""
        return list(self.types.structs())

    def methods_of_type(self, type_name: str) -> list[Unit]:
        """The methods declared with receiver T or *T (indexed once: a scan
        per type was quadratic in a package of thousands of types)."""
        if self._methods_by_type is None:
            self._methods_by_type = {}
            for units in self._methods.values():
                for unit in units:
                    receiver = unit.receiver_type
                    self._methods_by_type.setdefault(receiver, []).append(unit)
        return list(self._methods_by_type.get(type_name, ()))

    def has_method(self, type_name: str, method: str) -> bool:
        """Whether a package type has the method, its own or promoted from
        a package type it embeds."""
        return self._method_of(type_name, method) is not None

    def _method_of(self, type_name: str, method: str) -> Unit | None:
        """The method of a type or, promoted, of the types it embeds (the
        shallowest, as Go selects it), without recursing along the chain."""
        seen = {type_name}
        level = [type_name]
        while level:
            for name in level:  # (by type: a scan of every method so named was quadratic in a ring of types)
                for unit in self.methods_of_type(name):
                    if unit.name in (f"{name}.{method}", f"(*{name}).{method}"):
                        return unit
            following = []
            for name in level:
                for embedded in self.types.structs().get(name, ({}, []))[1]:
                    if embedded not in seen:
                        seen.add(embedded)
                        following.append(embedded)
            level = following
        return None


def _result_typed(calls: CallIndex, call: Node, index: int, elements: bool = False) -> tuple[str, str] | None:
    """(import path, type) of a call's result `index`, or of its elements, as
    another package's facts or the knowledge say."""
    return module_call_typed(calls, call, index, elements=elements) or (api_result_type(calls, call, elements) if index == 0 else None)

def _qualified_call(node: Node, package: Package, knowledge: Knowledge) -> CallFact | None:
    function = syntax.called(node)
    function = syntax.instantiated(function) or function  # `device.CudaMalloc[uint64](...)`
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
    return as_written(CallFact(node, import_path, name, written, api_of(package, knowledge, import_path, name)))


def _index_own_api(facts: CallIndex, package: Package, knowledge: Knowledge) -> None:
    """Inside the package a knowledge file describes (analysing
    gorgonia.org/cu itself), `MemAlloc(n)` is the API `cu.MemAlloc` and
    `hStream.Destroy()` on a Stream is `cu.Stream.Destroy`."""
    path = package.import_path
    if path is None or path not in knowledge.import_paths:
        return
    resolution = package.resolution
    for parsed in package.files:
        for name, calls in facts._file_calls(parsed).items():
            for node in calls:
                if node in facts.calls:
                    continue
                function = syntax.unparen(node.child_by_field_name("function"))
                if function is None:
                    continue
                resolution.ensure(parsed.root, node)
                if function.type == "identifier":
                    symbol = resolution.symbol(function)
                    if symbol is None or symbol.kind is not SymbolKind.FUNC or symbol.is_local:
                        continue
                    qualified = name
                elif function.type == "selector_expression":
                    # Only the types the knowledge names methods of, as
                    # outside the package (a glob such as cu.[A-Z]* is no
                    # description of every method of every type).
                    type_name = facts.types.type_of(function.child_by_field_name("operand"))
                    if type_name not in knowledge.method_types.get(path, ()):
                        continue
                    qualified = f"{type_name}.{name}"
                else:
                    continue
                api = knowledge.lookup(path, qualified)
                if api is None:
                    continue
                facts.record(CallFact(node, path, qualified, syntax.text(function), api))


def _index_module_methods(facts: CallIndex, package: Package) -> None:
    """`dev.Alloc(n)` with `dev *gpu.Device` (declared, ranged over a slice
    of them, made by a function of gpu whose facts give its result's type,
    or a field of a struct of this package: `w.dev.Sync()`): a method of
    another package of the module, named `Device.Alloc` in that package's
    facts."""
    imported = facts.imported
    packages = imported.packages()
    # Every way of typing the receiver ends in a fact about `Type.method`:
    # a call of any other name is left unresolved (resolving every function
    # with a method call was a fifth of a run on moby).
    methods = {name.split(".", 1)[1] for path in packages for name in imported.objects(path) if "." in name}
    if not methods:
        return
    resolution = package.resolution
    # A file that imports none of them reaches their types only through a
    # type another file declares with one (`type NVML = nvmlsvc.NVML`, a
    # struct field of one): then every file is looked at.
    everywhere = _declares_types_of(package, packages)
    for parsed in package.files:
        if not everywhere and not any(imported_package.path in packages for imported_package in parsed.imports):
            continue
        chained = [
            name.parent.parent for name in parsed.index.callee_names
            if name.parent.type == "selector_expression" and syntax.text(name) in methods
        ]
        operands = ("identifier", "call_expression", "selector_expression", "index_expression")  # `s.Sync()`, `e.stream.Sync()`
        for node, function, operand in unclassified(facts, parsed.index.qualified_calls + chained, operands):
            method = syntax.text(function.child_by_field_name("field"))
            if method not in methods:
                continue
            resolution.ensure(parsed.root, node)
            if operand.type == "call_expression":
                # `gpu.Client().Alloc(n)`: the first result of a function of gpu.
                typed = module_call_typed(facts, operand, 0)
                if typed is not None and imported.knows(typed[0], f"{typed[1]}.{method}"):
                    facts.calls[node] = CallFact(node, typed[0], f"{typed[1]}.{method}", syntax.text(function), None)
                continue
            typed = (
                facts.types.imported_type_of(operand) or module_result_typed(facts, resolution.symbol(operand))
                or promoted(facts, operand, method, lambda typed: imported.knows(typed[0], f"{typed[1]}.{method}"))
            )
            if typed is None or typed[0] not in packages:
                continue
            name = f"{typed[1]}.{method}"
            if imported.knows(typed[0], name):
                facts.calls[node] = CallFact(node, typed[0], name, syntax.text(function), None)


def _declares_types_of(package: Package, packages: frozenset[str]) -> bool:
    """Whether a type declaration of the package spells a type of one of
    these packages (an alias, a struct field, an embedded type)."""
    for parsed in package.files:
        names = [name + "." for name in package.resolution.import_names(parsed.root, packages)]
        if names and any(
            declaration.type == "type_declaration" and any(name in syntax.text(declaration) for name in names)
            for declaration in parsed.root.children
        ):
            return True
    return False


def unwrap(node: Node | None, facts: CallIndex, views: bool = True) -> Node | None:
    """Strip parentheses and conversions: `(*C.float)(unsafe.Pointer(&p))` is
    `&p`; `*(*unsafe.Pointer)(unsafe.Pointer(&p))` reads p's bits, and so
    does a call of the package's accessor (`p.ptr()`): both are `p`. With
    `views`, `unsafe.Slice(p, n)` is p and `unsafe.SliceData(s)` is s (the
    same memory); without, a pointer into a slice stays one."""
    node = syntax.unparen(node)
    while node is not None:
        if node.type == "call_expression" and facts.callee(node).kind is CalleeKind.CONVERSION:
            arguments = syntax.children(node.child_by_field_name("arguments"))
            if len(arguments) != 1:
                return node
            node = syntax.unparen(arguments[0])
        elif node.type == "type_conversion_expression":
            node = syntax.unparen(node.child_by_field_name("operand"))
        elif node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) == "*":
            inner = unwrap(node.child_by_field_name("operand"), facts)
            if not syntax.is_address_of(inner):
                return node
            node = syntax.unparen(inner.child_by_field_name("operand"))
        elif node.type == "call_expression" and facts.callee(node).kind is CalleeKind.LOCAL and (read := facts.accessed(node)) is not None:
            node = read
        elif views and node.type == "call_expression" and (viewed := viewed_pointer(node, facts)) is not None:
            node = viewed
        else:
            return node
    return node


def _inside(node: Node | None) -> Node | None:
    """The variable whose memory an address points into: `&h.device.s[0]`
    and `&h.host[0]` are inside h; `h` is h."""
    if syntax.is_address_of(node):
        node = syntax.unparen(node.child_by_field_name("operand"))
        while node is not None and node.type in ("index_expression", "selector_expression"):
            node = syntax.unparen(node.child_by_field_name("operand"))
    return node


def viewed_pointer(call: Node, facts: CallIndex) -> Node | None:
    """`unsafe.Slice(p, n)`: a slice over the memory p points at, so the
    same memory as p (device memory viewed as `[]T` is still that
    allocation); `unsafe.SliceData(s)`, the other way: the pointer to the
    memory s views (`C.free(unsafe.Pointer(unsafe.SliceData(s)))` frees
    what `unsafe.Slice` made s of). None for any other call."""
    fact = facts.call(call)
    if fact is None or fact.import_path != "unsafe" or fact.name not in ("Slice", "SliceData"):
        return None
    arguments = syntax.children(call.child_by_field_name("arguments"))
    return syntax.unparen(arguments[0]) if len(arguments) == (2 if fact.name == "Slice" else 1) else None


# Packages whose calls some rule looks for in the whole package, besides the
# ones the API knowledge describes.
_WATCHED = frozenset({"runtime", "unsafe", "reflect"})


def _with_function_facts(imported: ImportedFacts) -> frozenset[str]:
    """The imported packages some fact says more of than a type's name:
    a package that exports only its named types (NamedType) has no call to
    classify ahead (its conversions are classified when asked for); watching
    it would resolve every call of it (a fifth of moby's run)."""
    return frozenset(
        path for path in imported.packages()
        if any(kind is not NamedType for facts in imported.objects(path).values() for kind in facts)
    )


def index_calls(package: Package, knowledge: Knowledge, imported: ImportedFacts | None = None) -> CallIndex:
    """Classify the calls of watched packages (those the API knowledge
    describes, runtime, unsafe, reflect), resolving just the declarations that
    make them; other callees are classified on demand by CallIndex.callee."""
    facts = CallIndex(package, knowledge, imported or ImportedFacts())
    watched = knowledge.import_paths | _WATCHED | _with_function_facts(facts.imported) | package.named_bindings
    described = knowledge.import_paths | package.named_bindings
    resolution = package.resolution
    for parsed in package.files:
        names = resolution.import_names(parsed.root, watched)
        if not names:
            continue
        for node in parsed.index.qualified_calls:
            function = syntax.called(node)
            function = syntax.instantiated(function) or function
            operand = syntax.unparen(function.child_by_field_name("operand")) if function is not None else None
            if operand is None or syntax.text(operand) not in names:
                continue
            resolution.ensure(parsed.root, node)
            if (fact := _qualified_call(node, package, knowledge)) is not None:
                facts.record(fact)
    for unit in package.units:
        facts._literals[unit.node] = unit
        if unit.symbol is not None:
            # A function declared once per build-constrained file (constraints
            # are ignored): the variant whose file reaches the GPU API speaks
            # for it (`func NewNVML() *NVML` of nvml.go, not the stub's
            # `func NewNVML() Manager { return nil }`).
            current = facts._units_by_symbol.get(unit.symbol)
            if current is None or (_reaches_api(unit, described) and not _reaches_api(current, described)):
                facts._units_by_symbol[unit.symbol] = unit
        if unit.nested:
            facts._literals_by_parent.setdefault(unit.parent.node, []).append(unit)
        if unit.kind is UnitKind.METHOD:
            method = unit.name.rsplit(".", 1)[-1]
            facts._methods.setdefault(method, []).append(unit)
    index_dot_imports(facts, package, knowledge, watched)
    index_described_methods(facts, package, knowledge)
    _index_module_methods(facts, package)
    index_interface_statuses(facts, package, knowledge)
    _index_own_api(facts, package, knowledge)
    index_api_aliases(facts, package, knowledge)
    facts.c_view, c_side = c_side_calls(package, knowledge, facts.calls.get)
    for fact in c_side + loaded_procedure_calls(package, knowledge, facts.c_view, facts.imported):
        facts.record(fact)
    return facts


def _reaches_api(unit: Unit, described: frozenset[str] | set[str]) -> bool:
    return any(imported.path == "C" or imported.path in described for imported in unit.file.imports)


CALLS: Analysis[CallIndex] = Analysis(
    "calls", __doc__ or "", lambda p: index_calls(p.package, p.knowledge, p.run.imported),
    facts=exported_result_types, fact_type=ResultTypes,
)
