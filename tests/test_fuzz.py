"""A mutation fuzzer over the real fixtures: truncated, spliced and
byte-flipped Go must give notifications at most, never an internal error or
an exception. Bounded and seeded, so the suite stays fast and repeatable."""

from __future__ import annotations

import random
from pathlib import Path

from cudalint.driver import Settings, analyze
from cudalint.checks import all_rules
from conftest import FIXTURES
from gosrc import knowledge
import pytest

pytestmark = pytest.mark.slow

CASES = 120


def _mutate(data: bytes, donor: bytes, rng: random.Random) -> bytes:
    kind = rng.choice(["truncate", "splice", "flip", "delete", "duplicate"])
    if not data:
        return donor[: rng.randrange(len(donor) + 1)]
    i = rng.randrange(len(data))
    if kind == "truncate":
        return data[:i]
    if kind == "splice":
        j = rng.randrange(len(donor) + 1)
        return data[:i] + donor[j : j + rng.randrange(1, 400)] + data[i:]
    if kind == "flip":
        mutable = bytearray(data)
        for _ in range(rng.randrange(1, 8)):
            k = rng.randrange(len(mutable))
            mutable[k] = rng.choice(b"{}()[];:=&*!\n\t \"'`/\\0x\x00\xff")
        return bytes(mutable)
    if kind == "delete":
        return data[:i] + data[i + rng.randrange(1, 200) :]
    return data[:i] + data[i : i + rng.randrange(1, 300)] * 2 + data[i:]


def test_mutated_fixtures_never_break_the_analysis(tmp_path: Path) -> None:
    sources = sorted(FIXTURES.rglob("*.go"))
    rng = random.Random(20261202)
    settings = Settings(base=tmp_path, enabled=frozenset(r.id for r in all_rules()))
    paths = []
    for index in range(CASES):
        original = rng.choice(sources).read_bytes()
        donor = rng.choice(sources).read_bytes()
        mutated = _mutate(original, donor, rng)
        directory = tmp_path / f"case{index // 10}"
        directory.mkdir(exist_ok=True)
        path = directory / f"m{index}.go"
        path.write_bytes(mutated)
        paths.append(path)
    result = analyze(paths, settings, knowledge())
    internal = [n for n in result.notifications if n.kind.value == "internal-error"]
    assert not internal, internal[0].render()
    assert result.internal_errors == 0
