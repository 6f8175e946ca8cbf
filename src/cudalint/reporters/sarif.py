"""SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

Objects are built with sarif-om and serialised here rather than through
jschema-to-python, which drops every value equal to its schema default (a
result's explicit `"level": "warning"` would vanish and GitHub would then apply
the rule's level instead). Only None and the -1 "absent" sentinels are omitted.
sarif-om's Suppression names its status `state` (a draft's name); suppressions
are written as plain objects with SARIF 2.1.0's `status` instead.

Files are named relative to the repository root (`%SRCROOT%`, the nearest
directory holding .git at or above the working directory), as code scanning
expects; files outside it get absolute file:// URIs.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import attr
import sarif_om as om

from cudalint import HOME
from cudalint.catalog import Rule
from cudalint.findings import Finding, Span, Suppression, SuppressionKind, template_parts
from cudalint.reporters import RenderOptions, Report

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


def artifact(report: Report, path: str) -> om.ArtifactLocation:
    """A percent-encoded URI: relative to %SRCROOT% for files under it (what
    code scanning needs), absolute for the others."""
    relative = report.root_relative(path)
    if relative is None:
        return om.ArtifactLocation(uri=(report.cwd / path).resolve().as_uri())
    return om.ArtifactLocation(uri=quote(relative, safe="/"), uri_base_id=SRCROOT)


def _location(report: Report, path: str, span: Span | None, message: str | None = None, id: int = -1) -> om.Location:
    return om.Location(
        id=id,
        physical_location=om.PhysicalLocation(artifact_location=artifact(report, path), region=_region(span) if span else None),
        message=om.Message(text=message) if message else None,
    )


def _descriptor(rule: Rule) -> om.ReportingDescriptor:
    return om.ReportingDescriptor(
        id=rule.id,
        name=rule.name,
        short_description=om.MultiformatMessageString(text=rule.summary),
        full_description=om.MultiformatMessageString(text=_within(rule.description, DESCRIPTION_LIMIT)),
        help=om.MultiformatMessageString(text=rule.doc, markdown=rule.markdown()),
        default_configuration=om.ReportingConfiguration(level=rule.level.value),
        properties=rule_properties(rule),
    )


# How often a rule's findings are real defects, in the words GitHub code
# scanning reads from `properties.precision` (it sorts and filters alerts by
# it): very-high for rules that check what is written (a status used as a
# statement), high for the path-sensitive ones whose models are complete for
# the APIs in the knowledge, medium where the rule infers what the code
# cannot say (which goroutine owns a context, where a pointer came from) or
# is still a preview rule, low for a retired rule.
PRECISION = {
    "CL001": "very-high",
    "CL101": "high", "CL102": "high", "CL103": "high", "CL104": "high", "CL105": "high",
    "CL201": "very-high", "CL202": "high", "CL203": "high",
    "CL301": "very-high", "CL302": "very-high", "CL303": "high", "CL304": "very-high",
    "CL401": "medium", "CL402": "high", "CL403": "high",
    "CL501": "medium", "CL502": "medium", "CL503": "very-high", "CL504": "high", "CL505": "low",
    "CL506": "medium", "CL507": "medium", "CL508": "medium",
}

# The rules whose defect is a memory-safety hole (a use after free, a double
# free, an out-of-bounds write, a pointer the GC has invalidated): a CVSS-like
# score GitHub reads from `properties.security-severity` for rules tagged
# `security` (9.0 and above critical, 7.0 high, 4.0 medium, below low; as
# CodeQL scores such queries), and the CWE, as an `external/cwe/cwe-N` tag.
SECURITY = {
    "CL102": ("8.1", 415),  # double free
    "CL104": ("8.1", 416),  # use after free
    "CL105": ("6.5", 762),  # mismatched memory management routines
    "CL501": ("6.5", 825),  # expired pointer dereference (the GC moved or freed it)
    "CL504": ("7.5", 825),  # the GC moves or frees memory an asynchronous copy still uses
    "CL506": ("7.8", 787),  # out-of-bounds write
    "CL507": ("8.1", 415),  # double free
}


def rule_properties(rule: Rule) -> dict[str, Any]:
    """The rule's tags, precision and, for a memory-safety rule, its security
    severity, the `security` tag GitHub needs to apply it and the CWE."""
    tags = list(rule.tags)
    properties: dict[str, Any] = {"tags": tags, "precision": PRECISION.get(rule.id, "medium")}
    if rule.id in SECURITY and not rule.retired:
        severity, cwe = SECURITY[rule.id]
        tags += [tag for tag in ("security", f"external/cwe/cwe-{cwe}") if tag not in tags]
        properties["security-severity"] = severity
    return properties


# GitHub code scanning reads at most this many characters of a rule's
# short and full descriptions.
DESCRIPTION_LIMIT = 1024


def _within(text: str, limit: int) -> str:
    """The text, cut at the last sentence that fits (an ellipsis where no
    sentence end does), so that nothing is truncated mid-word by a reader."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    end = max(cut.rfind(". "), cut.rfind(".\n"))
    return cut[: end + 1] if end > limit // 2 else cut[: cut.rfind(" ")] + "…"


