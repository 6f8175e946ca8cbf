"""Checkstyle XML, which Jenkins' warnings plugin, reviewdog and many IDEs
read: one <file> per analysed file with findings, one <error> per finding
(line, column, severity, message, source = the rule)."""

from __future__ import annotations

from itertools import groupby
from xml.sax.saxutils import quoteattr

from cudalint.reporters import RenderOptions, Report

SEVERITY = {"error": "error", "warning": "warning", "note": "info"}


def render(report: Report, options: RenderOptions) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<checkstyle version="4.3">']
    for path, findings in groupby(report.findings(), key=lambda f: f.path):
        lines.append(f"  <file name={quoteattr(path)}>")
        for finding in findings:
            start = finding.span.start
            lines.append(
                f"    <error line=\"{start.line}\" column=\"{start.column}\" "
                f"severity={quoteattr(SEVERITY.get(report.level(finding.rule_id), 'warning'))} "
                f"message={quoteattr(finding.message)} source={quoteattr('cudalint.' + finding.rule_id)}/>"
            )
        lines.append("  </file>")
    lines.append("</checkstyle>")
    return "\n".join(lines) + "\n"
