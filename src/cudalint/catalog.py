"""Rule metadata: the contract shared by passes, configuration and reporters.

IDs never change meaning (they are SARIF ruleIds and suppression keys). The
documentation of a rule is written next to the pass that implements it and is
what `--explain`, `--list-rules` and SARIF `help` show.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from enum import Enum


class Level(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    level: Level
    summary: str
    doc: str
    tags: tuple[str, ...] = ()
    precision: str = "high"

    def __post_init__(self) -> None:
        object.__setattr__(self, "doc", inspect.cleandoc(self.doc))

    def markdown(self) -> str:
        return f"# {self.id} {self.name}\n\n{self.summary}\n\nDefault level: `{self.level.value}`.\n\n{self.doc}\n"

    def section(self, title: str) -> str:
        """The text of one `## title` section of the documentation."""
        match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", self.doc, re.MULTILINE | re.DOTALL)
        return match.group(1).strip() if match else ""

    @property
    def description(self) -> str:
        """One paragraph: the first of "What it does", unwrapped (the
        summary if the documentation has no such section)."""
        paragraph = self.section("What it does").split("\n\n", 1)[0]
        return " ".join(paragraph.split()) or self.summary


def matches(rule_id: str, prefixes: tuple[str, ...]) -> bool:
    return any(rule_id.startswith(prefix) for prefix in prefixes)


def select_rules(rules: list[Rule], select: tuple[str, ...], ignore: tuple[str, ...]) -> frozenset[str]:
    """The IDs enabled by --select/--ignore (prefixes: 'CL3' selects CL301..CL399)."""
    return frozenset(r.id for r in rules if matches(r.id, select) and not matches(r.id, ignore))
