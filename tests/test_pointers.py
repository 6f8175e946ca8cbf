"""CL5xx cases the Go 1.19 fixture toolchain cannot type-check (unsafe.SliceData
is Go 1.20), run through the pipeline from source text."""

from __future__ import annotations

from pathlib import Path

from cudalint.driver import Settings, analyze
from cudalint.checks import all_rules
from gosrc import knowledge

SOURCE = """package p

// #include <cuda_runtime_api.h>
import "C"

import "unsafe"

func upload(d unsafe.Pointer, host []float32, s C.cudaStream_t) C.cudaError_t {
	return C.cudaMemcpyAsync(d, unsafe.Pointer(unsafe.SliceData(host)), C.size_t(len(host)*4), C.cudaMemcpyHostToDevice, s)
}

func pinned(d, h unsafe.Pointer, n int, s C.cudaStream_t) C.cudaError_t {
	view := unsafe.Slice((*float32)(h), n)
	return C.cudaMemcpyAsync(d, unsafe.Pointer(unsafe.SliceData(view)), C.size_t(n*4), C.cudaMemcpyHostToDevice, s)
}
"""


def test_slice_data_of_go_memory_is_reported_and_of_c_memory_is_not(tmp_path: Path) -> None:
    (tmp_path / "p.go").write_text(SOURCE)
    settings = Settings(base=tmp_path, enabled=frozenset(r.id for r in all_rules()))
    result = analyze([tmp_path / "p.go"], settings, knowledge())
    assert [(f.rule_id, f.span.start.line) for f in result.findings] == [("CL504", 9)]
