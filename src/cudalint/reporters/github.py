"""GitHub Actions workflow commands: each finding becomes an annotation on
the pull request's diff (`::error file=...,line=...,col=...::message`).

Levels map to the three annotation kinds: error -> error, warning ->
warning, note -> notice. Files are named relative to the repository root,
as GitHub expects; columns count UTF-16 code units (characters, for
almost all code). Tool notifications are annotations too.
"""

from __future__ import annotations

from cudalint.findings import Finding
from cudalint.reporters import RenderOptions, Report
from cudalint.reporters.text import escape, summary

COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def escape_data(text: str) -> str:
    """GitHub's escapes for \\r, \\n and %; other control characters (ESC,
    NUL, C1 controls, U+2028) become visible escapes."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escape(text)


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **properties: object) -> str:
    fields = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items() if value is not None)
    return f"::{kind} {fields}::{escape_data(message)}" if fields else f"::{kind}::{escape_data(message)}"


def _annotation(report: Report, finding: Finding) -> str:
    rule = report.rules.get(finding.rule_id)
    title = f"{finding.rule_id} {rule.name}" if rule else finding.rule_id
    message = finding.message
    kind = COMMANDS.get(report.level(finding.rule_id), "warning")
    if finding.suppression is not None:
        kind = "notice"
        title += " (suppressed)"
        message += f" [suppressed: {finding.suppression.justification}]"
    start, end = finding.span.start, finding.span.end
    return command(
        kind, message,
        file=report.root_relative(finding.path) or finding.path,
        line=start.line, col=start.column_utf16, endLine=end.line, endColumn=end.column_utf16, title=title,
    )


def render_github(report: Report, *, quiet: bool = False) -> str:
    lines = [_annotation(report, finding) for finding in report.findings()]
    for note in report.result.notifications:
        lines.append(command(
            "error" if note.level == "error" else "warning", note.message,
            file=report.root_relative(note.path) or note.path, line=note.line, col=note.column,
            title=f"cudalint: {note.kind.value}",
        ))
    if not quiet:
        lines.append(summary(report))
    return "\n".join(lines) + ("\n" if lines else "")


def render(report: Report, options: RenderOptions) -> str:
    return render_github(report, quiet=options.quiet)
