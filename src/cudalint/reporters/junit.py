"""JUnit XML, which CI systems (GitLab, Jenkins, Azure Pipelines) show as
test results: one test suite, one test case per finding, failed, named by
rule and place; a clean run is one passing test case."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from cudalint.reporters import RenderOptions, Report


def render(report: Report, options: RenderOptions) -> str:
    findings = report.findings()
    cases = []
    for finding in findings:
        start = finding.span.start
        name = f"{finding.rule_id} {finding.path}:{start.line}:{start.column}"
        cases.append(
            f"    <testcase classname={quoteattr('cudalint.' + finding.rule_id)} name={quoteattr(name)} "
            f"file={quoteattr(finding.path)} line=\"{start.line}\">\n"
            f"      <failure type={quoteattr(finding.rule_id)} message={quoteattr(finding.message)}>"
            f"{escape(finding.message)}</failure>\n"
            f"    </testcase>"
        )
    if not cases:
        cases.append('    <testcase classname="cudalint" name="no findings"/>')
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="cudalint" tests="{max(len(findings), 1)}" failures="{len(findings)}">',
        f'  <testsuite name="cudalint" tests="{max(len(findings), 1)}" failures="{len(findings)}" errors="0">',
        *cases,
        "  </testsuite>",
        "</testsuites>",
    ]) + "\n"
