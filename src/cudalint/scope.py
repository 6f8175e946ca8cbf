"""Lexical scopes of a Go package: which declaration every identifier refers to.

Passes must tell apart two `d`s declared in sibling blocks, a `:=` that
redeclares `err` in an inner scope (a new variable) from one that reuses it in
the same scope (an assignment), and `C.cudaFree` from a local variable named
`C`. This module answers those questions once, with Go's scoping rules, so
that no pass ever matches names by text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from enum import Enum

from tree_sitter import Node

from cudalint import syntax
from cudalint.parse import ParsedFile

MAX_NESTING = 1000
MAX_DECLARATION_BYTES = syntax.MAX_DECLARATION_BYTES

UNIVERSE_FUNCS = frozenset({
    "append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make",
    "max", "min", "new", "panic", "print", "println", "real", "recover",
})
UNIVERSE_VALUES = frozenset({"true", "false", "iota", "nil"})
UNIVERSE_TYPES = frozenset({
    "any", "bool", "byte", "comparable", "complex64", "complex128", "error", "float32", "float64",
    "int", "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16",
    "uint32", "uint64", "uintptr",
})

# Node kinds that only ever describe types: nothing inside them is a variable use.
_TYPE_NODES = frozenset({
    "type_identifier", "qualified_type", "pointer_type", "array_type", "implicit_length_array_type",
    "slice_type", "map_type", "channel_type", "function_type", "struct_type", "interface_type",
    "generic_type", "parenthesized_type", "negated_type", "type_arguments", "type_elem",
    "field_identifier", "package_identifier", "label_name", "type_parameter_list",
})


class NestingTooDeep(Exception):
    """Raised when statements nest beyond MAX_NESTING; the caller skips the function."""


class Nesting:
    """The depth of a recursive walk over statements, stopped at MAX_NESTING
    so that pathological input costs one notification, not the process.

        with self.nesting(node):
            ...recurse...
    """

    __slots__ = ("depth",)

    def __init__(self) -> None:
        self.depth = 0

    def __call__(self, node: Node | None) -> Nesting:
        if self.depth >= MAX_NESTING:
            raise NestingTooDeep(node)
        return self

    def __enter__(self) -> None:
        self.depth += 1

    def __exit__(self, *_exc: object) -> None:
        self.depth -= 1


class SymbolKind(str, Enum):
    VAR = "var"
    CONST = "const"
    TYPE = "type"
    FUNC = "func"
    PACKAGE = "package"
    BUILTIN = "builtin"


class Role(str, Enum):
    LOCAL = "local"
    PARAM = "param"
    RESULT = "result"
    RECEIVER = "receiver"
    GLOBAL = "global"
    IMPORT = "import"
    UNIVERSE = "universe"


@dataclass(eq=False)
class Symbol:
    name: str
    kind: SymbolKind
    role: Role
    node: Node | None = None
    type_node: Node | None = None
    init: Node | None = None
    init_index: int = -1
    import_path: str | None = None
    function: Node | None = None
    # The node whose extent is the variable's scope (a block, an if/for/switch
    # statement, a case clause, a function): flow that leaves it ends the
    # variable's life, e.g. at the end of a loop iteration.
    scope_node: Node | None = None

    @property
    def is_local(self) -> bool:
        return self.role in (Role.LOCAL, Role.PARAM, Role.RESULT, Role.RECEIVER)

    def __repr__(self) -> str:
        where = f"@{self.node.start_point[0] + 1}" if self.node is not None else ""
        return f"<{self.kind.value} {self.name}{where}>"


@dataclass(eq=False)
class Scope:
    parent: Scope | None
    node: Node | None
    function: Node | None
    names: dict[str, Symbol] = field(default_factory=dict)

    def lookup(self, name: str) -> Symbol | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None


@dataclass
class Resolution:
    """Identifier -> Symbol for one package, plus the scope of every function."""

    refs: dict[Node, Symbol] = field(default_factory=dict)
    declarations: dict[Node, Symbol] = field(default_factory=dict)
    function_scopes: dict[Node, Scope] = field(default_factory=dict)
    type_switch_symbols: dict[Node, list[Symbol]] = field(default_factory=dict)
    package_symbols: dict[str, Symbol] = field(default_factory=dict)
    file_scopes: dict[Node, Scope] = field(default_factory=dict)
    failed: dict[Node, str] = field(default_factory=dict)
    # Top-level declarations not resolved yet, with their file.
    _pending: dict[Node, _File] = field(default_factory=dict, repr=False)
    _files: dict[Node, _File] = field(default_factory=dict, repr=False)
    # Identifiers already looked up in vain (no resolution can add them now).
    _misses: set[int] = field(default_factory=set, repr=False)
    # Names whose mentioning declarations are all resolved.
    _mentioned: set[str] = field(default_factory=set, repr=False)
    _error_types: dict[tuple[str, bool], bool] = field(default_factory=dict, repr=False)

    def ensure(self, root: Node, node: Node) -> Node | None:
        """Resolve the top-level declaration of file `root` that holds `node`
        (if not done yet), and return that declaration."""
        file = self._files.get(root)
        declaration = file.declaration_at(node) if file is not None else None
        if declaration is not None and declaration in self._pending:
            _resolve_declaration(self, declaration, self._pending.pop(declaration))
        return declaration

    def declaration_text_of(self, root: Node, node: Node) -> bytes | None:
        """The bytes of the top-level declaration of file `root` holding `node`."""
        file = self._files.get(root)
        declaration = file.declaration_at(node) if file is not None else None
        return file.data[declaration.start_byte:declaration.end_byte] if declaration is not None else None

    def ensure_mentioning(self, name: str) -> None:
        """Resolve every declaration whose text contains `name`: the only
        ones that can refer to a package-level symbol of that name."""
        if not self._pending or name in self._mentioned:
            return
        self._mentioned.add(name)
        needle = name.encode()
        for file in self._files.values():
            for declaration in file.declarations_mentioning(needle):
                if declaration in self._pending:
                    _resolve_declaration(self, declaration, self._pending.pop(declaration))

    def ensure_all(self) -> None:
        for declaration in list(self._pending):
            file = self._pending.pop(declaration, None)
            if file is not None:
                _resolve_declaration(self, declaration, file)

    def symbol(self, identifier: Node | None) -> Symbol | None:
        """What an identifier refers to. Names are resolved one top-level
        declaration at a time, on demand: the first question about an
        identifier of a declaration not resolved yet resolves it here, so
        no caller can forget to and silently get None."""
        if identifier is None:
            return None
        found = self.refs.get(identifier)
        if found is None and self._pending and identifier.id not in self._misses:
            self._misses.add(identifier.id)
            declaration = self._pending_around(identifier)
            if declaration is not None:
                _resolve_declaration(self, declaration, self._pending.pop(declaration))
                found = self.refs.get(identifier)
        return found

    def _pending_around(self, node: Node) -> Node | None:
        """The unresolved top-level declaration holding node: found by
        position in each file's declarations, and confirmed to be in the same
        tree. Never by walking up: tree-sitter finds a parent by descending
        from the root, so walking up from 10,000 nested literals costs the
        square of the depth, for each identifier."""
        several = len(self._files) > 1
        for file in self._files.values():
            declaration = file.declaration_at(node)
            if declaration is None or declaration not in self._pending:
                continue
            if declaration == node:
                return declaration
            if declaration.child_with_descendant(node) is None:
                continue
            # child_with_descendant compares positions only: another file's
            # declaration at the same bytes passes it. Node equality knows
            # the tree; the smallest node at an identifier's bytes is itself.
            if not several or declaration.descendant_for_byte_range(node.start_byte, node.end_byte) == node:
                return declaration
        return None

    def is_error_type(self, type_node: Node | None) -> bool:
        """Whether a result declared with this type reports failure as a
        non-nil value: `error`, an interface of the package that embeds
        `error` or declares `Error() string` (a custom error interface), or
        a pointer to a type of the package with an `Error` method."""
        if type_node is None:
            return False
        if syntax.text(type_node) == "error":
            return True
        pointer = type_node.type == "pointer_type"
        inner = syntax.children(type_node)[-1] if pointer and syntax.children(type_node) else type_node
        if inner.type != "type_identifier":
            return False
        name = syntax.text(inner)
        if (name, pointer) not in self._error_types:
            self._error_types[(name, pointer)] = self._error_like(name, pointer)
        return self._error_types[(name, pointer)]

    def _error_like(self, name: str, pointer: bool) -> bool:
        symbol = self.package_symbols.get(name)
        spec = symbol.node.parent if symbol is not None and symbol.kind is SymbolKind.TYPE and symbol.node is not None else None
        body = spec.child_by_field_name("type") if spec is not None and spec.type == "type_spec" else None
        if body is None:
            return False
        if body.type == "interface_type":
            return any(
                (element.type == "method_elem" and syntax.text(element.child_by_field_name("name")) == "Error")
                or (element.type == "type_elem" and syntax.text(element) == "error")
                for element in syntax.children(body)
            )
        if not pointer:
            return False  # a value of a non-interface type is never nil
        for root in self.file_scopes:
            for declaration in syntax.children(root):
                if declaration.type != "method_declaration" or syntax.text(declaration.child_by_field_name("name")) != "Error":
                    continue
                receiver = declaration.child_by_field_name("receiver")
                if receiver is not None and syntax.text(receiver).replace("*", " ").split()[-1].rstrip(")") == name:
                    return True
        return False

    def package_of(self, identifier: Node | None) -> str | None:
        """The import path an identifier names, if it names an imported package."""
        symbol = self.symbol(identifier)
        if symbol is not None and symbol.kind is SymbolKind.PACKAGE:
            return symbol.import_path
        return None

    def constant_bool(self, expression: Node | None, depth: int = 0) -> bool | None:
        """The value of a boolean expression built from `true`, `false`,
        constants declared from them, `!`, `&&` and `||`; None otherwise.
        (The CFG never folds conditions; rules that must, ask here.)"""
        node = syntax.unparen(expression)
        if node is None or depth > 32:
            return None
        if node.type in ("true", "false"):
            return node.type == "true"
        if node.type == "identifier":
            symbol = self.symbol(node)
            if symbol is not None and symbol.kind is SymbolKind.CONST and symbol.init is not None:
                return self.constant_bool(symbol.init, depth + 1)
            return None
        if node.type == "unary_expression" and syntax.text(node.child_by_field_name("operator")) == "!":
            value = self.constant_bool(node.child_by_field_name("operand"), depth + 1)
            return None if value is None else not value
        if node.type == "binary_expression":
            operator = syntax.text(node.child_by_field_name("operator"))
            left = self.constant_bool(node.child_by_field_name("left"), depth + 1)
            right = self.constant_bool(node.child_by_field_name("right"), depth + 1)
            if operator == "&&":
                return False if left is False or right is False else (True if left and right else None)
            if operator == "||":
                return True if left is True or right is True else (False if left is False and right is False else None)
        return None

    def is_builtin(self, identifier: Node | None, name: str) -> bool:
        symbol = self.symbol(identifier)
        return symbol is not None and symbol.kind is SymbolKind.BUILTIN and symbol.name == name


_UNIVERSE: dict[str, Symbol] = {}
for _name in UNIVERSE_FUNCS:
    _UNIVERSE[_name] = Symbol(_name, SymbolKind.BUILTIN, Role.UNIVERSE)
for _name in UNIVERSE_VALUES:
    _UNIVERSE[_name] = Symbol(_name, SymbolKind.CONST, Role.UNIVERSE)
for _name in UNIVERSE_TYPES:
    _UNIVERSE[_name] = Symbol(_name, SymbolKind.TYPE, Role.UNIVERSE)


def default_import_name(path: str) -> str:
    """The package name an import path most likely declares (the go command's
    convention: the last element, skipping a major-version suffix)."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return path
    last = parts[-1]
    if len(parts) > 1 and last.startswith("v") and last[1:].isdigit():
        last = parts[-2]
    for suffix in (".v1", ".v2", ".v3", ".v4", ".v5", ".v6", ".v7", ".v8", ".v9"):
        if last.endswith(suffix):
            last = last[: -len(suffix)]
    if last.startswith("go-"):
        last = last[3:]
    if last.endswith("-go"):
        last = last[:-3]
    return last.replace("-", "_").replace(".", "_")


