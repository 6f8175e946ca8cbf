"""The functions stage: every function declaration, method and func literal of
a package becomes a Unit, the thing every later stage works on.

A func literal is its own unit (it has its own control flow), but what a
resource rule concludes about it depends on how the enclosing code uses it:
deferred, started with `go`, called in place, passed to a call, stored or
returned. That use is recorded here, once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from tree_sitter import Node

from cudalint import syntax
from cudalint.parse import ParsedFile
from cudalint.scope import MAX_NESTING, MAX_DECLARATION_BYTES, Resolution, Symbol, resolve_package

T = TypeVar("T")


SYNTAX_ERROR = "contains a syntax error"


class UnitKind(str, Enum):
    FUNCTION = "function"
    METHOD = "method"
    LITERAL = "literal"


class LiteralUse(str, Enum):
    DEFERRED = "deferred"
    GO = "go"
    CALLED = "called"
    PASSED = "passed"
    STORED = "stored"
    RETURNED = "returned"


@dataclass(eq=False)
class Unit:
    """A function, method or func literal. What needs the function resolved
    (its parameters, the variable a literal is stored in, whether it could be
    resolved at all) is computed on first use: most units are never asked."""

    name: str
    kind: UnitKind
    node: Node
    file: ParsedFile
    resolution: Resolution = field(repr=False)
    parent: Unit | None = None
    result_count: int = 0
    use: LiteralUse | None = None
    use_node: Node | None = None
    symbol: Symbol | None = None
    syntax_problem: str | None = None
    _resolved: tuple | None = field(default=None, repr=False)

    def _details(self) -> tuple:
        if self._resolved is None:
            res = self.resolution
            declaration = res.ensure(self.file.root, self.node)
            problem = res.failed.get(declaration) if declaration is not None else None
            if problem is None and self.body is not None and self.node not in res.function_scopes:
                problem = "was not resolved"
            receivers = _parameters(res, self.node.child_by_field_name("receiver"))
            stored_in = _literal_use(self.node, res)[2] if self.kind is UnitKind.LITERAL else None
            self._resolved = (
                receivers[0] if receivers else None,
                _parameters(res, self.node.child_by_field_name("parameters")),
                _parameters(res, self.node.child_by_field_name("result")),
                stored_in,
                problem,
            )
        return self._resolved

    @property
    def receiver(self) -> Symbol | None:
        return self._details()[0]

    @property
    def params(self) -> list[Symbol]:
        return self._details()[1]

    @property
    def results(self) -> list[Symbol]:
        return self._details()[2]

    @property
    def variadic(self) -> bool:
        """Whether the last parameter is `...T` (an argument past it is one of its elements)."""
        last = self.params[-1].node if self.params else None
        return last is not None and last.parent is not None and last.parent.type == "variadic_parameter_declaration"

    @property
    def stored_in(self) -> Symbol | None:
        return self._details()[3]

    @property
    def problem(self) -> str | None:
        """Why the unit cannot be analysed (a syntax error, nesting too deep...)."""
        return self.syntax_problem or self._details()[4]

    @property
    def body(self) -> Node | None:
        return self.node.child_by_field_name("body")

    @property
    def receiver_type(self) -> str:
        """The name of a method's receiver type ("Buffer" of `(*Buffer).Free`); "" otherwise."""
        return self.name.rsplit(".", 1)[0].strip("()*") if self.kind is UnitKind.METHOD else ""

    @property
    def outermost(self) -> Unit:
        """The function or method a func literal is written in (itself for one)."""
        unit = self
        while unit.parent is not None:
            unit = unit.parent
        return unit

    @property
    def nested(self) -> bool:
        """A func literal inside a function, run where that function says;
        not one a package-level variable is initialised with, which its
        callers call by the variable's name as they would a function."""
        return self.kind is UnitKind.LITERAL and self.parent is not None

    @property
    def returns_error(self) -> bool:
        """Whether the last result reports failure as a non-nil value:
        declared `error`, or a custom error type of the package (see
        Resolution.is_error_type)."""
        result = self.node.child_by_field_name("result")
        if result is None:
            return False
        if result.type != "parameter_list":
            return self.resolution.is_error_type(result)
        declarations = syntax.children(result)
        return bool(declarations) and self.resolution.is_error_type(declarations[-1].child_by_field_name("type"))

    def __repr__(self) -> str:
        return f"<Unit {self.name} {self.file.display}:{syntax.line(self.node)}>"


@dataclass
class Package:
    """One Go package: the files of one directory that share a package clause."""

    directory: str
    name: str
    files: list[ParsedFile]
    resolution: Resolution
    units: list[Unit]
    # Its import path in its module (None outside a module, and for an
    # external `_test` package).
    import_path: str | None = None
    # Directories of C headers the configuration names (cside.py).
    c_include: tuple = ()
    # The language version its module's go.mod states (None outside a
    # module): fixes use no newer feature.
    go_version: tuple[int, int] | None = None
    # The imports that bind a C API by their name and have no source on this
    # machine: their calls are read as that API's (knowledge.NamedBindings).
    named_bindings: frozenset[str] = frozenset()


