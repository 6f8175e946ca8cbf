"""What a run reads and parses (issue 23; DESIGN.md, *Run: keys, phases and
parallel work*): each file is read at most once per run, by the parent; a
warm run reads no file the file index vouches for and parses none; a
dependency outside the run is read once and summarised once, however many
packages import it. Counted through the driver's own reading and parsing
functions, not timed."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from cudalint import check

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture()
def module(tmp_path: Path) -> Path:
    """The fixture module (gpu hands resources out, svc and deferred import
    it) and a few more importers of gpu."""
    root = tmp_path / "mod"
    root.mkdir()
    (root / "go.mod").write_text("module example.com/fixtures\n\ngo 1.19\n")
    shutil.copytree(FIXTURES / "module", root / "module")
    for index in range(3):
        user = root / "module" / f"user{index}"
        user.mkdir()
        (user / "user.go").write_text(
            f"package user{index}\n\nimport \"example.com/fixtures/module/gpu\"\n\n"
            "func Leak(n int) error {\n\tp, err := gpu.Alloc(n)\n\tif err != nil {\n\t\treturn err\n\t}\n"
            "\tif n > 1 {\n\t\treturn nil\n\t}\n\treturn gpu.Free(p)\n}\n"
        )
    _age(root)
    return root


def _age(root: Path) -> None:
    """Date every file an hour back: the file index keeps no file modified
    in the two seconds before a run (a second write in the same clock tick
    would not change its status)."""
    then = time.time() - 3600
    for path in root.rglob("*"):
        os.utime(path, (then, then))


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter, Counter]:
    """(reads per path, parses per path) of the runs that follow, in this process."""
    import cudalint.driver.dependencies as dependencies
    import cudalint.driver.files as files
    import cudalint.driver.package as package
    import cudalint.driver.schedule as schedule

    reads: Counter = Counter()
    parses: Counter = Counter()
    real_read, real_parse = files.read_source, package.parse

    def read(path, *args):
        reads[path] += 1
        return real_read(path, *args)

    def parse(source):
        parses[source.path] += 1
        return real_parse(source)

    for module in (files, package, schedule):
        monkeypatch.setattr(module, "read_source", read)
    for module in (dependencies, package):
        monkeypatch.setattr(module, "parse", parse)
    return reads, parses


def _findings(result) -> list[tuple[str, int, str]]:
    return [(finding.path, finding.span.start.line, finding.rule_id) for finding in result.findings]


def test_each_file_is_read_once_and_a_warm_run_reads_none(module: Path, tmp_path: Path, counted) -> None:
    reads, parses = counted
    cache = tmp_path / "cache"
    cold = check(["./..."], base=module, cache_dir=cache, jobs=1)
    go_files = sorted(module.rglob("*.go"))
    assert sorted(reads) == go_files, "every Go file of the run is read"
    assert set(reads.values()) == {1}, "and each once"
    assert parses, "a cold run parses"

    reads.clear()
    parses.clear()
    warm = check(["./..."], base=module, cache_dir=cache, jobs=1)
    assert _findings(warm) == _findings(cold)
    assert not reads, "a warm run reads no file the index vouches for"
    assert not parses, "and parses none"

    reads.clear()
    without_cache = check(["./..."], base=module, jobs=1)
    assert _findings(without_cache) == _findings(cold)
    assert sorted(reads) == go_files, "without the cache there is no index: every file is read"


def _user(module: Path) -> Path:
    return module / "module" / "user0" / "user.go"


def test_an_edit_that_keeps_size_and_date_is_still_seen(module: Path, tmp_path: Path, counted) -> None:
    """The index keeps the change time too: restoring the modification time
    after an edit of the same size does not hide it."""
    reads, _ = counted
    cache = tmp_path / "cache"
    before = check(["./..."], base=module, cache_dir=cache, jobs=1)
    user = _user(module)
    leaks = [f for f in _findings(before) if f[0] == "module/user0/user.go" and f[2] == "CL101"]
    assert leaks, "user0 leaks on the `return nil` path"
    status = user.stat()
    fixed = user.read_bytes().replace(b"return nil", b"panic(nil)")  # same size: no return leaks now
    assert len(fixed) == status.st_size
    user.write_bytes(fixed)
    os.utime(user, ns=(status.st_atime_ns, status.st_mtime_ns))
    time.sleep(0.01)
    reads.clear()
    after = check(["./..."], base=module, cache_dir=cache, jobs=1)
    assert reads[user] >= 1, "the edited file is read again"
    assert not [f for f in _findings(after) if f[0] == "module/user0/user.go" and f[2] == "CL101"]


def test_a_file_just_written_is_read_every_run(module: Path, tmp_path: Path, counted) -> None:
    reads, _ = counted
    cache = tmp_path / "cache"
    user = _user(module)
    user.write_bytes(user.read_bytes())  # modified now: within the racy window
    check(["./..."], base=module, cache_dir=cache, jobs=1)
    reads.clear()
    check(["./..."], base=module, cache_dir=cache, jobs=1)
    assert list(reads) == [user], "only the file modified just now is read again"


def test_a_damaged_index_is_an_empty_one(module: Path, tmp_path: Path, counted) -> None:
    reads, _ = counted
    cache = tmp_path / "cache"
    cold = check(["./..."], base=module, cache_dir=cache, jobs=1)
    damaged = 0
    for entry in cache.glob("??/*"):
        header, _, body = entry.read_bytes().partition(b"\n")
        if body.startswith(b'{"/'):  # the index: absolute paths to status lists
            entry.write_bytes(header + b"\n" + body.replace(b"[[", b'["x",[', 1))
            damaged += 1
    assert damaged == 1
    reads.clear()
    warm = check(["./..."], base=module, cache_dir=cache, jobs=1)
    assert _findings(warm) == _findings(cold)
    assert sorted(reads) == sorted(module.rglob("*.go")), "an index that fails its checksum vouches for nothing"


@pytest.fixture()
def summarised(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The packages whose facts are made, for their importers or from a
    job of their own, in the runs that follow in this process."""
    import cudalint.driver.dependencies as dependencies
    import cudalint.driver.package as package

    made: list[str] = []
    real = dependencies.export_facts

    def counting(run, analyses):
        made.append(run.package.name)
        return real(run, analyses)

    for stage in (dependencies, package):
        monkeypatch.setattr(stage, "export_facts", counting)
    return made


