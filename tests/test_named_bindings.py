"""Bindings read by their names (knowledge.NamedBindings): a Go package
named after a C API that binds it function for function (tkestack.io/nvml),
whose source is not on the machine, is read as that API where its function
names are the API's; nowhere else."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudalint import check
from cudalint.knowledge import KnowledgeError, load_knowledge, parse_family
from conftest import FIXTURES

SERVICE = FIXTURES / "deps" / "named"


@pytest.fixture(scope="module")
def named():
    return load_knowledge().named_bindings


@pytest.mark.parametrize("import_path, word", [
    ("tkestack.io/nvml", "nvml"),
    ("github.com/acme/go-nvml", "nvml"),
    ("github.com/acme/nvml/v3", "nvml"),
    ("github.com/acme/gpu-tools/bindings/go/dcgm", "dcgm"),
    ("github.com/NVIDIA/gpu-monitoring-tools/bindings/go/dcgm", None),  # go-dcgm.toml's first path (forks)
    ("github.com/NVIDIA/gpu-monitoring-tools/bindings/go/nvml", None),  # gpu-monitoring-tools-nvml.toml
    ("github.com/NVIDIA/go-nvml/pkg/nvml", None),  # described by go-nvml.toml: the knowledge wins
    ("github.com/mindprince/gonvml", None),  # described by gonvml.toml
    ("github.com/acme/gonvml", "nvml"),  # a fork of it elsewhere: read by its name
    ("github.com/acme/gonvmlx", None),  # another name: nothing to go by
    ("gocv.io/x/gocv/cuda", None),  # packages named cuda are not all CUDA bindings
    ("nvml", None),
    ("./nvml", None),  # a relative import (GOPATH-era): local code
])
def test_the_bound_api_is_read_off_the_import_path(named, import_path: str, word: str | None) -> None:
    assert named.word_of(import_path) == word


def test_only_the_apis_own_function_names_are_read(named) -> None:
    lookup = named.lookup
    handle = lookup("tkestack.io/nvml", "DeviceGetHandleByIndex")
    assert handle is not None and handle.name == "nvml.DeviceGetHandleByIndex"
    assert (handle.status.result, handle.status.kind) == ("last", "error")
    assert lookup("tkestack.io/nvml", "Device.DeviceGetMemoryInfo") is not None  # a method of a value it returned
    # Not NVML functions: a binding's own helper may return nothing at all.
    assert lookup("tkestack.io/nvml", "DeleteEventSet") is None
    assert lookup("tkestack.io/nvml", "DeviceGetAverageGPUUsage") is None
    assert lookup("tkestack.io/nvml", "init") is None


def test_init_and_shutdown_pair_and_a_release_stays_one(named) -> None:
    init = named.lookup("example.com/acme/nvml", "Init")
    shutdown = named.lookup("example.com/acme/nvml", "Shutdown")
    assert init is not None and shutdown is not None
    assert [r.name for r in init.acquires] == ["NVML initialisation"]
    assert init.acquires[0] is shutdown.releases[0]
    assert [role.call for role in init.acquires[0].acquire] == ["nvml.Init", "nvml.InitWithFlags"]
    # The handle of an event set is not read by name (the binding may keep it
    # in a Go type); its release is still a release.
    assert named.lookup("example.com/acme/nvml", "EventSetCreate").acquires == ()
    assert named.lookup("example.com/acme/nvml", "EventSetFree").is_release


def _copy_service(tmp_path: Path) -> Path:
    root = tmp_path / "named"
    shutil.copytree(SERVICE, root)
    return root


def _findings(root: Path) -> list[tuple[str, int, str]]:
    result = check(["./..."], base=root, preview=True)
    return sorted((f.path, f.span.start.line, f.rule_id) for f in result.findings)


def test_without_source_the_binding_is_read_by_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("GOWORK", "off")
    rules = {rule for _, _, rule in _findings(_copy_service(tmp_path))}
    assert rules == {"CL101", "CL202", "CL301", "CL302"}


def test_where_the_source_is_on_the_machine_it_is_read_instead(tmp_path: Path, monkeypatch) -> None:
    """The module cache holds example.com/acme/nvml: its source says what
    its functions do (here, pure Go that calls no C API), not its name."""
    cache = tmp_path / "cache"
    binding = cache / "example.com" / "acme" / "nvml@v1.4.0"
    binding.mkdir(parents=True)
    (binding / "go.mod").write_text("module example.com/acme/nvml\n\ngo 1.19\n", encoding="utf-8")
    (binding / "nvml.go").write_text(
        "package nvml\n\n"
        "// Init does nothing: this nvml is a stand-in for tests.\n"
        "func Init() error { return nil }\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GOMODCACHE", str(cache))
    monkeypatch.setenv("GOWORK", "off")
    assert _findings(_copy_service(tmp_path)) == []


def test_a_package_of_the_module_named_nvml_is_read_from_its_source(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/svc\n\ngo 1.19\n", encoding="utf-8")
    (tmp_path / "nvml").mkdir()
    (tmp_path / "nvml" / "nvml.go").write_text(
        "package nvml\n\n// Init starts the fake library.\nfunc Init() error { return nil }\n", encoding="utf-8",
    )
    (tmp_path / "main.go").write_text(
        'package main\n\nimport "example.com/svc/nvml"\n\nfunc main() {\n\tnvml.Init()\n}\n', encoding="utf-8",
    )
    assert _findings(tmp_path) == []


@pytest.mark.parametrize("document, message", [
    ({"import": "example.com/x", "name": "x", "named_bindings": {"package": "x", "functions": ["Init"]}},
     "only a family of C calls"),
    ({"import": "C", "name": "C", "status": {"type": "int", "success": ["0"]},
      "named_bindings": {"package": "Bad-Name", "functions": ["Init"]}}, "Go package name"),
    ({"import": "C", "name": "C", "status": {"type": "int", "success": ["0"]},
      "named_bindings": {"package": "acme", "functions": ["acmeInit"]}}, "without its prefix"),
    ({"import": "C", "name": "C", "status": {"type": "int", "success": ["0"]},
      "named_bindings": {"package": "acme", "function": ["Init"]}}, "unknown key 'function'"),
])
def test_named_bindings_are_checked_when_loaded(document: dict, message: str) -> None:
    with pytest.raises(KnowledgeError, match=message):
        parse_family({"schema": 1, "family": "acme", "description": "d", **document}, "acme.toml")
