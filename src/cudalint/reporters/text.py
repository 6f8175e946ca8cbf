"""`path:line:col: CL301 message`, the format editors and CI logs understand,
with an optional code frame under each finding and a summary by rule."""

from __future__ import annotations

import re
import unicodedata

import click

from cudalint.findings import Finding, SuppressionKind
from cudalint.reporters import RenderOptions, Report

TAB = 4
_LEVEL_COLORS = {"error": "red", "warning": "yellow"}

# Characters that must never reach a log raw: C0 and C1 controls (a newline
# in a file name or in quoted source would start a line that GitHub Actions
# runs as a workflow command, `::add-mask::` or `::error`; ESC drives the
# terminal) and the Unicode line separators. Tab is harmless and kept.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def escape(text: str) -> str:
    """Control characters as visible escapes: `\\n`, `\\x1b`, `\\u2028`."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(
        lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"),
        text,
    )


def safe_path(path: str) -> str:
    """A path to print at the start of a line: escaped, and never starting
    with `::` (a file named `::error::x.go` would be a workflow command)."""
    path = escape(path)
    return "./" + path if path.lstrip().startswith("::") else path


def safe_line(line: str) -> str:
    """One line of human-readable output (a notification on stderr):
    escaped, and never a workflow command."""
    line = escape(line)
    return "./" + line if line.lstrip().startswith("::") else line


def render_text(report: Report, *, color: bool, quiet: bool, show_paths: bool = False, show_source: bool = False) -> str:
    def style(text: str, **kwargs) -> str:
        return click.style(text, **kwargs) if color else text

    lines = []
    for finding in report.findings():
        path = safe_path(finding.path)
        where = f"{path}:{finding.span.start.line}:{finding.span.start.column}:"
        level_color = _LEVEL_COLORS.get(report.level(finding.rule_id), "cyan")
        fixable = " " + style("[*]", fg="green", bold=True) if any(fix.safe for fix in finding.fixes) else ""
        line = f"{style(where, bold=True)} {style(escape(finding.rule_id), fg=level_color, bold=True)}{fixable} {escape(finding.message)}"
        if finding.suppression is not None:
            line += " " + style(f"[suppressed: {escape(finding.suppression.justification)}]", dim=True)
        lines.append(line)
        if show_source:
            lines += code_frame(finding, lambda text: style(text, fg=level_color, bold=True), lambda text: style(text, fg="blue", bold=True))
        if show_paths:
            for number, step in enumerate(finding.steps, start=1):
                lines.append(f"    {number}. {path}:{step.span.start.line}:{step.span.start.column}: {escape(step.message)}")
        if show_source:
            lines.append("")
    if not quiet:
        lines.append(summary(report))
    return "\n".join(lines) + ("\n" if lines else "")


def _width(text: str) -> int:
    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1
        for char in text
    )


def _expand(text: str) -> str:
    """Tabs to spaces (Go indents with tabs), keeping tab stops."""
    out: list[str] = []
    column = 0
    for char in text:
        if char == "\t":
            spaces = TAB - column % TAB
            out.append(" " * spaces)
            column += spaces
        else:
            out.append(char)
            column += _width(char)
    return "".join(out)


def _char_index(line: str, byte_column: int) -> int:
    """The character index of a 1-based byte column in `line`."""
    return len(line.encode("utf-8")[: byte_column - 1].decode("utf-8", "ignore"))


def code_frame(finding: Finding, marker, gutter_style) -> list[str]:
    """The reported line with carets under the finding's span (to the end of
    the line when the span goes on)."""
    # Control characters would break the frame (and the log): each becomes
    # one replacement character, which keeps the carets aligned.
    line = _CONTROL.sub("\ufffd", finding.source_line)
    if not line:
        return []
    start = _char_index(line, finding.span.start.column)
    end = _char_index(line, finding.span.end.column) if finding.span.end.line == finding.span.start.line else len(line.rstrip())
    number = str(finding.span.start.line)
    gutter = " " * len(number)
    offset = _width(_expand(line[:start]))
    length = max(1, _width(_expand(line[:end])) - offset)
    return [
        gutter_style(f"{gutter} |"),
        gutter_style(f"{number} |") + " " + _expand(line).rstrip(),
        gutter_style(f"{gutter} |") + " " + " " * offset + marker("^" * length),
    ]


def summary(report: Report) -> str:
    result = report.result
    counts = report.counts()
    files = f"{result.files_analysed} file{'s' if result.files_analysed != 1 else ''} analysed"
    if result.files_skipped:
        files += f", {result.files_skipped} without GPU code skipped"
    suppressed = report.suppressed_counts()
    hidden = ""
    if suppressed:
        parts = [
            (suppressed[kind], label)
            for kind, label in ((SuppressionKind.IN_SOURCE, "by directives"), (SuppressionKind.EXTERNAL, "by the baseline"))
            if suppressed[kind]
        ]
        if len(parts) == 1:
            hidden = f"; {parts[0][0]} suppressed {parts[0][1]}"
        else:
            hidden = f"; {sum(suppressed.values())} suppressed ({', '.join(f'{n} {label}' for n, label in parts)})"
        if not report.show_suppressed:
            hidden += ", shown by --show-suppressed"
    if not counts:
        return f"No findings ({files}){hidden}."
    total = sum(counts.values())
    by_rule = ", ".join(f"{rule_id}: {n}" for rule_id, n in sorted(counts.items()))
    # The levels say what the exit status is about: a note-only run exits 1 too (see --fail-on).
    levels: dict[str, int] = {}
    for rule_id, n in counts.items():
        level = report.level(rule_id)
        levels[level] = levels.get(level, 0) + n
    by_level = ", ".join(f"{levels[level]} {level}{'s' if levels[level] != 1 else ''}" for level in ("error", "warning", "note") if level in levels)
    fixable = sum(1 for finding in report.findings() if finding.suppression is None and any(fix.safe for fix in finding.fixes))
    fixes = f"; {fixable} fixable with --fix ([*])" if fixable else ""
    return f"Found {total} finding{'s' if total != 1 else ''} ({by_rule}): {by_level}; {files}{hidden}{fixes}."


def render(report: Report, options: RenderOptions) -> str:
    return render_text(report, color=options.color, quiet=options.quiet, show_paths=options.show_paths, show_source=options.show_source)
