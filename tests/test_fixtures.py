"""The fixture harness, in the style of go/analysis's analysistest: each
package under tests/fixtures/ is analysed, and the (file, line, rule) set
reported must equal the set annotated with `// want "CL301"` comments. A
missing finding and an extra finding both fail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudalint.driver import Settings, analyze
from cudalint.knowledge import load_knowledge
from cudalint.checks import all_rules
from conftest import FIXTURES
from gosrc import knowledge

_WANT = re.compile(r"//\s*want\s+((?:\"[^\"]*\"\s*)+)$")
_QUOTED = re.compile(r"\"([^\"]*)\"")


def _package_dirs() -> list[Path]:
    return sorted({path.parent for path in FIXTURES.rglob("*.go")})


def expectations(directory: Path) -> dict[tuple[str, int, str], str | None]:
    """(file, line, rule) -> optional regex the message must match."""
    wanted = {}
    for path in sorted(directory.glob("*.go")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = _WANT.search(text)
            if not match:
                continue
            for item in _QUOTED.findall(match.group(1)):
                rule, _, pattern = item.partition(" ")
                wanted[(path.name, number, rule)] = pattern or None
    return wanted


def findings_of(directory: Path):
    """A fixture directory may carry its own API knowledge (*.toml), the way a
    user adds files with --rules."""
    settings = Settings(base=directory, enabled=frozenset(r.id for r in all_rules()), jobs=1)
    extra = tuple(sorted(directory.glob("*.toml")))
    return analyze(sorted(directory.glob("*.go")), settings, load_knowledge(extra) if extra else knowledge())


@pytest.mark.parametrize("directory", _package_dirs(), ids=lambda d: d.relative_to(FIXTURES).as_posix())
def test_fixture(directory: Path) -> None:
    result = findings_of(directory)
    assert not result.internal_errors, result.notifications
    assert not [n for n in result.notifications if n.kind.value == "syntax-error"], result.notifications
    reported = {(f.path, f.span.start.line, f.rule_id): f.message for f in result.findings}
    wanted = expectations(directory)
    missing = sorted(set(wanted) - set(reported))
    extra = sorted(set(reported) - set(wanted))
    lines = [f"missing: {p}:{l}: {r}" for p, l, r in missing]
    lines += [f"unexpected: {p}:{l}: {r} {reported[(p, l, r)]}" for p, l, r in extra]
    for key, pattern in wanted.items():
        if pattern and key in reported and not re.search(pattern, reported[key]):
            lines.append(f"message mismatch: {key[0]}:{key[1]}: {key[2]}: {reported[key]!r} !~ {pattern!r}")
    assert not lines, "\n".join(lines)


def test_every_rule_has_positive_fixtures() -> None:
    annotated = {rule for d in _package_dirs() for (_, _, rule) in expectations(d)}
    assert {r.id for r in all_rules()} <= annotated
