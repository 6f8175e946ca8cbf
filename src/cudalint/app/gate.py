"""What a run reports, and so what it fixes, diffs and exits by: the findings
left after the baseline (`--baseline`) and the new-from options
(`--new-from-rev`, `--new-from-merge-base`, `--new-from-patch`,
`--whole-files`), with the accounting that makes a gate visible: how many
baseline entries are stale, how many findings the new-from option left out.

`--fix` and `--diff` plan their fixes from `Gate.reported`, so they never
touch a finding the report would not show (a baselined one, one on a line
nobody changed).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from cudalint.app.baseline import Baseline
from cudalint.app.changes import Changes
from cudalint.findings import Finding, NotificationKind, Result
from cudalint.source import display_path

# A file with one of these was not (wholly) analysed: its baseline entries are
# neither stale nor dropped by --write-baseline.
_NOT_ANALYSED = frozenset({
    NotificationKind.SYNTAX_ERROR, NotificationKind.UNREADABLE, NotificationKind.NOT_GO_SOURCE,
    NotificationKind.TOO_COMPLEX, NotificationKind.INTERNAL_ERROR,
})


def covered(ran: Mapping[Path, Collection[str]], result: Result, cwd: Path) -> dict[Path, Collection[str]]:
    """The analysed files with the rules that ran on each, less the files the
    run could not analyse (a syntax error, an unreadable file, an internal
    error): what the run could have found, and so could call stale."""
    troubled = {note.path for note in result.notifications if note.kind in _NOT_ANALYSED}
    return {path: rules for path, rules in ran.items() if display_path(path, cwd) not in troubled}


@dataclass
class Outcome:
    stale: int = 0  # baseline entries that match nothing, of rules that ran on analysed files
    left_out: int = 0  # findings on lines (or files) the change did not touch


@dataclass
class Gate:
    baseline: Baseline | None = None
    # Reads the change again (after --fix rewrote files, the lines moved).
    load_changes: Callable[[], Changes] | None = None
    _changes: Changes | None = None

    @property
    def active(self) -> bool:
        return self.baseline is not None or self.load_changes is not None

    @property
    def changes(self) -> Changes | None:
        if self._changes is None and self.load_changes is not None:
            self._changes = self.load_changes()
        return self._changes

    def refresh(self) -> None:
        self._changes = None

    def reported(self, findings: list[Finding], cwd: Path) -> list[Finding]:
        """The findings the report would show."""
        return self._split(findings, cwd, None)[0]

    def _split(
        self, findings: list[Finding], cwd: Path, ran: Mapping[Path, Collection[str]] | None,
    ) -> tuple[list[Finding], list[Finding], Outcome]:
        outcome = Outcome()
        known: list[Finding] = []
        if self.baseline is not None:
            findings, known, outcome.stale = self.baseline.split(findings, cwd, ran)
        changes = self.changes
        if changes is not None:
            kept = [f for f in findings if changes.is_new(f.path, f.span.start.line, cwd)]
            outcome.left_out = len(findings) - len(kept)
            findings = kept
        return findings, known, outcome

    def apply(self, result: Result, cwd: Path, ran: Mapping[Path, Collection[str]]) -> Outcome:
        """Filter the result in place: baselined findings become suppressed
        ones, findings outside the change are dropped (and counted)."""
        result.findings, known, outcome = self._split(result.findings, cwd, covered(ran, result, cwd))
        if known:
            result.suppressed = sorted(result.suppressed + known, key=lambda f: f.sort_key())
        return outcome

    def left_out_note(self, outcome: Outcome) -> str | None:
        changes = self.changes
        if changes is None or not outcome.left_out:
            return None
        count = outcome.left_out
        where = "in files" if changes.whole_files else "on lines"
        return (
            f"cudalint: note: {changes.option}: {count} finding{'s' if count != 1 else ''} {where} the change did not touch "
            f"{'were' if count != 1 else 'was'} left out"
        )

