"""Checkstyle XML, which Jenkins' warnings plugin, reviewdog and many IDEs
read: one <file> per file with findings or notifications, one <error> per
finding (line, column, severity, message, source = the rule) and per
notification (a file cudalint could not analyse: severity error, source
`cudalint.<kind>`, e.g. cudalint.syntax-error). Characters XML 1.0 forbids
(a control character in a file name) are written as visible escapes."""

from __future__ import annotations

from cudalint.reporters import RenderOptions, Report, is_error
from cudalint.reporters.xmltext import attribute

SEVERITY = {"error": "error", "warning": "warning", "note": "info"}


def _error(line: int | None, column: int | None, severity: str, message: str, source: str) -> str:
    where = f'line="{line or 0}"' + (f' column="{column}"' if column else "")
    return (
        f"    <error {where} severity={attribute(severity)} "
        f"message={attribute(message)} source={attribute(source)}/>"
    )


def render(report: Report, options: RenderOptions) -> str:
    by_file: dict[str, list[tuple[int, int, str]]] = {}
    for finding in report.findings():
        start = finding.span.start
        by_file.setdefault(finding.path, []).append((start.line, start.column, _error(
            start.line, start.column, SEVERITY.get(report.level(finding.rule_id), "warning"),
            finding.message, "cudalint." + finding.rule_id,
        )))
    for note in report.result.notifications:
        by_file.setdefault(note.path, []).append((note.line or 0, note.column or 0, _error(
            note.line, note.column, "error" if is_error(note) else "warning", note.message, "cudalint." + note.kind.value,
        )))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<checkstyle version="4.3">']
    for path in sorted(by_file):
        lines.append(f"  <file name={attribute(path)}>")
        lines += [entry for _, _, entry in sorted(by_file[path], key=lambda item: (item[0], item[1]))]
        lines.append("  </file>")
    lines.append("</checkstyle>")
    return "\n".join(lines) + "\n"
