"""What the analysis produces: findings, tool notifications and their locations.

These are plain, picklable values: worker processes send them back to the
parent, and reporters read them without ever touching a syntax tree again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


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
class Finding:
    rule_id: str
    path: str
    span: Span
    message: str
    function: str = ""
    source_line: str = ""
    steps: tuple[Step, ...] = ()
    related: tuple[Step, ...] = ()

    def sort_key(self) -> tuple:
        return (self.path, self.span.start.line, self.span.start.column, self.rule_id, self.message)


class NotificationKind(str, Enum):
    SYNTAX_ERROR = "syntax-error"
    UNREADABLE = "unreadable"
    NOT_GO_SOURCE = "not-go-source"
    TOO_COMPLEX = "too-complex"
    INTERNAL_ERROR = "internal-error"


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
    notifications: list[Notification] = field(default_factory=list)
    files_analysed: int = 0
    files_skipped: int = 0
    internal_errors: int = 0

    def extend(self, other: Result) -> None:
        self.findings.extend(other.findings)
        self.notifications.extend(other.notifications)
        self.files_analysed += other.files_analysed
        self.files_skipped += other.files_skipped
        self.internal_errors += other.internal_errors

    def sort(self) -> None:
        self.findings.sort(key=Finding.sort_key)
        self.notifications.sort(key=Notification.sort_key)
