"""The type oracle: every Go type the analyser infers from syntax, in one place.

cudalint has no type checker; what it knows of a Go type it reads off the
syntax of one package: a variable's declared type, a composite literal's
type, `new(T)`, the first result of a constructor of the package, the element
of a ranged slice, array, map or channel, a struct field, an embedded
(promoted) type, a method's first result. The callers ask different
questions of the same syntax, and each query below answers one of them:

- `named_type`: the package type a type node names (`*T`, `T[int]` -> "T";
  a qualified type is another package's, so None);
- `short_type`: a type as a short string for access paths (`*Buffer` ->
  "Buffer", `cutil.Mem`, `[]*Buffer` and `map[K]*Buffer` -> "[]Buffer");
- `TypeOracle.type_of`: the package type of an expression;
- `TypeOracle.structs`: struct fields (name -> type node) and embedded types;
- `TypeOracle.embedded_imported`: the other packages' types a struct embeds;
- `TypeOracle.paths`: struct fields and method results as short strings;
- `TypeOracle.declared_type_of`: the type node a variable or struct field
  was declared with; `element_of` its element (what `x[i]` and a range
  variable over it are);
- `imported_type`: (import path, name) of a variable declared with another
  package's type;
- `declared_type`: the type node a local variable is declared or made with;
- `element_name`: the element type's name of a slice or array variable;
- `first_result`: the first result type node of a function's result;
- `result_types`: the package types of each of a function's results;
- `sole_implementations`: the package's interfaces that one type of the
  package implements, and that type.
"""

from __future__ import annotations

import re

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from cudalint import syntax
from cudalint.functions import Package, Unit, UnitKind
from cudalint.scope import Resolution, Symbol, SymbolKind


def named_type(type_node: Node | None) -> str | None:
    """T for T, *T, T[K]: a type declared in this package (a qualified type
    belongs to another package)."""
    while type_node is not None and type_node.type in ("pointer_type", "parenthesized_type", "unary_expression"):
        inner = syntax.children(type_node)
        type_node = inner[-1] if inner else None
    if type_node is not None and type_node.type == "generic_type":
        type_node = type_node.child_by_field_name("type")
    if type_node is not None and type_node.type in ("type_identifier", "identifier"):
        return syntax.text(type_node)
    return None


def short_type(node: Node | None) -> str | None:
    """A type as a short string: `*Buffer` -> "Buffer", `cutil.Mem`,
    `[]*Buffer` -> "[]Buffer" (and a map's value type the same way, as an
    access path indexes both); None for what names no type."""
    while node is not None and node.type in ("pointer_type", "parenthesized_type", "unary_expression"):
        inner = syntax.children(node)
        node = inner[-1] if inner else None
    if node is None:
        return None
    if node.type == "generic_type":
        return short_type(node.child_by_field_name("type"))
    if node.type in ("type_identifier", "identifier", "qualified_type"):
        return syntax.text(node)
    if node.type in ("slice_type", "array_type"):
        element = short_type(node.child_by_field_name("element"))
        return "[]" + element if element is not None else None
    if node.type == "map_type":
        value = short_type(node.child_by_field_name("value"))
        return "[]" + value if value is not None else None
    return None


def first_result(result: Node | None) -> Node | None:
    """The first result type node of a function's `result` field: the type
    itself, or the first declaration's of a parenthesised list."""
    if result is not None and result.type == "parameter_list":
        declarations = syntax.children(result)
        result = declarations[0].child_by_field_name("type") if declarations else None
    return result


def result_type_nodes(unit: Unit) -> tuple[Node | None, ...]:
    """Per result of a function, the type it is declared with (`(a, b
    unsafe.Pointer, err error)` gives three)."""
    result = unit.node.child_by_field_name("result")
    if result is None:
        return ()
    if result.type != "parameter_list":
        return (result,)
    found: list[Node | None] = []
    for declaration in syntax.children(result):
        names = declaration.children_by_field_name("name")
        found.extend([declaration.child_by_field_name("type")] * max(1, len(names)))
    return tuple(found)


def result_types(unit: Unit) -> tuple[str, ...]:
    """Per result of a function, the package's own type it is declared with
    (`*Device` gives "Device"), "" for any other: importers type their
    variables by it."""
    return tuple(named_type(node) or "" for node in result_type_nodes(unit))