class _Resolver:
    def __init__(self, resolution: Resolution, package_scope: Scope):
        self.res = resolution
        self.package_scope = package_scope
        self.nesting = Nesting()
        self.cgo: Symbol | None = None  # the `import "C"` of the file being resolved

    # -- declarations -------------------------------------------------------

    def declare(self, scope: Scope, identifier: Node, kind: SymbolKind, role: Role, **extra) -> Symbol | None:
        name = syntax.text(identifier)
        if name == "_" or not name:
            return None
        symbol = Symbol(name, kind, role, identifier, function=scope.function, scope_node=scope.node, **extra)
        scope.names[name] = symbol
        self.res.refs[identifier] = symbol
        self.res.declarations[identifier] = symbol
        return symbol

    def declare_parameters(self, scope: Scope, parameter_list: Node | None, role: Role) -> None:
        if parameter_list is None or parameter_list.type != "parameter_list":
            return
        for declaration in syntax.children(parameter_list):
            type_node = declaration.child_by_field_name("type")
            for name in declaration.children_by_field_name("name"):
                self.declare(scope, name, SymbolKind.VAR, role, type_node=type_node)

    def declare_receiver_type_parameters(self, scope: Scope, receiver: Node | None) -> None:
        """`func (l *List[T]) Push(v T)`: the receiver's type arguments are
        the method's type parameters."""
        if receiver is None:
            return
        for generic in syntax.walk(receiver):
            if generic.type != "generic_type":
                continue
            arguments = generic.child_by_field_name("type_arguments")
            for name in syntax.walk(arguments) if arguments is not None else ():
                if name.type == "type_identifier":
                    self.declare(scope, name, SymbolKind.TYPE, Role.LOCAL)

    def declare_short(self, scope: Scope, left: list[Node], right: list[Node]) -> None:
        """`:=` declares the names new to *this* scope and assigns the others."""
        for index, identifier in enumerate(left):
            if identifier.type != "identifier":
                self.expression(identifier, scope)
                continue
            name = syntax.text(identifier)
            existing = scope.names.get(name)
            if existing is not None and existing.kind is SymbolKind.VAR:
                self.res.refs[identifier] = existing
                continue
            init, init_index = _initializer(left, right, index)
            self.declare(scope, identifier, SymbolKind.VAR, Role.LOCAL, init=init, init_index=init_index)

    # -- traversal ----------------------------------------------------------

    def function(self, node: Node, outer: Scope) -> None:
        scope = Scope(outer, node, node)
        self.res.function_scopes[node] = scope
        type_parameters = node.child_by_field_name("type_parameters")
        if type_parameters is not None:
            for declaration in syntax.children(type_parameters):
                for name in declaration.children_by_field_name("name"):
                    self.declare(scope, name, SymbolKind.TYPE, Role.LOCAL)
        self.declare_receiver_type_parameters(scope, node.child_by_field_name("receiver"))
        self.declare_parameters(scope, node.child_by_field_name("receiver"), Role.RECEIVER)
        self.declare_parameters(scope, node.child_by_field_name("parameters"), Role.PARAM)
        self.declare_parameters(scope, node.child_by_field_name("result"), Role.RESULT)
        body = node.child_by_field_name("body")
        if body is not None:
            self.statements(syntax.statements(body), scope)

    def statements(self, statements: list[Node], scope: Scope) -> None:
        for statement in statements:
            self.statement(statement, scope)

    def statement(self, node: Node | None, scope: Scope) -> None:
        if node is None:
            return
        with self.nesting(node):
            handler = getattr(self, "s_" + node.type, None)
            if handler is not None:
                handler(node, scope)
            else:
                self.expression(node, scope)

    def s_block(self, node: Node, scope: Scope) -> None:
        self.statements(syntax.statements(node), Scope(scope, node, scope.function))

    def s_short_var_declaration(self, node: Node, scope: Scope) -> None:
        right = syntax.expressions(node.child_by_field_name("right"))
        for expression in right:
            self.expression(expression, scope)
        self.declare_short(scope, syntax.expressions(node.child_by_field_name("left")), right)

    def s_var_declaration(self, node: Node, scope: Scope) -> None:
        for spec in syntax.value_specs(node):
            self._value_spec(spec, scope, SymbolKind.VAR if spec.type == "var_spec" else SymbolKind.CONST)

    s_const_declaration = s_var_declaration

    def _value_spec(self, spec: Node, scope: Scope, kind: SymbolKind) -> None:
        values = syntax.expressions(spec.child_by_field_name("value"))
        for value in values:
            self.expression(value, scope)
        names = spec.children_by_field_name("name")
        type_node = spec.child_by_field_name("type")
        self.expression(type_node, scope)
        for index, name in enumerate(names):
            init, init_index = _initializer(names, values, index)
            self.declare(scope, name, kind, Role.LOCAL, type_node=type_node, init=init, init_index=init_index)

    def s_type_declaration(self, node: Node, scope: Scope) -> None:
        for spec in syntax.children(node):
            name = spec.child_by_field_name("name")
            if name is not None:
                self.declare(scope, name, SymbolKind.TYPE, Role.LOCAL)
            self.expression(spec.child_by_field_name("type"), scope)

    def s_if_statement(self, node: Node, scope: Scope) -> None:
        inner = Scope(scope, node, scope.function)
        initializer = node.child_by_field_name("initializer")
        if initializer is not None:
            self.statement(initializer, inner)
        self.expression(node.child_by_field_name("condition"), inner)
        self.statement(node.child_by_field_name("consequence"), inner)
        alternative = node.child_by_field_name("alternative")
        if alternative is not None:
            self.statement(alternative, inner)

    def s_for_statement(self, node: Node, scope: Scope) -> None:
        inner = Scope(scope, node, scope.function)
        for header in syntax.children(node):
            if header.type == "for_clause":
                for part in ("initializer", "condition", "update"):
                    child = header.child_by_field_name(part)
                    if child is not None:
                        self.statement(child, inner)
            elif header.type == "range_clause":
                right = header.child_by_field_name("right")
                self.expression(right, inner)
                left = syntax.expressions(header.child_by_field_name("left"))
                if syntax.has_token(header, ":="):
                    for identifier in left:
                        if identifier.type == "identifier":
                            self.declare(inner, identifier, SymbolKind.VAR, Role.LOCAL)
                else:
                    for expression in left:
                        self.expression(expression, inner)
            elif header.type != "block":
                self.expression(header, inner)
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body, inner)

    def s_expression_switch_statement(self, node: Node, scope: Scope) -> None:
        inner = Scope(scope, node, scope.function)
        initializer = node.child_by_field_name("initializer")
        if initializer is not None:
            self.statement(initializer, inner)
        self.expression(node.child_by_field_name("value"), inner)
        for clause in syntax.children(node):
            if clause.type in ("expression_case", "default_case"):
                clause_scope = Scope(inner, clause, scope.function)
                for value in syntax.expressions(clause.child_by_field_name("value")):
                    self.expression(value, clause_scope)
                self.statements(syntax.statements(clause), clause_scope)

    def s_type_switch_statement(self, node: Node, scope: Scope) -> None:
        inner = Scope(scope, node, scope.function)
        initializer = node.child_by_field_name("initializer")
        if initializer is not None:
            self.statement(initializer, inner)
        value = node.child_by_field_name("value")
        self.expression(value, inner)
        aliases = syntax.expressions(node.child_by_field_name("alias"))
        alias = aliases[0] if aliases else None
        clause_symbols: list[Symbol] = []
        for clause in syntax.children(node):
            if clause.type not in ("type_case", "default_case"):
                continue
            clause_scope = Scope(inner, clause, scope.function)
            if alias is not None and syntax.text(alias) != "_":
                types = clause.children_by_field_name("type")
                symbol = Symbol(
                    syntax.text(alias), SymbolKind.VAR, Role.LOCAL, alias,
                    type_node=types[0] if len(types) == 1 else None, init=value, function=scope.function,
                    scope_node=clause,
                )
                clause_scope.names[symbol.name] = symbol
                clause_symbols.append(symbol)
            self.statements(syntax.statements(clause), clause_scope)
        if alias is not None and clause_symbols:
            self.res.type_switch_symbols[alias] = clause_symbols
            self.res.refs[alias] = clause_symbols[0]
            self.res.declarations[alias] = clause_symbols[0]

    def s_select_statement(self, node: Node, scope: Scope) -> None:
        for clause in syntax.children(node):
            if clause.type not in ("communication_case", "default_case"):
                continue
            clause_scope = Scope(scope, clause, scope.function)
            communication = clause.child_by_field_name("communication")
            if communication is not None:
                if communication.type == "receive_statement":
                    right = communication.child_by_field_name("right")
                    self.expression(right, clause_scope)
                    left = syntax.expressions(communication.child_by_field_name("left"))
                    if syntax.has_token(communication, ":="):
                        self.declare_short(clause_scope, left, [right] if right is not None else [])
                    else:
                        for expression in left:
                            self.expression(expression, clause_scope)
                else:
                    self.expression(communication, clause_scope)
            self.statements(syntax.statements(clause), clause_scope)

    def s_labeled_statement(self, node: Node, scope: Scope) -> None:
        for child in syntax.children(node):
            if child.type != "label_name":
                self.statement(child, scope)

    # -- expressions (iterative: generated code nests expressions very deeply) --

    def expression(self, root: Node | None, scope: Scope) -> None:
        if root is None:
            return
        stack = [root]
        refs = self.res.refs
        while stack:
            node = stack.pop()
            kind = node.type
            if kind == "identifier":
                name = syntax.text(node)
                if name != "_":
                    symbol = scope.lookup(name) or _UNIVERSE.get(name)
                    if symbol is not None:
                        refs[node] = symbol
                continue
            if kind in _TYPE_NODES or kind == "comment":
                # A type can hold an expression, e.g. an array length; only a
                # func literal there matters (it is a function of its own).
                stack.extend(syntax.outermost(node, "func_literal"))
                continue
            if kind == "func_literal":
                with self.nesting(node):
                    self.function(node, scope)
                continue
            if kind == "selector_expression":
                operand = node.child_by_field_name("operand")
                if operand is not None:
                    if self.cgo is not None and operand.type == "identifier" and syntax.text(operand) == "C":
                        # cgo rewrites every `C.name` selector by its spelling:
                        # in a file that imports "C", no local `C` shadows it.
                        refs[operand] = self.cgo
                    else:
                        stack.append(operand)
                continue
            if kind in ("composite_literal", "type_conversion_expression", "type_assertion_expression"):
                part = node.child_by_field_name("body" if kind == "composite_literal" else "operand")
                if part is not None:
                    stack.append(part)
                continue
            if kind == "keyed_element":
                key = node.child_by_field_name("key")
                value = node.child_by_field_name("value")
                if value is not None:
                    stack.append(value)
                if key is not None and (_keys_are_expressions(node) or not _is_bare_identifier(key)):
                    stack.append(key)
                continue
            if kind in _STATEMENT_KINDS:
                self.statement(node, scope)
                continue
            for child in reversed(node.named_children):
                stack.append(child)


