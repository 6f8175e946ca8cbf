"""Reliability and security of everything around the analysis (issue 14):
the exit-status contract (0 clean, 1 findings, 2 anything else, always), the
small input files, the walk, and hostile file names and configuration.

Real signals, FIFOs, symlinks, /dev/full and (where `mount` works) a small
tmpfs are used; where the machine cannot give a real condition (an
unreadable directory when running as root without setpriv), the test says
how it simulates it or skips.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from clirun import CGO_FILE, cgo_project

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, cwd: Path, stdout=subprocess.PIPE, timeout: float = 120, prefix: tuple[str, ...] = (),
        env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "cudalint", *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE,
        timeout=timeout, env={**os.environ, **(env or {})},
    )


def text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "replace")


def assert_tool_failure(done: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit status 2, one `cudalint: error:` line, no traceback."""
    stderr = text(done.stderr)
    assert done.returncode == 2, (done.returncode, stderr[-3000:])
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("cudalint: error:")]
    assert len(errors) == 1, stderr[-3000:]
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return cgo_project(tmp_path)


# -- item 1: the exit-status contract ----------------------------------------


def test_standard_output_on_a_full_disk_exits_2(project: Path) -> None:
    with open("/dev/full", "wb") as full:  # every write fails with ENOSPC, as on a full file system
        done = run("--no-cache", "./...", cwd=project, stdout=full)
    assert_tool_failure(done, "standard output", "No space left on device")


def test_standard_output_closed_by_the_reader_is_not_a_failure(project: Path) -> None:
    """Issue 24: `cudalint ./... | head -1` is the reader's choice, not a
    failure: quietly, with the status of the findings (tests/test_peers.py)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = run("--no-cache", "./...", cwd=project, stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 1 and text(done.stderr) == ""


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    if shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return done.returncode == 0


def test_a_real_full_file_system(tmp_path: Path) -> None:
    """A 256 KiB tmpfs holding the project: the cache cannot be written (no
    error: a cache is an optimisation) and the --output report cannot be
    written either (exit 2). Needs root and mount; skipped otherwise."""
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "256k"):
        pytest.skip("cannot mount a tmpfs here (not root?); /dev/full covers standard output")
    try:
        (disk / "a.go").write_text(CGO_FILE)
        with open(disk / "filler", "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError:
                pass
        done = run("./...", cwd=disk)
        assert done.returncode == 1 and "Traceback" not in text(done.stderr), text(done.stderr)
        assert "CL301" in text(done.stdout)
        done = run("--no-cache", "--format", "sarif", "--output", "report.sarif", "./...", cwd=disk)
        assert_tool_failure(done, "cannot write report.sarif")
        assert not (disk / "report.sarif").exists()
        assert [p.name for p in disk.iterdir() if p.name.startswith(".report")] == []
    finally:
        subprocess.run(["umount", str(disk)], check=False)


_BUSY = textwrap.dedent("""
    import sys, time
    import cudalint.cli as cli

    def busy(*args, **kwargs):
        print("busy", file=sys.stderr, flush=True)
        time.sleep(60)

    cli.analyze = busy
    sys.argv = ["cudalint", "--no-cache", "./..."]
    from cudalint.entry import main
    main()
""")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_runs_exit_2(project: Path, signum: int) -> None:
    """A real signal while the analysis runs (the analysis is replaced by a
    sleep so that the signal surely arrives during it)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _BUSY], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr.readline().strip() == b"busy"
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert_tool_failure(done, "interrupted")
    assert stdout == b""


_RAISING = textwrap.dedent("""
    import sys
    import cudalint.cli as cli

    def broken(*args, **kwargs):
        raise {error}

    cli.discover = broken
    sys.argv = ["cudalint", "--no-cache", *sys.argv[1:]]
    from cudalint.entry import main
    main()
""")


@pytest.mark.parametrize("error, needle", [
    ("RuntimeError('boom')", "internal error: RuntimeError: boom"),
    ("MemoryError()", "out of memory"),
    ("RecursionError('maximum recursion depth exceeded')", "nested too deeply"),
    ("OSError(36, 'File name too long')", "File name too long"),
])
def test_crashes_exit_2_with_one_line(project: Path, error: str, needle: str) -> None:
    script = _RAISING.format(error=error)
    done = subprocess.run([sys.executable, "-c", script, "./..."], cwd=project, capture_output=True, timeout=60)
    assert_tool_failure(done, needle)
    debug = subprocess.run([sys.executable, "-c", script, "--debug", "./..."], cwd=project, capture_output=True, timeout=60)
    assert debug.returncode == 2 and "Traceback" in text(debug.stderr)


