"""Where teams gate CI on cudalint (issue 24): only-new that never lets
findings through silently, a baseline that a narrower run never shrinks, and
fixes that touch only what the run reports. The git tests run the real git on
temporary repositories, with the user's git configuration varied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import cudalint
from gitrepo import clean_env, commit_all, git, init, readme_block

OLD = """package gpu

// #include <cuda_runtime_api.h>
import "C"

func legacy() {
	C.cudaDeviceSynchronize()
}
"""
# A comment added above the legacy function and a function added below it:
# the legacy call (line 8) is between two changes, and unchanged.
CHANGED = OLD.replace("func legacy", "// legacy is old.\nfunc legacy") + "\nfunc added() {\n\tC.cudaDeviceReset()\n}\n"

LEAK = """package gpu

// #include <cuda_runtime_api.h>
import "C"

import (
	"errors"
	"unsafe"
)

func old(n int) error {
	var d unsafe.Pointer
	st := C.cudaMalloc(&d, C.size_t(n))
	if st != C.cudaSuccess {
		return errors.New("cudaMalloc failed")
	}
	return nil
}
"""
NEW_LEAK = """
func added(n int) error {
	var d unsafe.Pointer
	st := C.cudaMalloc(&d, C.size_t(n))
	if st != C.cudaSuccess {
		return errors.New("cudaMalloc failed")
	}
	return nil
}
"""


def findings(cwd: Path, *args: str) -> list[tuple[str, int]]:
    run = cudalint("--no-cache", "--isolated", "--format", "json", *args, cwd=cwd)
    assert run.exit_code in (0, 1), run.stderr
    return sorted((f["path"], f["line"]) for f in json.loads(run.stdout)["findings"])


def configure(repo: Path, settings: tuple[str, ...]) -> None:
    for setting in settings:
        name, _, value = setting.partition("=")
        git("config", name, value, cwd=repo)


# The user's git configuration, as it changes what `git diff` writes.
CONFIGURATIONS = {
    "defaults": (),
    "mnemonic-prefix": ("diff.mnemonicPrefix=true",),
    "no-prefix": ("diff.noprefix=true",),
    "quoted-paths": ("core.quotePath=true",),
    "colour-always": ("color.ui=always", "color.diff=always"),
    "inter-hunk-context": ("diff.interHunkContext=20",),
    "external-diff": ("diff.external=/bin/true",),
    "relative": ("diff.relative=true",),
    "all-at-once": ("diff.mnemonicPrefix=true", "diff.noprefix=true", "color.ui=always", "diff.interHunkContext=20"),
}
# Directory and file names as git quotes them: a space (a TAB after the name
# in the header), a TAB and non-ASCII characters (C-quoted).
NAMES = ["gpu/a.go", "gpu dir/a b.go", "gpu/tab\tname.go", "gpü/ä.go"]


def changed_repository(tmp_path: Path, settings: tuple[str, ...]) -> tuple[Path, str]:
    """A repository whose files (odd names included) change one line each
    after the base commit, under the given git configuration."""
    repo = init(tmp_path / "svc")
    for name in NAMES:
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(OLD)
    base = commit_all(repo)
    configure(repo, settings)
    for name in NAMES:
        (repo / name).write_text(CHANGED)
    return repo, base


@pytest.mark.parametrize("settings", CONFIGURATIONS.values(), ids=CONFIGURATIONS.keys())
def test_new_from_rev_finds_changed_lines_whatever_the_git_configuration(tmp_path: Path, settings: tuple[str, ...]) -> None:
    repo, base = changed_repository(tmp_path, settings)
    untracked = ["gpu dir/new one.go", "gpü/nëu.go", "gpu/un\ttracked.go"]
    for name in untracked:
        (repo / name).write_text(OLD)
    everything = findings(repo)
    assert len(everything) == 2 * len(NAMES) + len(untracked)
    expected = sorted([(name, 12) for name in NAMES] + [(name, 7) for name in untracked])
    run = cudalint("--no-cache", "--isolated", "--format", "json", "--new-from-rev", base, cwd=repo)
    assert run.exit_code == 1, run.stderr
    assert sorted((f["path"], f["line"]) for f in json.loads(run.stdout)["findings"]) == expected
    # The gate says what it left out: the legacy call in each changed file.
    assert f"cudalint: note: --new-from-rev {base}: {len(NAMES)} findings on lines the change did not touch were left out" in run.stderr
    # From a subdirectory, with paths relative to it.
    inside = findings(repo / "gpu dir", "--new-from-rev", base)
    assert inside == [("a b.go", 12), ("new one.go", 7)]


def test_a_gate_that_filters_everything_says_so(tmp_path: Path) -> None:
    repo = init(tmp_path / "svc")
    (repo / "a.go").write_text(OLD)
    commit_all(repo)
    run = cudalint("--no-cache", "--isolated", "--new-from-rev", "HEAD", cwd=repo)
    assert run.exit_code == 0
    assert "--new-from-rev HEAD: 1 finding on lines the change did not touch was left out" in run.stderr
    assert "left out" not in cudalint("--no-cache", "--isolated", "--quiet", "--new-from-rev", "HEAD", cwd=repo).stderr


def test_git_environment_that_changes_the_diff_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init(tmp_path / "svc")
    (repo / "a.go").write_text(OLD)
    base = commit_all(repo)
    (repo / "a.go").write_text(CHANGED)
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=20")  # context lines would look changed
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "/bin/true")
    assert findings(repo, "--new-from-rev", base) == [("a.go", 12)]


# --- --new-from-merge-base, --new-from-patch, --whole-files ------------------


def branch_repository(tmp_path: Path) -> tuple[Path, str]:
    """main edits the legacy line after the branch point; the branch adds a
    function: since main's tip the branch's legacy line differs too, since
    the merge base it does not."""
    repo = init(tmp_path / "svc")
    git("checkout", "-q", "-b", "main", cwd=repo)
    (repo / "a.go").write_text(OLD)
    (repo / "c.go").write_text(OLD.replace("legacy", "other"))
    base = commit_all(repo)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    (repo / "a.go").write_text(CHANGED)
    commit_all(repo)
    git("checkout", "-q", "main", cwd=repo)
    (repo / "a.go").write_text(OLD.replace("\tC.cudaDeviceSynchronize()", "\tC.cudaDeviceSynchronize() // main"))
    commit_all(repo)
    git("checkout", "-q", "feature", cwd=repo)
    return repo, base


def test_new_from_merge_base_is_what_the_branch_adds(tmp_path: Path) -> None:
    repo, base = branch_repository(tmp_path)
    assert findings(repo, "--new-from-rev", "main") == [("a.go", 8), ("a.go", 12)]
    assert findings(repo, "--new-from-merge-base", "main") == [("a.go", 12)]
    run = cudalint("--no-cache", "--isolated", "--new-from-merge-base", "main", cwd=repo)
    assert f"--new-from-merge-base main (merge base {base[:12]}): 2 findings" in run.stderr
    unknown = cudalint("--no-cache", "--isolated", "--new-from-merge-base", "nope", cwd=repo)
    assert unknown.exit_code == 2 and "'nope' is not a revision of this repository" in unknown.stderr
    git("checkout", "-q", "--orphan", "island", cwd=repo)
    commit_all(repo)
    apart = cudalint("--no-cache", "--isolated", "--new-from-merge-base", "main", cwd=repo)
    assert apart.exit_code == 2 and "'main' and HEAD have no common ancestor" in apart.stderr


@pytest.mark.parametrize("settings", [(), ("diff.mnemonicPrefix=true",), ("diff.noprefix=true",), ("color.ui=always",)])
def test_new_from_patch_reads_the_patch_git_wrote(tmp_path: Path, settings: tuple[str, ...]) -> None:
    repo, base = changed_repository(tmp_path, settings)
    # The patch as the user's git writes it (a CI step: git diff origin/main > pr.diff).
    patch = subprocess.run(["git", "diff", base], cwd=repo, env=clean_env(), capture_output=True, check=True).stdout
    (tmp_path / "pr.diff").write_bytes(patch)
    assert findings(repo, "--new-from-patch", str(tmp_path / "pr.diff")) == sorted((name, 12) for name in NAMES)
    # Paths are the repository's, from a subdirectory too.
    assert findings(repo / "gpu dir", "--new-from-patch", str(tmp_path / "pr.diff")) == [("a b.go", 12)]


def test_new_from_patch_outside_a_repository_and_with_diff_u(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "gpu").mkdir(parents=True)
    (tree / "gpu" / "a.go").write_text(CHANGED)
    (tree / "gpu" / "b.go").write_text(OLD)
    # diff -u old/ new/: prefixes of its own, a TAB and a timestamp after each name.
    (tmp_path / "change.diff").write_text(
        "--- old/gpu/a.go\t2026-01-01 00:00:00.000000000 +0000\n"
        "+++ new/gpu/a.go\t2026-01-02 00:00:00.000000000 +0000\n"
        "@@ -8,0 +9,4 @@\n+\n+func added() {\n+\tC.cudaDeviceReset()\n+}\n"
    )
    assert findings(tree, "--new-from-patch", "../change.diff") == [("gpu/a.go", 12)]
    assert findings(tree, "--new-from-patch", "../change.diff", "--whole-files") == [("gpu/a.go", 8), ("gpu/a.go", 12)]
    (tmp_path / "nothing.diff").write_text("just some text\n")
    bad = cudalint("--no-cache", "--new-from-patch", "../nothing.diff", cwd=tree)
    assert bad.exit_code == 2 and "is not a unified diff" in bad.stderr
    missing = cudalint("--no-cache", "--new-from-patch", "../missing.diff", cwd=tree)
    assert missing.exit_code == 2 and "cannot read ../missing.diff" in missing.stderr


def test_whole_files_reports_anywhere_in_the_files_a_change_touched(tmp_path: Path) -> None:
    repo, base = branch_repository(tmp_path)
    assert findings(repo, "--new-from-merge-base", "main", "--whole-files") == [("a.go", 8), ("a.go", 12)]
    # A file whose only change is a deleted line is touched; c.go is not.
    (repo / "c.go").write_text(OLD.replace("legacy", "other").replace('import "C"\n', 'import "C"'))
    assert findings(repo, "--new-from-rev", "HEAD", "--whole-files") == [("c.go", 6)]
    run = cudalint("--no-cache", "--isolated", "--new-from-rev", "HEAD", "--whole-files", cwd=repo)
    assert "2 findings in files the change did not touch were left out" in run.stderr


@pytest.mark.parametrize("args, message", [
    (("--whole-files",), "--whole-files needs --new-from-rev, --new-from-merge-base or --new-from-patch"),
    (("--new-from-rev", "HEAD", "--new-from-merge-base", "main"), "--new-from-rev and --new-from-merge-base exclude each other"),
    (("--new-from-rev", "HEAD", "--new-from-patch", "x.diff"), "--new-from-rev and --new-from-patch exclude each other"),
])
def test_new_from_usage_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "a.go").write_text(OLD)
    run = cudalint("--no-cache", *args, cwd=tmp_path)
    assert run.exit_code == 2 and message in run.stderr


# --- the baseline with a narrower selection (item 3) -----------------------

LEGACY = """package p