def range_position(symbol: Symbol) -> tuple[Node, int] | None:
    """(the ranged expression, the variable's position on the left) of a
    range variable: `for i, r := range reqs` gives (reqs, 1) for r."""
    declared = symbol.node
    holder = declared.parent.parent if declared is not None and declared.parent is not None else None
    if holder is None or holder.type != "range_clause":
        return None
    left = [c.id for c in syntax.expressions(holder.child_by_field_name("left"))]
    right = syntax.unparen(holder.child_by_field_name("right"))
    if right is None or declared.id not in left:
        return None
    return right, left.index(declared.id)


def element_of(collection: Node | None, ranged_position: int | None = None) -> Node | None:
    """The element type node of a slice, array, map (its value) or channel
    type node, pointers stripped: what `x[i]` is (`ranged_position` None),
    or what the variable at that position of `for k, v := range x` is."""
    while collection is not None and collection.type in ("pointer_type", "parenthesized_type"):
        inner = syntax.children(collection)
        collection = inner[0] if inner else None
    if collection is None:
        return None
    if collection.type == "channel_type":
        return collection.child_by_field_name("value") if ranged_position == 0 else None
    if ranged_position == 0:
        return None  # an index or a key
    if collection.type in ("slice_type", "array_type"):
        return collection.child_by_field_name("element")
    if collection.type == "map_type":
        return collection.child_by_field_name("value")
    return None


def imported_type(resolution: Resolution, symbol: Symbol | None) -> tuple[str, str] | None:
    """(import path, type name) of a variable declared with a qualified
    type, pointers stripped: `t *testing.T` -> ("testing", "T")."""
    if symbol is None or symbol.type_node is None:
        return None
    return qualified_type(resolution, symbol.type_node)


def returned_imported_type(resolution: Resolution, symbol: Symbol | None) -> tuple[str, str] | None:
    """(import path, type name) of a variable made by a call of a function
    of the package whose declared result is another package's type:
    `logger := initLogger(level)` with `func initLogger(string) *zap.Logger`."""
    init = syntax.unparen(symbol.init) if symbol is not None and symbol.kind is SymbolKind.VAR and symbol.init_index <= 0 else None
    function = syntax.unparen(init.child_by_field_name("function")) if init is not None and init.type == "call_expression" else None
    called = resolution.symbol(function) if function is not None and function.type == "identifier" else None
    declaration = called.node.parent if called is not None and called.kind is SymbolKind.FUNC and called.node is not None else None
    if declaration is None or declaration.type != "function_declaration":
        return None
    result = nth_result(declaration.child_by_field_name("result"), max(symbol.init_index, 0))
    return qualified_type(resolution, result) if result is not None else None


def qualified_type(resolution: Resolution, type_node: Node | None, depth: int = 0) -> tuple[str, str] | None:
    """(import path, type name) a type node names in another package,
    pointers stripped: `*nvml.Device` -> (".../nvml", "Device"); through an
    alias of the package (`type NVML = nvmlsvc.NVML`)."""
    node = type_node
    while node is not None and node.type in ("pointer_type", "parenthesized_type"):
        inner = syntax.children(node)
        node = inner[0] if inner else None
    if node is not None and node.type == "generic_type":
        node = node.child_by_field_name("type")  # `devslice.Slice[float32]`: the generic type instantiated
    if node is not None and node.type == "type_identifier" and depth < 8:
        symbol = resolution.package_symbols.get(syntax.text(node))
        spec = symbol.node.parent if symbol is not None and symbol.kind is SymbolKind.TYPE and symbol.node is not None else None
        if spec is not None and spec.type == "type_alias":
            return qualified_type(resolution, spec.child_by_field_name("type"), depth + 1)
        return None
    if node is None or node.type != "qualified_type":
        return None
    package = node.child_by_field_name("package")
    name = node.child_by_field_name("name")
    file_scope = resolution.file_scopes.get(syntax.root_of(node))
    imported = file_scope.names.get(syntax.text(package)) if file_scope is not None else None
    if imported is None or imported.kind is not SymbolKind.PACKAGE:
        return None
    return imported.import_path or "", syntax.text(name)


def struct_fields(struct: Node) -> list[Node]:
    """The field declarations of a struct type node (not those of the
    anonymous structs nested in it)."""
    lists = [child for child in syntax.children(struct) if child.type == "field_declaration_list"]
    return [member for body in lists for member in syntax.children(body) if member.type == "field_declaration"]


