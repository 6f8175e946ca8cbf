"""Where a fix puts a statement: the acquisition's success check, and the
indentation of the block it is in. Shared by the rules whose fixes add or
move a `defer` (CL101, CL202) or add a statement (CL101)."""

from __future__ import annotations

import functools
import hashlib
import re

from tree_sitter import Node

from cudalint import syntax
from cudalint.findings import Span, TextEdit
from cudalint.source import SourceFile


def statement_of(node: Node) -> Node | None:
    """The statement of a block that holds the node."""
    while node.parent is not None and node.parent.type != "statement_list":
        node = node.parent
    return node if node.parent is not None else None


def after_success_check(acquisition: Node, has_status: bool) -> Node | None:
    """The statement after which the acquisition has succeeded: the `if`
    that holds it (`if st := C.cudaMalloc(...); st != ...`), the `if` right
    after it that tests what it assigned, or the acquisition itself for a
    call with no status; None where no such check is found."""
    statement = statement_of(acquisition)
    if statement is None or not has_status or statement.type == "if_statement":
        return statement
    following = statement.next_named_sibling
    while following is not None and following.type == "comment":
        following = following.next_named_sibling
    assigned = {syntax.text(target) for left, _ in syntax.assignment_sides(statement) for target in left}
    condition = following.child_by_field_name("condition") if following is not None and following.type == "if_statement" else None
    if condition is None or not any(n.type == "identifier" and syntax.text(n) in assigned for n in syntax.walk(condition)):
        return None
    return following


def indent_of(statement: Node, data: bytes) -> str | None:
    """The indentation of the statement's line; None if something precedes
    it on the line."""
    start = data.rfind(b"\n", 0, statement.start_byte) + 1
    indent = data[start:statement.start_byte].decode("utf-8", "replace")
    return indent if not indent.strip() else None


def replacement(source: SourceFile, start: int, end: int, text: str) -> TextEdit:
    """Replace the bytes [start, end) with text: the edit keeps what they
    were and the digest of the whole file (a file changed since is never
    written) and says where they are (SARIF's deleted region is exactly
    those bytes). A new line ends as the line it is written in ends: CRLF
    in a file of CRLF lines."""
    original = source.data[start:end].decode("utf-8", "replace")
    if _ends_in_crlf(source.data, end):
        text = _BARE_LF.sub("\r\n", text)
    where = Span(source.offset_position(start), source.offset_position(end))
    return TextEdit(start, end, text, original, where, _digest(source.data))


_BARE_LF = re.compile(r"(?<!\r)\n")


def _ends_in_crlf(data: bytes, offset: int) -> bool:
    """Whether the line holding the offset ends in CRLF (the last line, with
    no newline of its own, is read as the one before it)."""
    end = data.find(b"\n", offset)
    if end < 0:
        end = data.rfind(b"\n", 0, offset)
    return end > 0 and data[end - 1:end] == b"\r"


@functools.lru_cache(maxsize=8)
def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def insert_after(anchor: Node, source: SourceFile, indent: str, line: str) -> TextEdit:
    """A new line after the statement. The edit rewrites the statement with
    the line after it, so that a file whose statement changed since it was
    read is never written."""
    original = syntax.text(anchor)
    return replacement(source, anchor.start_byte, anchor.end_byte, f"{original}\n{indent}{line}")


def insert_before(anchor: Node, source: SourceFile, indent: str, line: str) -> TextEdit:
    """A new line before the statement (which must begin its line), kept
    as insert_after keeps it."""
    return replacement(source, anchor.start_byte, anchor.end_byte, f"{line}\n{indent}{syntax.text(anchor)}")


def move_defer(defer: Node, anchor: Node, source: SourceFile, handle: str) -> tuple[TextEdit, TextEdit] | None:
    """The edits that move a `defer` to right after the anchor, a statement
    of the same block: safe to offer only where the deferred call names
    nothing but the handle (so it evaluates the same thing where it goes)."""
    if anchor.parent != defer.parent:
        return None
    names = {syntax.text(node) for node in syntax.walk(defer) if node.type == "identifier"} - {"C", "unsafe"}
    indent = indent_of(defer, source.data)
    removal = delete_line(defer, source)
    if names != {handle} or indent is None or removal is None:
        return None
    line_end = source.data.find(b"\n", defer.end_byte)
    comment = source.data[defer.end_byte:line_end].decode("utf-8", "replace").strip()  # goes along
    return removal, insert_after(anchor, source, indent, f"{syntax.text(defer)} {comment}".rstrip())


def delete_line(statement: Node, source: SourceFile) -> TextEdit | None:
    """Remove the statement's whole line (it must be alone on it)."""
    data = source.data
    start = data.rfind(b"\n", 0, statement.start_byte) + 1
    end = data.find(b"\n", statement.end_byte)
    rest = data[statement.end_byte:end].strip()
    if end < 0 or data[start:statement.start_byte].strip() or (rest and not rest.startswith(b"//")):
        return None  # something else shares the line (a trailing comment goes with it)
    end += 1
    previous = data[data.rfind(b"\n", 0, max(start - 1, 0)) + 1:max(start - 1, 0)]
    following = data[end:data.find(b"\n", end) + 1]
    if start > 0 and not previous.strip() and following.endswith(b"\n") and not following.strip():
        end += len(following)  # between two blank lines: keep one, as gofmt would
    return replacement(source, start, end, "")
