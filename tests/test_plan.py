"""The run's plan (driver/dependencies.py): each package's imports,
transitively, bottom-up, in the order a depth-first walk of the imports
meets them. The walk from a package is made once and reused by every
importer; a layout misread into an import cycle is still planned."""

from __future__ import annotations

from pathlib import Path

from cudalint.driver.dependencies import plan
from cudalint.driver.files import FileIndex, Needles
from cudalint.module import Modules


def _package(root: Path, name: str, *imports: str) -> list[Path]:
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    lines = "".join(f'\t"example.com/m/{i}"\n' for i in imports)
    block = f"import (\n{lines})\n\n" if imports else ""
    path = directory / f"{name}.go"
    path.write_text(f"package {name}\n\n{block}// C.cudaFree\nfunc F() {{}}\n", encoding="utf-8")
    return [path]


def _plan(root: Path, packages: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    (root / "go.mod").write_text("module example.com/m\n\ngo 1.21\n", encoding="utf-8")
    directories = [_package(root, name, *imports) for name, imports in packages.items()]
    index = FileIndex(root, Needles((b"C.cuda",), (b"C.cuda",), ()), {})
    nodes = plan(directories, Modules(), index)
    return {node.directory.name: [d.name for d in node.dependencies] for node in nodes}


def test_a_diamond_is_planned_bottom_up_once_per_package(tmp_path: Path) -> None:
    planned = _plan(tmp_path, {
        "app": ("api", "store"),
        "api": ("core", "util"),
        "store": ("util", "core"),
        "core": ("util",),
        "util": (),
    })
    assert planned == {
        "app": ["util", "core", "api", "store"],
        "api": ["util", "core"],
        "store": ["util", "core"],
        "core": ["util"],
        "util": [],
    }


def test_a_cycle_in_a_misread_layout_ends_and_plans_every_package(tmp_path: Path) -> None:
    planned = _plan(tmp_path, {
        "a": ("b",),
        "b": ("c",),
        "c": ("a", "d"),
        "d": (),
    })
    assert planned == {"a": ["d", "c", "b"], "b": ["a", "d", "c"], "c": ["b", "a", "d"], "d": []}
