"""GitHub Actions workflow commands: each finding becomes an annotation on
the pull request's diff (`::error file=...,line=...,col=...::message`).

Levels map to the three annotation kinds: error -> error, warning ->
warning, note -> notice. Files are named relative to the repository root,
as GitHub expects; columns count UTF-16 code units (characters, for
almost all code). Tool notifications are annotations too.

The log shows no workflow command, and GitHub shows at most 10 error and 10
warning annotations per step: the findings follow as text (the text
format's lines), so that none is lost, and `step_summary` writes them as
Markdown for $GITHUB_STEP_SUMMARY (the run's summary page).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from urllib.parse import quote

from cudalint.findings import Finding
from cudalint.reporters import RenderOptions, Report
from cudalint.reporters.text import escape, render_text, summary

# GitHub shows at most this many annotations of each of error and warning per step.
SHOWN_PER_STEP = 10

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


def render_github(report: Report, *, quiet: bool = False, show_paths: bool = False, show_source: bool = False) -> str:
    lines = [_annotation(report, finding) for finding in report.findings()]
    for note in report.result.notifications:
        lines.append(command(
            "error" if note.level == "error" else "warning", note.message,
            file=report.root_relative(note.path) or note.path, line=note.line, col=note.column,
            title=f"cudalint: {note.kind.value}",
        ))
    kinds = Counter(line[2:].split("::", 1)[0].split(" ", 1)[0] for line in lines)
    # The same findings as text: the lines the log shows.
    text = render_text(report, color=False, quiet=True, show_paths=show_paths, show_source=show_source)
    lines += text.splitlines()
    if not quiet:
        over = [f"{kinds[kind]} {kind}s" for kind in ("error", "warning") if kinds[kind] > SHOWN_PER_STEP]
        if over:
            lines.append(
                f"GitHub shows at most {SHOWN_PER_STEP} error and {SHOWN_PER_STEP} warning annotations per step; "
                f"this run has {' and '.join(over)}: all are listed above"
            )
        lines.append(summary(report))
    return "\n".join(lines) + ("\n" if lines else "")


def render(report: Report, options: RenderOptions) -> str:
    return render_github(report, quiet=options.quiet, show_paths=options.show_paths, show_source=options.show_source)


# -- the step summary ----------------------------------------------------------

# GitHub refuses a step summary over 1 MiB; rows beyond these bounds are counted, not listed.
SUMMARY_ROWS = 500
SUMMARY_BYTES = 256 * 1024
_MARKDOWN = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]",
             "<": "&lt;", ">": "&gt;", "&": "&amp;", "#": "\\#", "~": "\\~", "\n": " ", "\r": " "}
_ICONS = {"error": ":x:", "warning": ":warning:", "note": ":information_source:"}


def markdown_text(text: str) -> str:
    """Text as literal Markdown within a table cell: nothing in a message or a
    file name becomes a link, markup or HTML, or ends the cell."""
    return escape("".join(_MARKDOWN.get(char, char) for char in text))


def _link(report: Report, path: str, line: int, env: Mapping[str, str]) -> str | None:
    """The file's line at the analysed commit on GitHub, where the workflow's
    environment names the server, repository and commit."""
    relative = report.root_relative(path)
    server, repository, sha = (env.get(name, "") for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA"))
    if relative is None or not (server and repository and sha):
        return None
    return f"{server.rstrip('/')}/{quote(repository)}/blob/{quote(sha)}/{quote(relative)}#L{line}"


def step_summary(report: Report, env: Mapping[str, str]) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY: the summary line, a table of the
    findings (level, rule, place linked to the commit, message) and the files
    cudalint could not analyse."""
    out = ["## cudalint", "", markdown_text(summary(report)), ""]
    findings = report.findings()
    if findings:
        out += ["| | Rule | Where | Message |", "|---|---|---|---|"]
        size = sum(len(line) + 1 for line in out)
        for shown, finding in enumerate(findings):
            start = finding.span.start
            where = markdown_text(f"{finding.path}:{start.line}:{start.column}")
            url = _link(report, finding.path, start.line, env)
            rule = report.rules.get(finding.rule_id)
            level = report.level(finding.rule_id)
            message = finding.message
            if finding.suppression is not None:
                message += f" [suppressed: {finding.suppression.justification}]"
            row = (
                f"| {_ICONS.get(level, '')} {level} | {markdown_text(finding.rule_id)}"
                f"{' ' + markdown_text(rule.name) if rule else ''} | {f'[{where}]({url})' if url else where} "
                f"| {markdown_text(message)} |"
            )
            if shown >= SUMMARY_ROWS or size + len(row) > SUMMARY_BYTES:
                left = len(findings) - shown
                out += ["", f"{left} more finding{'s' if left != 1 else ''} are listed in the log of this step."]
                break
            out.append(row)
            size += len(row) + 1
        out.append("")
    notes = report.result.notifications
    if notes:
        out += ["**Notifications** (files cudalint could not read, parse or finish):", ""]
        out += [f"- {markdown_text(note.render())}" for note in notes[:SUMMARY_ROWS]]
        if len(notes) > SUMMARY_ROWS:
            out.append(f"- and {len(notes) - SUMMARY_ROWS} more (see the log)")
        out.append("")
    return "\n".join(out) + "\n"