def anonymous_field(struct: Node | None, field: str) -> Node | None:
    """The type node of a field of an anonymous struct type (`struct { A, B T }`)."""
    while struct is not None and struct.type in ("pointer_type", "parenthesized_type"):
        inner = syntax.children(struct)
        struct = inner[-1] if inner else None
    if struct is None or struct.type != "struct_type":
        return None
    for member in struct_fields(struct):
        if field in (syntax.text(name) for name in member.children_by_field_name("name")):
            return member.child_by_field_name("type")
    return None


def nth_result(result: Node | None, index: int) -> Node | None:
    """The type node of a function's index-th result (`(T, error)`, `(a, b T)`)."""
    if result is None:
        return None
    if result.type != "parameter_list":
        return result if index == 0 else None
    position = 0
    for declaration in syntax.children(result):
        count = max(1, len(declaration.children_by_field_name("name")))
        if index < position + count:
            return declaration.child_by_field_name("type")
        position += count
    return None


def declared_type(resolution: Resolution, variable: Node) -> Node | None:
    """The type node a local variable is declared with, or takes from its
    initialiser: a composite literal's type, `make(T, ...)`'s T, the first
    result of a function declared in the package."""
    symbol = resolution.symbol(variable)
    if symbol is None or not symbol.is_local:
        return None
    if symbol.type_node is not None:
        return symbol.type_node
    init = syntax.unparen(symbol.init) if symbol.init_index < 0 else None
    if init is not None and init.type == "composite_literal":
        return init.child_by_field_name("type")
    if init is None or init.type != "call_expression" or symbol.init_index > 0:
        return None
    function = init.child_by_field_name("function")
    if syntax.text(function) == "make":
        arguments = syntax.children(init.child_by_field_name("arguments"))
        return arguments[0] if arguments else None
    if function.type != "identifier":
        return None
    called = resolution.symbol(function)
    declaration = called.node.parent if called is not None and called.node is not None else None
    if declaration is None or declaration.type != "function_declaration":
        return None
    return first_result(declaration.child_by_field_name("result"))


def element_name(symbol: Symbol) -> str | None:
    """The element type's name (`int`, `C.float`) of a slice or array
    variable, from its declared type or its initialiser (`make([]int, n)`,
    `[]int{...}`, `[4]int{}`)."""
    declared = symbol.type_node
    if declared is None and symbol.init is not None and symbol.init_index < 0:
        init = syntax.unparen(symbol.init)
        if init is not None and init.type == "composite_literal":
            declared = init.child_by_field_name("type")
        elif init is not None and init.type == "call_expression" and syntax.text(init.child_by_field_name("function")) == "make":
            arguments = syntax.children(init.child_by_field_name("arguments"))
            declared = arguments[0] if arguments else None
    return slice_element_name(declared)


def type_declarations(package: Package, with_tests: bool = True) -> dict[str, Node]:
    """The package's named types, each with the type node it is declared as
    (`type CuvsError C.cuvsError_t`: `CuvsError` -> `C.cuvsError_t`)."""
    found: dict[str, Node] = {}
    for parsed in package.files:
        if not with_tests and parsed.source.path.name.endswith("_test.go"):
            continue
        for declaration in syntax.children(parsed.root):
            for spec in syntax.children(declaration) if declaration.type == "type_declaration" else ():
                name, body = spec.child_by_field_name("name"), spec.child_by_field_name("type")
                if spec.type in ("type_spec", "type_alias") and name is not None and body is not None:
                    found[syntax.text(name)] = body
    return found


def slice_element_name(declared: Node | None) -> str | None:
    """The element type's name of a slice or array type node (`[]int`: `int`)."""
    if declared is None or declared.type not in ("slice_type", "array_type", "implicit_length_array_type"):
        return None
    element = declared.child_by_field_name("element")
    if element is None or element.type not in ("type_identifier", "qualified_type"):
        return None
    return syntax.text(element)


