"""What scopes are made of: symbols (what a name was declared as, where,
and with what type and initialiser), scopes, and the nesting bound."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tree_sitter import Node

from cudalint import syntax


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
