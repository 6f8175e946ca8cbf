"""A stable JSON document for scripts. Keys are only ever added, never renamed;
`schema_version` changes if that promise is ever broken. README.md documents
every key."""

from __future__ import annotations

import json

from cudalint.findings import Finding, Span, Suppression, SuppressionKind
from cudalint.reporters import RenderOptions, Report

SCHEMA_VERSION = 1


def _span(span: Span) -> dict:
    return {
        "line": span.start.line, "column": span.start.column,
        "end_line": span.end.line, "end_column": span.end.column,
    }


def _suppression(suppression: Suppression | None) -> dict | None:
    if suppression is None:
        return None
    out: dict = {"kind": suppression.kind.value, "justification": suppression.justification, "path": suppression.path}
    if suppression.span is not None:
        out.update(_span(suppression.span))
    return out


def _finding(report: Report, f: Finding) -> dict:
    return {
        "rule": f.rule_id,
        "name": report.rules[f.rule_id].name if f.rule_id in report.rules else "",
        "level": report.level(f.rule_id),
        "path": f.path,
        **_span(f.span),
        "function": f.function,
        "message": f.message,
        "steps": [{**_span(s.span), "message": s.message} for s in f.steps],
        "fingerprint": f.fingerprint,
        "suppression": _suppression(f.suppression),
        "fixes": [
            {
                "message": fix.message, "safety": "safe" if fix.safe else "unsafe",
                "edits": [{"start": e.start, "end": e.end, **_span(e.span), "text": e.text} for e in fix.edits],
            }
            for fix in f.fixes
        ],
    }


def _statistics(report: Report) -> list[dict]:
    """Findings per rule, most frequent first (as the text format's --statistics)."""
    fixable = {
        rule_id: sum(1 for f in report.result.findings if f.rule_id == rule_id and any(fix.safe for fix in f.fixes))
        for rule_id in report.counts()
    }
    return [
        {
            "rule": rule_id, "name": report.rules[rule_id].name if rule_id in report.rules else "",
            "level": report.level(rule_id), "count": count, "fixable": fixable[rule_id],
        }
        for rule_id, count in sorted(report.counts().items(), key=lambda item: (-item[1], item[0]))
    ]


def render_json(report: Report, statistics: bool = False) -> str:
    """The findings document; with --statistics, `statistics` (the counts per
    rule) in place of `findings`."""
    result = report.result
    suppressed = report.suppressed_counts()
    document = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "cudalint", "version": report.version},
        **(
            {"statistics": _statistics(report)} if statistics
            else {"findings": [_finding(report, f) for f in report.findings()]}
        ),
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
            "suppressed": {
                "in_source": suppressed[SuppressionKind.IN_SOURCE],
                "baseline": suppressed[SuppressionKind.EXTERNAL],
            },
            "baseline": None if report.baseline is None else {
                "path": report.baseline, "stale_entries": report.stale_baseline_entries,
            },
        },
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def render(report: Report, options: RenderOptions) -> str:
    return render_json(report, statistics=options.statistics)