@dataclass
class Paths:
    """The package's struct fields and method results as short types
    (`short_type`), by type name: what an access path `b.mem.ptr`,
    `b.items[]`, `b.Mem()` goes through."""

    fields: dict[str, dict[str, str]] = field(default_factory=dict)
    results: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def of(cls, package: Package) -> Paths:
        types = cls()
        for parsed in package.files:
            for declaration in syntax.children(parsed.root):
                if declaration.type == "type_declaration":
                    for spec in syntax.children(declaration):
                        name, body = spec.child_by_field_name("name"), spec.child_by_field_name("type")
                        if name is None or body is None or body.type != "struct_type":
                            continue
                        fields: dict[str, str] = {}
                        for member in syntax.walk(body):
                            if member.type != "field_declaration":
                                continue
                            member_type = short_type(member.child_by_field_name("type"))
                            names = member.children_by_field_name("name")
                            for field_name in names:
                                if member_type is not None:
                                    fields[syntax.text(field_name)] = member_type
                            if not names and member_type is not None:  # embedded
                                fields[member_type.rsplit(".", 1)[-1]] = member_type
                        types.fields[syntax.text(name)] = fields
        for unit in package.units:
            if unit.kind is UnitKind.METHOD:
                receiver = unit.receiver_type
                result_type = short_type(first_result(unit.node.child_by_field_name("result")))
                if result_type is not None:
                    types.results[(receiver, unit.name.rsplit(".", 1)[-1])] = result_type
        return types

    def along(self, start: str | None, path: tuple[str, ...]) -> list[str | None]:
        """The type at each prefix of the path: [type of root, of root.p1, ...]."""
        found = [start]
        current = start
        for step in path:
            if current is None:
                next_type = None
            elif step == "[]":
                next_type = current[2:] if current.startswith("[]") else None
            elif step.endswith("()"):
                next_type = self.results.get((current, step[:-2]))
            else:
                next_type = self.fields.get(current, {}).get(step)
            found.append(next_type)
            current = next_type
        return found


# Expressions whose comma-ok form gives their value first (`v, ok := m[k]`,
# `t, ok := x.(T)`, `v, ok := <-ch`).
_COMMA_OK = ("index_expression", "type_assertion_expression", "unary_expression")

