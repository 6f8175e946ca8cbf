"""A warm run whose every input is unchanged is answered from the record of
the last identical run (`cudalint.app.replay`), and any change to what the
run read makes it run again."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudalint.app import entry, replay
from gitrepo import clean_env, git

# A finding without a fix: runs with fixes are not recorded (as the cache
# never serves a result with fixes).
DROPPED = """package gpu

// #include <cuda_runtime_api.h>
import "C"

func Sync() {
	C.cudaDeviceSynchronize()
}
"""

LEAK = """package gpu

// #include <cuda_runtime_api.h>
import "C"

import "unsafe"

func Leak(n int) error {
	var d unsafe.Pointer
	if C.cudaMalloc(&d, C.size_t(n)) != C.cudaSuccess {
		return nil
	}
	return nil
}
"""

CLEAN = """package gpu

func Clean() int { return 1 }
"""

_OLD = time.time() - 3600  # inputs older than the racy window


def _age(root: Path) -> None:
    for directory, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(directory, name), (_OLD, _OLD))


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "go.mod").write_text("module example.com/m\n\ngo 1.21\n")
    (root / "gpu").mkdir()
    (root / "gpu" / "sync.go").write_text(DROPPED)
    (root / "gpu" / "clean.go").write_text(CLEAN)
    _age(root)
    return root


class _Streams:
    def __init__(self) -> None:
        self.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        self.stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")

    def text(self, stream: io.TextIOWrapper) -> str:
        stream.flush()
        return stream.buffer.getvalue().decode()


def _run(args: list[str], cwd: Path, monkeypatch) -> tuple[int, str, str, bool]:
    """entry.run in this process: (status, stdout, stderr, whether the
    command ran, rather than a replay)."""
    streams = _Streams()
    ran = []
    real = entry._command

    def command(*a, **k):
        ran.append(True)
        return real(*a, **k)

    with monkeypatch.context() as patch:
        patch.chdir(cwd)
        patch.setattr(sys, "stdout", streams.stdout)
        patch.setattr(sys, "stderr", streams.stderr)
        patch.setattr(entry, "_command", command)
        status = entry.run(args)
        out, err = streams.text(streams.stdout), streams.text(streams.stderr)
    return status, out, err, bool(ran)


ARGS = ["--format", "json", "--jobs", "1", "./..."]


def test_an_unchanged_run_is_answered_from_its_record(tmp_path, monkeypatch):
    root = _tree(tmp_path / "t")
    first = _run(ARGS, root, monkeypatch)
    assert first[0] == 1 and '"CL301"' in first[1] and first[3]
    assert len(list((root / ".cudalint_cache" / "runs").iterdir())) == 1
    again = _run(ARGS, root, monkeypatch)
    assert not again[3], "the second run is the record's"
    assert again[:3] == first[:3]


def test_a_run_whose_packages_worker_processes_analysed_is_not_recorded(tmp_path, monkeypatch):
    """What a worker read is not the parent's to see."""
    import cudalint.driver.run as driver_run

    root = _tree(tmp_path / "t")
    (root / "more").mkdir()
    (root / "more" / "m.go").write_text(DROPPED.replace("package gpu", "package more"))
    _age(root)
    monkeypatch.setattr(driver_run, "_PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(driver_run, "default_jobs", lambda: 2)
    args = ["--format", "json", "--jobs", "2", "./..."]
    assert _run(args, root, monkeypatch)[3]
    assert not (root / ".cudalint_cache" / "runs").exists()
    assert _run(args, root, monkeypatch)[3], "warm: every package from the cache, nothing for a worker"
    assert not _run(args, root, monkeypatch)[3]


def _edit(root: Path) -> None:
    (root / "gpu" / "sync.go").write_text(DROPPED.replace("\tC.cudaDeviceSynchronize()", "\t_ = C.cudaDeviceSynchronize()"))


def _add_file(root: Path) -> None:
    (root / "gpu" / "more.go").write_text(DROPPED.replace("Sync", "Sync2"))


def _remove_file(root: Path) -> None:
    (root / "gpu" / "clean.go").unlink()


def _add_package(root: Path) -> None:
    (root / "other").mkdir()
    (root / "other" / "a.go").write_text(DROPPED.replace("package gpu", "package other"))


def _configure(root: Path) -> None:
    (root / ".cudalint.toml").write_text('ignore = ["CL302"]\n')


def _touch_unrelated(root: Path) -> None:
    (root / "gpu" / "notes.txt").write_text("not Go")


@pytest.mark.parametrize("change", [_edit, _add_file, _remove_file, _add_package, _configure, _touch_unrelated])
def test_any_change_to_what_the_run_read_runs_it_again(tmp_path, monkeypatch, change):
    root = _tree(tmp_path / "t")
    _run(ARGS, root, monkeypatch)
    assert not _run(ARGS, root, monkeypatch)[3]
    change(root)
    status, out, err, ran = _run(ARGS, root, monkeypatch)
    assert ran
    fresh = _run(ARGS, tmp_path / "t", monkeypatch)
    assert (status, out, err) == fresh[:3]
    uncached = _run(["--no-cache", *ARGS], root, monkeypatch)
    assert (status, out) == uncached[:2], "the run after a change reports what a run without any cache does"


def test_a_run_whose_findings_carry_fixes_is_not_recorded(tmp_path, monkeypatch):
    """The cache never serves a result with fixes (a forged entry could put
    its code in a report's fixes); no record does either."""
    root = _tree(tmp_path / "t")
    (root / "gpu" / "leak.go").write_text(LEAK)
    _age(root)
    for _ in range(3):
        status, out, _, ran = _run(ARGS, root, monkeypatch)
        assert ran and '"fixes": [\n' in out and "cudaFree" in out
    assert not (root / ".cudalint_cache" / "runs").exists()


def test_another_command_line_environment_or_directory_is_another_record(tmp_path, monkeypatch):
    root = _tree(tmp_path / "t")
    _run(ARGS, root, monkeypatch)
    assert not _run(ARGS, root, monkeypatch)[3]
    assert _run(["--format", "text", "--jobs", "1", "./..."], root, monkeypatch)[3]
    monkeypatch.setenv("CUDALINT_TEST_SOMETHING", "1")
    assert _run(ARGS, root, monkeypatch)[3]
    monkeypatch.delenv("CUDALINT_TEST_SOMETHING")
    assert not _run(ARGS, root, monkeypatch)[3]
    assert _run(["--format", "json", "--jobs", "1", "./..."], root / "gpu", monkeypatch)[3]


def test_a_changed_input_newer_than_the_racy_window_is_not_recorded(tmp_path, monkeypatch):
    root = _tree(tmp_path / "t")
    (root / "gpu" / "clean.go").write_text(CLEAN + "\n")  # just now
    for _ in range(3):
        assert _run(ARGS, root, monkeypatch)[3]
    assert not (root / ".cudalint_cache" / "runs").exists()


@pytest.mark.parametrize("args", [
    ["--fix", "./..."], ["--diff", "./..."], ["--output", "report.txt", "./..."], ["--format", "sarif:r.sarif", "./..."],
    ["--no-cache", "./..."], ["--new-from-rev", "HEAD", "./..."], ["--write-baseline", "b.json", "./..."],
    ["--stdin-filename", "gpu/a.go", "-"], ["--add-ignore", "legacy", "./..."], ["--list-rules"], ["--frobnicate"],
])
def test_runs_with_effects_beyond_their_report_are_never_recorded(args):
    assert not replay.plain_options(args)


def test_plain_runs_are_recorded(tmp_path):
    for args in (ARGS, ["-q", "--select", "CL1", "-j2", "--format=sarif", "gpu/leak.go"], ["--", "./..."]):
        assert replay.plain_options(args), args


def test_a_terminal_gets_a_fresh_run(tmp_path, monkeypatch):
    root = _tree(tmp_path / "t")
    monkeypatch.setattr(replay, "_terminal", lambda: True)
    for _ in range(3):
        assert _run(ARGS, root, monkeypatch)[3]
    assert not (root / ".cudalint_cache" / "runs").exists()


def test_git_answers_are_asked_again(tmp_path, monkeypatch):
    """Which files git ignores is git's answer, not a file the run opened:
    the replay asks git again, and a changed .gitignore runs the analysis."""
    root = _tree(tmp_path / "t")
    (root / ".gitignore").write_text("gen/\n")
    (root / "gen").mkdir()
    (root / "gen" / "g.go").write_text(DROPPED.replace("package gpu", "package gen"))
    monkeypatch.setattr(os, "environ", clean_env())
    git("init", "-q", cwd=root)
    git("add", "go.mod", "gpu", ".gitignore", cwd=root)
    _age(root)
    _run(ARGS, root, monkeypatch)
    status, out, _, ran = _run(ARGS, root, monkeypatch)
    assert not ran and "gen/g.go" not in out
    (root / ".gitignore").write_text("# nothing ignored\n")
    os.utime(root / ".gitignore", (_OLD, _OLD))
    status, out, _, ran = _run(ARGS, root, monkeypatch)
    assert ran and "gen/g.go" in out


def test_a_replay_writes_what_the_process_wrote(tmp_path):
    """As users run it: a process whose report is byte for byte the warm
    run's, in every format, without importing the analysis."""
    root = _tree(tmp_path / "t")
    for fmt in ("text", "json", "sarif", "github"):
        args = [sys.executable, "-X", "importtime", "-m", "cudalint", "--format", fmt, "--show-source", "./..."]
        runs = [subprocess.run(args, cwd=root, capture_output=True, timeout=300) for _ in range(3)]
        assert [run.returncode for run in runs] == [1, 1, 1]
        assert runs[0].stdout == runs[1].stdout == runs[2].stdout
        messages = [b"\n".join(line for line in run.stderr.splitlines() if not line.startswith(b"import time:")) for run in runs]
        assert messages[0] == messages[1] == messages[2]
        # The first run of a format analyses, the next ones are its record.
        assert b"cudalint.checks" in runs[0].stderr
        assert b"cudalint.checks" not in runs[1].stderr and b"cudalint.checks" not in runs[2].stderr


def test_inputs_inside_the_cache_directory_are_inputs(tmp_path, monkeypatch):
    """Only what the cache keeps there is left out: a tree analysed with
    --cache-dir . (or a module cache kept inside one CI cache) is read like
    any other."""
    root = _tree(tmp_path / "t")
    args = ["--cache-dir", ".", *ARGS]
    first = _run(args, root, monkeypatch)
    _run(args, root, monkeypatch)
    assert not _run(args, root, monkeypatch)[3]
    _edit(root)
    _age(root)
    status, out, _, ran = _run(args, root, monkeypatch)
    assert ran and (status, out) != first[:2] and (status, out) == _run(["--no-cache", *ARGS], root, monkeypatch)[:2]
    recording = replay.Recording(str(root / "runs" / "x"), str(root))
    assert recording._input(root / "gpu" / "sync.go") is not None
    assert recording._input(root / "runs" / "x") is None and recording._input(root / "ab" / "cdef") is None
    assert recording._input("/dev/shm/tree/a.go") is not None and recording._input("/proc/self/status") is None


def test_a_run_whose_report_could_not_be_written_is_not_recorded(tmp_path, monkeypatch):
    """`cudalint ./... 2>&1 | head -1`: the reader went away, and what the
    run wrote is not its report."""
    root = _tree(tmp_path / "t")

    class Closed(io.TextIOWrapper):
        def write(self, data):
            raise BrokenPipeError(32, "Broken pipe")

    with monkeypatch.context() as patch:
        patch.chdir(root)
        patch.setattr(sys, "stdout", Closed(io.BytesIO(), encoding="utf-8"))
        patch.setattr(sys, "stderr", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
        assert entry.run(ARGS) == 1, "the reader went away: the run's own status"
    assert not (root / ".cudalint_cache" / "runs").exists()


def test_the_report_keeps_the_order_of_its_two_streams(tmp_path):
    """A log holding both streams (`>log 2>&1`) gets the replay's
    notifications and findings in the order the run gave them."""
    root = _tree(tmp_path / "t")
    (root / "gpu" / "broken.go").write_bytes(b"package gpu\n\nfunc Broken( {\n")
    (root / "gpu" / "latin.go").write_bytes(b"package gpu\n\n// caf\xe9\n")
    _age(root)
    runs = [
        subprocess.run([sys.executable, "-m", "cudalint", "--format", "text", "./..."], cwd=root, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=300)
        for _ in range(3)
    ]
    assert b"CL301" in runs[0].stdout and b"syntax" in runs[0].stdout
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout


def test_who_runs_it_is_part_of_the_key(tmp_path, monkeypatch):
    """A file one user may not read, another may: a status does not say."""
    before = replay._key(ARGS, str(tmp_path))
    monkeypatch.setattr(os, "getgroups", lambda: [12345])
    assert replay._key(ARGS, str(tmp_path)) != before


def test_a_damaged_or_planted_record_is_a_miss_and_runs_nothing(tmp_path, monkeypatch):
    """A record is data: one not of the shape a run writes is a miss (the
    run is made, never a failure), and one naming a command other than the
    git queries a run asks gets that command not run."""
    root = _tree(tmp_path / "t")
    first = _run(ARGS, root, monkeypatch)
    (record,) = (root / ".cudalint_cache" / "runs").iterdir()
    kept = json.loads(record.read_text())
    for damage in (
        lambda r: r.update(written=[["o", "b", "not base64!"]]),
        lambda r: r.update(written=[["x", "t", "text"]]),
        lambda r: r.update(status=7),
        lambda r: r.update(questions=[["s"]]),
    ):
        damaged = json.loads(json.dumps(kept))
        damage(damaged)
        record.write_text(json.dumps(damaged))
        status, out, err, ran = _run(ARGS, root, monkeypatch)
        assert ran and (status, out) == first[:2], damage
    marker = tmp_path / "ran"
    planted = json.loads(json.dumps(kept))
    planted["questions"].insert(0, ["g", [["touch", str(marker)], str(root), None, []], [0, ""]])
    record.write_text(json.dumps(planted))
    assert _run(ARGS, root, monkeypatch)[3]
    assert not marker.exists()
    assert replay._git_query(["git", "ls-files", "-z", "--stage", "--full-name"])
    assert not replay._git_query(["git", "-c", "core.fsmonitor=x", "ls-files"])
    assert not replay._git_query(["git", "init", "--bare", "x"])


def test_a_key_that_cannot_be_made_leaves_the_run_to_be_made(tmp_path, monkeypatch):
    """Replay is an optimisation: where its key cannot be made (a file of
    cudalint's own unreadable), the run is made as usual, never failed."""
    root = _tree(tmp_path / "t")

    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(replay, "_key", unreadable)
    status, out, _, ran = _run(ARGS, root, monkeypatch)
    assert ran and status == 1 and '"CL301"' in out