// #include <cuda_runtime_api.h>
import "C"

func sync() {
	C.cudaDeviceSynchronize()
}

func reset() {
	_ = C.cudaDeviceReset()
}
"""


def entries(path: Path) -> list[tuple[str, str]]:
    return sorted((e["rule"], e["path"]) for e in json.loads(path.read_text())["findings"])


def test_write_baseline_with_a_narrower_selection_keeps_the_other_rules(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(LEGACY)
    assert cudalint("--no-cache", "--write-baseline", "bl.json", cwd=tmp_path).exit_code == 0
    assert entries(tmp_path / "bl.json") == [("CL301", "a.go"), ("CL302", "a.go")]
    assert cudalint("--no-cache", "--write-baseline", "bl.json", "--select", "CL302", cwd=tmp_path).exit_code == 0
    assert entries(tmp_path / "bl.json") == [("CL301", "a.go"), ("CL302", "a.go")]
    assert cudalint("--no-cache", "--write-baseline", "bl.json", "--ignore", "CL301", cwd=tmp_path).exit_code == 0
    assert entries(tmp_path / "bl.json") == [("CL301", "a.go"), ("CL302", "a.go")]
    assert cudalint("--no-cache", "--baseline", "bl.json", cwd=tmp_path).exit_code == 0


def test_stale_entries_are_only_those_of_rules_that_ran_and_the_advice_loses_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(LEGACY)
    assert cudalint("--no-cache", "--write-baseline", "bl.json", cwd=tmp_path).exit_code == 0
    narrow = cudalint("--no-cache", "--baseline", "bl.json", "--select", "CL302", cwd=tmp_path)
    assert narrow.exit_code == 0 and "match no finding" not in narrow.stderr
    # CL302's finding fixed: one stale entry, of a rule that ran.
    (tmp_path / "a.go").write_text(LEGACY.replace("\t_ = C.cudaDeviceReset()\n", ""))
    stale = cudalint("--no-cache", "--baseline", "bl.json", "--select", "CL302", cwd=tmp_path)
    assert stale.exit_code == 0
    assert "1 entry of the baseline bl.json match no finding any more" in stale.stderr
    assert "run the same command with --write-baseline bl.json in place of --baseline bl.json" in stale.stderr
    # Doing what it says drops the stale entry and nothing else.
    assert cudalint("--no-cache", "--write-baseline", "bl.json", "--select", "CL302", cwd=tmp_path).exit_code == 0
    assert entries(tmp_path / "bl.json") == [("CL301", "a.go")]
    assert cudalint("--no-cache", "--baseline", "bl.json", cwd=tmp_path).exit_code == 0


def test_per_file_ignores_and_unparsable_files_keep_their_entries(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(LEGACY)
    (tmp_path / "b.go").write_text(LEGACY.replace("func sync", "func sync2").replace("func reset", "func reset2"))
    assert cudalint("--no-cache", "--isolated", "--write-baseline", "bl.json", cwd=tmp_path).exit_code == 0
    assert len(entries(tmp_path / "bl.json")) == 4
    (tmp_path / ".cudalint.toml").write_text('[per-file-ignores]\n"b.go" = ["CL301"]\n')
    run = cudalint("--no-cache", "--baseline", "bl.json", cwd=tmp_path)
    assert run.exit_code == 0 and "match no finding" not in run.stderr
    assert cudalint("--no-cache", "--write-baseline", "bl.json", cwd=tmp_path).exit_code == 0
    assert len(entries(tmp_path / "bl.json")) == 4
    # b.go does not parse for a while: its entries are neither stale nor dropped.
    (tmp_path / "b.go").write_text(LEGACY.replace("func reset", "func reset2(").replace("func sync", "func sync2"))
    broken = cudalint("--no-cache", "--isolated", "--baseline", "bl.json", cwd=tmp_path)
    assert "match no finding" not in broken.stderr
    assert cudalint("--no-cache", "--isolated", "--write-baseline", "bl.json", cwd=tmp_path).exit_code == 0
    assert len(entries(tmp_path / "bl.json")) == 4


def test_baseline_entries_on_lines_new_from_rev_leaves_out_are_not_stale(tmp_path: Path) -> None:
    repo = init(tmp_path / "svc")
    (repo / "a.go").write_text(LEGACY)
    commit_all(repo)
    assert cudalint("--no-cache", "--write-baseline", "bl.json", "a.go", cwd=repo).exit_code == 0
    run = cudalint("--no-cache", "--baseline", "bl.json", "--new-from-rev", "HEAD", "a.go", cwd=repo)
    assert run.exit_code == 0 and "match no finding" not in run.stderr


# --- --fix and --diff fix what the run reports (item 4) ---------------------


def leak_repository(tmp_path: Path) -> tuple[Path, str]:
    repo = init(tmp_path / "svc")
    (repo / "gpu").mkdir()
    (repo / "gpu" / "a.go").write_text(LEAK)
    base = commit_all(repo)
    (repo / "gpu" / "a.go").write_text(LEAK + NEW_LEAK)
    return repo, base


def test_diff_and_fix_respect_new_from_rev(tmp_path: Path) -> None:
    repo, _ = leak_repository(tmp_path)
    assert findings(repo) == [("gpu/a.go", 13), ("gpu/a.go", 22)]
    diff = cudalint("--no-cache", "--isolated", "--diff", "--new-from-rev", "HEAD", cwd=repo)
    assert diff.exit_code == 1
    assert diff.stdout.count("+\tdefer C.cudaFree(d)") == 1 and "@@ -23" in diff.stdout
    fixed = cudalint("--no-cache", "--isolated", "--fix", "--new-from-rev", "HEAD", cwd=repo)
    assert fixed.exit_code == 0, fixed.stdout
    text = (repo / "gpu" / "a.go").read_text()
    assert text.startswith(LEAK)  # the line nobody changed is not rewritten
    assert text.count("defer C.cudaFree(d)") == 1
    assert findings(repo) == [("gpu/a.go", 13)]
    # Nothing new left to fix: --diff shows nothing and exits 0.
    clean = cudalint("--no-cache", "--isolated", "--diff", "--new-from-rev", "HEAD", cwd=repo)
    assert clean.exit_code == 0 and clean.stdout == ""


def test_diff_and_fix_respect_the_baseline(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(LEAK)
    assert cudalint("--no-cache", "--isolated", "--write-baseline", "bl.json", cwd=tmp_path).exit_code == 0
    diff = cudalint("--no-cache", "--isolated", "--diff", "--baseline", "bl.json", cwd=tmp_path)
    assert diff.exit_code == 0 and diff.stdout == ""
    fixed = cudalint("--no-cache", "--isolated", "--fix", "--baseline", "bl.json", cwd=tmp_path)
    assert fixed.exit_code == 0
    assert (tmp_path / "a.go").read_text() == LEAK
    # A new finding next to the baselined one: only it is fixed.
    (tmp_path / "a.go").write_text(LEAK + NEW_LEAK)
    diff = cudalint("--no-cache", "--isolated", "--diff", "--baseline", "bl.json", cwd=tmp_path)
    assert diff.exit_code == 1 and diff.stdout.count("+\tdefer C.cudaFree(d)") == 1
    assert cudalint("--no-cache", "--isolated", "--fix", "--baseline", "bl.json", cwd=tmp_path).exit_code == 0
    assert (tmp_path / "a.go").read_text().startswith(LEAK)
    assert (tmp_path / "a.go").read_text().count("defer C.cudaFree(d)") == 1


def test_the_readme_new_from_commands_run_verbatim(tmp_path: Path) -> None:
    """The README's three gating commands, run by bash as written, on a
    branch that adds one finding to a legacy file of origin/main."""
    repo = init(tmp_path / "svc")
    (repo / "gpu").mkdir()
    (repo / "gpu" / "a.go").write_text(OLD)
    base = commit_all(repo)
    git("update-ref", "refs/remotes/origin/main", base, cwd=repo)
    (repo / "gpu" / "a.go").write_text(CHANGED)
    commit_all(repo)
    (repo / "gpu" / "b.go").write_text(OLD.replace("legacy", "untracked"))
    commands = [line.split("#")[0].strip() for line in readme_block("snippet:new-from").splitlines() if line.strip()]
    assert len(commands) == 3
    bin_dir = str(Path(sys.executable).parent)
    env = clean_env(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), CUDALINT_NO_CACHE="1", NO_COLOR="1")
    outputs = []
    for command in commands:
        done = subprocess.run(["bash", "-eo", "pipefail", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, (command, done.stderr)
        outputs.append(sorted(line.split(": ")[0] for line in done.stdout.splitlines() if ": CL" in line))
    merge_base, since_head, patch = outputs
    assert merge_base == ["gpu/a.go:12:2", "gpu/b.go:7:2"]  # the branch's function and the untracked file
    assert since_head == ["gpu/b.go:7:2"]  # the commit holds the function
    assert patch == ["gpu/a.go:12:2"]  # git diff shows no untracked file


@pytest.mark.parametrize("renames", ["false", "copies", "true"])
def test_a_moved_file_is_not_new_whatever_diff_renames_says(tmp_path: Path, renames: str) -> None:
    repo = init(tmp_path / "svc")
    (repo / "old").mkdir()
    (repo / "old" / "a.go").write_text(OLD)
    base = commit_all(repo)
    git("config", "diff.renames", renames, cwd=repo)
    (repo / "new").mkdir()
    git("mv", "old/a.go", "new/a.go", cwd=repo)
    (repo / "new" / "a.go").write_text(CHANGED)
    assert findings(repo, "--new-from-rev", base) == [("new/a.go", 12)]
