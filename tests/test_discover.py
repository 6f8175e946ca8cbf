"""`./...` and the other patterns, with the go command's rules."""

from __future__ import annotations

import os
from pathlib import Path

from cudalint.discover import discover


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("package p\n")


def rel(root: Path, result) -> list[str]:
    return [p.relative_to(root.resolve()).as_posix() for p in result.files]


def test_dot_dot_dot_follows_the_go_command(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "a.go", "a_test.go", "b.go", "_skip.go", ".hidden.go", "notes.txt",
        "sub/c.go", "vendor/v.go", "testdata/t.go", "_x/x.go", ".git/g.go",
        "nested/go.mod", "nested/n.go", "deep/er/d.go", "sub/testdata/t.go",
    )
    (tmp_path / "nested" / "go.mod").write_text("module nested\n")
    result = discover(["./..."], tmp_path)
    assert rel(tmp_path, result) == ["a.go", "a_test.go", "b.go", "deep/er/d.go", "sub/c.go"]
    assert not result.unmatched and not result.notifications


def test_root_with_its_own_go_mod_is_walked(tmp_path: Path) -> None:
    touch(tmp_path, "mod/go.mod", "mod/m.go", "mod/inner/i.go")
    result = discover(["mod/..."], tmp_path)
    assert rel(tmp_path, result) == ["mod/inner/i.go", "mod/m.go"]


def test_directory_pattern_is_that_package_only(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/a.go", "pkg/sub/b.go")
    assert rel(tmp_path, discover(["pkg"], tmp_path)) == ["pkg/a.go"]


def test_file_pattern_and_deduplication(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/a.go", "pkg/b.go")
    result = discover(["pkg/a.go", "pkg/...", "./pkg/a.go"], tmp_path)
    assert rel(tmp_path, result) == ["pkg/a.go", "pkg/b.go"]


def test_wildcard_prefix_matches_like_go(tmp_path: Path) -> None:
    touch(tmp_path, "foo/a.go", "foobar/b.go", "other/c.go", "foo/x/d.go")
    assert rel(tmp_path, discover(["./foo..."], tmp_path)) == ["foo/a.go", "foo/x/d.go", "foobar/b.go"]


def test_patterns_that_match_nothing_are_reported(tmp_path: Path) -> None:
    touch(tmp_path, "empty/readme.txt")
    result = discover(["missing/...", "empty", "nothere.go", "empty/..."], tmp_path)
    assert result.unmatched == ["missing/...", "empty", "nothere.go", "empty/..."]


def test_symbolic_links_are_never_followed(tmp_path: Path) -> None:
    touch(tmp_path, "real/a.go")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.symlink(tmp_path / "real" / "a.go", tmp_path / "real" / "alias.go")
    os.symlink(tmp_path / "loop", tmp_path / "loop")  # a self-referencing link
    os.mkdir(tmp_path / "cycle")
    os.symlink(tmp_path / "cycle", tmp_path / "cycle" / "again")
    result = discover(["./..."], tmp_path)
    assert rel(tmp_path, result) == ["real/a.go"]
    assert not result.notifications


def test_directory_named_like_a_go_file(tmp_path: Path) -> None:
    touch(tmp_path, "weird.go/inner.go", "ok.go")
    walked = discover(["./..."], tmp_path)
    assert rel(tmp_path, walked) == ["ok.go", "weird.go/inner.go"]
    assert [n.message for n in walked.notifications] == [
        "is a directory, not a Go source file; walked as a package directory"
    ]
    explicit = discover(["weird.go"], tmp_path)
    assert explicit.files == [] and len(explicit.notifications) == 1
    assert "is a directory" in explicit.notifications[0].message


def test_order_is_deterministic(tmp_path: Path) -> None:
    touch(tmp_path, *(f"d{i % 3}/f{i}.go" for i in range(12)))
    first = rel(tmp_path, discover(["./..."], tmp_path))
    assert first == sorted(first)
    assert first == rel(tmp_path, discover(["./..."], tmp_path))


def test_files_git_ignores_are_not_walked(tmp_path: Path) -> None:
    from gitrepo import init

    repo = init(tmp_path / "repo")
    (repo / "gen").mkdir()
    (repo / "gen" / "out.go").write_text("package gen\n")
    (repo / "a.go").write_text("package a\n")
    (repo / ".gitignore").write_text("gen/\n")
    found = discover(["./..."], repo).files
    assert [p.name for p in found] == ["a.go"]
    assert [p.name for p in discover(["gen/out.go"], repo).files] == ["out.go"]  # named on its own: analysed
