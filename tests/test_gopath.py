"""Projects written for GOPATH (no go.mod): their packages import each other
by the path the project was published at, which the go command took from
`$GOPATH/src`. cudalint infers that path from the imports themselves, so a
wrapper package's summary reaches its importers as in a module."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import cudalint

from cudalint.module import Modules


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _main_importing(root: Path, *paths: str) -> None:
    imports = "".join(f'\t"{path}"\n' for path in paths)
    _write(root / "main.go", f"package main\n\nimport (\n{imports})\n\nfunc main() {{}}\n")


def test_a_command_importing_its_own_packages_names_the_project(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    _main_importing(root, "fmt", "github.com/decred/gominer/nvml", "github.com/decred/gominer/util")
    _write(root / "nvml" / "nvml.go", "package nvml\n")
    _write(root / "util" / "util.go", "package util\n")
    modules = Modules()
    for directory in (root, root / "nvml", root / "util"):
        module = modules.of(directory)
        assert module is not None and module.root == root and module.path == "github.com/decred/gominer"
    assert modules.import_path(root / "nvml") == "github.com/decred/gominer/nvml"


def test_a_library_imported_by_its_subpackages_is_the_project_root(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    _write(root / "cuda.go", "package cuda\n")
    _write(root / "cublas" / "cublas.go", 'package cublas\n\nimport "github.com/unixpickle/cuda"\n')
    _write(root / "curand" / "curand.go", 'package curand\n\nimport "github.com/unixpickle/cuda"\n')
    module = Modules().of(root / "cublas")
    assert module is not None and module.root == root and module.path == "github.com/unixpickle/cuda"
    assert module.directory("github.com/unixpickle/cuda") == root


def test_imports_of_other_projects_imply_nothing(tmp_path: Path) -> None:
    root = tmp_path / "svc"
    _main_importing(root, "github.com/NVIDIA/go-nvml/pkg/nvml", "golang.org/x/sys/unix")
    _write(root / "internal" / "gpu.go", "package internal\n")
    assert Modules().of(root) is None


def test_the_projects_own_path_wins_over_a_directory_named_like_another_projects_package(tmp_path: Path) -> None:
    root = tmp_path / "src-tree"
    # nvml/ wraps go-nvml's nvml package; the command imports both by path.
    _main_importing(root, "github.com/NVIDIA/go-nvml/pkg/nvml", "github.com/acme/exporter/nvml", "github.com/acme/exporter/metrics")
    _write(root / "metrics" / "metrics.go", "package metrics\n")
    _write(root / "nvml" / "nvml.go", 'package nvml\n\nimport "github.com/NVIDIA/go-nvml/pkg/nvml"\n')
    module = Modules().of(root / "nvml")
    assert module is not None and module.path == "github.com/acme/exporter"


def test_a_go_mod_is_always_what_decides(tmp_path: Path) -> None:
    root = tmp_path / "mod"
    _write(root / "go.mod", "module example.com/declared\n")
    _main_importing(root, "github.com/acme/other/nvml")
    _write(root / "nvml" / "nvml.go", "package nvml\n")
    module = Modules().of(root / "nvml")
    assert module is not None and module.path == "example.com/declared"


def test_a_wrappers_summary_reaches_its_importer_in_a_gopath_project(tmp_path: Path) -> None:
    """`gpu.Alloc` in a subpackage hands out device memory; the command that
    calls it and returns early without freeing it leaks it (CL101), which
    only the wrapper's summary can tell."""
    root = tmp_path / "miner"
    _write(root / "gpu" / "gpu.go", """package gpu

/*
#include <cuda_runtime_api.h>
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Buffer owns device memory.
type Buffer struct {
	ptr unsafe.Pointer
}

// Alloc allocates n bytes on the device.
func Alloc(n int) (*Buffer, error) {
	b := &Buffer{}
	if C.cudaMalloc(&b.ptr, C.size_t(n)) != C.cudaSuccess {
		return nil, errors.New("cudaMalloc failed")
	}
	return b, nil
}

// Free releases the memory.
func (b *Buffer) Free() error {
	if C.cudaFree(b.ptr) != C.cudaSuccess {
		return errors.New("cudaFree failed")
	}
	return nil
}
""")
    _write(root / "main.go", """package main

import (
	"errors"

	"github.com/acme/miner/gpu"
)

func work(n int) error {
	b, err := gpu.Alloc(n)
	if err != nil {
		return err
	}
	if n > 1<<20 {
		return errors.New("too large")
	}
	return b.Free()
}

func main() {
	_ = work(16)
}
""")
    run = cudalint("--no-cache", "--format", "json", "./...", cwd=root)
    findings = json.loads(run.stdout)["findings"]
    assert [(f["rule"], f["path"], f["line"]) for f in findings] == [("CL101", "main.go", 10)]


