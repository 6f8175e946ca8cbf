"""Findings and notifications as LSP diagnostics: the rule code, the level
the configuration gives the rule as the severity, a link to the rule's
documentation, the locations the message names and the steps of a path
finding as related information, and tags where the editor draws them
(an unused suppression or a defer that can never run is unnecessary code,
`reflect.SliceHeader` deprecated)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from lsprotocol import types

from cudalint import HOME
from cudalint.catalog import Rule
from cudalint.checks import rule_by_id
from cudalint.docs import anchor
from cudalint.findings import Finding, Notification, NotificationKind, Position, Span

SOURCE = "cudalint"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "note": types.DiagnosticSeverity.Information,
}
_UNNECESSARY_RULES = frozenset({"CL203"})
_DEPRECATED_RULES = frozenset({"CL503"})
# What is said about an input as a diagnostic on it (the rest of the file
# is still analysed); other notifications are messages or log lines.
_ABOUT_THE_FILE = frozenset({
    NotificationKind.SYNTAX_ERROR, NotificationKind.NOT_GO_SOURCE, NotificationKind.TOO_COMPLEX, NotificationKind.UNREADABLE,
})


def lsp_position(position: Position) -> types.Position:
    """cudalint's 1-based line and UTF-16 column (LSP's default encoding)."""
    return types.Position(line=max(position.line - 1, 0), character=max(position.column_utf16 - 1, 0))


def lsp_range(span: Span) -> types.Range:
    return types.Range(start=lsp_position(span.start), end=lsp_position(span.end))


class RuleDocs:
    """Where each rule's documentation is: the project's public pages when
    it has a home (`cudalint.HOME`, as SARIF's helpUri would), the
    checkout's docs/rules.md when the server runs from one, else a page
    written from the catalog into a directory of the server's own that
    lives as long as it does."""

    def __init__(self) -> None:
        checkout = Path(__file__).resolve().parents[4] / "docs" / "rules.md"
        self._checkout = checkout if checkout.is_file() else None
        self._pages: tempfile.TemporaryDirectory | None = None

    def uri(self, rule: Rule) -> str:
        if HOME is not None:
            return f"{HOME.rstrip('/')}/docs/rules.md#{anchor(rule)}"
        if self._checkout is not None:
            return f"{self._checkout.as_uri()}#{anchor(rule)}"
        if self._pages is None:
            self._pages = tempfile.TemporaryDirectory(prefix="cudalint-rules-")
        page = Path(self._pages.name) / f"{rule.id}.md"
        if not page.exists():
            page.write_text(rule.markdown(), encoding="utf-8")
        return page.as_uri()

    def close(self) -> None:
        if self._pages is not None:
            self._pages.cleanup()
            self._pages = None


def diagnostic(finding: Finding, uri: str, level: str, docs: RuleDocs) -> types.Diagnostic:
    """One finding, in the file at `uri`."""
    rule = rule_by_id(finding.rule_id)
    related = [
        types.DiagnosticRelatedInformation(location=types.Location(uri=uri, range=lsp_range(ref.span)), message=ref.label)
        for ref in finding.related
    ] + [
        types.DiagnosticRelatedInformation(location=types.Location(uri=uri, range=lsp_range(step.span)), message=f"{number}. {step.message}")
        for number, step in enumerate(finding.steps, start=1)
    ]
    tags = []
    if finding.rule_id in _UNNECESSARY_RULES or (finding.rule_id == "CL001" and finding.message.startswith("unused suppression")):
        tags.append(types.DiagnosticTag.Unnecessary)
    if finding.rule_id in _DEPRECATED_RULES:
        tags.append(types.DiagnosticTag.Deprecated)
    name = f" ({rule.name})" if rule is not None else ""
    return types.Diagnostic(
        range=lsp_range(finding.span),
        message=finding.message,
        severity=_SEVERITY.get(level, types.DiagnosticSeverity.Warning),
        code=finding.rule_id,
        code_description=types.CodeDescription(href=docs.uri(rule)) if rule is not None else None,
        source=SOURCE + name,
        related_information=related or None,
        tags=tags or None,
    )


def about_the_file(notification: Notification) -> bool:
    return notification.kind in _ABOUT_THE_FILE


def notification_diagnostic(notification: Notification) -> types.Diagnostic:
    """A file cudalint could not read or parse whole: where, and why (the
    functions that parsed are still analysed)."""
    line = max((notification.line or 1) - 1, 0)
    column = max((notification.column or 1) - 1, 0)
    position = types.Position(line=line, character=column)
    return types.Diagnostic(
        range=types.Range(start=position, end=types.Position(line=line, character=column + 1)),
        message=notification.message,
        severity=types.DiagnosticSeverity.Information,
        code=notification.kind.value,
        source=SOURCE,
    )
