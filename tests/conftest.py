from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
FIXTURES = TESTS / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