_STATEMENT_KINDS = frozenset({
    "block", "short_var_declaration", "var_declaration", "const_declaration", "type_declaration",
    "if_statement", "for_statement", "expression_switch_statement", "type_switch_statement",
    "select_statement", "labeled_statement",
})


def _is_bare_identifier(literal_element: Node) -> bool:
    inner = syntax.children(literal_element)
    return len(inner) == 1 and inner[0].type == "identifier"


def _keys_are_expressions(keyed_element: Node) -> bool:
    """Keys of map, array and slice literals are expressions; keys of a struct
    literal are field names. Without types, only a literal whose written type
    says which it is can be resolved."""
    literal_value = keyed_element.parent
    composite = literal_value.parent if literal_value is not None else None
    if composite is None or composite.type != "composite_literal":
        return False
    literal_type = composite.child_by_field_name("type")
    return literal_type is not None and literal_type.type in (
        "map_type", "array_type", "slice_type", "implicit_length_array_type",
    )


def _initializer(left: list[Node], right: list[Node], index: int) -> tuple[Node | None, int]:
    """The expression a declared name is initialised from, and the result index
    when one multi-valued call initialises several names."""
    if len(left) == len(right):
        return right[index], -1
    if len(right) == 1:
        return right[0], index
    return None, -1


def resolve_package(files: list[ParsedFile], package_names: dict[str, str]) -> Resolution:
    """Prepare the resolution of a package (all its files together: a function
    in one file may call a function declared in another). The package and file
    scopes are built now; each top-level declaration is resolved when first
    needed (Resolution.ensure): most functions of a package never are."""
    resolution = Resolution()
    package_scope = Scope(None, None, None)
    for parsed in files:
        for declaration in syntax.children(parsed.root):
            _predeclare(declaration, package_scope, resolution)
    resolution.package_symbols = dict(package_scope.names)
    resolver = _Resolver(resolution, package_scope)
    for parsed in files:
        file_scope = Scope(None, parsed.root, None)
        resolution.file_scopes[parsed.root] = file_scope
        for imported in parsed.imports:
            name = imported.name or package_names.get(imported.path) or default_import_name(imported.path)
            if name in ("_", "."):
                continue
            identifier = imported.node.child_by_field_name("name") or imported.node
            symbol = Symbol(name, SymbolKind.PACKAGE, Role.IMPORT, identifier, import_path=imported.path)
            file_scope.names[name] = symbol
        # Package-level names shadow nothing in the file scope (Go forbids the
        # clash), so the package scope can sit inside the file scope for lookup.
        top = Scope(file_scope, parsed.root, None, package_scope.names)
        cgo = file_scope.names.get("C")
        cgo = cgo if cgo is not None and cgo.import_path == "C" else None
        file = _File(resolver, top, cgo, parsed.source.data, syntax.children(parsed.root), parsed.index.func_literals)
        resolution._files[parsed.root] = file
        for declaration in file.declarations:
            resolution._pending[declaration] = file
    return resolution


