"""GitLab code quality (the Code Climate JSON subset GitLab reads): a JSON
array of issues, each with a description, a check name, a fingerprint, a
severity and a location (path relative to the repository root, begin line).
Upload it as a `codequality` report artifact of a GitLab CI job. A file
cudalint could not analyse (a notification: it does not parse, cannot be
read...) is an issue too, of severity major, checked as `cudalint/<kind>`.
"""

from __future__ import annotations

import hashlib
import json

from cudalint.reporters import RenderOptions, Report, is_error

SEVERITY = {"error": "major", "warning": "minor", "note": "info"}


def _fingerprint(*parts: object) -> str:
    return hashlib.sha256("\0".join(str(part) for part in parts).encode("utf-8", "surrogatepass")).hexdigest()


def render(report: Report, options: RenderOptions) -> str:
    issues = []
    for finding in report.findings():
        path = report.root_relative(finding.path) or finding.path
        issues.append({
            "type": "issue",
            "description": f"{finding.rule_id} {finding.message}",
            "check_name": finding.rule_id,
            "categories": ["Bug Risk"],
            # Stable across runs: the file and cudalint's own fingerprint (which survives lines moving).
            "fingerprint": _fingerprint(path, finding.rule_id, finding.fingerprint),
            "severity": SEVERITY.get(report.level(finding.rule_id), "minor"),
            "location": {"path": path, "lines": {"begin": finding.span.start.line, "end": finding.span.end.line}},
        })
    for note in report.result.notifications:
        path = report.root_relative(note.path) or note.path
        issues.append({
            "type": "issue",
            "description": f"cudalint: {note.message}",
            "check_name": f"cudalint/{note.kind.value}",
            "categories": ["Bug Risk"],
            "fingerprint": _fingerprint(path, note.kind.value, note.message),
            "severity": "major" if is_error(note) else "minor",
            "location": {"path": path, "lines": {"begin": note.line or 1}},
        })
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
