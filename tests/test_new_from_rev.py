"""--new-from-rev REF with the real git: only findings on lines a change
added or edited are reported; outside a repository, or with a revision git
does not know, a clear error and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import cudalint
from gitrepo import commit_all, init

OLD = """package gpu

// #include <cuda_runtime_api.h>
import "C"

func legacy() {
	C.cudaDeviceSynchronize()
}
"""


def findings(cwd: Path, *args: str) -> list[tuple[str, int]]:
    run = cudalint("--no-cache", "--format", "json", *args, cwd=cwd)
    assert run.exit_code in (0, 1), run.stderr
    return [(f["path"], f["line"]) for f in json.loads(run.stdout)["findings"]]


def test_only_changed_lines_are_reported(tmp_path: Path) -> None:
    repo = init(tmp_path / "svc")
    (repo / "gpu").mkdir()
    (repo / "gpu" / "a.go").write_text(OLD)
    base = commit_all(repo)
    (repo / "gpu" / "a.go").write_text(OLD + "\nfunc added() {\n\tC.cudaDeviceReset()\n}\n")
    (repo / "gpu" / "b.go").write_text(OLD.replace("legacy", "untracked"))  # new and untracked: new whole
    assert findings(repo) == [("gpu/a.go", 7), ("gpu/a.go", 11), ("gpu/b.go", 7)]
    assert findings(repo, "--new-from-rev", base) == [("gpu/a.go", 11), ("gpu/b.go", 7)]
    commit_all(repo)
    assert findings(repo, "--new-from-rev", "HEAD") == []
    assert findings(repo, "--new-from-rev", "HEAD~1") == [("gpu/a.go", 11), ("gpu/b.go", 7)]


def test_clear_errors_outside_a_repository_and_for_unknown_revisions(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(OLD)
    outside = cudalint("--no-cache", "--new-from-rev", "HEAD", "a.go", cwd=tmp_path)
    assert outside.exit_code == 2 and "is not inside a git repository" in outside.stderr
    repo = init(tmp_path / "repo")
    (repo / "a.go").write_text(OLD)
    commit_all(repo)
    unknown = cudalint("--no-cache", "--new-from-rev", "no-such-branch", "a.go", cwd=repo)
    assert unknown.exit_code == 2 and "'no-such-branch' is not a revision of this repository" in unknown.stderr
