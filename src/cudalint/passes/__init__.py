"""The rule passes, one module per rule family. Order here is report order
only: passes are independent and read shared facts."""

from __future__ import annotations

from cudalint.analyzer import Analyzer
from cudalint.catalog import Rule
from cudalint.passes import defers, pointers, resources, status, threads

ANALYZERS: tuple[Analyzer, ...] = (resources.ANALYZER, defers.ANALYZER, status.ANALYZER, threads.ANALYZER, pointers.ANALYZER)


def all_rules() -> list[Rule]:
    from cudalint.toolrules import TOOL_RULES

    rules = [rule for analyzer in ANALYZERS for rule in analyzer.rules] + list(TOOL_RULES)
    return sorted(rules, key=lambda r: r.id)


def rule_by_id(rule_id: str) -> Rule | None:
    return next((rule for rule in all_rules() if rule.id == rule_id.upper()), None)
