"""Reporters turn a finished Result into text, JSON or SARIF. They read the
rule catalog for names and levels and never analyse anything themselves."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cudalint.catalog import Rule
from cudalint.findings import Result


@dataclass(frozen=True)
class Report:
    result: Result
    rules: dict[str, Rule]
    base_uri: str  # file:// URI of the directory paths are relative to
    version: str

    def level(self, rule_id: str) -> str:
        rule = self.rules.get(rule_id)
        return rule.level.value if rule is not None else "warning"

    def counts(self) -> Counter[str]:
        return Counter(f.rule_id for f in self.result.findings)


FORMATS = ("text", "json", "sarif")


def render(report: Report, fmt: str, *, color: bool = False, quiet: bool = False, show_paths: bool = False) -> str:
    if fmt == "json":
        from cudalint.reporters.json import render_json

        return render_json(report)
    if fmt == "sarif":
        from cudalint.reporters.sarif import render_sarif

        return render_sarif(report)
    from cudalint.reporters.text import render_text

    return render_text(report, color=color, quiet=quiet, show_paths=show_paths)
