"""Reporters turn a finished Result into text, JSON, SARIF or GitHub workflow
commands. They read the rule catalog for names and levels and never analyse
anything themselves."""

from __future__ import annotations

import importlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from cudalint.catalog import Rule
from cudalint.findings import Finding, Notification, NotificationKind, Result, SuppressionKind


@dataclass(frozen=True)
class Report:
    result: Result
    rules: dict[str, Rule]
    version: str
    cwd: Path  # finding paths are relative to it
    # The repository root (the nearest directory with .git at or above cwd,
    # else cwd): SARIF and GitHub annotations name files relative to it.
    root: Path
    levels: dict[str, str] = field(default_factory=dict)  # rule ID -> level, where the configuration overrides it
    show_suppressed: bool = False
    baseline: str | None = None  # the --baseline file, if one was applied
    stale_baseline_entries: int = 0
    # The code scanning category SARIF names in automationDetails (--sarif-category).
    category: str = "cudalint"

    @property
    def base_uri(self) -> str:
        """file:// URI of the repository root, with a trailing slash."""
        return self.root.as_uri().rstrip("/") + "/"

    def level(self, rule_id: str) -> str:
        if rule_id in self.levels:
            return self.levels[rule_id]
        rule = self.rules.get(rule_id)
        return rule.level.value if rule is not None else "warning"

    def counts(self) -> Counter[str]:
        return Counter(f.rule_id for f in self.result.findings)

    def suppressed_counts(self) -> Counter[SuppressionKind]:
        return Counter(f.suppression.kind for f in self.result.suppressed if f.suppression is not None)

    def findings(self) -> list[Finding]:
        """What the report shows: the findings, and with --show-suppressed the
        suppressed ones too, in source order."""
        if not self.show_suppressed or not self.result.suppressed:
            return self.result.findings
        return sorted(self.result.findings + self.result.suppressed, key=Finding.sort_key)

    def root_relative(self, path: str) -> str | None:
        """A finding's path relative to the repository root ('/'-separated),
        or None for a file outside it."""
        absolute = Path(os.path.normpath(self.cwd / path))
        try:
            return PurePosixPath(absolute.relative_to(self.root)).as_posix()
        except ValueError:
            return None


def is_error(note: Notification) -> bool:
    """Whether the code-quality and XML reports show a notification as an
    error: a file cudalint could not read, parse or finish analysing (its
    results are missing). A cache notice is a warning: the run went on
    without the cache and its results are whole; so is the note naming
    imported modules whose source is absent (the run fell back to the
    knowledge for them)."""
    return note.kind not in (NotificationKind.CACHE, NotificationKind.DEPENDENCIES)


@dataclass(frozen=True)
class RenderOptions:
    """How the user asked to see the report (formats use what applies)."""

    color: bool = False
    quiet: bool = False
    show_paths: bool = False
    show_source: bool = False
    statistics: bool = False  # counts per rule instead of the findings (text and json)


# Format name -> the module that renders it with `render(report, options)`.
# Adding a format is one module and one line here.
_MODULES = {
    "text": "cudalint.reporters.text",
    "json": "cudalint.reporters.json",
    "sarif": "cudalint.reporters.sarif",
    "github": "cudalint.reporters.github",
    "gitlab": "cudalint.reporters.gitlab",
    "checkstyle": "cudalint.reporters.checkstyle",
    "junit": "cudalint.reporters.junit",
}
FORMATS = tuple(_MODULES)


def render(report: Report, fmt: str, options: RenderOptions = RenderOptions()) -> str:
    """Formats are imported on use: a text run never loads the SARIF model."""
    return importlib.import_module(_MODULES[fmt]).render(report, options)
