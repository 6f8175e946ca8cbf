"""The prefilter's answers: import path needles are answered from the
file's imports (a cgo preamble does not hide them), the others by scans."""

from __future__ import annotations

from cudalint.module import imports
from cudalint.prefilter import all_of, file_matches, may_match

_NVML = b'"github.com/NVIDIA/go-nvml/pkg/nvml"'
_NEEDLES = (_NVML, b'/dcgm"', b'"C"', b"LockOSThread")

_CGO_PREAMBLE = b'''package gpu

/*
#include <cuda_runtime.h>
const char *label = "gpu";
type
*/
import "C"

import (
	nvml "github.com/NVIDIA/go-nvml/pkg/nvml" // the binding
	"fmt"
)

func f() { fmt.Println(nvml.Init()) }
'''


def test_imports_after_a_cgo_preamble_with_c_declarations() -> None:
    assert imports(_CGO_PREAMBLE) == ["C", "github.com/NVIDIA/go-nvml/pkg/nvml", "fmt"]


def test_an_import_path_needle_matches_an_import_and_not_a_string() -> None:
    imported = b'package a\n\nimport (\n\tn "github.com/NVIDIA/go-nvml/pkg/nvml"\n)\n\nvar _ = n.Init\n'
    mentioned = b'package a\n\nimport "fmt"\n\nfunc f() { fmt.Println("github.com/NVIDIA/go-nvml/pkg/nvml") }\n'
    assert file_matches(imported, _NEEDLES)
    assert not file_matches(mentioned, _NEEDLES)
    assert may_match([mentioned, imported], _NEEDLES)


def test_a_binding_known_by_its_last_element() -> None:
    vendored = b'package a\n\nimport "example.com/vendored/dcgm"\n\nvar _ = dcgm.Init\n'
    other = b'package a\n\nimport "example.com/dcgmx"\n\nvar _ = dcgmx.Init\n'
    assert file_matches(vendored, _NEEDLES)
    assert not file_matches(other, _NEEDLES)


def test_the_imports_given_by_the_caller_are_used() -> None:
    data = b"package a\n"
    assert file_matches(data, _NEEDLES, ("github.com/NVIDIA/go-nvml/pkg/nvml",))
    assert not file_matches(data, _NEEDLES, ("fmt",))


def test_byte_needles_are_still_scanned() -> None:
    assert file_matches(b"package a\n\nfunc f() { runtime.LockOSThread() }\n", _NEEDLES)
    assert file_matches(_CGO_PREAMBLE.replace(b"nvml", b"x"), _NEEDLES)  # import "C"


def test_the_cgo_needle_is_an_import_of_c_and_not_any_quoted_c() -> None:
    table = b'package a\n\nvar letters = [3]string{"A", "B", "C"}\n\nconst label = `LABEL label.C="C"`\n'
    grouped = b'package a\n\n// #include <stdlib.h>\nimport (\n\t"fmt"\n\t"C" // cgo\n)\n'
    assert not file_matches(table, (b'"C"',))
    assert file_matches(grouped, (b'"C"',))
    assert file_matches(b'package a\n\n// #include <stdlib.h>\nimport "C"\r\n', (b'"C"',))


def test_a_needle_of_several_parts_needs_every_part() -> None:
    """reflect's `.Pointer()` gives a uintptr only a file converting with
    unsafe.Pointer can turn back (CL501)."""
    needles = (all_of(b".Pointer()", b"unsafe.Pointer("),)
    compared = b'package a\n\nfunc same(f, g any) bool {\n\treturn reflect.ValueOf(f).Pointer() == reflect.ValueOf(g).Pointer()\n}\n'
    converted = compared.replace(b"return reflect", b"_ = unsafe.Pointer(reflect.ValueOf(f).Pointer())\n\treturn reflect")
    assert not file_matches(compared, needles)
    assert file_matches(converted, needles)
    assert file_matches(converted, needles + (b"LockOSThread",))