def test_a_deleted_working_directory_exits_2(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" -m cudalint ./...', "sh", str(gone), sys.executable],
        capture_output=True, timeout=60,
    )
    assert_tool_failure(done, "current directory")


def test_a_bad_character_range_in_exclude_is_a_usage_error(project: Path) -> None:
    done = run("--no-cache", "--exclude", "[z-a]", "./...", cwd=project)
    stderr = text(done.stderr)
    assert done.returncode == 2 and "Traceback" not in stderr and "bad character range z-a" in stderr


def test_paths_longer_than_path_max(project: Path) -> None:
    done = run("--no-cache", "x/" * 3000 + "...", cwd=project)
    stderr = text(done.stderr)
    assert done.returncode == 2 and "Traceback" not in stderr and "matches no Go files" in stderr
    # A real tree deeper than PATH_MAX (4096): built one level at a time.
    deep = project / "deep"
    deep.mkdir()
    fd = os.open(deep, os.O_RDONLY)
    try:
        for _ in range(25):
            os.mkdir("d" * 200, dir_fd=fd)
            child = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("x.go", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as stream:
            stream.write("package x\n")
    finally:
        os.close(fd)
    done = run("--no-cache", "./...", cwd=project)
    stderr = text(done.stderr)
    assert done.returncode == 1 and "Traceback" not in stderr, stderr[-2000:]
    assert "File name too long" in stderr and "CL301" in text(done.stdout)


def test_non_utf8_file_names_are_notifications_in_every_format(project: Path) -> None:
    (project / "gpu").joinpath(os.fsdecode(b"b\xff.go")).write_bytes(b"package p\n")
    (project / os.fsdecode(b"d\xfe")).mkdir()
    (project / os.fsdecode(b"d\xfe") / "c.go").write_text(CGO_FILE)
    for fmt in ("text", "json", "sarif", "github"):
        done = run("--no-cache", "--format", fmt, "./...", cwd=project)
        stderr = text(done.stderr)
        assert done.returncode == 1, (fmt, stderr[-2000:])
        assert "Traceback" not in stderr
        assert "gpu/b\\xff.go: file name is not valid UTF-8; skipped" in stderr + text(done.stdout), fmt
        assert "d\\xfe: directory name is not valid UTF-8; skipped" in stderr + text(done.stdout), fmt
    report = json.loads(run("--no-cache", "--format", "sarif", "./...", cwd=project).stdout)
    notes = report["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert any("gpu/b%5Cxff.go" in json.dumps(note) for note in notes)


def _unprivileged() -> tuple[str, ...]:
    """A command prefix under which file permissions apply: none for a
    normal user; for root, setpriv dropping the capabilities that bypass
    them."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be made to apply")
    drop = "-dac_override,-dac_read_search"
    return (setpriv, f"--inh-caps={drop}", f"--bounding-set={drop}")


def test_an_unreadable_directory_is_a_notification(project: Path) -> None:
    prefix = _unprivileged()
    locked = project / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "b.go").write_text(CGO_FILE)
    locked.chmod(0)
    try:
        done = run("--no-cache", "./...", cwd=project, prefix=prefix)
        named = run("--no-cache", "locked/inner", cwd=project, prefix=prefix)
    finally:
        locked.chmod(0o755)
    stderr = text(done.stderr)
    assert done.returncode == 1 and "Traceback" not in stderr, stderr[-2000:]
    assert "locked: cannot list directory: Permission denied; skipped" in stderr
    assert "gpu/a.go" in text(done.stdout)
    assert named.returncode == 2 and "Traceback" not in text(named.stderr), text(named.stderr)


# -- item 1 and 12: configuration, baseline and knowledge input ---------------


@pytest.mark.parametrize("name, content", [
    (".cudalint.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
    ("pyproject.toml", "# cudalint\nx = " + "{y = " * 50_000 + "1" + "}" * 50_000 + "\n"),
])
def test_deeply_nested_toml_is_a_configuration_error(project: Path, name: str, content: str) -> None:
    (project / name).write_text(content)
    assert_tool_failure(run("--no-cache", "./...", cwd=project), name, "nested too deeply")


@pytest.mark.parametrize("content, needle", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"schema_version": 1, "findings": [], "n": ' + "9" * 5000 + "}", "not a cudalint baseline"),
    ('{"schema_version": true, "findings": []}', "not a cudalint baseline"),
])
def test_hostile_baselines_are_rejected(project: Path, content: str, needle: str) -> None:
    (project / "baseline.json").write_text(content)
    assert_tool_failure(run("--no-cache", "--baseline", "baseline.json", "./...", cwd=project), needle)


@pytest.mark.parametrize("option", ["--config", "--rules", "--baseline"])
def test_fifos_and_devices_are_not_read(project: Path, option: str) -> None:
    fifo = project / "input.fifo"
    os.mkfifo(fifo)
    done = run("--no-cache", option, str(fifo), "./...", cwd=project, timeout=30)
    assert_tool_failure(done, "not a regular file")
    done = run("--no-cache", option, "/dev/zero", "./...", cwd=project, timeout=30)
    assert_tool_failure(done, "not a regular file")


def test_a_configuration_above_the_repository_is_named_and_nothing_analysed_is_said(tmp_path: Path) -> None:
    (tmp_path / ".cudalint.toml").write_text('exclude = ["**"]\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "a.go").write_text(CGO_FILE)
    done = run("--no-cache", "./...", cwd=repo)
    stderr = text(done.stderr)
    assert done.returncode == 0
    assert "using the configuration file ../.cudalint.toml, which is outside this repository" in stderr
    assert "nothing analysed: all 1 Go file found is excluded by the exclude list of ../.cudalint.toml" in stderr


def test_a_knowledge_file_outside_the_repository_is_not_echoed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.toml"
    secret.write_text('AWS_SECRET_ACCESS_KEY = "hunter2"\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "a.go").write_text(CGO_FILE)
    (repo / ".cudalint.toml").write_text(f'rules = ["{secret}"]\n')
    done = run("--no-cache", "./...", cwd=repo)
    stderr = text(done.stderr)
    assert done.returncode == 2 and "secret.toml" in stderr
    assert "AWS_SECRET" not in stderr and "hunter2" not in stderr


# -- item 9: globs in linear time ---------------------------------------------


def test_globs_take_linear_time(project: Path) -> None:
    name = "a" * 56 + ".go"
    (project / "gpu" / name).write_text(CGO_FILE)
    deep = project / "/".join(["x"] * 40)
    deep.mkdir(parents=True)
    (deep / "y.go").write_text(CGO_FILE)
    (project / ".cudalint.toml").write_text(
        'exclude = ["*a*a*a*a*a*a*a*a*b", "' + "**/" * 10 + 'zz"]\n'
    )
    start = time.perf_counter()
    done = run("--no-cache", "./...", cwd=project)
    assert time.perf_counter() - start < 20
    assert done.returncode == 1 and name in text(done.stdout)


# -- item 10: no workflow commands from file names or source ------------------

_QUOTING = """package p

// #include <cuda_runtime_api.h>
import "C"

import "unsafe"

func copyAsync(d unsafe.Pointer, w []float32, n C.size_t, s C.cudaStream_t) {
	st := C.cudaMemcpyAsync(d, unsafe.Pointer(&w[0 /*
::add-mask::hidden
*/]), n, C.cudaMemcpyHostToDevice, s)
	_ = st
}
"""


def test_no_workflow_command_can_be_injected(project: Path) -> None:
    (project / "quoting.go").write_text(_QUOTING)
    (project / "x\n::error::injected.go").write_text(_QUOTING.replace("copyAsync", "other"))
    (project / "::warning::start.go").write_text(CGO_FILE.replace("sync()", "other()"))
    (project / "syn\n::error::bad.go").write_text("package p\nfunc (\n")
    (project / "esc\x1b[2J.go").write_text(CGO_FILE.replace("sync()", "third()"))
    for fmt in ("text", "github"):
        done = run("--no-cache", "--show-paths", "--show-source", "--format", fmt, ".", cwd=project)
        assert done.returncode == 1, text(done.stderr)
        for line in (text(done.stdout) + text(done.stderr)).splitlines():
            if fmt == "github" and line.startswith(("::error file=", "::warning file=", "::notice file=")):
                continue
            assert not line.lstrip().startswith("::"), (fmt, line)
            assert "\x1b" not in line, (fmt, line)
    out = text(run("--no-cache", ".", cwd=project).stdout)
    assert "./::warning::start.go:7:2: CL301" in out and "x\\n::error::injected.go:9:" in out


# -- item 7: bounded work, one finding per defect -----------------------------

_ACQUIRE = """package p

// #include <cuda_runtime_api.h>
import "C"

import "unsafe"

func f(n int) {
	var d unsafe.Pointer
	if C.cudaMalloc(&d, 16) != C.cudaSuccess {
		return
	}
"""


def test_a_loop_of_k_conditional_frees_gives_k_double_releases(tmp_path: Path) -> None:
    frees = "".join(f"\t\tif i == {i} {{\n\t\t\tC.cudaFree(d)\n\t\t}}\n" for i in range(30))
    (tmp_path / "a.go").write_text(_ACQUIRE + "\tfor i := 0; i < n; i++ {\n" + frees + "\t}\n}\n")
    report = json.loads(run("--no-cache", "--format", "json", ".", cwd=tmp_path).stdout)
    doubles = [f for f in report["findings"] if f["rule"] == "CL102"]
    assert len(doubles) == 30
    assert len({(f["line"], f["column"]) for f in doubles}) == 30
    assert len({f["fingerprint"] for f in report["findings"]}) == len(report["findings"])


def test_a_function_of_gotos_is_too_complex_not_silent_nor_huge(tmp_path: Path) -> None:
    labels = 120
    body = "".join(
        f"L{i}:\n\tif n == {i} {{\n\t\tC.cudaFree(d)\n\t\tgoto L{(i * 7 + 3) % labels}\n\t}}\n" for i in range(labels)
    )
    (tmp_path / "a.go").write_text(_ACQUIRE + body + "\tC.cudaFree(d)\n}\n")
    start = time.perf_counter()
    report = json.loads(run("--no-cache", "--format", "json", ".", cwd=tmp_path).stdout)
    assert time.perf_counter() - start < 20
    assert [f for f in report["findings"] if f["rule"] == "CL102"] == []
    (note,) = report["notifications"]
    assert note["kind"] == "too-complex" and "function f has too many paths to follow" in note["message"]


def test_identical_findings_are_reported_once() -> None:
    from cudalint.driver import one_per_defect
    from cudalint.findings import Finding, Position, Result, Span

    span = Span(Position(3, 2, 2), Position(3, 9, 9))
    other = Span(Position(4, 2, 2), Position(4, 9, 9))
    result = Result(findings=[
        Finding("CL301", "a.go", span, "dropped"), Finding("CL301", "a.go", span, "dropped"),
        Finding("CL101", "a.go", span, "leaks p"), Finding("CL101", "a.go", span, "leaks q"),
        Finding("CL102", "a.go", other, "released at line 1"), Finding("CL102", "a.go", other, "released at line 2"),
    ])
    result.sort()
    one_per_defect(result)
    assert [(f.rule_id, f.message) for f in result.findings] == [
        ("CL101", "leaks p"), ("CL101", "leaks q"), ("CL301", "dropped"), ("CL102", "released at line 1"),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["blocks", "closures"])
def test_nesting_too_deep_for_the_queries_is_said(tmp_path: Path, shape: str) -> None:
    """Item 11: around 40,000 nested blocks or 15,000 nested closures the
    tree-sitter queries no longer see the call inside; the function must get
    a too-complex notification instead of silence, and the rest of the file
    is still analysed."""
    if shape == "blocks":
        body = "{" * 40000 + "\nC.cudaDeviceSynchronize()\n" + "}" * 40000
    else:
        body = "func() {" * 15000 + "\nC.cudaDeviceSynchronize()\n" + "}()" * 15000
    (tmp_path / "deep.go").write_text(
        'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nfunc f() {\n' + body + "\n}\n\n"
        "func g() {\n\tC.cudaDeviceSynchronize()\n}\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "cudalint", "--no-cache", "--format", "json", "deep.go"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    report = json.loads(run.stdout)
    assert [(f["rule"], f["function"]) for f in report["findings"]] == [("CL301", "g")]
    notes = [n for n in report["notifications"] if n["kind"] == "too-complex"]
    assert [(n["line"], "function f nests deeper than 1000 levels" in n["message"]) for n in notes] == [(6, True)]