def by_exported_name(found: Iterable[tuple[Unit, T]]) -> dict[str, T]:
    """What an analysis says of the package's functions, keyed by the name
    importers call them (`exported_name`), for its facts; the rest dropped."""
    return {name: value for unit, value in found if (name := exported_name(unit)) is not None}


def exported_name(unit: Unit) -> str | None:
    """The name importers call a function or method by: `Alloc`, and
    `Device.Alloc` for an exported method of Device or *Device (or of an
    unexported type, on values the package hands out); None
    for what importers cannot call, and for functions of `_test.go` files
    (importers never see them, and what a package exports must not depend on
    whether its tests were read)."""
    if unit.file.source.path.name.endswith("_test.go") or unit.kind is UnitKind.LITERAL:
        return None
    if unit.kind is UnitKind.FUNCTION:
        return unit.name if unit.name[:1].isupper() else None
    receiver, _, method = unit.name.rpartition(".")
    type_name = receiver.removeprefix("(*").removesuffix(")")
    # An exported method of an unexported type is callable too, on a value an
    # exported function returns (`dev, err := nvml.DeviceGetHandleByIndex(0)`
    # of a binding whose handle type is `handle`).
    return f"{type_name}.{method}" if type_name and method[:1].isupper() else None


def _receiver_type(method: Node) -> str:
    receiver = method.child_by_field_name("receiver")
    if receiver is None:
        return "?"
    for declaration in syntax.children(receiver):
        type_node = declaration.child_by_field_name("type")
        pointer = False
        while type_node is not None and type_node.type in ("pointer_type", "parenthesized_type"):
            pointer = pointer or type_node.type == "pointer_type"
            inner = syntax.children(type_node)
            type_node = inner[0] if inner else None
        if type_node is not None and type_node.type == "generic_type":
            type_node = type_node.child_by_field_name("type")
        name = syntax.text(type_node) if type_node is not None else "?"
        return f"(*{name})" if pointer else name
    return "?"


def _parameters(resolution: Resolution, parameter_list: Node | None) -> list[Symbol]:
    if parameter_list is None or parameter_list.type != "parameter_list":
        return []
    found: list[Symbol] = []
    for declaration in syntax.children(parameter_list):
        for name in declaration.children_by_field_name("name"):
            symbol = resolution.declarations.get(name)
            if symbol is not None:
                found.append(symbol)
    return found


def result_count(result: Node | None) -> int:
    """How many results a function's `result` field declares (`(a, b T, err error)` is three)."""
    if result is None:
        return 0
    if result.type != "parameter_list":
        return 1
    count = 0
    for declaration in syntax.children(result):
        names = declaration.children_by_field_name("name")
        count += max(1, len(names))
    return count


def _literal_use(literal: Node, resolution: Resolution | None) -> tuple[LiteralUse, Node | None, Symbol | None]:
    child = literal
    parent = literal.parent
    while parent is not None and parent.type == "parenthesized_expression":
        child, parent = parent, parent.parent
    if parent is None:
        return LiteralUse.STORED, None, None
    if parent.type == "call_expression" and parent.child_by_field_name("function") == child:
        holder = parent.parent
        if holder is not None and holder.type == "defer_statement":
            return LiteralUse.DEFERRED, holder, None
        if holder is not None and holder.type == "go_statement":
            return LiteralUse.GO, holder, None
        return LiteralUse.CALLED, parent, None
    if parent.type == "argument_list":
        return LiteralUse.PASSED, parent.parent, None
    if parent.type == "expression_list":
        holder = parent.parent
        if holder is not None and holder.type == "return_statement":
            return LiteralUse.RETURNED, holder, None
        if holder is not None and holder.type in ("short_var_declaration", "assignment_statement", "var_spec"):
            right_field = "value" if holder.type == "var_spec" else "right"
            if holder.child_by_field_name(right_field) == parent:
                values = syntax.children(parent)
                targets = (
                    holder.children_by_field_name("name") if holder.type == "var_spec"
                    else syntax.expressions(holder.child_by_field_name("left"))
                )
                if len(values) == len(targets):
                    target = targets[values.index(child)]
                    symbol = resolution.symbol(target) if resolution is not None and target.type == "identifier" else None
                    return LiteralUse.STORED, holder, symbol
            return LiteralUse.STORED, holder, None
    return LiteralUse.STORED, parent, None


def _nests_too_deeply(declaration: Node, data: bytes) -> bool:
    """A declaration nested deeper than the analysis goes (tree-sitter's
    queries then miss what lies below, so it would be skipped in silence).
    A syntax tree grows about two nodes per level of source nesting, and
    that many levels need that many opening brackets: most declarations are
    cleared by counting bytes."""
    segment = data[declaration.start_byte:declaration.end_byte]
    if segment.count(b"{") + segment.count(b"(") + segment.count(b"[") < MAX_NESTING:
        return False
    return syntax.deeper_than(declaration, 2 * MAX_NESTING)