class TypeOracle:
    """The package types of a package's expressions, as its syntax says them.
    `function_of` finds the function (unit) a symbol stands for, for the
    results of constructor calls."""

    def __init__(
        self, package: Package, function_of: Callable[[Symbol | None], Unit | None],
        api_result: Callable[[Node, int], tuple[str, str] | None] = lambda call, index: None,
        element_result: Callable[[Node, int], tuple[str, str] | None] = lambda call, index: None,
        interfaces: frozenset[tuple[str, str]] = frozenset(),
        field_type: Callable[[str, str, str], tuple[str, str] | None] = lambda path, name, field: None,
        variable_type: Callable[[str, str], tuple[str, str] | None] = lambda path, name: None,
    ):
        self.package = package
        # (import path, type) of another package's exported variable, as its facts say.
        self._variable_type = variable_type
        # (import path, type) of a field of another package's struct, as its facts say.
        self._field_type = field_type
        # (import path, type) of other packages' types known to be interfaces.
        self._interfaces = interfaces
        self._function_of = function_of
        self._api_result = api_result
        # (import path, type) of the elements of a call's result that is a
        # slice, as another package's facts say (`gpuinfo.Devices()`).
        self._element_result = element_result
        self._structs: dict[str, tuple[dict[str, Node], list[str]]] | None = None
        # Struct type -> the type nodes of the other packages' types it embeds.
        self._embedded_imported: dict[str, list[Node]] = {}
        self._interface_methods: dict[str, frozenset[str]] = {}
        # Interface -> method -> the result node its declaration gives.
        self._interface_results: dict[str, dict[str, Node | None]] = {}
        self._method_units: dict[tuple[str, str], Unit] | None = None
        self._paths: Paths | None = None

    def type_of(self, expression: Node | None, depth: int = 0) -> str | None:
        """The name of the package-declared type of an expression, if the
        syntax says it: a declared variable, `&T{}`, `new(T)`, a constructor
        of the package, a ranged element, a struct field."""
        node = syntax.unparen(expression)
        if node is None or depth > 8:
            return None
        if node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) in ("&", "*"):
            return self.type_of(node.child_by_field_name("operand"), depth + 1)
        if node.type in ("composite_literal", "type_assertion_expression"):
            return named_type(node.child_by_field_name("type"))
        if node.type == "identifier":
            symbol = self.package.resolution.symbol(node)
            if symbol is None or symbol.kind is not SymbolKind.VAR:
                return None
            if symbol.type_node is not None:
                return named_type(symbol.type_node)
            ranged = self.ranged_type(symbol)
            if ranged is not None:
                return named_type(ranged)
            init = syntax.unparen(symbol.init)
            if init is not None and (symbol.init_index < 0 or (symbol.init_index == 0 and init.type in _COMMA_OK)):
                return self.type_of(init, depth + 1)  # (`m, ok := p.kernels[name]`: the value's type)
            if init is not None and symbol.init_index == 0:
                return self.result_type(init)
            return None
        if node.type == "call_expression":
            function = syntax.unparen(node.child_by_field_name("function"))
            if function is not None and function.type == "identifier" and syntax.text(function) == "new":
                arguments = syntax.children(node.child_by_field_name("arguments"))
                return named_type(arguments[0]) if arguments else None
            if function is not None and function.type == "identifier":
                # `status(st)`: a conversion to a type of the package.
                symbol = self.package.resolution.symbol(function)
                if symbol is not None and symbol.kind is SymbolKind.TYPE and not symbol.is_local:
                    return syntax.text(function)
            return self.result_type(node)
        if node.type == "selector_expression":
            return named_type(self.selected_field(node, depth + 1))
        if node.type == "index_expression":
            return named_type(element_of(self.declared_type_of(node.child_by_field_name("operand"))))
        return None

    def declared_type_of(self, expression: Node | None) -> Node | None:
        """The type node a variable, or a field of one of the package's
        structs (`m.engines`), was declared with."""
        node = syntax.unparen(expression)
        if node is None:
            return None
        if node.type == "identifier":
            symbol = self.package.resolution.symbol(node)
            if symbol is None or symbol.kind is not SymbolKind.VAR:
                return None
            return symbol.type_node or declared_type(self.package.resolution, node)
        if node.type == "selector_expression":
            return self.selected_field(node)
        if node.type == "call_expression":
            return self._result_node(node, 0)
        return None

    def selected_field(self, selector: Node, depth: int = 0) -> Node | None:
        """The type node of the field `x.f` selects: of a struct of the
        package, also one promoted from a struct of the package it embeds
        (`pk.DenDevice` with `type ProvingKey struct { *deviceInfo }`), or
        of an anonymous struct (`pk.Pinned.A` with `Pinned struct { A T }`)."""
        operand, field = selector.child_by_field_name("operand"), syntax.text(selector.child_by_field_name("field"))
        owner = self.type_of(operand, depth)
        if owner is not None:
            return self.field_of(owner, field)
        return anonymous_field(self.declared_type_of(operand) if depth < 8 else None, field)

    def field_of(self, owner: str, field: str, depth: int = 0) -> Node | None:
        """The type node of a field of a package struct, promoted fields included."""
        fields, embedded = self.structs().get(owner, ({}, []))
        if field in fields or depth > 4:
            return fields.get(field)
        for inner in embedded:
            found = self.field_of(inner, field, depth + 1)
            if found is not None:
                return found
        return None

    def _result_node(self, call: Node, index: int) -> Node | None:
        """The type node of result `index` of a call of a function of this
        package (`for _, d := range devices()`)."""
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is not None and function.type == "selector_expression":
            # `m, ret := d.h.GetMig(i)` of an interface of the package, or
            # `dev, ret := l.DeviceGetHandleByUUID(u)` of one of its types.
            owner = self.type_of(function.child_by_field_name("operand"))
            method = syntax.text(function.child_by_field_name("field"))
            result = self.interface_result(owner, method) if owner else None
            if result is None and owner is not None and (unit := self._methods().get((owner, method))) is not None:
                result = unit.node.child_by_field_name("result")
            return nth_result(result, index)
        if function is None or function.type != "identifier":
            return None
        target = self._function_of(self.package.resolution.symbol(function))
        result = target.node.child_by_field_name("result") if target is not None else None
        return nth_result(result, index) if result is not None else None

    def _made_by_call(self, symbol: Symbol) -> tuple[Node, int] | None:
        """(the call, the result position) a variable was declared from: `devs
        := devices()`, `devs, err := gpuinfo.Devices()`."""
        init = syntax.unparen(symbol.init) if symbol.init is not None else None
        if init is None or init.type != "call_expression" or symbol.type_node is not None:
            return None
        return init, max(symbol.init_index, 0)

    def ranged_type(self, symbol: Symbol) -> Node | None:
        """The element type a range variable takes from a declared slice,
        array, map or channel (a variable, or a struct field: `for _, e :=
        range m.engines` with `engines []cuda.Engine`)."""
        ranged = range_position(symbol)
        if ranged is None:
            return None
        collection, position = ranged
        return element_of(self._collection_type(collection), position)

    def _collection_type(self, collection: Node | None) -> Node | None:
        """The declared type node of a collection, also where it is a call
        of a function of this package or a variable made by one."""
        node = syntax.unparen(collection)
        if node is not None and node.type == "identifier":
            symbol = self.package.resolution.symbol(node)
            made = self._made_by_call(symbol) if symbol is not None and symbol.kind is SymbolKind.VAR else None
            result = self._result_node(*made) if made is not None else None
            if result is not None:
                return result
        if node is not None and node.type == "composite_literal":
            return node.child_by_field_name("type")  # `range []*Buffer{p.x, p.y}`
        return self.declared_type_of(node)

    def _imported_elements(self, collection: Node | None, position: int | None) -> tuple[str, str] | None:
        """(import path, type) of the elements of a collection that another
        package's function returned (`range gpuinfo.Devices()`, `devs[i]`
        with `devs, err := gpuinfo.Devices()`), as its facts say."""
        if position == 0:
            return None  # an index or a key
        node = syntax.unparen(collection)
        if node is not None and node.type == "identifier":
            symbol = self.package.resolution.symbol(node)
            made = self._made_by_call(symbol) if symbol is not None and symbol.kind is SymbolKind.VAR else None
            return self._element_result(*made) if made is not None else None
        if node is not None and node.type == "call_expression":
            return self._element_result(node, 0)
        return None

    def imported_type_of(self, expression: Node | None, depth: int = 0) -> tuple[str, str] | None:
        """(import path, type name) of an expression of another package's
        type, as the syntax says it: a variable, parameter or package-level
        variable declared with it, a field of a package struct declared with
        it, a composite literal `&pkg.T{}`, a result of a function of this
        package declared with it (`dev, err := deviceByIndex(i)`), or of an
        API call whose result type the knowledge gives, or of a function of
        another package of the module whose facts give it (`api_result`)."""
        node = syntax.unparen(expression)
        if node is None or depth > 8:
            return None
        resolution = self.package.resolution
        if node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) in ("&", "*"):
            return self.imported_type_of(node.child_by_field_name("operand"), depth + 1)
        if node.type in ("composite_literal", "type_assertion_expression"):
            return qualified_type(resolution, node.child_by_field_name("type"))
        if node.type == "call_expression":
            return self._imported_result(node, 0)
        if node.type == "selector_expression":
            path = resolution.package_of(node.child_by_field_name("operand"))
            if path is not None:  # `utils.NVMLManager`: a variable of that package
                return self._variable_type(path, syntax.text(node.child_by_field_name("field")))
            declared = qualified_type(resolution, self.declared_type_of(node))
            if declared is None and (owner := self.imported_type_of(node.child_by_field_name("operand"), depth + 1)) is not None:
                # `w.Launch` of a `*device.Worker`: the field's type, as device's facts say.
                declared = self._field_type(*owner, syntax.text(node.child_by_field_name("field")))
            return declared
        if node.type == "index_expression":
            operand = node.child_by_field_name("operand")
            return qualified_type(resolution, element_of(self._collection_type(operand))) or self._imported_elements(operand, None)
        if node.type != "identifier":
            return None
        symbol = resolution.symbol(node)
        if symbol is None or symbol.kind is not SymbolKind.VAR:
            return None
        if symbol.type_node is not None:
            return qualified_type(resolution, symbol.type_node)
        ranged = self.ranged_type(symbol)
        if ranged is not None:
            return qualified_type(resolution, ranged)
        position = range_position(symbol)
        if position is not None:
            return self._imported_elements(*position)
        if symbol.init is None:
            return None
        init = syntax.unparen(symbol.init)
        if symbol.init_index < 0 or (symbol.init_index == 0 and init is not None and init.type in _COMMA_OK):
            return self.imported_type_of(init, depth + 1)  # `f, ok := p.funcs[name]`: the value's type
        return self._imported_result(init, symbol.init_index)

    def _imported_result(self, call: Node | None, index: int) -> tuple[str, str] | None:
        if call is None or call.type != "call_expression":
            return None
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is not None and function.type == "identifier":
            target = self._function_of(self.package.resolution.symbol(function))
            if target is not None:
                return qualified_type(self.package.resolution, nth_result(target.node.child_by_field_name("result"), index))
        if function is not None and function.type == "selector_expression":
            # `lib.NVML()` of an interface of the package declared to return `nvml.Interface`.
            typed = qualified_type(self.package.resolution, self._result_node(call, index))
            if typed is not None:
                return typed
        return self._api_result(call, index)

    def result_type(self, call: Node) -> str | None:
        """The first result type of a call of a function of this package (a
        constructor), or of a method of one of its interfaces."""
        call = syntax.unparen(call)
        if call is None or call.type != "call_expression":
            return None
        return named_type(self._result_node(call, 0))

    def structs(self) -> dict[str, tuple[dict[str, Node], list[str]]]:
        """Struct types of the package, in declaration order: field name ->
        type node (an embedded type under its name), and the names of
        embedded types."""
        if self._structs is None:
            self._structs = {}
            for parsed in self.package.files:
                for declaration in syntax.children(parsed.root):
                    if declaration.type != "type_declaration":
                        continue
                    for spec in syntax.children(declaration):
                        name, body = spec.child_by_field_name("name"), spec.child_by_field_name("type")
                        if name is not None and body is not None and body.type == "interface_type":
                            self._interface_embeds(syntax.text(name), body)
                        if name is not None and spec.type == "type_spec" and qualified_type(self.package.resolution, body) in self._interfaces:
                            # `type nvmlInterface nvml.Interface`: an interface's
                            # defined type has its methods, as if it embedded it
                            # (a defined type of a struct, `type Device cu.Device`, has none).
                            self._embedded_imported.setdefault(syntax.text(name), []).append(body)
                        if name is None or body is None or body.type != "struct_type":
                            continue
                        fields: dict[str, Node] = {}
                        embedded: list[str] = []
                        for member in syntax.walk(body):
                            if member.type != "field_declaration":
                                continue
                            type_node = member.child_by_field_name("type")
                            names = member.children_by_field_name("name")
                            for field_name in names:
                                fields[syntax.text(field_name)] = type_node
                            if not names and type_node is not None:
                                embedded_name = named_type(type_node)
                                if embedded_name is not None:
                                    embedded.append(embedded_name)
                                    fields[embedded_name] = type_node
                                elif qualified_type(self.package.resolution, type_node) is not None:
                                    self._embedded_imported.setdefault(syntax.text(name), []).append(type_node)
                        # A type declared once per build-constrained file
                        # (`type Collector struct` in gpu_linux.go and in
                        # types_windows.go; constraints are ignored) has the
                        # fields of every variant, the first file's type where
                        # two variants name one field.
                        earlier = self._structs.get(syntax.text(name))
                        if earlier is not None:
                            fields = {**fields, **earlier[0]}
                            embedded = earlier[1] + [e for e in embedded if e not in earlier[1]]
                        self._structs[syntax.text(name)] = (fields, embedded)
        return self._structs

    def _interface_embeds(self, name: str, body: Node) -> None:
        """Another package's interface an interface of the package embeds
        (`type Device interface { nvml.Device; ... }`): its methods are the
        interface's too."""
        methods = set()
        results: dict[str, Node | None] = {}
        for element in syntax.children(body):
            if element.type == "method_elem":
                method = syntax.text(element.child_by_field_name("name"))
                methods.add(method)
                results[method] = element.child_by_field_name("result")
            inner = syntax.children(element) if element.type == "type_elem" else []
            if len(inner) == 1 and qualified_type(self.package.resolution, inner[0]) is not None:
                self._embedded_imported.setdefault(name, []).append(inner[0])
        self._interface_methods[name] = frozenset(methods)
        self._interface_results[name] = results

    def embedding_types(self) -> list[str]:
        """The package's types (structs and interfaces) that embed another
        package's type."""
        self.structs()
        return list(self._embedded_imported)

    def interface_methods(self, type_name: str) -> frozenset[str]:
        """The methods an interface of the package declares itself."""
        self.structs()
        return self._interface_methods.get(type_name, frozenset())

    def _methods(self) -> dict[tuple[str, str], Unit]:
        """(receiver type, method) -> the package's method."""
        if self._method_units is None:
            self._method_units = {
                (unit.receiver_type, unit.name.rsplit(".", 1)[-1]): unit for unit in self.package.units if unit.kind is UnitKind.METHOD
            }
        return self._method_units

    def interfaces(self) -> list[str]:
        """The names of the package's interface types."""
        self.structs()
        return list(self._interface_results)

    def interface_result(self, type_name: str, method: str) -> Node | None:
        """The result list (or single result type) an interface of the
        package declares for one of its methods; None where it declares no
        result or no such method."""
        self.structs()
        return self._interface_results.get(type_name, {}).get(method)

    def embedded_imported(self, type_name: str) -> list[tuple[str, str]]:
        """(import path, type) of the other packages' types a package struct
        (or interface) embeds, directly or through the package types it
        embeds, shallowest first: their methods are promoted to it (`type op
        struct { *cudnn.Dropout }` has op.RequiredStateSize)."""
        found: list[tuple[str, str]] = []
        for name in self.with_embedded(type_name):
            for node in self._embedded_imported.get(name, ()):
                typed = qualified_type(self.package.resolution, node)
                if typed is not None and typed not in found:
                    found.append(typed)
        return found

    def with_embedded(self, type_name: str) -> list[str]:
        """The type and the package's types it embeds, in turn, shallowest first."""
        structs = self.structs()
        found = [type_name]
        for name in found:  # grows as it goes: breadth first
            found.extend(embedded for embedded in structs.get(name, ({}, []))[1] if embedded not in found)
        return found

    def paths(self) -> Paths:
        """Struct fields and method results as short types (`Paths`)."""
        if self._paths is None:
            self._paths = Paths.of(self.package)
        return self._paths