# Names looked up by scanning a file's bytes before it gets a word index.
_SCANS_BEFORE_INDEX = 32
_WORD = re.compile(rb"(?<![0-9A-Za-z_\x80-\xff])[A-Za-z_\x80-\xff][0-9A-Za-z_\x80-\xff]*")


@dataclass
class _File:
    """What resolving one of a file's declarations needs."""

    resolver: _Resolver
    top: Scope
    cgo: Symbol | None
    data: bytes
    declarations: list[Node]
    literals: list[Node]

    def __post_init__(self) -> None:
        self._starts = [declaration.start_byte for declaration in self.declarations]
        self._lookups = 0
        self._words: dict[bytes, list[int]] | None = None
        self._literal_starts = [literal.start_byte for literal in self.literals]

    def declarations_mentioning(self, needle: bytes) -> list[Node]:
        """The declarations whose text contains needle: found from where it
        occurs, not by scanning every declaration. A file asked about many
        names (a package of 10,000 functions asks for each of theirs) gets
        an index of its words instead of one scan of its bytes per name."""
        self._lookups += 1
        if self._lookups > _SCANS_BEFORE_INDEX:
            return [self.declarations[i] for i in self._word_index().get(needle, ())]
        found: list[Node] = []
        at = self.data.find(needle)
        while at >= 0:
            index = bisect.bisect_right(self._starts, at) - 1
            if index >= 0 and at < self.declarations[index].end_byte:
                declaration = self.declarations[index]
                found.append(declaration)
                at = self.data.find(needle, declaration.end_byte)
            else:
                at = self.data.find(needle, at + 1)
        return found

    def _word_index(self) -> dict[bytes, list[int]]:
        """word -> the indices of the declarations it occurs in (a name is
        always a whole word where it refers to something)."""
        if self._words is None:
            self._words = {}
            for match in _WORD.finditer(self.data):
                index = bisect.bisect_right(self._starts, match.start()) - 1
                if index < 0 or match.start() >= self.declarations[index].end_byte:
                    continue
                indices = self._words.setdefault(match.group(), [])
                if not indices or indices[-1] != index:
                    indices.append(index)
        return self._words

    def declaration_at(self, node: Node) -> Node | None:
        index = bisect.bisect_right(self._starts, node.start_byte) - 1
        if index < 0 or node.start_byte >= self.declarations[index].end_byte:
            return None
        return self.declarations[index]

    def literals_in(self, declaration: Node) -> list[Node]:
        low = bisect.bisect_left(self._literal_starts, declaration.start_byte)
        high = bisect.bisect_left(self._literal_starts, declaration.end_byte)
        return self.literals[low:high]