class _UnitCollector:
    def __init__(self, parsed: ParsedFile, resolution: Resolution):
        self.parsed = parsed
        self.resolution = resolution
        self.units: list[Unit] = []

    def make(self, node: Node, name: str, kind: UnitKind, parent: Unit | None, problem: str | None) -> Unit:
        res = self.resolution
        unit = Unit(
            name=name, kind=kind, node=node, file=self.parsed, resolution=res, parent=parent,
            result_count=result_count(node.child_by_field_name("result")),
        )
        if kind is UnitKind.FUNCTION:
            unit.symbol = res.declarations.get(node.child_by_field_name("name"))
        if kind is UnitKind.LITERAL:
            unit.use, unit.use_node, _ = _literal_use(node, None)
        if problem is None and node.has_error:
            problem = SYNTAX_ERROR
        unit.syntax_problem = problem
        self.units.append(unit)
        return unit

    def collect(self) -> list[Unit]:
        """Declarations in order, each followed by its literals; the literals
        of package-level declarations are numbered glob..funcN, as Go does."""
        literals = self.parsed.index.func_literals
        position = 0
        globals_counter = [0]
        package_level: list[Node] = []
        for declaration in syntax.children(self.parsed.root):
            size = declaration.end_byte - declaration.start_byte
            problem = f"is too large to analyse ({size // 1024} KiB)" if size > MAX_DECLARATION_BYTES else None
            if problem is None and _nests_too_deeply(declaration, self.parsed.source.data):
                problem = f"nests deeper than {MAX_NESTING} levels"
            inside: list[Node] = []
            while position < len(literals) and literals[position].start_byte < declaration.end_byte:
                if literals[position].start_byte >= declaration.start_byte:
                    inside.append(literals[position])
                position += 1
            if declaration.type == "function_declaration":
                unit = self.make(declaration, syntax.text(declaration.child_by_field_name("name")), UnitKind.FUNCTION, None, problem)
            elif declaration.type == "method_declaration":
                method = syntax.text(declaration.child_by_field_name("name"))
                unit = self.make(declaration, f"{_receiver_type(declaration)}.{method}", UnitKind.METHOD, None, problem)
            else:
                unit = None
            if problem is not None:
                continue  # the literals of what cannot be analysed are not analysed either
            if unit is None:
                package_level.extend(inside)
            else:
                self._name_literals(inside, unit, globals_counter)
        self._name_literals(package_level, None, globals_counter)
        return self.units

    def _name_literals(self, literals: list[Node], owner: Unit | None, globals_counter: list[int]) -> None:
        """Name literals the way the Go toolchain does: F.func1, F.func1.1, ...;
        a literal belongs to the innermost literal around it."""
        open_units: list[Unit] = []
        counters: dict[Unit | None, int] = {}
        for node in literals:
            while open_units and node.start_byte >= open_units[-1].node.end_byte:
                open_units.pop()
            parent = open_units[-1] if open_units else owner
            if parent is None:
                globals_counter[0] += 1
                name = f"glob..func{globals_counter[0]}"
            else:
                counters[parent] = counters.get(parent, 0) + 1
                number = counters[parent]
                name = f"{parent.name}.{number}" if parent.kind is UnitKind.LITERAL else f"{parent.name}.func{number}"
            unit = self.make(node, name, UnitKind.LITERAL, parent, None)
            open_units.append(unit)


def innermost_unit(units: list[Unit], node: Node) -> Unit | None:
    """The innermost function or literal of `units` whose text holds `node`."""
    found = None
    for unit in units:
        if unit.node.start_byte <= node.start_byte < unit.node.end_byte:
            if found is None or unit.node.start_byte >= found.node.start_byte:
                found = unit
    return found


def collect_packages(
    files: list[ParsedFile], directory: str, package_names: dict[str, str], *,
    import_path: str | None = None, c_include: tuple = (), go_version: tuple[int, int] | None = None,
    named_bindings: frozenset[str] = frozenset(),
) -> list[Package]:
    """Group a directory's files by package clause (a directory may hold `x`
    and `x_test`) and collect the units of each package; `import_path` is
    the directory's (an external `x_test` package has none), `c_include`
    and `go_version` the configuration's and the module's, `named_bindings`
    its imports read by their names."""
    by_name: dict[str, list[ParsedFile]] = {}
    for parsed in files:
        by_name.setdefault(parsed.package, []).append(parsed)
    packages: list[Package] = []
    for name in sorted(by_name):
        members = by_name[name]
        resolution = resolve_package(members, package_names)
        units: list[Unit] = []
        for parsed in members:
            units.extend(_UnitCollector(parsed, resolution).collect())
        packages.append(Package(
            directory, name, members, resolution, units,
            import_path=None if name.endswith("_test") else import_path, c_include=c_include, go_version=go_version,
            named_bindings=named_bindings,
        ))
    return packages