def test_a_gopath_kept_in_the_repository_resolves_paths_below_its_src(tmp_path: Path) -> None:
    """`src/cuda/driver` imported as "cuda/driver": the project is its own GOPATH."""
    src = tmp_path / "checkout" / "src"
    _write(src / "cuda" / "driver" / "driver.go", "package driver\n")
    _write(src / "app" / "gpu" / "array.go", 'package gpu\n\nimport (\n\t"fmt"\n\tcu "cuda/driver"\n)\n')
    modules = Modules()
    module = modules.of(src / "app" / "gpu")
    assert module is not None and module.root == src and module.path == ""
    assert modules.import_path(src / "cuda" / "driver") == "cuda/driver"
    assert module.directory("cuda/driver") == src / "cuda" / "driver"
    assert module.directory("fmt") is None


def test_one_import_of_another_projects_package_implies_nothing(tmp_path: Path) -> None:
    """tools/probe.go imports another project's `gpu` package; the checkout
    has a `gpu/` of its own: one import is no evidence of the project's path."""
    root = tmp_path / "checkout"
    _write(root / "gpu" / "gpu.go", "package gpu\n")
    _write(root / "tools" / "probe.go", 'package tools\n\nimport "github.com/vendorx/gpukit/gpu"\n')
    assert Modules().of(root / "gpu") is None


def test_a_command_below_cmd_names_its_project_and_commands_are_not_importable(tmp_path: Path) -> None:
    root = tmp_path / "miner"
    _write(root / "gpu" / "gpu.go", "package gpu\n")
    _write(root / "cmd" / "server" / "main.go", 'package main\n\nimport "github.com/acme/miner/gpu"\n')
    _write(root / "main.go", 'package main\n\nimport "github.com/pkg/errors"\n')
    module = Modules().of(root / "gpu")
    assert module is not None and module.root == root and module.path == "github.com/acme/miner"


def test_a_src_directory_is_no_gopath_for_the_standard_librarys_names(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src / "log" / "log.go", "package log\n")
    _write(src / "app" / "main.go", 'package main\n\nimport "log"\n')
    assert Modules().of(src / "app") is None


def test_a_subpackage_whose_own_subpackages_import_another_project_is_still_the_projects(tmp_path: Path) -> None:
    """gocudnn's xtra: its subpackage imports github.com/o/cutil, whose last
    element names no directory of the checkout. That import does not make
    xtra the package cutil; xtra is gocudnn's, so its imports of gocudnn's
    other packages (cudart) resolve to the checkout's directories."""
    root = tmp_path / "checkout"
    _write(root / "handle.go", 'package gocudnn\n\nimport (\n\t"github.com/o/gocudnn/cudart"\n)\n\nvar _ = cudart.X\n')
    _write(root / "cudart" / "cudart.go", "package cudart\n\nvar X = 1\n")
    xtra = 'package xtra\n\nimport (\n\t"github.com/o/cutil"\n\t"github.com/o/gocudnn"\n\t"github.com/o/gocudnn/cudart"\n)\n'
    _write(root / "xtra" / "xtra.go", xtra)
    for name in ("kerns", "loss"):
        _write(root / "xtra" / name / f"{name}.go", f'package {name}\n\nimport (\n\t"github.com/o/cutil"\n\t"github.com/o/gocudnn/xtra"\n)\n')
    modules = Modules()
    for directory in (root / "xtra", root / "xtra" / "kerns", root / "cudart"):
        module = modules.of(directory)
        assert module is not None and module.root == root and module.path == "github.com/o/gocudnn", directory
    assert modules.import_path(root / "xtra") == "github.com/o/gocudnn/xtra"