# GitHub code scanning's hard limits (a file beyond them is rejected whole).
MAX_RESULTS = 25_000
MAX_FLOW_STEPS = 10_000
MAX_RELATED = 1_000
_SEVERITY = {"error": 0, "warning": 1, "note": 2}


def _code_flows(report: Report, finding: Finding) -> list[om.CodeFlow] | None:
    if not finding.steps:
        return None
    steps = finding.steps
    if len(steps) > MAX_FLOW_STEPS:  # keep the acquisition's end and the leaking exit
        steps = steps[: MAX_FLOW_STEPS - 1] + steps[-1:]
    return [om.CodeFlow(thread_flows=[om.ThreadFlow(locations=[
        om.ThreadFlowLocation(location=_location(report, finding.path, step.span, step.message))
        for step in steps
    ])])]


def _within_limits(report: Report, findings: list[Finding]) -> tuple[list[Finding], int]:
    """At most MAX_RESULTS results, the most severe first: beyond it GitHub
    rejects the whole file. The number left out is said in a notification."""
    if len(findings) <= MAX_RESULTS:
        return findings, 0
    ranked = sorted(findings, key=lambda f: (_SEVERITY.get(report.level(f.rule_id), 3), f.sort_key()))
    kept = sorted(ranked[:MAX_RESULTS], key=Finding.sort_key)
    return kept, len(findings) - MAX_RESULTS


def _escape(text: str) -> str:
    """Literal brackets in a message with embedded links (SARIF §3.11.6), and
    a backslash before one, are escaped with a backslash."""
    return re.sub(r"(\\*)([\[\]])", lambda m: m.group(1) * 2 + "\\" + m.group(2), text)


def linked_message(report: Report, finding: Finding) -> tuple[str, list[om.Location]]:
    """The message with each related location it names ("the return at
    line 24") as a link to that location (SARIF §3.11.6), from the finding's
    data: nothing here reads the message."""
    if not finding.template:
        return _escape(finding.message), []
    related = [
        _location(report, finding.path, place.span, place.label, id=number)
        for number, place in enumerate(finding.related, start=1)
    ]
    text = "".join(
        _escape(part) if isinstance(part, str) else f"[line {finding.related[part].span.start.line}]({part + 1})"
        for part in template_parts(finding.template)
    )
    return text, related


def _suppression(report: Report, suppression: Suppression) -> dict:
    out: dict[str, Any] = {"kind": suppression.kind.value, "status": "accepted", "justification": suppression.justification}
    if suppression.kind is SuppressionKind.IN_SOURCE and suppression.span is not None:
        out["location"] = _location(report, suppression.path, suppression.span)
    return out


