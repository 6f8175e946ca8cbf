"""`--fix` and `--diff` over a session: the fixes of the findings the run
reports (not baselined ones, nor ones outside the --new-from change),
written the one way `cudalint.fixes.rewrite` allows, in rounds.

A round plans the fixes (overlapping ones wait for the next round), writes
them, analyses again and reads the change again (fixes move lines), up to a
bound. If the run stops after writing, it says which files it rewrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cudalint.app.errors import RunError
from cudalint.app.session import Session
from cudalint.findings import Finding, NotificationKind, Result
from cudalint.fixes import editing, rewrite
from cudalint.reporters.text import safe_line

# Rounds of --fix: fixes that overlapped wait for the next round.
ROUNDS = 4


def fix(session: Session, result: Result, unsafe: bool, show_fixes: bool) -> Result:
    """--fix: write the fixes, re-analyse, and again while fixes applied,
    up to ROUNDS; what remains is the result. A file is written only as
    `rewrite` allows (one of the analysed files, under the root, unchanged
    since it was read...). Says how many findings it fixed and, with
    show_fixes, which."""
    analysed, root = session.writable()
    cwd, gate = session.cwd, session.gate
    rewritten: list[str] = []
    total = 0
    fixed: list[Finding] = []  # for --show-fixes
    writing: tuple[str, list] | None = None  # the file being written, and its edits
    try:
        for _ in range(ROUNDS):
            plan = editing.plan(gate.reported(result.findings, cwd), unsafe)
            written = 0
            for path, edits in sorted(plan.edits.items()):
                writing = (path, edits)
                if write(session, path, edits, analysed, root):
                    written += 1
                    fixed += [finding for finding in plan.fixed if finding.path == path]
                    if path not in rewritten:
                        rewritten.append(path)
                writing = None
            if not written:
                if any(editing.changed_since_analysed(cwd / path, edits) for path, edits in plan.edits.items()):
                    # Another run or an editor changed a file meanwhile (it
                    # was not written): report what the files hold now.
                    result = session.analyse()
                    gate.refresh()
                break
            total += plan.fixes
            # What the cache had to say (an entry dropped) stays said.
            said = [note for note in result.notifications if note.kind is NotificationKind.CACHE]
            result = session.analyse()
            gate.refresh()
            result.notifications += [note for note in said if note not in result.notifications]
    except BaseException:
        # Stopped inside a write: the file may be replaced already although
        # write never returned (a signal after the rename).
        if writing is not None and writing[0] not in rewritten and editing.changed_since_analysed(cwd / writing[0], writing[1]):
            rewritten.append(writing[0])
        _say_rewritten(session, rewritten)
        raise
    if not session.request.quiet:
        session.say(f"cudalint: fixed {total} finding{'s' if total != 1 else ''}")
        if show_fixes:
            for line in editing.summary(fixed, {rule.id: rule.name for rule in session.rules}).splitlines():
                session.say(safe_line(line))
    return result


def write(session: Session, path: str, edits: list, analysed: dict[str, Path], root: Path) -> bool:
    """One file's edits: True if it was written; a refusal is said, an I/O
    error ends the run."""
    try:
        return rewrite.rewrite(rewrite.target(path, analysed, root), edits)
    except rewrite.Refused as why:
        session.say(safe_line(f"cudalint: {path} {why}: not fixed"))
        return False
    except OSError as error:
        raise RunError(f"cannot write {path}: {error.strerror or error}") from None


def _say_rewritten(session: Session, rewritten: list[str]) -> None:
    """Before a run that wrote fixes stops without a report: what it wrote."""
    if rewritten:
        count = len(rewritten)
        session.say(safe_line(
            f"cudalint: --fix rewrote {count} file{'s' if count != 1 else ''} before it stopped: {', '.join(rewritten)}"
        ))


@dataclass
class Diff:
    """What --diff shows: one unified diff per file, and how many fixes."""

    texts: list[str]
    fixes: int


def diff(session: Session, result: Result, unsafe: bool) -> Diff:
    """--diff: the unified diffs of the fixes --fix would write. A fix for
    a file --fix would not write is left out, with the reason."""
    plan = editing.plan(session.gate.reported(result.findings, session.cwd), unsafe)
    analysed, root = session.writable()
    texts = []
    for path, edits in sorted(plan.edits.items()):
        try:
            target = rewrite.target(path, analysed, root)
            old = target.read_bytes()
        except rewrite.Refused as why:
            session.say(safe_line(f"cudalint: {path} {why}: no fix shown"))
            continue
        except OSError as error:
            raise RunError(f"cannot read {path}: {error.strerror or error}") from None
        new = editing.apply(old, edits)
        if new is not None and new != old:
            texts.append(editing.unified_diff(path, old, new))
    return Diff(texts, plan.fixes)
