"""Rules: the contract shared by checks, configuration and reporters.

A rule is its ID, name, level and documentation, and, for a rule about the
analysed code, its check: a function over one package that reads the results
of the analyses it requires and reports. Each lives in one module under
`cudalint.checks`, documentation, message and check on one screen.

IDs never change meaning (they are SARIF ruleIds and suppression keys). The
documentation is what `--explain`, `--list-rules`, SARIF `help` and
`docs/rules.md` show. A rule added after a release ships as a *preview*
rule: it runs only when selected by its full ID or with `--preview`, so that
upgrading cudalint never breaks a user's CI by itself.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudalint.framework import Analysis, Pass
    from cudalint.knowledge import Knowledge

# The one definition of a rule ID: "CL", a family digit, two digits. A
# prefix of one ("CL", "CL3", "CL30") selects every rule it starts.
RULE_ID = re.compile(r"CL\d{3}")
RULE_PREFIX = re.compile(r"CL\d{0,3}")
# Sections every rule's documentation has, in this order (ruff's layout).
DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead")


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
    # The release that introduced it, and whether it is still a preview rule.
    since: str = "0.1.0"
    preview: bool = False
    # Retired: the ID stays reserved, the rule never reports.
    retired: bool = False
    # The check over one package (None for tool rules, which the findings
    # stage reports), the analyses whose results it reads, and the byte
    # strings one of which a package must contain for it to have anything to
    # say (the prefilter's input).
    check: Callable[[Pass], None] | None = None
    requires: tuple[Analysis, ...] = ()
    needles: Callable[[Knowledge], frozenset[bytes]] | None = None
    # Whether its needles name what only the package's own code can show (a
    # finalizer, a conversion): a dependency that holds one exports nothing
    # an importer's rules need, so the plan does not summarise it for them.
    local_needles: bool = False
    # One finding per (file, span) whatever its messages: a release that can
    # be a second release is one defect however many earlier releases can
    # precede it (the report keeps the first message in sorted order).
    one_per_span: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "doc", inspect.cleandoc(self.doc))

    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rule) and other.id == self.id

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


def select_rules(
    rules: list[Rule], select: tuple[str, ...], ignore: tuple[str, ...], *, preview: bool = False,
) -> frozenset[str]:
    """The IDs enabled by --select/--ignore (prefixes: 'CL3' selects
    CL301..CL399). A preview rule needs `preview` or its full ID in select;
    a retired rule is never enabled."""
    return frozenset(
        r.id for r in rules
        if not r.retired and matches(r.id, select) and not matches(r.id, ignore)
        and (preview or not r.preview or r.id in select)
    )
