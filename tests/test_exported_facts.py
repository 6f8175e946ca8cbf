"""Facts across packages: what each analysis exports about a package's
exported functions and types (asserted directly, as go/analysis's
ctrlflow_test asserts its noReturn facts), and how the driver schedules and
caches them: a dependency's facts are made by its own analysis (never
again by each importer), they are the same whichever way they are made,
and an edit re-analyses the edited package and its importers, nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudalint import check
from cudalint.analyses.calls import CALLS, ResultTypes
from cudalint.analyses.lifetimes import LIFETIMES
from cudalint.analyses.locks import LOCKS
from cudalint.analyses.thread_facts import ThreadEffects
from cudalint.analyses.noreturn import NORETURN
from cudalint.analyses.owners import OWNERS, OwnedResources
from cudalint.analyses.wrappers import WRAPPERS, Wrapped
from cudalint.cfg import ExitKind
from cudalint.checks import FACT_ANALYSES
from cudalint.framework import ImportedFacts, NoReturn, ObjectFact, Pass, UndeclaredAnalysis, export_facts, start_run
from cudalint.functions import collect_packages
from cudalint.knowledge import load_knowledge
from cudalint.parse import parse
from cudalint.source import read_source

FIXTURES = Path(__file__).parent / "fixtures"
GPU = "example.com/fixtures/module/gpu"


@pytest.fixture()
def module(tmp_path: Path) -> Path:
    """The fixture module (gpu hands out, svc and deferred import gpu) plus
    a package that imports none of them."""
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
    return collect_packages(parsed, directory.name, knowledge.package_names, import_path=GPU), knowledge


def _exported(directory: Path, with_tests: bool = False) -> list[ObjectFact]:
    (package,), knowledge = _packages(directory, with_tests)
    return export_facts(start_run(package, knowledge, frozenset(), ImportedFacts()), FACT_ANALYSES)


def _facts(exported: list[ObjectFact]) -> dict[tuple[str, type], object]:
    return {(fact.name, type(fact.fact)): fact.fact for fact in exported}


def test_each_analysis_exports_what_it_computes() -> None:
    facts = _facts(_exported(FIXTURES / "module" / "gpu"))
    alloc = facts["Alloc", LIFETIMES.fact_type]
    assert [(h.index, h.family, h.resource) for h in alloc.hands_out] == [(0, "cuda-runtime", "device memory")]
    assert facts["Free", LIFETIMES.fact_type].params == ("releases",)
    assert facts["Free", Wrapped] == Wrapped("C.cudaFree", True)
    assert facts["Stream", OwnedResources].methods == ("Destroy",)
    assert facts["SetDevice", ThreadEffects] == ThreadEffects(needs_lock="C.cudaSetDevice")
    assert facts["PinThread", ThreadEffects] == ThreadEffects(thread="lock")
    assert facts["Bind", ThreadEffects] == ThreadEffects(thread="lock-on-success")
    assert facts["Open", ResultTypes] == ResultTypes(("Device", "error"))
    assert facts["Die", NoReturn] == NoReturn(("process-exit",))
    assert {fact_type for _, fact_type in facts} == {a.fact_type for a in (CALLS, LIFETIMES, LOCKS, NORETURN, OWNERS, WRAPPERS)}
    # Only functions that say something are exported: Keep only retains.
    assert not any(name == "Keep" for name, _ in facts)


def test_every_fact_type_belongs_to_one_analysis() -> None:
    types = [analysis.fact_type for analysis in FACT_ANALYSES]
    assert None not in types and len(set(types)) == len(types)


def test_a_pass_reads_only_the_facts_of_analyses_it_declared() -> None:
    (package,), knowledge = _packages(FIXTURES / "module" / "gpu", with_tests=False)
    run = start_run(package, knowledge, frozenset(), ImportedFacts())
    with pytest.raises(UndeclaredAnalysis):
        Pass(run, frozenset({CALLS}), "CL999").imported_facts(LIFETIMES)
    assert Pass(run, frozenset(), analysis=LIFETIMES).imported_facts(LIFETIMES).get(GPU, "Alloc") is None


def test_imported_no_return_facts_end_the_importers_paths() -> None:
    imported = ImportedFacts([ObjectFact(GPU, "Die", NoReturn(("process-exit",)))])
    assert imported.exits() == {(GPU, "Die"): frozenset({ExitKind.PROCESS})}
    assert imported.knows(GPU, "Die") and not imported.knows(GPU, "Alloc")


def test_the_facts_made_while_analysing_equal_the_ones_made_from_the_files(module: Path) -> None:
    gpu = module / "module" / "gpu"
    (gpu / "gpu_test.go").write_text(
        "package gpu\n\nimport \"testing\"\n\nfunc TestAlloc(t *testing.T) {\n\tp, err := Alloc(4)\n"
        "\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n\t_ = Free(p)\n}\n\n"
        "// AllocForTests is exported but lives in a test file: importers never see it.\n"
        "func AllocForTests(n int) (Buffer, error) {\n\treturn Alloc(n)\n}\n"
    )
    from_files = _exported(gpu)
    while_analysing = _exported(gpu, with_tests=True)
    assert any(fact.name == "Alloc" for fact in from_files), "the fixture's gpu package hands resources out"
    assert not any(fact.name == "AllocForTests" for fact in while_analysing)
    assert while_analysing == from_files


def _count_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The packages whose facts a job makes from their files."""
    import cudalint.driver.dependencies as dependencies

    made: list[str] = []
    real = dependencies.export_facts

    def counting(run, analyses):
        made.append(run.package.name)
        return real(run, analyses)

    monkeypatch.setattr(dependencies, "export_facts", counting)
    return made


