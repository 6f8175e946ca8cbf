"""A stable JSON document for scripts. Keys are only ever added, never renamed;
`schema_version` changes if that promise is ever broken."""

from __future__ import annotations

import json

from cudalint.findings import Span
from cudalint.reporters import Report

SCHEMA_VERSION = 1


def _span(span: Span) -> dict:
    return {
        "line": span.start.line, "column": span.start.column,
        "end_line": span.end.line, "end_column": span.end.column,
    }


def render_json(report: Report) -> str:
    result = report.result
    document = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "cudalint", "version": report.version},
        "findings": [
            {
                "rule": f.rule_id,
                "name": report.rules[f.rule_id].name if f.rule_id in report.rules else "",
                "level": report.level(f.rule_id),
                "path": f.path,
                **_span(f.span),
                "function": f.function,
                "message": f.message,
                "steps": [{**_span(s.span), "message": s.message} for s in f.steps],
            }
            for f in result.findings
        ],
        "notifications": [
            {"kind": n.kind.value, "level": n.level, "path": n.path, "line": n.line, "column": n.column, "message": n.message}
            for n in result.notifications
        ],
        "summary": {
            "findings": len(result.findings),
            "by_rule": dict(sorted(report.counts().items())),
            "files_analysed": result.files_analysed,
            "files_skipped": result.files_skipped,
            "notifications": len(result.notifications),
        },
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