def test_a_gopath_projects_vendored_binding_is_read_from_its_vendor_directory(tmp_path: Path) -> None:
    """A project of the dep/glide era (no go.mod) that vendors its own fork
    of an NVML binding: the go command took the import from vendor/, so its
    summary comes from there, and the command's dropped and overwritten
    errors are the binding's statuses (CL301, CL303). The fork's path is one
    no knowledge file names."""
    root = tmp_path / "beat"
    binding = root / "vendor" / "github.com" / "someone" / "nvmlfork"
    _write(binding / "bindings.go", """package nvmlfork

/*
#include <nvml.h>

void *nvmlHandle;
*/
import "C"

import "errors"

var errNotLoaded = errors.New("nvml not loaded")

// Device is a GPU.
type Device struct {
	dev C.nvmlDevice_t
}

func check(r C.nvmlReturn_t) error {
	if r == C.NVML_SUCCESS {
		return nil
	}
	return errors.New("nvml failed")
}

// Temperature reads the core temperature.
func (d Device) Temperature() (uint, error) {
	if C.nvmlHandle == nil {
		return 0, errNotLoaded
	}
	var t C.uint
	r := C.nvmlDeviceGetTemperature(d.dev, C.NVML_TEMPERATURE_GPU, &t)
	return uint(t), check(r)
}
""")
    _write(root / "beater" / "beater.go", """package beater

import (
	"github.com/acme/beat/config"
	"github.com/someone/nvmlfork"
)

// Poll reads one device.
func Poll(dev nvmlfork.Device) uint {
	dev.Temperature()
	return config.Interval
}

// Sample keeps the first error only.
func Sample(dev nvmlfork.Device) (uint, error) {
	var err error
	t, tmperr := dev.Temperature()
	if err != nil {
		err = tmperr
	}
	u, tmperr := dev.Temperature()
	if tmperr != nil {
		return 0, tmperr
	}
	return t + u, err
}
""")
    _write(root / "config" / "config.go", "package config\n\n// Interval is the poll period.\nvar Interval uint = 10\n")
    _main_importing(root, "github.com/acme/beat/beater")
    assert Modules().import_path(binding) == "github.com/someone/nvmlfork"
    run = cudalint("--no-cache", "--format", "json", "./...", cwd=root)
    findings = json.loads(run.stdout)["findings"]
    assert [(f["rule"], f["path"], f["line"]) for f in findings] == [
        ("CL301", "beater/beater.go", 10), ("CL303", "beater/beater.go", 17),
    ]


def test_without_a_vendor_directory_a_gopath_projects_imports_are_not_looked_for(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    _main_importing(root, "github.com/acme/plain/gpu", "github.com/someone/nvmlfork")
    _write(root / "gpu" / "gpu.go", "package gpu\n")
    modules = Modules()
    assert modules.of(root) is not None and modules.resolver(root) is None
    assert modules.import_path(root / "gpu") == "github.com/acme/plain/gpu"


def test_a_library_imported_once_by_its_example_is_the_root_where_its_package_name_says_so(tmp_path: Path) -> None:
    """A checkout not named after its repository (`izumo-master`, from an
    archive): the one import of the root by its example counts with the
    package name the root declares, and not with another name."""
    root = tmp_path / "izumo-master"
    _write(root / "memory.go", "package izumo\n")
    _write(root / "example" / "vecadd" / "main.go", 'package main\n\nimport "github.com/sunyifan112358/izumo"\n\nfunc main() {}\n')
    module = Modules().of(root / "example" / "vecadd")
    assert module is not None and module.root == root and module.path == "github.com/sunyifan112358/izumo"
    other = tmp_path / "other-master"
    _write(other / "memory.go", "package other\n")
    _write(other / "example" / "main.go", 'package main\n\nimport "github.com/sunyifan112358/izumo"\n\nfunc main() {}\n')
    assert Modules().of(other / "example") is None
