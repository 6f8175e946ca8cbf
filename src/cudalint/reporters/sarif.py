"""SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

Objects are built with sarif-om and serialised here rather than through
jschema-to-python, which drops every value equal to its schema default (a
result's explicit `"level": "warning"` would vanish and GitHub would then apply
the rule's level instead). Only None and the -1 "absent" sentinels are omitted.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote, urlparse

import attr
import sarif_om as om

from cudalint.catalog import Rule
from cudalint.findings import Finding, Span
from cudalint.reporters import Report

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"


def to_json(value: Any) -> Any:
    if attr.has(type(value)):
        out = {}
        for field in attr.fields(type(value)):
            item = getattr(value, field.name)
            if item is None:
                continue
            if isinstance(item, (int, float)) and not isinstance(item, bool) and item == -1 and field.default == -1:
                continue
            out[field.metadata.get("schema_property_name", field.name)] = to_json(item)
        return out
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    return value


def _region(span: Span) -> om.Region:
    return om.Region(
        start_line=span.start.line, start_column=span.start.column_utf16,
        end_line=span.end.line, end_column=span.end.column_utf16,
    )


def artifact(path: str, base_uri: str) -> om.ArtifactLocation:
    """A percent-encoded URI: relative to %SRCROOT% for files under it (what
    code scanning needs), absolute for the others."""
    if path.startswith("../") or path.startswith("/"):
        absolute = PurePosixPath(unquote(urlparse(base_uri).path)) / path
        return om.ArtifactLocation(uri=Path(os.path.normpath(absolute)).as_uri())
    return om.ArtifactLocation(uri=quote(path, safe="/"), uri_base_id=SRCROOT)


def _location(path: str, span: Span, base_uri: str, message: str | None = None) -> om.Location:
    return om.Location(
        physical_location=om.PhysicalLocation(artifact_location=artifact(path, base_uri), region=_region(span)),
        message=om.Message(text=message) if message else None,
    )


def _descriptor(rule: Rule) -> om.ReportingDescriptor:
    return om.ReportingDescriptor(
        id=rule.id,
        name=rule.name,
        short_description=om.MultiformatMessageString(text=rule.summary),
        full_description=om.MultiformatMessageString(text=rule.summary),
        help=om.MultiformatMessageString(text=rule.doc, markdown=rule.markdown()),
        default_configuration=om.ReportingConfiguration(level=rule.level.value),
        properties={"tags": list(rule.tags), "precision": rule.precision},
    )


def fingerprint(finding: Finding, occurrence: int) -> str:
    """Stable when unrelated lines move: it hashes what the finding is about
    (rule, file, function, the reported line's text), not where it is."""
    key = "\0".join((finding.rule_id, finding.path, finding.function, " ".join(finding.source_line.split())))
    return f"{hashlib.sha256(key.encode()).hexdigest()[:16]}:{occurrence}"


def _code_flows(finding: Finding, base_uri: str) -> list[om.CodeFlow] | None:
    if not finding.steps:
        return None
    return [om.CodeFlow(thread_flows=[om.ThreadFlow(locations=[
        om.ThreadFlowLocation(location=_location(finding.path, step.span, base_uri, step.message))
        for step in finding.steps
    ])])]


def render_sarif(report: Report) -> str:
    rules = sorted(report.rules.values(), key=lambda r: r.id)
    index = {rule.id: i for i, rule in enumerate(rules)}
    occurrences: Counter[str] = Counter()
    results = []
    for finding in report.result.findings:
        base = fingerprint(finding, 0).split(":")[0]
        occurrences[base] += 1
        results.append(om.Result(
            rule_id=finding.rule_id,
            rule_index=index.get(finding.rule_id, -1),
            level=report.level(finding.rule_id),
            message=om.Message(text=finding.message),
            locations=[_location(finding.path, finding.span, report.base_uri)],
            partial_fingerprints={"primaryLocationLineHash": f"{base}:{occurrences[base]}"},
            code_flows=_code_flows(finding, report.base_uri),
        ))
    notifications = [
        om.Notification(
            message=om.Message(text=note.message),
            level="error" if note.level == "error" else "warning",
            locations=[om.Location(physical_location=om.PhysicalLocation(
                artifact_location=artifact(note.path, report.base_uri),
                region=om.Region(start_line=note.line, start_column=note.column) if note.line else None,
            ))],
            descriptor=om.ReportingDescriptorReference(id=note.kind.value),
        )
        for note in report.result.notifications
    ]
    run = om.Run(
        tool=om.Tool(driver=om.ToolComponent(
            name="cudalint", version=report.version, semantic_version=report.version, rules=[_descriptor(r) for r in rules],
        )),
        results=results,
        invocations=[om.Invocation(
            execution_successful=report.result.internal_errors == 0,
            tool_execution_notifications=notifications or None,
        )],
        original_uri_base_ids={SRCROOT: om.ArtifactLocation(uri=report.base_uri)},
        column_kind="utf16CodeUnits",
    )
    log = om.SarifLog(version="2.1.0", schema_uri=SCHEMA_URI, runs=[run])
    return json.dumps(to_json(log), indent=2, ensure_ascii=False) + "\n"
