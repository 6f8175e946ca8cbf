"""The worker that analyses packages collects its youngest generation less
often than Python's default (`driver/worker.py`: at the default, the
collector's walks of every package's live objects were 13-19% of a cold
run), and never lowers thresholds its host set higher."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from cudalint.checks import all_rules
from cudalint.driver import Settings, analyze
from clirun import CGO_FILE
from gosrc import knowledge


@pytest.fixture
def thresholds():
    kept = gc.get_threshold()
    yield
    gc.set_threshold(*kept)


def _analyse(tree: Path) -> None:
    (tree / "good.go").write_text(CGO_FILE)
    settings = Settings(base=tree, enabled=frozenset(r.id for r in all_rules()))
    result = analyze([tree / "good.go"], settings, knowledge())
    assert result.files_analysed == 1


def test_an_analysis_raises_the_default_thresholds(tmp_path: Path, thresholds) -> None:
    gc.set_threshold(700, 10, 10)
    _analyse(tmp_path)
    youngest, middle, oldest = gc.get_threshold()
    assert youngest >= 10_000 and (middle, oldest) == (10, 10)


def test_an_analysis_never_lowers_a_hosts_thresholds(tmp_path: Path, thresholds) -> None:
    gc.set_threshold(1_000_000, 50, 20)
    _analyse(tmp_path)
    assert gc.get_threshold() == (1_000_000, 50, 20)
