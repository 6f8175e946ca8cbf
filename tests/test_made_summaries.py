"""Dependencies whose facts no job made are made in the importer's process
from their files (`DependencyFacts.imported_by`). What they export must not
depend on the importer's list order or on which importer asked first: a
worker serves one made summary to every importer whose context agrees, and
makes it again for one whose context differs (issue 23: output identical
across worker counts and runs)."""

from __future__ import annotations

from pathlib import Path

from cudalint.driver.dependencies import DependencyFacts
from cudalint.knowledge import load_knowledge
from cudalint.module import Modules
from cudalint.source import read_source

_LOW = """package low

// #include <cuda_runtime_api.h>
import "C"

import "errors"

// SetDevice binds the calling thread to dev.
func SetDevice(dev int) error {
	if C.cudaSetDevice(C.int(dev)) != C.cudaSuccess {
		return errors.New("cudaSetDevice failed")
	}
	return nil
}
"""

_MID = """package mid

import "example.com/app/low"

// Use selects the device for the caller's thread.
func Use(dev int) error {
	return low.SetDevice(dev)
}
"""


def _module(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "go.mod").write_text("module example.com/app\n\ngo 1.21\n", encoding="utf-8")
    for name, text in (("low", _LOW), ("mid", _MID)):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.go").write_text(text, encoding="utf-8")
    return tmp_path / "low", tmp_path / "mid"


def _sources(directory: Path) -> list:
    return [read_source(path, path.name) for path in sorted(directory.glob("*.go"))]


def test_a_package_listed_before_its_import_is_made_after_it(tmp_path: Path) -> None:
    low, mid = _module(tmp_path)
    made = DependencyFacts(load_knowledge(), Modules())
    imported = made.imported_by([(mid, None, _sources(mid)), (low, None, _sources(low))])
    # mid's Use reaches cudaSetDevice through low: its fact says so only if
    # low's facts were made first.
    assert imported.knows("example.com/app/mid", "Use")


def test_a_made_summary_is_not_served_to_an_importer_whose_context_differs(tmp_path: Path) -> None:
    low, mid = _module(tmp_path)
    made = DependencyFacts(load_knowledge(), Modules())
    # First asked with low's facts missing (an importer that lists mid alone),
    # then with them: the second must not get the first's summary.
    alone = made.imported_by([(mid, None, _sources(mid))])
    complete = made.imported_by([(low, None, _sources(low)), (mid, None, _sources(mid))])
    assert not alone.knows("example.com/app/mid", "Use")
    assert complete.knows("example.com/app/mid", "Use")
