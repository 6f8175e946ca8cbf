"""JUnit XML, which CI systems (GitLab, Jenkins, Azure Pipelines) show as
test results: one test suite; one failed test case per finding, named by
rule and place; one test case in error per file cudalint could not analyse
(a notification: the file does not parse, cannot be read...), counted in
`errors`; a clean run is one passing test case. A cache notice goes to the
suite's <system-err>. Characters XML 1.0 forbids (a control character in a
file name) are written as visible escapes."""

from __future__ import annotations

from cudalint.reporters import RenderOptions, Report, is_error
from cudalint.reporters.xmltext import attribute, content


def render(report: Report, options: RenderOptions) -> str:
    findings = report.findings()
    cases = []
    for finding in findings:
        start = finding.span.start
        name = f"{finding.rule_id} {finding.path}:{start.line}:{start.column}"
        cases.append(
            f"    <testcase classname={attribute('cudalint.' + finding.rule_id)} name={attribute(name)} "
            f"file={attribute(finding.path)} line=\"{start.line}\">\n"
            f"      <failure type={attribute(finding.rule_id)} message={attribute(finding.message)}>"
            f"{content(finding.message)}</failure>\n"
            f"    </testcase>"
        )
    errors = [note for note in report.result.notifications if is_error(note)]
    for note in errors:
        where = note.path + (f":{note.line}" if note.line else "")
        cases.append(
            f"    <testcase classname={attribute('cudalint.' + note.kind.value)} name={attribute(f'{note.kind.value} {where}')} "
            f"file={attribute(note.path)}" + (f" line=\"{note.line}\"" if note.line else "") + ">\n"
            f"      <error type={attribute(note.kind.value)} message={attribute(note.message)}>"
            f"{content(note.render())}</error>\n"
            f"    </testcase>"
        )
    if not cases:
        cases.append('    <testcase classname="cudalint" name="no findings"/>')
    others = [note for note in report.result.notifications if not is_error(note)]
    if others:
        cases.append("    <system-err>" + content("\n".join(note.render() for note in others)) + "</system-err>")
    tests = max(len(findings) + len(errors), 1)
    counts = f'tests="{tests}" failures="{len(findings)}" errors="{len(errors)}"'
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="cudalint" {counts}>',
        f'  <testsuite name="cudalint" {counts}>',
        *cases,
        "  </testsuite>",
        "</testsuites>",
    ]) + "\n"
