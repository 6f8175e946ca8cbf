"""Build constraints, read to tell whether two files can be built together."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.buildtags import compatible, constraint
from cudalint.parse import parse
from cudalint.source import SourceFile


def _file(header: str) -> object:
    data = f"{header}\npackage p\n".encode()
    return parse(SourceFile(Path("p.go"), "p.go", data))[0]


@pytest.mark.parametrize("header, expected", [
    ("//go:build cuda && linux", "cuda && linux"),
    ("// +build !cuda !linux,!windows", "((!cuda) || (!linux && !windows))"),
    ("// Package p does things.", None),
])
def test_the_constraint_is_read_from_either_form(header: str, expected: str | None) -> None:
    assert constraint(_file(header)) == expected


@pytest.mark.parametrize("first, second, together", [
    ("//go:build cuda", "//go:build !cuda", False),
    ("//go:build cuda && (linux || windows)", "//go:build !cuda || !(linux || windows)", False),
    ("//go:build !vulkan", "//go:build cgovulkan && linux", True),
    ("//go:build linux", "// nothing", True),
    ("// +build cuda", "// +build !cuda", False),
])
def test_two_files_build_together_where_some_tags_satisfy_both(first: str, second: str, together: bool) -> None:
    assert compatible(_file(first), _file(second)) is together
