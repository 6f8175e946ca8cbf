"""`--add-ignore REASON`: a `//cudalint:ignore RULES REASON` line above every
line with a current finding (ruff's `--add-noqa`), the fastest way to adopt
cudalint on a legacy tree besides a baseline.

It is a source rewrite and obeys the rules of `--fix` (fixes/rewrite.py): only the
run's discovered files under the analysed root, reached without a symbolic
link, written under the file's lock, atomically, keeping its mode, owner and
group, and only while its whole content is still the bytes analysed (their
SHA-256 is taken before the analysis and checked again under the lock). The
inserted line keeps the file's line endings and is gofmt-clean: indented as
the line it precedes (one tab deeper before a closing `}` or `)`, as gofmt
indents a comment there). A line that starts inside a multi-line string or
block comment cannot take a directive above it and is left, with the reason.
Tool rules (CL0xx) cannot be suppressed by a directive and are skipped.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.fixes import rewrite
from cudalint.findings import Finding, Span, TextEdit
from cudalint.source import SourceFile
from cudalint.suppressions import is_code

_CONTINUED = ("raw_string_literal", "interpreted_string_literal", "comment")


class ReasonError(ValueError):
    """A REASON a directive cannot carry."""


def check_reason(reason: str) -> str:
    """The reason as the directive will carry it, or ReasonError."""
    text = reason.strip()
    if not any(character.isalnum() for character in text):
        raise ReasonError("the reason must say why, e.g. --add-ignore \"legacy code, see ISSUE-12\"")
    if any(ord(character) < 32 or ord(character) == 127 or character in "\u2028\u2029\x85" for character in text):
        raise ReasonError("the reason must be one line of text, without control characters")
    first = text.split(None, 1)[0].rstrip(",")
    if is_code(first):
        raise ReasonError(f"the reason must not start with a rule ID ({first}): the directive would read it as one")
    return text


def snapshot(files: list[Path]) -> dict[Path, str]:
    """The SHA-256 of each file before the analysis reads it: a file that
    differs from it when the directives are written is not written."""
    digests: dict[Path, str] = {}
    for path in files:
        try:
            digests[path] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            pass  # unreadable: the analysis says so, and nothing is written to it
    return digests


@dataclass
class Outcome:
    added: int = 0  # directives written
    files: list[str] = field(default_factory=list)  # files rewritten
    refused: list[str] = field(default_factory=list)  # "path reason" lines
    tool_findings: int = 0  # CL0xx findings, which no directive suppresses


def add(
    findings: list[Finding], analysed: dict[str, Path], root: Path, digests: dict[Path, str], reason: str,
) -> Outcome:
    """Write the directives for `findings` (the run's reported findings)."""
    outcome = Outcome()
    lines: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    expected: dict[tuple[str, int], str] = {}
    for finding in findings:
        if finding.suppression is not None:
            continue
        if finding.rule_id.startswith("CL0"):
            outcome.tool_findings += 1
            continue
        line = finding.span.start.line
        lines[finding.path][line].add(finding.rule_id)
        expected.setdefault((finding.path, line), finding.source_line)
    for path in sorted(lines):
        try:
            file = rewrite.target(path, analysed, root)
            digest = digests.get(analysed[path])
            if digest is None:
                raise rewrite.Refused("could not be read before the analysis")
            data = file.read_bytes()
            if hashlib.sha256(data).hexdigest() != digest:
                raise rewrite.Refused("changed since it was analysed")
            edits = _edits(data, digest, lines[path], {line: expected[(path, line)] for line in lines[path]}, reason, outcome, path)
            if edits and rewrite.rewrite(file, edits):
                outcome.added += len(edits)
                outcome.files.append(path)
        except rewrite.Refused as why:
            outcome.refused.append(f"{path} {why}")
    return outcome


def _edits(
    data: bytes, digest: str, lines: dict[int, set[str]], expected: dict[int, str], reason: str, outcome: Outcome, path: str,
) -> list[TextEdit]:
    from cudalint.parse import parse

    starts = line_starts(data)
    root = parse(SourceFile(Path(path), path, data))[0].root
    edits: list[TextEdit] = []
    for line in sorted(lines):
        if line < 1 or line > len(starts):
            raise rewrite.Refused(f"has no line {line} any more (changed since it was analysed)")
        start = starts[line - 1]
        end = starts[line] if line < len(starts) else len(data)
        text = data[start:end]
        shown = text.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace")
        if expected[line] and not shown.startswith(expected[line].rstrip("\r")):
            raise rewrite.Refused(f"line {line} is not the line analysed (changed since it was analysed)")
        try:
            edits.append(directive(root, data, starts, line, lines[line], reason, digest))
        except Unplaceable as why:
            outcome.refused.append(f"{path}:{line} {why}")
    return edits


class Unplaceable(Exception):
    """A line no directive line can go above; the message says why."""


def directive(root, data: bytes, starts: list[int], line: int, rules: Collection[str], reason: str, digest: str = "") -> TextEdit:
    """The edit that puts `//cudalint:ignore RULES REASON` on a line of its
    own above line `line` (1-based) of `data` (parsed into `root`, its line
    starts `starts`), indented as gofmt indents a comment there, in the
    file's line endings; Unplaceable where no such line fits."""
    start = starts[line - 1]
    end = starts[line] if line < len(starts) else len(data)
    text = data[start:end]
    node = root.descendant_for_byte_range(start, start)
    while node is not None and node.type not in _CONTINUED:
        node = node.parent
    if node is not None and node.start_byte < start:
        raise Unplaceable(f"starts inside a multi-line {node.type.replace('_', ' ')}")
    if line > 1 and _cells(root, data, starts, line - 1) & _cells(root, data, starts, line):
        raise Unplaceable(
            "is aligned by gofmt with the line above it (a trailing comment, a field, a key or a spec), "
            "and a directive line between them would change that alignment"
        )
    body = text.rstrip(b"\n").rstrip(b"\r")
    indent = body[: len(body) - len(body.lstrip(b" \t"))].decode()
    if body.lstrip(b" \t")[:1] in (b"}", b")"):
        indent += "\t"  # gofmt indents a comment before a closing brace as the block's body
    newline = "\r\n" if text.endswith(b"\r\n") or (not text.endswith(b"\n") and b"\r\n" in data) else "\n"
    position = _position(line)
    written = f"{indent}//cudalint:ignore {','.join(sorted(rules))} {reason}{newline}"
    return TextEdit(start, start, written, "", Span(position, position), digest)


def line_starts(data: bytes) -> list[int]:
    """The byte offset at which each line starts."""
    return [0] + [index + 1 for index, byte in enumerate(data) if byte == 0x0A]


# Lines gofmt aligns in columns with their neighbours (a comment line between
# two of them ends the section, and gofmt re-pads both halves).
_ALIGNED = frozenset({"field_declaration", "keyed_element", "const_spec", "var_spec"})


def _cells(root, data: bytes, starts: list[int], line: int) -> set[str]:
    """What line `line` has that gofmt aligns with the next line's: a
    trailing comment, or a struct field, keyed element or const/var spec
    that starts on it."""
    start = starts[line - 1]
    end = starts[line] if line < len(starts) else len(data)
    body = data[start:end].rstrip(b"\r\n")
    code = body.lstrip(b" \t")
    if not code:
        return set()
    first = start + len(body) - len(code)
    cells: set[str] = set()
    last = start + len(body)
    node = root.descendant_for_byte_range(last - 1, last)
    if node is not None and node.type == "comment" and node.start_byte > first and node.end_byte == last:
        cells.add("comment")
    node = root.descendant_for_byte_range(first, first + 1)
    while node is not None and node.start_byte == first:
        if node.type in _ALIGNED:
            cells.add(node.type)
        node = node.parent
    return cells


def _position(line: int):
    from cudalint.findings import Position

    return Position(line, 1, 1)