def _result(report: Report, finding: Finding, index: dict[str, int]) -> om.Result:
    text, related = linked_message(report, finding)
    result = om.Result(
        rule_id=finding.rule_id,
        rule_index=index.get(finding.rule_id, -1),
        level=report.level(finding.rule_id),
        message=om.Message(text=text),
        locations=[_location(report, finding.path, finding.span)],
        partial_fingerprints={"primaryLocationLineHash": finding.fingerprint},
        code_flows=_code_flows(report, finding),
        related_locations=related[:MAX_RELATED] or None,
        suppressions=[_suppression(report, finding.suppression)] if finding.suppression else None,
        fixes=[_fix(report, finding.path, fix) for fix in finding.fixes] or None,
    )
    if report.baseline is not None:
        in_baseline = finding.suppression is not None and finding.suppression.kind is SuppressionKind.EXTERNAL
        result.baseline_state = "unchanged" if in_baseline else "new"
    return result


def _fix(report: Report, path: str, fix) -> om.Fix:
    """A proposed fix: its replacements, each a deleted region (lines and
    UTF-16 columns, empty for an insertion) and the content inserted."""
    return om.Fix(
        description=om.Message(text=fix.message + ("" if fix.safe else " (unsafe: needs a look)")),
        artifact_changes=[om.ArtifactChange(
            artifact_location=artifact(report, path),
            replacements=[
                om.Replacement(deleted_region=_region(edit.span), inserted_content=om.ArtifactContent(text=edit.text))
                for edit in fix.edits
            ],
        )],
    )


def automation_id(category: str) -> str:
    """The run's automationDetails.id: the category and a slash (GitHub code
    scanning takes what precedes the last slash as the analysis category).
    github/codeql-action/upload-sarif keeps an id the file has and ignores
    its own `category` input then, so the two must agree: --sarif-category."""
    return category if category.endswith("/") else category + "/"


def render_sarif(report: Report) -> str:
    rules = sorted(report.rules.values(), key=lambda r: r.id)
    index = {rule.id: i for i, rule in enumerate(rules)}
    shown, left_out = _within_limits(report, report.findings())
    results = [_result(report, finding, index) for finding in shown]
    notifications = [
        om.Notification(
            message=om.Message(text=note.message),
            level="error" if note.level == "error" else "warning",
            locations=[om.Location(physical_location=om.PhysicalLocation(
                artifact_location=artifact(report, note.path),
                region=om.Region(start_line=note.line, start_column=note.column) if note.line else None,
            ))],
            descriptor=om.ReportingDescriptorReference(id=note.kind.value),
        )
        for note in report.result.notifications
    ]
    if left_out:
        notifications.append(om.Notification(
            message=om.Message(text=(
                f"{left_out} findings of the lowest levels are left out of this file: GitHub code scanning rejects "
                f"a run of more than {MAX_RESULTS:,} results; the text and json formats list them all"
            )),
            level="warning", descriptor=om.ReportingDescriptorReference(id="results-left-out"),
        ))
    overrides = [
        om.ConfigurationOverride(
            configuration=om.ReportingConfiguration(level=level),
            descriptor=om.ReportingDescriptorReference(id=rule_id, index=index[rule_id]),
        )
        for rule_id, level in sorted(report.levels.items())
        if rule_id in index
    ]
    run = om.Run(
        tool=om.Tool(driver=om.ToolComponent(
            name="cudalint", version=report.version, semantic_version=report.version,
            information_uri=HOME, rules=[_descriptor(r) for r in rules],
        )),
        results=results,
        invocations=[om.Invocation(
            execution_successful=report.result.internal_errors == 0,
            tool_execution_notifications=notifications or None,
            rule_configuration_overrides=overrides or None,
        )],
        original_uri_base_ids={SRCROOT: om.ArtifactLocation(uri=report.base_uri)},
        column_kind="utf16CodeUnits",
        automation_details=om.RunAutomationDetails(id=automation_id(report.category)),
    )
    log = om.SarifLog(version="2.1.0", schema_uri=SCHEMA_URI, runs=[run])
    return json.dumps(to_json(log), indent=2, ensure_ascii=False) + "\n"


def render(report: Report, options: RenderOptions) -> str:
    return render_sarif(report)
