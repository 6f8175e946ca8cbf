"""GitLab code quality (the Code Climate JSON subset GitLab reads): a JSON
array of issues, each with a description, a check name, a fingerprint, a
severity and a location (path relative to the repository root, begin line).
Upload it as a `codequality` report artifact of a GitLab CI job.
"""

from __future__ import annotations

import hashlib
import json

from cudalint.reporters import RenderOptions, Report

SEVERITY = {"error": "major", "warning": "minor", "note": "info"}


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
            "fingerprint": hashlib.sha256(f"{path}\0{finding.rule_id}\0{finding.fingerprint}".encode()).hexdigest(),
            "severity": SEVERITY.get(report.level(finding.rule_id), "minor"),
            "location": {"path": path, "lines": {"begin": finding.span.start.line, "end": finding.span.end.line}},
        })
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