def _resolve_declaration(resolution: Resolution, declaration: Node, file: _File) -> None:
    resolver, top = file.resolver, file.top
    resolver.nesting = Nesting()
    resolver.cgo = file.cgo
    size = declaration.end_byte - declaration.start_byte
    if size > MAX_DECLARATION_BYTES:
        resolution.failed[declaration] = f"is too large to analyse ({size // 1024} KiB)"
        return
    try:
        if declaration.type in ("function_declaration", "method_declaration"):
            resolver.function(declaration, top)
        elif declaration.type in ("var_declaration", "const_declaration"):
            for spec in syntax.value_specs(declaration):
                resolver.expression(spec.child_by_field_name("type"), top)
                for value in syntax.expressions(spec.child_by_field_name("value")):
                    resolver.expression(value, top)
        elif declaration.type == "type_declaration":
            for spec in syntax.children(declaration):
                resolver.expression(spec.child_by_field_name("type"), top)
    except NestingTooDeep:
        resolution.failed[declaration] = f"nests deeper than {MAX_NESTING} levels"
        return
    except RecursionError:
        resolution.failed[declaration] = "nests too deeply for the analysis"
        return
    # Literals in places no declaration walk visits (type parameters of a
    # generic type, say) still get their own scope, under the file's.
    for literal in file.literals_in(declaration):
        if literal not in resolution.function_scopes:
            resolver.nesting = Nesting()
            try:
                resolver.function(literal, top)
            except (NestingTooDeep, RecursionError):
                pass