def _findings(result) -> list[tuple[str, int, str]]:
    return [(finding.path, finding.span.start.line, finding.rule_id) for finding in result.findings]


def test_a_dependency_in_the_run_is_analysed_by_its_own_job_only(module: Path, monkeypatch) -> None:
    made = _count_made(monkeypatch)
    whole = check(["./..."], base=module)
    # logexit (a logger with no GPU code, whose Fatal never returns) is
    # skipped by the prefilter: its own job makes its summary, once.
    assert made == ["logexit"], "gpu was analysed in this run: svc must receive its facts, not make them again"
    assert any(finding.path.endswith("svc/svc.go") and finding.rule_id == "CL101" for finding in whole.findings)

    made.clear()
    alone = check(["./module/svc"], base=module)
    assert made == ["gpu"], "gpu is not reported on: svc's job makes its facts from its files"
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
    import cudalint.driver.package as one_package

    analysed: list[str] = []
    real = one_package.analyze_directory

    def recording(paths, *args, **kwargs):
        analysed.append(paths[0].parent.name)
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(one_package, "analyze_directory", recording)
    return analysed


def test_an_edit_reanalyses_the_package_and_its_importers_only(module: Path, tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    cold = check(["./..."], base=module, cache_dir=cache)
    analysed = _analysed_directories(monkeypatch)
    made = _count_made(monkeypatch)

    assert _findings(check(["./..."], base=module, cache_dir=cache)) == _findings(cold)
    assert analysed == []

    svc = module / "module" / "svc" / "svc.go"
    svc.write_text(svc.read_text() + "\n// An edit of the importer.\n")
    assert _findings(check(["./..."], base=module, cache_dir=cache)) == _findings(cold)
    assert analysed == ["svc"]
    assert made == [], "gpu's facts come with its cached result"

    # An edit that leaves gpu's summary as it was: its importers' keys name
    # the summary, not gpu's bytes.
    analysed.clear()
    gpu = module / "module" / "gpu" / "gpu.go"
    gpu.write_text(gpu.read_text() + "\n// An edit of the dependency.\n")
    assert _findings(check(["./..."], base=module, cache_dir=cache)) == _findings(cold)
    assert analysed == ["gpu"], "gpu's summary did not change: its importers' cached results stand"

    # An edit of what gpu hands out changes its summary: its importers run again.
    analysed.clear()
    gpu.write_text(gpu.read_text() + "\n// Hold hands out device memory.\nfunc Hold(n int) (unsafe.Pointer, error) {\n\treturn Alloc(n)\n}\n")
    check(["./..."], base=module, cache_dir=cache)
    assert sorted(analysed) == ["deferred", "gpu", "svc"], "other imports neither: its cached result stands"
    assert made == []


def test_a_go_mod_edited_between_two_runs_of_one_process_is_read_again(module: Path) -> None:
    """No process-wide cache: the module path is read per run."""
    before = check(["./..."], base=module)
    assert any(finding.path.endswith("svc/svc.go") and finding.rule_id == "CL101" for finding in before.findings)
    (module / "go.mod").write_text("module example.com/renamed\n\ngo 1.19\n")
    after = check(["./..."], base=module)
    assert not any(finding.path.endswith("svc/svc.go") and finding.rule_id == "CL101" for finding in after.findings)
