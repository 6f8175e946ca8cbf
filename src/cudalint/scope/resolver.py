"""The resolution of one top-level declaration: Go's scoping rules
applied to its statements and expressions, binding every identifier to its
Symbol in the tables of the package's Resolution; and the declarations of
a file, found by position or by the words they mention."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Protocol

from tree_sitter import Node

from cudalint import syntax
from cudalint.scope.symbols import MAX_DECLARATION_BYTES, MAX_NESTING, UNIVERSE_FUNCS, UNIVERSE_TYPES, UNIVERSE_VALUES
from cudalint.scope.symbols import Nesting, NestingTooDeep, Role, Scope, Symbol, SymbolKind

# Node kinds that only ever describe types: nothing inside them is a variable use.
_TYPE_NODES = frozenset({
    "type_identifier", "qualified_type", "pointer_type", "array_type", "implicit_length_array_type",
    "slice_type", "map_type", "channel_type", "function_type", "struct_type", "interface_type",
    "generic_type", "parenthesized_type", "negated_type", "type_arguments", "type_elem",
    "field_identifier", "package_identifier", "label_name", "type_parameter_list",
})


class Tables(Protocol):
    """What resolving writes: the tables of the package's Resolution."""

    refs: dict[Node, Symbol]
    declarations: dict[Node, Symbol]
    function_scopes: dict[Node, Scope]
    type_switch_symbols: dict[Node, list[Symbol]]
    failed: dict[Node, str]


_UNIVERSE: dict[str, Symbol] = {}
for _name in UNIVERSE_FUNCS:
    _UNIVERSE[_name] = Symbol(_name, SymbolKind.BUILTIN, Role.UNIVERSE)
for _name in UNIVERSE_VALUES:
    _UNIVERSE[_name] = Symbol(_name, SymbolKind.CONST, Role.UNIVERSE)
for _name in UNIVERSE_TYPES:
    _UNIVERSE[_name] = Symbol(_name, SymbolKind.TYPE, Role.UNIVERSE)


class Resolver:
    """Binds the identifiers of one declaration at a time (see DeclarationFile)."""

    def __init__(self, resolution: Tables, package_scope: Scope):
        self.res = resolution
        self.package_scope = package_scope
        self.nesting = Nesting()
        self.cgo: Symbol | None = None  # the `import "C"` of the file being resolved
        # The function's `var x T` locals declared without a value, given one
        # when the function is resolved if a single assignment writes them.
        self.unset: list[Symbol] = []

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
            outer_unset, self.unset = self.unset, []
            self.statements(syntax.statements(body), scope)
            if self.unset:
                _initialise_assigned_once(body, self.unset, self.res.refs)
            self.unset = outer_unset

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
            symbol = self.declare(scope, name, kind, Role.LOCAL, type_node=type_node, init=init, init_index=init_index)
            if symbol is not None and kind is SymbolKind.VAR and not values and scope.function is not None:
                self.unset.append(symbol)

    def s_type_declaration(self, node: Node, scope: Scope) -> None:
        for spec in syntax.children(node):
            name = spec.child_by_field_name("name")
            if name is not None:
                self.declare(scope, name, SymbolKind.TYPE, Role.LOCAL)
            self.expression(spec.child_by_field_name("type"), scope)

    def header_scope(self, node: Node, scope: Scope) -> Scope:
        """The scope of an if's or a switch's header, with its initializer
        (`if st := f(); st != 0`) declared: its names are visible in every
        branch and clause, and nowhere after the statement."""
        inner = Scope(scope, node, scope.function)
        initializer = node.child_by_field_name("initializer")
        if initializer is not None:
            self.statement(initializer, inner)
        return inner

    def s_if_statement(self, node: Node, scope: Scope) -> None:
        inner = self.header_scope(node, scope)
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
        inner = self.header_scope(node, scope)
        self.expression(node.child_by_field_name("value"), inner)
        for clause in syntax.children(node):
            if clause.type in ("expression_case", "default_case"):
                clause_scope = Scope(inner, clause, scope.function)
                for value in syntax.expressions(clause.child_by_field_name("value")):
                    self.expression(value, clause_scope)
                self.statements(syntax.statements(clause), clause_scope)

    def s_type_switch_statement(self, node: Node, scope: Scope) -> None:
        inner = self.header_scope(node, scope)
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


def _initialise_assigned_once(body: Node, unset: list[Symbol], refs: dict[Node, Symbol]) -> None:
    """`var result C.nvmlReturn_t` ... `result = C.nvmlDeviceGetTemperature(...)`:
    a local declared without a value and written by one assignment of the
    function (not of a literal in it), and by nothing else (no `&result`, no
    `++`, no second assignment), holds that assignment's value wherever it
    holds one: it is initialised from it, as `result := ...` would be."""
    candidates = {id(symbol): symbol for symbol in unset}
    writes: dict[int, list[tuple[Node, list[Node], list[Node], int] | None]] = {}
    for node in syntax.walk(body):
        kind = node.type
        if kind in ("assignment_statement", "short_var_declaration"):
            left = syntax.expressions(node.child_by_field_name("left"))
            right = syntax.expressions(node.child_by_field_name("right"))
            plain = kind == "short_var_declaration" or syntax.text(node.child_by_field_name("operator")) == "="
            for index, target in enumerate(left):
                symbol = refs.get(target) if target.type == "identifier" else None
                if symbol is not None and id(symbol) in candidates:
                    in_place = plain and syntax.enclosing_function(node) == symbol.function
                    writes.setdefault(id(symbol), []).append((node, left, right, index) if in_place else None)
        elif kind in ("inc_statement", "dec_statement", "unary_expression", "range_clause", "receive_statement"):
            operand = node.named_children[0] if kind != "unary_expression" else node.child_by_field_name("operand")
            if kind == "unary_expression" and syntax.text(node.child_by_field_name("operator")) != "&":
                continue
            if kind in ("range_clause", "receive_statement"):
                operand = node.child_by_field_name("left")  # `for i = range`, `case st = <-ch:`
            for target in syntax.expressions(operand) if kind in ("range_clause", "receive_statement") else [syntax.unparen(operand)]:
                symbol = refs.get(target) if target is not None and target.type == "identifier" else None
                if symbol is not None and id(symbol) in candidates:
                    writes.setdefault(id(symbol), []).append(None)
    for key, found in writes.items():
        if len(found) == 1 and found[0] is not None:
            _, left, right, index = found[0]
            init, init_index = _initializer(left, right, index)
            if init is not None:
                candidates[key].init, candidates[key].init_index = init, init_index


def _initializer(left: list[Node], right: list[Node], index: int) -> tuple[Node | None, int]:
    """The expression a declared name is initialised from, and the result index
    when one multi-valued call initialises several names."""
    if len(left) == len(right):
        return right[index], -1
    if len(right) == 1:
        return right[0], index
    return None, -1


# Names looked up by scanning a file's bytes before it gets a word index.
_SCANS_BEFORE_INDEX = 32
_WORD = re.compile(rb"(?<![0-9A-Za-z_\x80-\xff])[A-Za-z_\x80-\xff][0-9A-Za-z_\x80-\xff]*")


@dataclass
class DeclarationFile:
    """What resolving one of a file's declarations needs."""

    resolver: Resolver
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


def resolve_declaration(resolution: Tables, declaration: Node, file: DeclarationFile) -> None:
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


def predeclare(declaration: Node, scope: Scope, resolution: Tables) -> None:
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