def _predeclare(declaration: Node, scope: Scope, resolution: Resolution) -> None:
    def add(identifier: Node | None, kind: SymbolKind, **extra) -> None:
        if identifier is None:
            return
        name = syntax.text(identifier)
        if not name or name == "_":
            return
        existing = scope.names.get(name)
        if existing is not None and existing.kind is kind is SymbolKind.FUNC:
            # Build constraints are ignored, so `die` may be declared once per
            # platform file: one symbol stands for all the variants.
            resolution.refs[identifier] = existing
            resolution.declarations[identifier] = existing
            return
        symbol = Symbol(name, kind, Role.GLOBAL, identifier, **extra)
        scope.names[name] = symbol
        resolution.refs[identifier] = symbol
        resolution.declarations[identifier] = symbol

    if declaration.type == "function_declaration":
        name = declaration.child_by_field_name("name")
        if name is not None and syntax.text(name) != "init":
            add(name, SymbolKind.FUNC)
    elif declaration.type in ("var_declaration", "const_declaration"):
        kind = SymbolKind.VAR if declaration.type == "var_declaration" else SymbolKind.CONST
        for spec in syntax.value_specs(declaration):
            names = spec.children_by_field_name("name")
            values = syntax.expressions(spec.child_by_field_name("value"))
            for index, name in enumerate(names):
                init, init_index = _initializer(names, values, index)
                add(name, kind, type_node=spec.child_by_field_name("type"), init=init, init_index=init_index)
    elif declaration.type == "type_declaration":
        for spec in syntax.children(declaration):
            add(spec.child_by_field_name("name"), SymbolKind.TYPE)
