"""The fixture harness, in the style of go/analysis's analysistest.

Each package under tests/fixtures/ declares the rules it is about in a
`// Fixture rules: CL1 CL502` comment; the harness runs exactly those rules on
it and requires the reported (file, line, rule) findings to equal, with their
counts, the ones annotated with `// want "CL301"` comments (a line may want a
rule twice: `// want "CL101" "CL101"`). A missing finding, an extra finding and
a duplicated finding all fail. An annotation may add a regular expression the
message must match: `// want "CL101 .*return at line \\d+"`.

Adding a rule family therefore touches only its own fixtures. One sweep runs
every rule over every fixture package and fails on a crash, a notification or
output that depends on how the run is scheduled.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from cudalint import check
from conftest import FIXTURES

_WANT = re.compile(r"//\s*want\s+((?:\"[^\"]*\"\s*)+)$")
_QUOTED = re.compile(r"\"([^\"]*)\"")
_DECLARED = re.compile(r"^// Fixture rules: ((?:CL\d*\s*)+)", re.MULTILINE)


def _package_dirs() -> list[Path]:
    return sorted({path.parent for path in FIXTURES.rglob("*.go")})


def declared_rules(directory: Path) -> tuple[str, ...]:
    found = [match.group(1).split() for path in directory.glob("*.go") for match in _DECLARED.finditer(path.read_text(encoding="utf-8"))]
    assert len(found) == 1, f"{directory}: declare the rules once, in a `// Fixture rules: CL1 ...` comment"
    return tuple(found[0])


def expectations(directory: Path) -> tuple[Counter, dict[tuple[str, int, str], list[str]]]:
    """How many findings of each (file, line, rule) are wanted, and the
    message patterns given for them."""
    counts: Counter = Counter()
    patterns: dict[tuple[str, int, str], list[str]] = {}
    for path in sorted(directory.glob("*.go")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = _WANT.search(text)
            if not match:
                continue
            for item in _QUOTED.findall(match.group(1)):
                rule, _, pattern = item.partition(" ")
                counts[(path.name, number, rule)] += 1
                if pattern:
                    patterns.setdefault((path.name, number, rule), []).append(pattern)
    return counts, patterns


def run_fixture(directory: Path, select: tuple[str, ...] = ("CL",), jobs: int = 1):
    """A fixture directory may carry its own API knowledge (*.toml), the way a
    user adds files with --knowledge."""
    return check(
        [directory], select=select, base=directory, jobs=jobs,
        knowledge_files=tuple(sorted(directory.glob("*.toml"))), preview=True,
    )


@pytest.mark.parametrize("directory", _package_dirs(), ids=lambda d: d.relative_to(FIXTURES).as_posix())
def test_fixture(directory: Path) -> None:
    result = run_fixture(directory, declared_rules(directory))
    assert not result.internal_errors, result.notifications
    assert not [n for n in result.notifications if n.kind.value == "syntax-error"], result.notifications
    reported = Counter((f.path, f.span.start.line, f.rule_id) for f in result.findings)
    messages: dict[tuple[str, int, str], list[str]] = {}
    for finding in result.findings:
        messages.setdefault((finding.path, finding.span.start.line, finding.rule_id), []).append(finding.message)
    wanted, patterns = expectations(directory)
    lines = []
    for key in sorted(set(wanted) | set(reported)):
        if wanted[key] > reported[key]:
            lines.append(f"missing: {key[0]}:{key[1]}: {key[2]}" + (f" (wanted {wanted[key]}, got {reported[key]})" if reported[key] else ""))
        elif reported[key] > wanted[key]:
            lines.append(f"unexpected: {key[0]}:{key[1]}: {key[2]} {messages[key]}" + (f" (wanted {wanted[key]})" if wanted[key] else ""))
    for key, wanted_patterns in patterns.items():
        for pattern in wanted_patterns:
            if key in messages and not any(re.search(pattern, message) for message in messages[key]):
                lines.append(f"message mismatch: {key[0]}:{key[1]}: {key[2]}: {messages[key]!r} !~ {pattern!r}")
    assert not lines, "\n".join(lines)


def test_every_rule_has_positive_fixtures() -> None:
    from cudalint.checks import all_rules

    annotated = {rule for d in _package_dirs() for (_, _, rule) in expectations(d)[0]}
    assert {r.id for r in all_rules() if not r.retired} <= annotated


def test_all_rules_over_all_fixtures_crash_nowhere_and_do_not_depend_on_scheduling() -> None:
    """The sweep: every rule on every fixture package, in one run with one
    worker and in one with two, must give no notification at all and the
    same findings, in the same order, with the same fingerprints."""
    directories = _package_dirs()
    single = check(directories, base=FIXTURES, jobs=1, preview=True)
    # deps/named, deps/nvlib, status/icicle and resources/counted/gpumontools import
    # modules that are nowhere on purpose (a binding read by its name, go-nvlib read
    # through the knowledge, ICICLE's core package and gpu-monitoring-tools' two
    # bindings described in part): their note is the one expected.
    notes = [n.render() for n in single.notifications]
    assert len(notes) == 1 and "source on this machine for 5 imported modules" in notes[0], notes
    assert all(module in notes[0] for module in (
        "example.com/acme/nvml", "github.com/NVIDIA/go-nvlib", "github.com/ingonyama-zk/icicle/v3",
        "github.com/NVIDIA/gpu-monitoring-tools/bindings/go/nvml", "github.com/NVIDIA/gpu-monitoring-tools/bindings/go/dcgm",
    )), notes
    assert single.internal_errors == 0
    double = check(list(reversed(directories)), base=FIXTURES, jobs=2, preview=True)
    assert double.findings == single.findings
    assert len(single.findings) > 300  # every family contributes