def test_a_dependency_outside_the_run_is_read_and_summarised_once(module: Path, counted, summarised) -> None:
    reads, parses = counted
    users = [f"./module/user{index}" for index in range(3)]
    result = check(users, base=module, jobs=1)
    assert sum(1 for f in _findings(result) if f[2] == "CL101") == 3, "each importer sees what gpu hands out"
    gpu = sorted((module / "module" / "gpu").glob("*.go"))
    assert all(reads[path] == 1 for path in gpu), "gpu, imported three times, is read once"
    assert summarised == ["gpu"], "and summarised once, by a job of its own"
    assert all(parses[path] == 1 for path in gpu if not path.name.endswith("_test.go"))


def test_a_warm_run_analyses_nothing_where_a_skipped_package_is_imported(module: Path, tmp_path: Path, monkeypatch) -> None:
    """`mid` has nothing the prefilter looks for and receives no fact, so
    its job skips it, but `top` imports it: its summary must come with its
    cached result, or no cached result of it could serve `top`'s key (a
    first version of summary keys analysed such packages in every warm
    run: 54 on moby)."""
    import cudalint.driver.package as package

    base = module / "module"
    (base / "ptr").mkdir()
    (base / "ptr" / "ptr.go").write_text(
        "package ptr\n\nimport \"unsafe\"\n\nfunc Addr(b []byte) uintptr {\n\treturn uintptr(unsafe.Pointer(&b[0]))\n}\n"
    )
    (base / "mid").mkdir()
    (base / "mid" / "mid.go").write_text(
        "package mid\n\nimport \"example.com/fixtures/module/ptr\"\n\n"
        "func Where(b []byte) uintptr {\n\treturn ptr.Addr(b)\n}\n"
    )
    (base / "top").mkdir()
    (base / "top" / "top.go").write_text(
        "package top\n\nimport \"example.com/fixtures/module/mid\"\n\nfunc Use() uintptr {\n\treturn mid.Where(nil)\n}\n"
    )
    cache = tmp_path / "cache"
    cold = check(["./..."], base=module, cache_dir=cache, jobs=1)
    analysed: list[str] = []
    real = package.analyze_directory

    def recording(paths, *args, **kwargs):
        analysed.append(paths[0].parent.name)
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(package, "analyze_directory", recording)
    warm = check(["./..."], base=module, cache_dir=cache, jobs=1)
    assert _findings(warm) == _findings(cold)
    assert analysed == []


def test_only_facts_that_concern_callers_make_an_importer_analysed(module: Path) -> None:
    """An importer with no API call of its own is analysed where it calls a
    wrapper (user0: gpu.Alloc hands out device memory), not where what it
    receives only sharpens an analysis (a result's type, a function that
    never returns): on moby such facts made 949 files be analysed for
    nothing."""
    base = module / "module"
    (base / "typ").mkdir()
    (base / "typ" / "typ.go").write_text(
        "package typ\n\nimport \"unsafe\"\n\ntype Buf struct {\n\tp unsafe.Pointer\n}\n\n"
        "func New() *Buf {\n\treturn &Buf{}\n}\n\nfunc Fail() {\n\tpanic(\"typ\")\n}\n"
    )
    (base / "plain").mkdir()
    (base / "plain" / "plain.go").write_text(
        "package plain\n\nimport \"example.com/fixtures/module/typ\"\n\n"
        "func Use() *typ.Buf {\n\tb := typ.New()\n\tif b == nil {\n\t\ttyp.Fail()\n\t}\n\treturn b\n}\n"
    )
    plain = check(["./module/plain"], base=module, jobs=1)
    assert (plain.files_analysed, plain.files_skipped) == (0, 1)
    user = check(["./module/user0"], base=module, jobs=1)
    assert (user.files_analysed, user.files_skipped) == (1, 0)
    assert [f[2] for f in _findings(user)] == ["CL101"]


