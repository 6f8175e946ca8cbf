"""Files git ignores, as DESIGN.md's *Ignore files* says: a tracked file is
always analysed, untracked ignored files are skipped only below the directory
a pattern names, a repository around that directory never empties it, and
"nothing analysed" names the real cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import CGO_FILE, cudalint
from cudalint.app.inputs import nothing_analysed
from cudalint.app.config import Config
from cudalint.globs import PathGlobs
from cudalint.discover import Discovery, IgnoreRule, discover
from gitrepo import git, init

GO_MOD = "module example.com/proj\n\ngo 1.22\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def checkout_inside(outer: Path, where: str, outer_ignores: dict[str, str]) -> Path:
    """A Go project unpacked (not a repository itself) at `where` inside a
    repository whose ignore files are `outer_ignores`."""
    init(outer)
    write(outer, outer_ignores)
    project = outer / where
    write(project, {"go.mod": GO_MOD, "gpu.go": CGO_FILE})
    return project


def analysed(done) -> bool:
    return "gpu.go" in done.stdout and "nothing analysed" not in done.stderr


# Each way an enclosing repository can ignore the directory a pattern names:
# the directory around it, the directory itself (by name, anchored, by a
# wildcard), or everything in a `.cache/` the way tools write its .gitignore.
ENCLOSING = {
    "build-dir": ("build/proj", {".gitignore": "build/\n"}),
    "by-name": ("build/proj", {".gitignore": "proj\n"}),
    "anchored": ("build/proj", {".gitignore": "/build/proj/\n"}),
    "wildcard": ("build/proj", {".gitignore": "b*/\n"}),
    "cache-star": (".cache/proj", {".cache/.gitignore": "*\n"}),
    "info-exclude": ("build/proj", {".git/info/exclude": "build/\n"}),
}


@pytest.mark.parametrize("case", sorted(ENCLOSING))
@pytest.mark.parametrize("isolated", [False, True])
def test_a_checkout_that_an_enclosing_repository_ignores_is_analysed(tmp_path: Path, case: str, isolated: bool) -> None:
    where, ignores = ENCLOSING[case]
    project = checkout_inside(tmp_path / "outer", where, ignores)
    done = cudalint(*(["--isolated"] if isolated else []), "--no-cache", "./...", cwd=project)
    assert done.exit_code == 1, done.stderr
    assert analysed(done), done.stderr


@pytest.mark.parametrize("pattern", ["build/proj/...", "./build/proj/...", "build/proj", "build/..."])
def test_a_pattern_naming_an_ignored_directory_analyses_it(tmp_path: Path, pattern: str) -> None:
    outer = tmp_path / "outer"
    checkout_inside(outer, "build/proj", {".gitignore": "build/\n"})
    if pattern == "build/...":
        (outer / "build" / "proj" / "go.mod").unlink()  # a module boundary would stop the walk
    done = cudalint("--no-cache", pattern, cwd=outer)
    assert done.exit_code == 1, done.stderr
    assert "build/proj/gpu.go" in done.stdout


def test_a_walk_from_outside_still_skips_the_ignored_directory(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    checkout_inside(outer, "build/proj", {".gitignore": "build/\n"})
    (outer / "build" / "proj" / "go.mod").unlink()
    write(outer, {"main.go": CGO_FILE})
    found = discover(["./..."], outer)
    assert [path.name for path in found.files] == ["main.go"]
    assert [(path.path.name, path.rule.pattern) for path in found.ignored] == [("gpu.go", "build/")]


def test_a_file_two_patterns_find_is_analysed_if_either_would_analyse_it(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    checkout_inside(outer, "build/proj", {".gitignore": "build/\n"})
    (outer / "build" / "proj" / "go.mod").unlink()
    write(outer, {"main.go": CGO_FILE})
    for patterns in (["./...", "build/proj/..."], ["build/proj/...", "./..."]):
        found = discover(patterns, outer)
        assert [path.name for path in found.files] == ["gpu.go", "main.go"], patterns
        assert found.ignored == [], patterns


def test_a_tracked_file_is_analysed_whatever_gitignore_says(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo, {".gitignore": "pkg/\n", "pkg/tracked.go": CGO_FILE})
    git("add", ".gitignore", cwd=repo)
    git("add", "-f", "pkg/tracked.go", cwd=repo)
    write(repo, {"pkg/untracked.go": CGO_FILE.replace("sync()", "sync2()")})
    done = cudalint("--no-cache", "./...", cwd=repo)
    assert done.exit_code == 1, done.stderr
    assert "pkg/tracked.go" in done.stdout
    assert "pkg/untracked.go" not in done.stdout


def test_a_tracked_file_below_a_pattern_that_ignores_every_go_file_is_analysed(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo, {".gitignore": "*.go\n", "p/a.go": CGO_FILE, "p/b.go": "package p\n"})
    git("add", "-f", ".gitignore", "p/a.go", cwd=repo)
    assert [path.name for path in discover(["./..."], repo).files] == ["a.go"]


@pytest.mark.parametrize("rule, skipped", [
    ("gen/\n", "gen/g.go"),
    ("*_gen.go\n", "z_gen.go"),
    ("/gen\n", "gen/g.go"),
])
def test_untracked_files_an_ignore_rule_inside_the_named_tree_matches_are_skipped(
    tmp_path: Path, rule: str, skipped: str,
) -> None:
    project = checkout_inside(tmp_path / "outer", "build/proj", {".gitignore": "build/\n"})
    write(project, {".gitignore": rule, "gen/g.go": "package gen\n", "z_gen.go": "package p\n"})
    found = discover(["./..."], project)
    names = [path.relative_to(project).as_posix() for path in found.files]
    assert skipped not in names and "gpu.go" in names
    assert [(ignored.path.relative_to(project).as_posix(), ignored.rule) for ignored in found.ignored] == [
        (skipped, IgnoreRule(project / ".gitignore", 1, rule.strip())),
    ]


def test_in_a_repository_its_own_rules_skip_below_a_named_subdirectory(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo, {".gitignore": "*.pb.go\n", "pkg/a.go": CGO_FILE, "pkg/a.pb.go": "package p\n"})
    for pattern in ("./...", "pkg/...", "pkg"):
        found = discover([pattern], repo)
        assert [path.name for path in found.files] == ["a.go"], pattern
        assert [ignored.rule.pattern for ignored in found.ignored] == ["*.pb.go"], pattern


def test_odd_file_names_are_judged_by_name(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    odd = ":x [y]*é.go"
    write(repo, {".gitignore": "ignored*\n", f"p/{odd}": "package p\n", "p/ignored 1.go": "package p\n"})
    found = discover(["./..."], repo)
    assert [path.name for path in found.files] == [odd]
    assert [ignored.path.name for ignored in found.ignored] == ["ignored 1.go"]


def test_nothing_analysed_names_the_ignore_rule_and_how_many(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo, {".gitignore": "# generated\nout/\n", "out/a.go": CGO_FILE, "out/b.go": "package out\n"})
    done = cudalint("--no-cache", "./...", cwd=repo)
    assert done.exit_code == 0
    assert (
        "nothing analysed: all 2 Go files found are untracked and ignored by git (2 by .gitignore:2:out/)"
    ) in done.stderr
    assert "exclude" not in done.stderr


def test_nothing_analysed_names_the_exclude_option(tmp_path: Path) -> None:
    write(tmp_path, {"a.go": CGO_FILE})
    done = cudalint("--isolated", "--no-cache", "--exclude", "a.go", "./...", cwd=tmp_path)
    assert done.exit_code == 0
    assert "nothing analysed: all 1 Go file found is excluded by --exclude (1 by a.go)" in done.stderr
    assert "git" not in done.stderr


def test_nothing_analysed_names_the_configuration_file(tmp_path: Path) -> None:
    write(tmp_path, {".cudalint.toml": 'exclude = ["gen"]\n', "gen/a.go": CGO_FILE})
    done = cudalint("--no-cache", "./...", cwd=tmp_path)
    assert done.exit_code == 0
    assert (
        "nothing analysed: all 1 Go file found is excluded by the exclude list of .cudalint.toml (1 by gen)"
    ) in done.stderr


def test_nothing_analysed_names_both_causes(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo, {".gitignore": "out/\n", "out/a.go": CGO_FILE, "b.go": CGO_FILE, "c.go": CGO_FILE})
    done = cudalint("--no-cache", "--exclude", "*.go", "./...", cwd=repo)
    assert done.exit_code == 0
    assert (
        "nothing analysed: of the 3 Go files found, 1 is untracked and ignored by git (1 by .gitignore:1:out/) "
        "and 2 are excluded by --exclude (2 by *.go)"
    ) in done.stderr


def test_nothing_analysed_without_go_files_says_so(tmp_path: Path) -> None:
    said = nothing_analysed(Discovery(), PathGlobs.compile(tmp_path, ()), Config(), (), tmp_path)
    assert said == "cudalint: warning: nothing analysed: no Go files found"
    write(tmp_path, {"notes.txt": "no Go here\n"})
    done = cudalint("--no-cache", "./...", cwd=tmp_path)
    assert done.exit_code == 2
    assert "pattern './...' matches no Go files" in done.stderr and "exclude" not in done.stderr


def test_the_repository_is_the_one_around_the_files_whatever_git_dir_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = init(tmp_path / "other")
    repo = init(tmp_path / "repo")
    write(repo, {".gitignore": "out/\n", "a.go": CGO_FILE, "out/b.go": "package out\n"})
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    found = discover(["./..."], repo)
    assert [path.name for path in found.files] == ["a.go"]
    assert [ignored.rule.pattern for ignored in found.ignored] == ["out/"]
