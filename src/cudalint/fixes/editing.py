"""Fixes: the edits rules propose, planned, applied and shown as diffs.

A finding may carry fixes (findings.Fix), each a set of byte-range edits of
the finding's file; fixes may share an edit (each CL503 fix that takes the
last use of reflect removes its import), which is made once. `--diff` shows the safe ones as a unified diff, `--fix`
writes them (and `--unsafe-fixes` adds the others). Edits that overlap an
edit already planned are left for a later round (`--fix` runs the analysis
again after writing, up to a bound); a file whose bytes differ from what
the analysis read is never written (`rewrite` writes them).
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cudalint.findings import Finding, Result, TextEdit


@dataclass
class Plan:
    """Edits by file path (as the findings name them), and how many fixes."""

    edits: dict[str, list[TextEdit]]
    fixes: int
    # The findings whose fix is in the plan (what --show-fixes lists).
    fixed: list[Finding] = field(default_factory=list)


def plan(findings: list[Finding], unsafe: bool = False) -> Plan:
    """One round of edits: each finding's first applicable fix, unless it
    overlaps an edit already planned in that file (then it waits)."""
    edits: dict[str, list[TextEdit]] = {}
    count = 0
    fixed: list[Finding] = []
    for finding in findings:
        if finding.suppression is not None:
            continue
        fix = next((fix for fix in finding.fixes if fix.safe or unsafe), None)
        if fix is None:
            continue
        planned = edits.setdefault(finding.path, [])
        new = [edit for edit in fix.edits if edit not in planned]  # an edit two fixes share is made once
        if any(_overlaps(edit, other) for edit in new for other in planned):
            continue
        planned.extend(new)
        count += 1
        fixed.append(finding)
    return Plan({path: sorted(found, key=lambda e: (e.start, e.end)) for path, found in edits.items() if found}, count, fixed)


def restrict(result: Result, fixable: Callable[[str], bool]) -> Result:
    """The configuration's `fixable` / `unfixable`: the findings of a rule
    whose fixes are not offered carry none (no [*], no SARIF fix, nothing
    for --fix or --diff to apply), as in ruff."""
    def strip(findings: list[Finding]) -> list[Finding]:
        return [f if not f.fixes or fixable(f.rule_id) else replace(f, fixes=()) for f in findings]

    result.findings = strip(result.findings)
    result.suppressed = strip(result.suppressed)
    return result


def summary(fixed: list[Finding], names: dict[str, str]) -> str:
    """--show-fixes: what --fix fixed, by file and rule (ruff's layout)."""
    if not fixed:
        return ""
    lines = [f"Fixed {len(fixed)} finding{'s' if len(fixed) != 1 else ''}:"]
    by_path: dict[str, Counter[str]] = {}
    for finding in fixed:
        by_path.setdefault(finding.path, Counter())[finding.rule_id] += 1
    for path in sorted(by_path):
        lines.append(f"- {path}:")
        for rule_id, count in sorted(by_path[path].items(), key=lambda item: (-item[1], item[0])):
            name = names.get(rule_id, "")
            lines.append(f"    {count} x {rule_id}" + (f" ({name})" if name else ""))
    return "\n".join(lines) + "\n"


def _overlaps(a: TextEdit, b: TextEdit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True  # two insertions at one place: their order would be a guess
    return a.start < b.end and b.start < a.end


def apply(data: bytes, edits: list[TextEdit]) -> bytes | None:
    """The file's new bytes, or None if the file is not the one analysed:
    its whole content differs from the bytes the edits were made for (their
    digest), or an edit's original text is not there any more."""
    digest = hashlib.sha256(data).hexdigest()
    if any(edit.digest and edit.digest != digest for edit in edits):
        return None
    out = data
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if out[edit.start:edit.end] != edit.original.encode():
            return None
        out = out[:edit.start] + edit.text.encode() + out[edit.end:]
    return out


def changed_since_analysed(path: Path, edits: list[TextEdit]) -> bool:
    """Whether the file no longer holds the bytes these edits were made for
    (its digest): after a write that was interrupted, whether it happened."""
    digests = {edit.digest for edit in edits if edit.digest}
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return bool(digests) and hashlib.sha256(data).hexdigest() not in digests


def unified_diff(path: str, old: bytes, new: bytes) -> str:
    lines = difflib.unified_diff(
        old.decode("utf-8", "replace").splitlines(keepends=True), new.decode("utf-8", "replace").splitlines(keepends=True),
        fromfile=f"a/{path}", tofile=f"b/{path}",
    )
    return "".join(lines)