def test_a_described_result_type_makes_an_importer_analysed(module: Path) -> None:
    """`d := nv.First(); d.GetName()`: the importer calls no API by name, but
    nv's result type is a binding type the knowledge describes (its fact
    says so), so the method call is NVML's and the importer is analysed."""
    base = module / "module"
    (base / "nv").mkdir()
    (base / "nv" / "nv.go").write_text(
        "package nv\n\nimport \"github.com/NVIDIA/go-nvml/pkg/nvml\"\n\n"
        "func First() nvml.Device {\n\td, ret := nvml.DeviceGetHandleByIndex(0)\n\tif ret != nvml.SUCCESS {\n\t\treturn nil\n\t}\n\treturn d\n}\n"
    )
    (base / "names").mkdir()
    (base / "names" / "names.go").write_text(
        "package names\n\nimport \"example.com/fixtures/module/nv\"\n\n"
        "func Name() string {\n\td := nv.First()\n\tname, _ := d.GetName()\n\treturn name\n}\n"
    )
    result = check(["./module/names"], base=module, jobs=1)
    assert result.files_analysed == 1
    assert [(f[0], f[2]) for f in _findings(result)] == [("module/names/names.go", "CL302")]


def _package(base: Path, name: str, text: str) -> None:
    (base / name).mkdir()
    (base / name / f"{name}.go").write_text(text)


def test_an_importer_is_analysed_for_a_wrapper_only_where_it_names_it(module: Path) -> None:
    """Facts reach a package from every package below it. `top` imports only
    `mid`, which imports gpu: gpu.Alloc's fact reaches top, which cannot
    call it (on moby a test package that never named a thread-locking
    helper three imports down was analysed for it, 96 files). A package
    that imports gpu without naming a wrapper is skipped too; one that
    names it is analysed."""
    base = module / "module"
    _package(base, "mid", (
        "package mid\n\nimport \"example.com/fixtures/module/gpu\"\n\n"
        "func Use(n int) error {\n\tp, err := gpu.Alloc(n)\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn gpu.Free(p)\n}\n\n"
        "func Width() int {\n\treturn 4\n}\n"
    ))
    _package(base, "top", (
        "package top\n\nimport \"example.com/fixtures/module/mid\"\n\n"
        "func Twice() int {\n\treturn 2 * mid.Width()\n}\n"
    ))
    _package(base, "named", (
        "package named\n\nimport \"example.com/fixtures/module/gpu\"\n\n"
        "// Keeper keeps a pointer, and hands out or releases nothing.\n"
        "var Keeper = gpu.Keep\n"
    ))
    top = check(["./module/top"], base=module, jobs=1)
    assert (top.files_analysed, top.files_skipped) == (0, 1)
    named = check(["./module/named"], base=module, jobs=1)
    assert (named.files_analysed, named.files_skipped) == (0, 1)
    user = check(["./module/user0"], base=module, jobs=1)
    assert (user.files_analysed, user.files_skipped) == (1, 0)
    assert [f[2] for f in _findings(user)] == ["CL101"]


def test_a_dependency_that_only_a_local_rule_looks_at_is_not_summarised(module: Path, summarised) -> None:
    """A package whose only needle is a conversion (CL501's `uintptr(unsafe.Pointer(`)
    exports nothing an importer's rules need: it is analysed where the run
    reports on it, and not summarised for an importer."""
    base = module / "module"
    _package(base, "conv", (
        "package conv\n\nimport \"unsafe\"\n\n"
        "func Addr(b []byte) uintptr {\n\treturn uintptr(unsafe.Pointer(&b[0]))\n}\n"
    ))
    _package(base, "plainuser", (
        "package plainuser\n\nimport \"example.com/fixtures/module/conv\"\n\n"
        "func Where(b []byte) uintptr {\n\treturn conv.Addr(b)\n}\n"
    ))
    result = check(["./module/plainuser"], base=module, jobs=1)
    assert (result.files_analysed, result.files_skipped) == (0, 1)
    assert "conv" not in summarised
    own = check(["./module/conv"], base=module, jobs=1)
    assert own.files_analysed == 1
