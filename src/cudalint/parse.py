"""Parsing Go with tree-sitter-go.

A syntax error is a notification, not a stop: tree-sitter recovers, and every
function whose subtree is free of errors is still analysed downstream.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from tree_sitter import Node, Parser, Tree

from cudalint import syntax
from cudalint.syntax import GO
from cudalint.findings import Notification, NotificationKind
from cudalint.source import SourceFile

_parser: Parser | None = None


def _get_parser() -> Parser:
    global _parser
    if _parser is None:
        _parser = Parser(GO)
    return _parser


@dataclass(frozen=True)
class Import:
    name: str | None  # explicit name: alias, "_" or "."; None for the default
    path: str
    node: Node


@dataclass(eq=False)
class ParsedFile:
    source: SourceFile
    tree: Tree
    package: str
    imports: list[Import] = field(default_factory=list)
    # The byte spans of the type arguments of single-argument generic calls,
    # parsed as blanks (`generic_calls`): text the tree gives there is not the file's.
    blanked: tuple[tuple[int, int], ...] = ()

    def original_text(self, text: str) -> str:
        """Text taken from the tree (a message quoting a call), with the
        type arguments it blanked put back: `check[C.cudaError_t](st)`."""
        data = self.source.data
        for start, end in self.blanked:
            name = start
            while name > 0 and (data[name - 1:name].isalnum() or data[name - 1:name] in (b"_", b".")):
                name -= 1
            seen = data[name:start].decode("utf-8", "replace")
            text = text.replace(seen + " " * (end - start), data[name:end].decode("utf-8", "replace"))
        return text

    @property
    def root(self) -> Node:
        return self.tree.root_node

    @cached_property
    def index(self) -> syntax.FileIndex:
        return syntax.index_file(self.tree.root_node, self.source.data)

    @property
    def display(self) -> str:
        return self.source.display


def _string_value(literal: Node) -> str:
    raw = syntax.text(literal)
    return raw[1:-1] if len(raw) >= 2 else raw


def _imports(root: Node) -> list[Import]:
    found: list[Import] = []
    for declaration in syntax.children(root):
        if declaration.type != "import_declaration":
            continue
        for spec in syntax.walk(declaration):
            if spec.type != "import_spec":
                continue
            path = spec.child_by_field_name("path")
            name = spec.child_by_field_name("name")
            if path is None:
                continue
            found.append(Import(syntax.text(name) if name is not None else None, _string_value(path), spec))
    return found


def _package_name(root: Node) -> str:
    for child in syntax.children(root):
        if child.type == "package_clause":
            for part in syntax.children(child):
                if part.type == "package_identifier":
                    return syntax.text(part)
    return ""


def first_error(root: Node) -> tuple[Node, str] | None:
    """The first ERROR or MISSING node in source order, with a short description."""
    if not root.has_error:
        return None
    node = root
    while True:
        if node.is_missing:
            return node, f"syntax error: missing {node.type!r}"
        if node.is_error or node.type == "ERROR":
            snippet = syntax.text(node).strip().splitlines()
            token = snippet[0][:40] if snippet else ""
            return node, f"syntax error: unexpected {token!r}" if token else "syntax error"
        for child in node.children:
            if child.has_error or child.is_missing:
                node = child
                break
        else:
            return node, "syntax error"


# `Name[T](x)` and `pkg.Name[T](x)`, as text: where none occurs, no tree is queried.
_MAYBE_GENERIC_CALL = re.compile(rb"\w\[[^\[\]\n]+\]\(")


def generic_calls(data: bytes, root: Node) -> tuple[bytes, tuple[tuple[int, int], ...]] | None:
    """The bytes to parse instead, where a generic function is called with
    one argument: the grammar cannot tell `Alloc[float32](n)` from a
    conversion to a generic type (`Vec[float32](v)`) and parses both as
    conversions, so the call is invisible to every analysis. Its type
    arguments become spaces (every byte offset and line stays the same), and
    it parses as the call `Alloc(n)`; a conversion written so is still one,
    by what its callee names. Type arguments over several lines stay: a
    name ending its line would end the statement. The bytes, and the spans
    blanked; None where there is none."""
    if not _MAYBE_GENERIC_CALL.search(data):
        return None
    found = [
        arguments for arguments in syntax.generic_conversion_arguments(root)
        if b"\n" not in data[arguments.start_byte:arguments.end_byte]
    ]
    if not found:
        return None
    blanked = bytearray(data)
    for arguments in found:
        blanked[arguments.start_byte:arguments.end_byte] = b" " * (arguments.end_byte - arguments.start_byte)
    return bytes(blanked), tuple((arguments.start_byte, arguments.end_byte) for arguments in found)


def parse(source: SourceFile) -> tuple[ParsedFile, list[Notification]]:
    tree = _get_parser().parse(source.parse_bytes)
    blanked = generic_calls(source.parse_bytes, tree.root_node)
    if blanked is not None:
        tree = _get_parser().parse(blanked[0])
    root = tree.root_node
    parsed = ParsedFile(source, tree, _package_name(root), _imports(root), blanked=blanked[1] if blanked is not None else ())
    notes: list[Notification] = []
    error = first_error(root)
    if error is not None:
        node, message = error
        where = source.position(*node.start_point)
        notes.append(Notification(
            NotificationKind.SYNTAX_ERROR, source.display,
            f"{message} (functions without errors are still analysed)", where.line, where.column,
        ))
    return parsed, notes
