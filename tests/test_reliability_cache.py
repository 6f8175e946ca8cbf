"""The result cache and the worker processes under attack and accident
(issue 14, items 1-4, 6-8): real symlinks, FIFOs, planted and bit-flipped
entries, a file edited during the run, real SIGKILL/SIGTERM to workers and to
the parent."""

from __future__ import annotations

import json
import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from clirun import CGO_FILE
from cudalint import cache as cache_module
from cudalint.cache import ResultCache
from cudalint.catalog import select_rules
from cudalint.driver import Settings, analyze, default_jobs
from cudalint.knowledge import load_knowledge
from cudalint.checks import all_rules

FIXED = CGO_FILE.replace("\tC.cudaDeviceSynchronize()", "\t_ = C.cudaDeviceSynchronize() //cudalint:ignore CL302 test")


def run(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudalint", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    for name in ("a", "b", "c"):
        (root / name).mkdir()
        (root / name / f"{name}.go").write_text(CGO_FILE)
    return root


def _settings(root: Path, cache: Path | None) -> Settings:
    rules = all_rules()
    return Settings(base=root, enabled=select_rules(rules, ("CL",), ()), jobs=1, cache_dir=cache)


def _findings(result) -> list[tuple]:
    return [(f.path, f.span.start.line, f.rule_id, f.message) for f in result.findings]


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.go"))


# -- item 2: a file edited during the run -------------------------------------


def test_an_edit_during_the_run_never_poisons_the_cache(project: Path, monkeypatch) -> None:
    """The file changes between the moment the cache looks it up and the
    moment it is analysed (simulated by editing it as the analysis of its
    directory starts). After the edit is reverted, a cached run must report
    what --no-cache reports."""
    import cudalint.driver.package as driver

    knowledge = load_knowledge()
    target = project / "a" / "a.go"
    original = driver.analyze_directory
    edited: list[Path] = []

    def edit_first(paths, *args, **kwargs):
        if not edited and target in paths:
            target.write_text(FIXED)
            edited.append(target)
        return original(paths, *args, **kwargs)

    cache = project / ".cudalint_cache"
    monkeypatch.setattr(driver, "analyze_directory", edit_first)
    analyze(_files(project), _settings(project, cache), knowledge)
    monkeypatch.setattr(driver, "analyze_directory", original)
    assert edited
    target.write_text(CGO_FILE)  # reverted
    cached = analyze(_files(project), _settings(project, cache), knowledge)
    fresh = analyze(_files(project), _settings(project, None), knowledge)
    assert _findings(cached) == _findings(fresh)
    assert any(f[0] == "a/a.go" for f in _findings(fresh))


# -- item 3: writes outside the repository ------------------------------------


def test_a_committed_cachedir_tag_link_is_replaced_not_followed(project: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    cache = project / ".cudalint_cache"
    cache.mkdir()
    (cache / "CACHEDIR.TAG").symlink_to(victim)
    outside = tmp_path / "outside"
    outside.mkdir()
    (cache / ".gitignore").symlink_to(outside / "created-by-cudalint")  # dangling
    done = run("./...", cwd=project)
    assert done.returncode == 1, done.stderr
    assert victim.read_text() == "precious\n"
    assert list(outside.iterdir()) == []
    assert not (cache / "CACHEDIR.TAG").is_symlink() and (cache / "CACHEDIR.TAG").read_text().startswith("Signature:")
    assert not (cache / ".gitignore").is_symlink()


def test_a_symlinked_cache_directory_is_refused(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".cudalint_cache").symlink_to(elsewhere)
    done = run("--format", "json", "./...", cwd=project)
    assert done.returncode == 1, done.stderr
    assert list(elsewhere.iterdir()) == []
    notes = json.loads(done.stdout)["notifications"]
    assert [n["kind"] for n in notes] == ["cache"]
    assert "symbolic link" in notes[0]["message"] and notes[0]["path"] == ".cudalint_cache"
    assert len(json.loads(done.stdout)["findings"]) == 3


def test_a_cache_directory_of_another_user_is_refused(project: Path) -> None:
    cache = project / ".cudalint_cache"
    cache.mkdir()
    try:
        os.chown(cache, 65534, 65534)
    except PermissionError:
        pytest.skip("cannot give a directory to another user without root")
    done = run("./...", cwd=project)
    assert done.returncode == 1 and "owned by another user" in done.stderr
    assert list(cache.iterdir()) == []


def test_links_inside_the_cache_are_never_followed(project: Path, tmp_path: Path) -> None:
    cache = project / ".cudalint_cache"
    run("./...", cwd=project)
    entries = [p for p in cache.rglob("*") if p.is_file() and p.parent != cache]
    assert entries
    target = tmp_path / "target"
    target.write_text("not a cache entry\n")
    for entry in entries:
        entry.unlink()
        entry.symlink_to(target)
    outside = tmp_path / "outside-dir"
    outside.mkdir()
    fanout = entries[0].parent
    for child in fanout.iterdir():
        child.unlink()
    fanout.rmdir()
    fanout.symlink_to(outside, target_is_directory=True)
    done = run("./...", cwd=project)
    assert done.returncode == 1 and done.stdout.count(": CL301 ") == 3
    assert target.read_text() == "not a cache entry\n" and list(outside.iterdir()) == []


# -- item 4: the cache is data, verified ---------------------------------------


class _Planted:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_pickle_entry_is_not_executed(project: Path, tmp_path: Path) -> None:
    first = run("--format", "json", "./...", cwd=project)
    cache = project / ".cudalint_cache"
    marker = tmp_path / "pwned"
    entries = [p for p in cache.rglob("*") if p.is_file() and p.parent != cache]
    assert entries
    for entry in entries:
        entry.write_bytes(pickle.dumps(_Planted(str(marker))))
    again = run("--format", "json", "./...", cwd=project)
    assert not marker.exists()
    assert again.stdout == first.stdout


def test_bit_flips_in_entries_never_change_the_output(project: Path) -> None:
    knowledge = load_knowledge()
    cache = project / ".cudalint_cache"
    settings = _settings(project, cache)
    expected = _findings(analyze(_files(project), _settings(project, None), knowledge))
    analyze(_files(project), settings, knowledge)
    entries = sorted(p for p in cache.rglob("*") if p.is_file() and p.parent != cache)
    pristine = {entry: entry.read_bytes() for entry in entries}
    generator = random.Random(14)
    for _ in range(60):
        entry = generator.choice(entries)
        data = bytearray(pristine[entry])
        bit = generator.randrange(len(data) * 8)
        data[bit // 8] ^= 1 << (bit % 8)
        entry.write_bytes(bytes(data))
        result = analyze(_files(project), settings, knowledge)
        assert _findings(result) == expected and result.internal_errors == 0
        for path, content in pristine.items():  # the miss rewrote it; start again from pristine entries
            path.write_bytes(content)


def test_a_fifo_entry_does_not_hang_the_run(project: Path) -> None:
    run("./...", cwd=project)
    cache = project / ".cudalint_cache"
    entries = [p for p in cache.rglob("*") if p.is_file() and p.parent != cache]
    for entry in entries:
        entry.unlink()
        os.mkfifo(entry)
    done = run("./...", cwd=project, timeout=60)
    assert done.returncode == 1 and done.stdout.count(": CL301 ") == 3


def test_the_key_hashes_parser_versions_and_code_content(monkeypatch) -> None:
    from importlib import metadata

    for distribution in ("tree-sitter", "tree-sitter-go", "click"):
        assert cache_module.installed_version(distribution) == metadata.version(distribution)
    before = cache_module.code_fingerprint()
    real = cache_module.installed_version
    monkeypatch.setattr(cache_module, "installed_version", lambda name: "0.0.0-other" if name == "tree-sitter-go" else real(name))
    cache_module.code_fingerprint.cache_clear()
    try:
        assert cache_module.code_fingerprint() != before
    finally:
        monkeypatch.setattr(cache_module, "installed_version", real)
        cache_module.code_fingerprint.cache_clear()
    source = Path(cache_module.__file__).read_text()
    assert "st_mtime_ns" not in source.split("def code_fingerprint")[1].split("\ndef ")[0]


def test_old_entries_are_evicted_and_size_is_bounded(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache", "salt")
    from cudalint.findings import Result

    for index in range(6):
        cache.put(f"{index:02d}" + "ab" * 31, Result(files_analysed=index))
    entries = sorted(p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.parent != tmp_path / "cache")
    assert len(entries) == 6
    old = time.time() - 40 * 86400
    os.utime(entries[0], (old, old))
    for offset, entry in enumerate(entries[1:], start=1):
        os.utime(entry, (time.time() - 1000 + offset, time.time() - 1000 + offset))
    stale = entries[1].parent / ".tmp-1-dead"
    stale.write_text("left by a killed run")
    os.utime(stale, (old, old))
    size = entries[1].stat().st_size
    cache.evict(max_bytes=size * 3)
    left = sorted(p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.parent != tmp_path / "cache")
    assert left == entries[3:]
    cache.close()


def test_temporary_files_are_removed_when_a_write_fails(tmp_path: Path, monkeypatch) -> None:
    from cudalint.findings import Result

    cache = ResultCache(tmp_path / "cache", "salt")

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_module.os, "write", full)
    cache.put("cd" * 32, Result())
    monkeypatch.undo()
    assert [p.name for p in (tmp_path / "cache").rglob(".tmp-*")] == []
    assert cache.get("cd" * 32) is None
    cache.close()


# -- item 8: the size guard holds with the cache --------------------------------


def test_a_huge_file_is_not_read_whole_for_the_cache_key(project: Path) -> None:
    huge = project / "a" / "huge.go"
    with open(huge, "wb") as stream:
        stream.truncate(1024 * 1024 * 1024)  # sparse: 1 GiB of zeros, no disk used
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent("""
            import resource, subprocess, sys
            done = subprocess.run([sys.executable, "-m", "cudalint", "-j", "1", "./..."], capture_output=True, text=True)
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            print(done.returncode, peak, done.stderr.replace("\\n", " | "))
        """)],
        cwd=project, capture_output=True, text=True, timeout=120,
    )
    status, peak_kib, stderr = done.stdout.split(" ", 2)
    assert status == "1", stderr
    assert "larger than the 8 MiB" in stderr
    assert int(peak_kib) < 400 * 1024, f"peak {int(peak_kib) // 1024} MiB"


# -- items 1, 6, 7: worker processes -------------------------------------------

_HOOK = textwrap.dedent("""
    import os, time
    mode = os.environ.get("CUDALINT_TEST_HOOK")
    if mode:
        import cudalint.driver.package as driver
        original = driver.analyze_directory

        def hooked(paths, *args, **kwargs):
            record = os.environ.get("CUDALINT_TEST_RECORD")
            if record:
                open(os.path.join(record, str(os.getpid())), "w").close()
            poisoned = paths[0].parent.name == "poison"
            if mode == "kill-once" and poisoned:
                try:
                    os.close(os.open(os.environ["CUDALINT_TEST_MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                    os.kill(os.getpid(), 9)
                except FileExistsError:
                    pass
            elif mode == "kill-always" and poisoned:
                os.kill(os.getpid(), 9)
            elif mode == "sleep":
                time.sleep(600)
            return original(paths, *args, **kwargs)

        driver.analyze_directory = hooked
""")


@pytest.fixture
def many(tmp_path: Path) -> tuple[Path, dict]:
    """40 packages and a `poison` one, with a sitecustomize that lets a test
    make workers die by a real SIGKILL (inherited by forked and spawned
    workers alike)."""
    root = tmp_path / "many"
    for index in range(40):
        (root / f"p{index:02d}").mkdir(parents=True)
        (root / f"p{index:02d}" / "a.go").write_text(CGO_FILE)
    (root / "poison").mkdir()
    (root / "poison" / "a.go").write_text(CGO_FILE)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_HOOK)
    record = tmp_path / "record"
    record.mkdir()
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")])),
        "CUDALINT_TEST_MARKER": str(tmp_path / "killed-once"),
        "CUDALINT_TEST_RECORD": str(record),
    }
    return root, env


