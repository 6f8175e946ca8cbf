"""Lexical scopes of a Go package: which declaration every identifier refers to.

Passes must tell apart two `d`s declared in sibling blocks, a `:=` that
redeclares `err` in an inner scope (a new variable) from one that reuses it in
the same scope (an assignment), and `C.cudaFree` from a local variable named
`C`. This module answers those questions once, with Go's scoping rules, so
that no pass ever matches names by text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

from cudalint import syntax
from cudalint.parse import ParsedFile
from cudalint.scope.resolver import DeclarationFile, Resolver, predeclare, resolve_declaration
from cudalint.scope.symbols import MAX_DECLARATION_BYTES, MAX_NESTING, UNIVERSE_FUNCS, UNIVERSE_TYPES, UNIVERSE_VALUES
from cudalint.scope.symbols import Nesting, NestingTooDeep, Role, Scope, Symbol, SymbolKind

__all__ = [
    "MAX_DECLARATION_BYTES", "MAX_NESTING", "UNIVERSE_FUNCS", "UNIVERSE_TYPES", "UNIVERSE_VALUES",
    "Nesting", "NestingTooDeep", "Resolution", "Role", "Scope", "Symbol", "SymbolKind",
    "default_import_name", "resolve_package",
]


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
    _pending: dict[Node, DeclarationFile] = field(default_factory=dict, repr=False)
    _files: dict[Node, DeclarationFile] = field(default_factory=dict, repr=False)
    # Identifiers already looked up in vain (no resolution can add them now).
    _misses: set[int] = field(default_factory=set, repr=False)
    # Names whose mentioning declarations are all resolved.
    _mentioned: set[str] = field(default_factory=set, repr=False)
    _error_types: dict[tuple[str, bool], bool] = field(default_factory=dict, repr=False)
    # (import path, type) -> pointer only, for the imported packages' error
    # types, as their facts say (the framework sets it): `gpu.Error` of the
    # module's own gpu package as a last result reports failure as non-nil.
    imported_error_types: Mapping[tuple[str, str], bool] = field(default_factory=dict)
    # The imported packages whose types are known otherwise (they exported
    # facts, or the knowledge describes them: `cr.CudaError` is a status).
    typed_packages: frozenset[str] = frozenset()
    _error_receivers: frozenset[str] | None = field(default=None, repr=False)

    def import_names(self, root: Node, import_paths: frozenset[str] | set[str]) -> set[str]:
        """The names file `root` refers to these imported packages by."""
        scope = self.file_scopes.get(root)
        return {
            name for name, symbol in (scope.names.items() if scope is not None else ())
            if symbol.kind is SymbolKind.PACKAGE and symbol.import_path in import_paths
        }

    def ensure(self, root: Node, node: Node) -> Node | None:
        """Resolve the top-level declaration of file `root` that holds `node`
        (if not done yet), and return that declaration."""
        file = self._files.get(root)
        declaration = file.declaration_at(node) if file is not None else None
        if declaration is not None and declaration in self._pending:
            resolve_declaration(self, declaration, self._pending.pop(declaration))
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
                    resolve_declaration(self, declaration, self._pending.pop(declaration))

    def ensure_all(self) -> None:
        for declaration in list(self._pending):
            file = self._pending.pop(declaration, None)
            if file is not None:
                resolve_declaration(self, declaration, file)

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
                resolve_declaration(self, declaration, self._pending.pop(declaration))
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
        if inner.type == "qualified_type":
            return self._imported_error_type(inner, pointer)
        if inner.type != "type_identifier":
            return False
        return self.error_like(syntax.text(inner), pointer)

    def _imported_error_type(self, qualified: Node, pointer: bool) -> bool:
        """`gpu.Error`: an error type as the package's facts say; where they
        say nothing of the type (a package with no GPU code is not analysed,
        and exports no facts), as Go names error types (`Error`, `...Error`)."""
        scope = self.file_scopes.get(syntax.root_of(qualified))
        package = scope.names.get(syntax.text(qualified.child_by_field_name("package"))) if scope is not None else None
        if package is None or package.kind is not SymbolKind.PACKAGE or package.import_path is None:
            return False
        name = syntax.text(qualified.child_by_field_name("name"))
        pointer_only = self.imported_error_types.get((package.import_path, name))
        if pointer_only is not None:
            return pointer or not pointer_only
        if package.import_path in self.typed_packages:
            return False  # its facts or its knowledge say what its types are
        return "." in package.import_path.split("/", 1)[0] and name.endswith("Error")  # (a module's, not the standard library's)

    def error_like(self, name: str, pointer: bool) -> bool:
        """Whether a result of the package's type `name` (`*name` with
        `pointer`) reports failure as a non-nil value."""
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
        return name in self._with_error_method()

    def _with_error_method(self) -> frozenset[str]:
        """The package's types with an `Error() string` method, found in one pass
        over the top-level declarations (asked per type, a scan each was
        quadratic in a package of thousands of types)."""
        if self._error_receivers is None:
            found = set()
            for root in self.file_scopes:
                for declaration in syntax.children(root):
                    if declaration.type != "method_declaration" or syntax.text(declaration.child_by_field_name("name")) != "Error":
                        continue
                    if syntax.text(declaration.child_by_field_name("result")) != "string":
                        continue  # `func (ctx *Ctx) Error() error` (gorgonia's cu) reports, it is no error type
                    receiver = declaration.child_by_field_name("receiver")
                    if receiver is not None:
                        found.add(syntax.text(receiver).replace("*", " ").split()[-1].rstrip(")"))
            self._error_receivers = frozenset(found)
        return self._error_receivers

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


def switched_expression(symbol: Symbol) -> Node | None:
    """`switch y := x.(type) { case *int: ... }`: in each clause y is x, of
    that clause's type; x, for such a y."""
    alias = symbol.node.parent if symbol.node is not None else None
    statement = alias.parent if alias is not None else None
    if statement is None or statement.type != "type_switch_statement" or statement.child_by_field_name("alias") != alias:
        return None
    return symbol.init


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


def resolve_package(files: list[ParsedFile], package_names: dict[str, str]) -> Resolution:
    """Prepare the resolution of a package (all its files together: a function
    in one file may call a function declared in another). The package and file
    scopes are built now; each top-level declaration is resolved when first
    needed (Resolution.ensure): most functions of a package never are."""
    resolution = Resolution()
    package_scope = Scope(None, None, None)
    for parsed in files:
        for declaration in syntax.children(parsed.root):
            predeclare(declaration, package_scope, resolution)
    resolution.package_symbols = dict(package_scope.names)
    resolver = Resolver(resolution, package_scope)
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
        file = DeclarationFile(resolver, top, cgo, parsed.source.data, syntax.children(parsed.root), parsed.index.func_literals)
        resolution._files[parsed.root] = file
        for declaration in file.declarations:
            resolution._pending[declaration] = file
    return resolution
