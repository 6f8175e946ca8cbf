"""The baseline: findings a team has accepted, so that cudalint can gate new
code on a legacy repository from day one.

`--write-baseline FILE` records every reported finding; `--baseline FILE`
then reports only findings that are not in it. A finding matches an entry by
rule, file and fingerprint (cudalint.findings.assign_fingerprints: the rule,
function and code of the reported line, comments cut off, and its rank among identical ones),
never by line number, so edits elsewhere in the file do not resurrect it.
Paths are stored relative to the baseline file's directory, so that the file
works from whichever directory cudalint runs in.

The file is JSON, sorted, one entry per finding, with the line and message
for the reviewer's benefit (they are not used for matching):

    {"schema_version": 1, "tool": {"name": "cudalint", "version": "0.1.0"},
     "findings": [{"rule": "CL301", "path": "internal/gpu/engine.go",
                   "fingerprint": "3f1c0d5e9a2b4c67:1", "line": 141, "message": "..."}]}
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from cudalint.findings import Finding, Suppression, SuppressionKind
from cudalint.safeio import InputFileError, read_regular

SCHEMA_VERSION = 1
# A baseline holds one short entry per accepted finding.
MAX_FILE_BYTES = 256 * 1024 * 1024


class BaselineError(Exception):
    """A baseline file that cannot be used; the message names the file."""


Key = tuple[str, str, str]  # rule, path relative to the baseline's directory, fingerprint


def _key(finding: Finding, cwd: Path, directory: Path) -> Key:
    absolute = Path(os.path.normpath(cwd / finding.path))
    return finding.rule_id, Path(os.path.relpath(absolute, directory)).as_posix(), finding.fingerprint


def render(findings: list[Finding], baseline: Path, cwd: Path, version: str, kept: list[dict] = ()) -> str:
    """The baseline file for these findings, plus `kept`: the entries of an
    earlier baseline that this run could not have reproduced (about a file it
    did not analyse or could not parse, or a rule that did not run on that
    file): a run over some files or some rules never drops what it did not
    look at."""
    directory = baseline.resolve().parent
    # A finding that a kept entry already records (a file that did not parse
    # wholly still gives some findings) is recorded once.
    already = Counter((entry["rule"], entry["path"], entry["fingerprint"]) for entry in kept)
    recorded = []
    for finding in findings:
        key = _key(finding, cwd, directory)
        if already[key] > 0:
            already[key] -= 1
            continue
        recorded.append({**dict(zip(("rule", "path", "fingerprint"), key)), "line": finding.span.start.line, "message": finding.message})
    entries = sorted(
        recorded + list(kept),
        key=lambda e: (e["path"], e.get("line", 0), e["rule"], e["fingerprint"]),
    )
    document = {"schema_version": SCHEMA_VERSION, "tool": {"name": "cudalint", "version": version}, "findings": entries}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


@dataclass
class Baseline:
    path: Path
    shown: str  # how messages name the file
    entries: Counter[Key]
    raw: tuple[dict, ...] = ()

    def relative(self, path: Path, cwd: Path) -> str:
        """A file's path as the baseline stores it."""
        return Path(os.path.relpath(Path(os.path.normpath(cwd / path)), self.path.resolve().parent)).as_posix()

    def coverage(self, ran: Mapping[Path, Collection[str]], cwd: Path) -> dict[str, frozenset[str]]:
        """Each analysed file as the baseline names it, with the rules that ran on it."""
        covered: dict[str, frozenset[str]] = {}
        for path, rules in ran.items():
            key = self.relative(path, cwd)
            covered[key] = covered.get(key, frozenset()) | frozenset(rules)
        return covered

    def entries_outside(self, ran: Mapping[Path, Collection[str]], cwd: Path) -> list[dict]:
        """The entries this run could not have reproduced: about a file it did
        not analyse, or a rule that did not run on that file (a narrower
        --select, the file's per-file-ignores)."""
        covered = self.coverage(ran, cwd)
        return [entry for entry in self.raw if entry["rule"] not in covered.get(entry["path"], ())]

    @classmethod
    def load(cls, path: Path, shown: str) -> Baseline:
        try:
            text = read_regular(path, MAX_FILE_BYTES).decode("utf-8")
        except FileNotFoundError:
            raise BaselineError(f"{shown}: no such file (create it with --write-baseline {shown})") from None
        except (OSError, UnicodeDecodeError, InputFileError) as error:
            raise BaselineError(f"{shown}: cannot read: {getattr(error, 'strerror', None) or error}") from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise BaselineError(f"{shown}: not a cudalint baseline: invalid JSON ({error})") from None
        except RecursionError:
            raise BaselineError(f"{shown}: not a cudalint baseline: JSON nested too deeply") from None
        except ValueError as error:  # e.g. an integer of more digits than Python converts
            raise BaselineError(f"{shown}: not a cudalint baseline: {error}") from None
        version = document.get("schema_version") if isinstance(document, dict) else None
        if type(version) is not int or version != SCHEMA_VERSION or not isinstance(document.get("findings"), list):
            raise BaselineError(
                f"{shown}: not a cudalint baseline (schema_version {SCHEMA_VERSION} with a findings list); "
                f"recreate it with --write-baseline {shown}"
            )
        entries: Counter[Key] = Counter()
        for number, entry in enumerate(document["findings"], start=1):
            if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("rule", "path", "fingerprint")):
                raise BaselineError(f"{shown}: finding #{number} lacks a string rule, path or fingerprint")
            entries[entry["rule"], entry["path"], entry["fingerprint"]] += 1
        return cls(path, shown, entries, tuple(document["findings"]))

    def split(
        self, findings: list[Finding], cwd: Path, ran: Mapping[Path, Collection[str]] | None = None,
    ) -> tuple[list[Finding], list[Finding], int]:
        """(new findings, findings in the baseline marked as suppressed, number
        of stale entries: entries that matched nothing although their rule ran
        on their file; `ran` maps each analysed file to the rules that ran on
        it, None: every entry could have matched)."""
        directory = self.path.resolve().parent
        left = Counter(self.entries)
        new: list[Finding] = []
        known: list[Finding] = []
        suppression = Suppression(SuppressionKind.EXTERNAL, f"accepted in the baseline {self.shown}", self.shown)
        for finding in findings:
            key = _key(finding, cwd, directory)
            if left[key] > 0:
                left[key] -= 1
                known.append(replace(finding, suppression=suppression))
            else:
                new.append(finding)
        covered = None if ran is None else self.coverage(ran, cwd)
        return new, known, sum(count for key, count in left.items() if covered is None or key[0] in covered.get(key[1], ()))
