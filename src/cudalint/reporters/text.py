"""`path:line:col: CL301 message`, the format editors and CI logs understand."""

from __future__ import annotations

import click

from cudalint.reporters import Report


def render_text(report: Report, *, color: bool, quiet: bool, show_paths: bool = False) -> str:
    def style(text: str, **kwargs) -> str:
        return click.style(text, **kwargs) if color else text

    lines = []
    for finding in report.result.findings:
        where = f"{finding.path}:{finding.span.start.line}:{finding.span.start.column}:"
        rule_color = {"error": "red", "warning": "yellow"}.get(report.level(finding.rule_id), "cyan")
        lines.append(f"{style(where, bold=True)} {style(finding.rule_id, fg=rule_color, bold=True)} {finding.message}")
        if show_paths:
            for number, step in enumerate(finding.steps, start=1):
                lines.append(f"    {number}. {finding.path}:{step.span.start.line}:{step.span.start.column}: {step.message}")
    if not quiet:
        lines.append(summary(report))
    return "\n".join(lines) + ("\n" if lines else "")


def summary(report: Report) -> str:
    result = report.result
    counts = report.counts()
    files = f"{result.files_analysed} file{'s' if result.files_analysed != 1 else ''} analysed"
    if result.files_skipped:
        files += f", {result.files_skipped} without GPU code skipped"
    if not counts:
        return f"No findings ({files})."
    total = sum(counts.values())
    by_rule = ", ".join(f"{rule_id}: {n}" for rule_id, n in sorted(counts.items()))
    return f"Found {total} finding{'s' if total != 1 else ''} ({by_rule}); {files}."
