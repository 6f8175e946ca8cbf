"""Module-wide summaries as the driver schedules and caches them: a
dependency is summarised by its own analysis (never again by each
importer), the summary is the same whichever way it is made, and an edit
re-analyses the edited package and its importers, nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudalint import check, driver
from cudalint.analyses.summaries import summaries_of, summarise
from cudalint.cfg import build_package_cfgs
from cudalint.framework import PackageRun
from cudalint.functions import collect_packages
from cudalint.knowledge import load_knowledge
from cudalint.parse import parse
from cudalint.source import read_source

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture()
def module(tmp_path: Path) -> Path:
    """The two-package fixture module (gpu hands out, svc imports gpu) plus
    a package that imports neither."""
    root = tmp_path / "mod"
    root.mkdir()
    (root / "go.mod").write_text("module example.com/fixtures\n\ngo 1.19\n")
    shutil.copytree(FIXTURES / "module", root / "module")
    other = root / "module" / "other"
    other.mkdir()
    (other / "other.go").write_text(
        "package other\n\n// #include <cuda_runtime_api.h>\nimport \"C\"\n\n"
        "func Sync() C.cudaError_t {\n\treturn C.cudaDeviceSynchronize()\n}\n"
    )
    return root


def _packages(directory: Path, with_tests: bool):
    knowledge = load_knowledge(())
    parsed = [
        parse(read_source(path, path.name))[0]
        for path in sorted(directory.glob("*.go"))
        if with_tests or not path.name.endswith("_test.go")
    ]
    return collect_packages(parsed, directory.name, knowledge.package_names), knowledge


def test_the_summary_made_while_analysing_equals_the_one_made_from_the_files(module: Path) -> None:
    gpu = module / "module" / "gpu"
    (gpu / "gpu_test.go").write_text(
        "package gpu\n\nimport \"testing\"\n\nfunc TestAlloc(t *testing.T) {\n\tp, err := Alloc(4)\n"
        "\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n\t_ = Free(p)\n}\n\n"
        "// AllocForTests is exported but lives in a test file: importers never see it.\n"
        "func AllocForTests(n int) (Buffer, error) {\n\treturn Alloc(n)\n}\n"
    )
    (alone,), knowledge = _packages(gpu, with_tests=False)
    from_files = summarise(alone, knowledge, {})
    (whole,), knowledge = _packages(gpu, with_tests=True)
    while_analysing = summaries_of(PackageRun(whole, build_package_cfgs(whole), knowledge, frozenset()))
    assert from_files, "the fixture's gpu package hands resources out"
    assert "Alloc" in from_files and from_files["Alloc"].hands_out
    assert "AllocForTests" not in while_analysing
    assert while_analysing == from_files


def _count_summaries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    real = driver.summarise

    def counting(package, knowledge, imported):
        made.append(package.name)
        return real(package, knowledge, imported)

    monkeypatch.setattr(driver, "summarise", counting)
    driver._SUMMARY_CACHE.clear()
    return made


def _findings(result) -> list[tuple[str, int, str]]:
    return [(finding.path, finding.span.start.line, finding.rule_id) for finding in result.findings]


def test_a_dependency_in_the_run_is_summarised_by_its_own_analysis_only(module: Path, monkeypatch) -> None:
    made = _count_summaries(monkeypatch)
    whole = check(["./..."], base=module)
    assert made == [], "gpu was analysed in this run: svc must receive its summary, not make it again"
    assert any(finding.path.endswith("svc/svc.go") and finding.rule_id == "CL101" for finding in whole.findings)

    made.clear()
    driver._SUMMARY_CACHE.clear()
    alone = check(["./module/svc"], base=module)
    assert made == ["gpu"], "gpu is not reported on: svc's job summarises it from its files"
    assert _findings(alone) == [f for f in _findings(whole) if f[0].startswith("module/svc/")]


def test_workers_give_the_same_findings_as_one_process(module: Path) -> None:
    for index in range(40):  # enough packages for the pool to be used
        extra = module / "module" / f"user{index}"
        extra.mkdir()
        (extra / "user.go").write_text(
            f"package user{index}\n\nimport \"example.com/fixtures/module/gpu\"\n\n"
            "func Leak(n int) error {\n\tp, err := gpu.Alloc(n)\n\tif err != nil {\n\t\treturn err\n\t}\n"
            "\tif n > 1 {\n\t\treturn nil\n\t}\n\treturn gpu.Free(p)\n}\n"
        )
    one = check(["./..."], base=module, jobs=1)
    two = check(["./..."], base=module, jobs=2)
    assert _findings(one) == _findings(two)
    assert sum(1 for f in _findings(two) if f[2] == "CL101" and "/user" in f[0]) == 40


def _analysed_directories(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    analysed: list[str] = []
    real = driver.analyze_directory

    def recording(paths, *args, **kwargs):
        analysed.append(paths[0].parent.name)
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(driver, "analyze_directory", recording)
    return analysed


def test_an_edit_reanalyses_the_package_and_its_importers_only(module: Path, tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    cold = check(["./..."], base=module, cache_dir=cache)
    analysed = _analysed_directories(monkeypatch)
    made = _count_summaries(monkeypatch)

    assert _findings(check(["./..."], base=module, cache_dir=cache)) == _findings(cold)
    assert analysed == []

    svc = module / "module" / "svc" / "svc.go"
    svc.write_text(svc.read_text() + "\n// An edit of the importer.\n")
    assert _findings(check(["./..."], base=module, cache_dir=cache)) == _findings(cold)
    assert analysed == ["svc"]
    assert made == [], "gpu's summary comes with its cached result"

    analysed.clear()
    gpu = module / "module" / "gpu" / "gpu.go"
    gpu.write_text(gpu.read_text() + "\n// An edit of the dependency.\n")
    assert _findings(check(["./..."], base=module, cache_dir=cache)) == _findings(cold)
    assert sorted(analysed) == ["gpu", "svc"], "other imports neither: its cached result stands"
    assert made == []
