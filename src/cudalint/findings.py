"""What the analysis produces: findings, tool notifications and their locations.

These are plain, picklable values: worker processes send them back to the
parent, and reporters read them without ever touching a syntax tree again.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any


@dataclass(frozen=True, order=True)
class Position:
    """A point in a file. `column` counts bytes (as Go tools do), from 1;
    `column_utf16` counts UTF-16 code units, from 1, for SARIF consumers."""

    line: int
    column: int
    column_utf16: int


@dataclass(frozen=True, order=True)
class Span:
    start: Position
    end: Position


@dataclass(frozen=True)
class Step:
    """One step of a path finding (acquire -> branch -> leaking exit)."""

    span: Span
    message: str


@dataclass(frozen=True)
class Related:
    """A location a finding's message refers to (the defer, the leaking
    exit, the first release), in the finding's file. The message names it
    as "line N"; SARIF links it."""

    span: Span
    label: str


_DIRECTIVE = re.compile(r"//[ \t]*cudalint:.*$")


_PLACEHOLDER = re.compile(r"\{@(\d+)\}")


def template_parts(template: str) -> list[str | int]:
    """A message template split into literal text and the indexes of the
    related locations it names (`{@k}`), in order."""
    return [int(piece) if position % 2 else piece for position, piece in enumerate(_PLACEHOLDER.split(template))]


def fill_template(template: str, related: tuple[Related, ...], link=None) -> str:
    """The message people read: each named related location as "line N"
    (or whatever `link(k, related[k])` makes of it, for SARIF)."""
    return "".join(
        part if isinstance(part, str)
        else (link(part, related[part]) if link is not None else f"line {related[part].span.start.line}")
        for part in template_parts(template)
    )


class SuppressionKind(str, Enum):
    """SARIF's names: in the analysed file (a directive), or outside it (the baseline)."""

    IN_SOURCE = "inSource"
    EXTERNAL = "external"


@dataclass(frozen=True)
class Suppression:
    kind: SuppressionKind
    justification: str
    # Where the suppression is written: the directive's span in the finding's
    # file (in-source), or the baseline file's path (external, no span).
    path: str = ""
    span: Span | None = None


@dataclass(frozen=True)
class TextEdit:
    """Replace the bytes [start, end) of the finding's file with `text`.
    `original` is what those bytes were when the analysis read them, and
    `digest` the SHA-256 (hex) of the whole file then: a file changed since,
    anywhere, is never written. `span` says where, for SARIF."""

    start: int
    end: int
    text: str
    original: str
    span: Span
    digest: str = ""


@dataclass(frozen=True)
class Fix:
    """An edit a rule proposes for its finding: `safe` where behaviour on
    every path the rule reasons about is unchanged except the defect."""

    message: str
    safe: bool
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Finding:
    rule_id: str
    path: str
    span: Span
    message: str
    function: str = ""
    source_line: str = ""
    steps: tuple[Step, ...] = ()
    related: tuple[Related, ...] = ()
    # The message with `{@k}` where it names related[k] (empty: no related
    # locations); reporters fill it, nobody parses the message.
    template: str = ""
    # "<16 hex digits>:<n>", see assign_fingerprints; set by the analysis.
    fingerprint: str = ""
    suppression: Suppression | None = None
    fixes: tuple[Fix, ...] = ()

    def sort_key(self) -> tuple:
        return (self.path, self.span.start.line, self.span.start.column, self.rule_id, self.message)


def _code_of(line: str) -> str:
    """A line of Go without its comments: a `//` or `/*` outside a string,
    rune or raw string literal starts one (a comment added to the line, or
    edited, does not change what the finding is about)."""
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\" and quote != "`":
                index += 2
                continue
            if char == quote:
                quote = ""
        elif char in "\"'`":
            quote = char
        elif line.startswith(("//", "/*"), index):
            return line[:index]
        index += 1
    return line


def line_hash(finding: Finding) -> str:
    """What a finding is about, independent of where it is: the rule, the
    enclosing function and the code of the reported line, comments cut off
    and whitespace normalised. Unrelated edits above it (or re-indenting it,
    or commenting it) keep the hash; so does moving the file, whose path is
    matched separately."""
    line = _code_of(_DIRECTIVE.sub("", finding.source_line))
    key = "\0".join((finding.rule_id, finding.function, " ".join(line.split())))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def assign_fingerprints(findings: list[Finding]) -> list[Finding]:
    """Each finding's fingerprint: its line hash and, as `:n`, its rank among
    the findings of the same file with the same hash (in source order), so
    that two identical lines in one function stay two findings. This is
    SARIF's `primaryLocationLineHash`, the JSON `fingerprint`, and the key a
    baseline matches on together with the file's path. `findings` must hold
    every finding of each file it mentions, suppressed ones included."""
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for finding in sorted(findings, key=Finding.sort_key):
        digest = line_hash(finding)
        seen[finding.path, digest] += 1
        out.append(replace(finding, fingerprint=f"{digest}:{seen[finding.path, digest]}"))
    return out


class NotificationKind(str, Enum):
    SYNTAX_ERROR = "syntax-error"
    UNREADABLE = "unreadable"
    NOT_GO_SOURCE = "not-go-source"
    TOO_COMPLEX = "too-complex"
    INTERNAL_ERROR = "internal-error"
    CACHE = "cache"  # the result cache could not be used; the run went on without it
    DEPENDENCIES = "dependencies"  # imported modules whose source this machine lacks


@dataclass(frozen=True)
class Notification:
    """A problem of the tool with an input, not a finding in the user's code."""

    kind: NotificationKind
    path: str
    message: str
    line: int | None = None
    column: int | None = None
    level: str = "warning"

    def sort_key(self) -> tuple:
        return (self.path, self.line or 0, self.column or 0, self.kind.value, self.message)

    def render(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"


@dataclass
class Result:
    """Everything one run produced, in deterministic order."""

    findings: list[Finding] = field(default_factory=list)
    # Findings silenced by a directive or the baseline (each has .suppression):
    # left out of the report unless --show-suppressed asks for them.
    suppressed: list[Finding] = field(default_factory=list)
    notifications: list[Notification] = field(default_factory=list)
    files_analysed: int = 0
    files_skipped: int = 0
    internal_errors: int = 0
    # What the analysed package tells the packages that import it
    # (cudalint.framework.ObjectFact items, opaque to the driver): the parent
    # hands them to importers, so that no worker analyses a dependency again.
    facts: list[Any] = field(default_factory=list)
    # Whether `facts` were exported (only where a package of the run imports
    # this one): a result without them lends importers nothing.
    exports_facts: bool = False
    # Packages this run analysed in worker processes (their reads are not
    # the parent's to see: such a run is not one `cudalint.app.replay` records).
    analysed_elsewhere: int = 0

    def extend(self, other: Result) -> None:
        self.findings.extend(other.findings)
        self.suppressed.extend(other.suppressed)
        self.notifications.extend(other.notifications)
        self.files_analysed += other.files_analysed
        self.files_skipped += other.files_skipped
        self.internal_errors += other.internal_errors
        self.analysed_elsewhere += other.analysed_elsewhere
        self.facts.extend(other.facts)

    def sort(self) -> None:
        self.findings.sort(key=Finding.sort_key)
        self.suppressed.sort(key=Finding.sort_key)
        self.notifications.sort(key=Notification.sort_key)