# The names of generated or hand-written test doubles (moq's `InterfaceMock`,
# mockery's `MockInterface`, `fakeClient`).
_TEST_DOUBLE = re.compile(r"^(?:[Mm]ock|[Ff]ake|[Ss]tub)[A-Z_]|^(?:mock|fake|stub)$|(?:Mock|Fake|Stub)$")


def sole_implementations(package: Package, with_tests: bool = False) -> dict[str, str]:
    """Each interface type of the package that exactly one type of the
    package implements (by method names, test files left out): the
    interface's name and that type's. A package that hands out its one
    implementation behind an interface (`func Client() DCGM { return
    dcgmProvider{} }`) makes its importers' calls of the interface's methods
    that type's methods; an interface that embeds another is left out (its
    method set is not all in view), and so is one several types implement.
    `with_tests` counts the types of the package's test files too (a test
    double makes the interface's calls in the package unknown); what the
    package exports never depends on them, nor on test doubles its own
    files declare for importers (moq's `InterfaceMock`)."""
    interfaces: dict[str, set[str]] = {}
    methods: dict[str, set[str]] = {}
    for parsed in package.files:
        if parsed.source.path.name.endswith("_test.go"):
            continue
        for declaration in parsed.root.named_children:
            if declaration.type != "type_declaration":
                continue
            for spec in declaration.named_children:
                body = spec.child_by_field_name("type") if spec.type == "type_spec" else None
                if body is None or body.type != "interface_type":
                    continue
                elements = syntax.children(body)
                if elements and all(element.type == "method_elem" for element in elements):
                    interfaces[syntax.text(spec.child_by_field_name("name"))] = {
                        syntax.text(element.child_by_field_name("name")) for element in elements
                    }
    if not interfaces:
        return {}
    for unit in package.units:
        if unit.kind is UnitKind.METHOD and (with_tests or not unit.file.source.path.name.endswith("_test.go")):
            receiver, _, method = unit.name.rpartition(".")
            receiver = receiver.removeprefix("(*").removesuffix(")")
            if not with_tests and _TEST_DOUBLE.search(receiver):
                continue  # moq's `InterfaceMock` beside the real type: importers' tests use it, their code does not
            methods.setdefault(receiver, set()).add(method)
    found = {}
    for interface, needed in interfaces.items():
        implementations = [name for name, have in methods.items() if needed <= have and name not in interfaces]
        if len(implementations) == 1:
            found[interface] = implementations[0]
    return found
