"""The API knowledge ships inside the wheel, and an installed cudalint finds
it there without the source checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudalint.knowledge import load_knowledge

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    (built,) = out.glob("cudalint-*.whl")
    return built


def test_wheel_carries_every_rules_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"cudalint/rules/{p.name}" for p in (ROOT / "rules").glob("*.toml")}
    assert shipped and shipped <= names
    assert "cudalint/rules/README.md" in names
    assert "cudalint/app/cli.py" in names and "cudalint/checks/status_discarded.py" in names


def test_installed_package_reads_its_own_rules(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "from cudalint.knowledge import builtin_rules_dir, load_knowledge;"
        "print(builtin_rules_dir()); print(len(load_knowledge().families))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    location, count = done.stdout.split()
    assert Path(location) == site / "cudalint" / "rules"
    # Every file of the checkout's rules/, and the copies its `forks` name.
    assert int(count) == len(load_knowledge().families) > len(list((ROOT / "rules").glob("*.toml")))