def test_a_worker_killed_once_is_retried(many) -> None:
    root, env = many
    expected = run("--no-cache", "-j", "1", "./...", cwd=root)
    done = run("--no-cache", "-j", "2", "./...", cwd=root, env={**env, "CUDALINT_TEST_HOOK": "kill-once"})
    assert Path(env["CUDALINT_TEST_MARKER"]).exists()  # a worker really was killed
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == expected.stdout and done.stdout.count(": CL301 ") == 41


def test_a_worker_that_always_dies_is_reported(many) -> None:
    root, env = many
    done = run("--no-cache", "-j", "2", "./...", cwd=root, env={**env, "CUDALINT_TEST_HOOK": "kill-always"}, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "poison: internal error: the worker process analysing this directory died twice" in done.stderr
    assert done.stdout.count(": CL301 ") == 40


def test_jobs_are_clamped_to_the_cpus(many) -> None:
    root, env = many
    done = run("--no-cache", "-j", "1000", "./...", cwd=root, env={**env, "CUDALINT_TEST_HOOK": "record"})
    assert done.returncode == 1
    workers = list(Path(env["CUDALINT_TEST_RECORD"]).iterdir())
    assert 1 <= len(workers) <= default_jobs()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:  # pragma: no cover - no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_their_parent(many, signum: int) -> None:
    root, env = many
    if default_jobs() < 2:
        pytest.skip("one CPU: no worker processes")
    record = Path(env["CUDALINT_TEST_RECORD"])
    parent = subprocess.Popen(
        [sys.executable, "-m", "cudalint", "--no-cache", "-j", "2", "./..."], cwd=root,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **env, "CUDALINT_TEST_HOOK": "sleep"},
    )
    try:
        deadline = time.monotonic() + 60
        while len(list(record.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(p.name) for p in record.iterdir()]
        assert len(workers) == 2 and all(_alive(pid) for pid in workers)
        parent.send_signal(signum)  # to the parent alone, not its process group
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in workers)
    finally:
        parent.kill()
        for path in record.iterdir():
            try:
                os.kill(int(path.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_headers_of_an_absolute_include_directory_are_in_the_key(tmp_path: Path) -> None:
    """`#cgo CFLAGS: -I/opt/x/include`: its headers are read as the CUDA
    ones are, and an edit of one is a miss, never the old result."""
    include = tmp_path / "inc"
    include.mkdir()
    header = include / "h.h"
    header.write_text("#include <cuda_runtime_api.h>\ncudaError_t mysync(void);\n")
    tree = tmp_path / "t"
    (tree / "gpu").mkdir(parents=True)
    (tree / "go.mod").write_text("module example.com/m\n\ngo 1.21\n")
    (tree / "gpu" / "w.go").write_text(
        f'package gpu\n\n// #cgo CFLAGS: -I{include}\n// #include <h.h>\nimport "C"\n\nfunc W() {{\n\tC.mysync()\n}}\n'
    )
    old = time.time() - 3600
    for path in (header, tree / "go.mod", tree / "gpu" / "w.go"):
        os.utime(path, (old, old))
    environment = {**os.environ, "CUDALINT_NO_REPLAY": "1"}
    command = [sys.executable, "-m", "cudalint", "--format", "json", "--jobs", "1", "./..."]

    def rules() -> list[str]:
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True, env=environment, timeout=300)
        return [finding["rule"] for finding in json.loads(done.stdout)["findings"]]

    assert rules() == ["CL301"] and rules() == ["CL301"]
    header.write_text("#include <cuda_runtime_api.h>\n\nvoid mysync(void);\n")
    os.utime(header, (old + 60, old + 60))
    assert rules() == []
