"""The C side of cgo: what cside.py reads of a package's C, and the CUDA
headers making the knowledge files' `except` lists a fallback."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path

import pytest

from cudalint import cside
from cudalint.app import session
from cudalint.parse import parse
from cudalint.source import read_source
from conftest import FIXTURES
from test_fixtures import _package_dirs, declared_rules, expectations, run_fixture

HEADERS = Path("/usr/local/cuda/include")
# The families whose headers this machine has (cuda_runtime_api.h, cuda.h, cupti.h).
STRIPPED = {"cuda-runtime", "cuda-driver", "cupti"}


def _view(directory: Path, go: str) -> cside.CView:
    (directory / "a.go").write_text(go)
    return cside.view_of([parse(read_source(directory / "a.go", "a.go"))[0]], directory)


def test_preamble_local_header_and_c_file(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "gpu.h").write_text("typedef int gpu_status;\ngpu_status gpu_sync(void);\nvoid *gpu_buffer(int n);\n")
    (tmp_path / "gpu.c").write_text('#include "gpu.h"\nint gpu_twice(int x) { return gpu_sync() + x; }\n')
    view = _view(tmp_path, (
        'package a\n\n// #cgo CFLAGS: -I${SRCDIR}/inc\n// #include "gpu.h"\n'
        '// static int wrap(void **p, int n) { return alloc_it(n, p); }\nimport "C"\n'
    ))
    assert view.resolved_return("gpu_sync") == (("gpu_status", "int"), False)
    assert view.resolved_return("gpu_buffer") == (("void",), True)
    assert view.functions["wrap"].wraps == "alloc_it" and view.functions["wrap"].wrapped_args == (1, 0)
    assert view.functions["gpu_twice"].wraps == ""  # returns more than one call's result
    assert view.is_type("gpu_status") and not view.is_type("gpu_sync")


def test_a_struct_built_from_one_calls_status_carries_that_call(tmp_path: Path) -> None:
    """`return from_status(cudaFree(ptr), NULL);` (or the status held in a
    local first): the call whose status the returned struct carries, with
    its arguments' parameters; a CPU variant without it keeps the other's."""
    (tmp_path / "impl").mkdir()
    (tmp_path / "impl" / "r.cu").write_text(
        "typedef struct { void *v; const char *m; } res;\n"
        "static res from_status(int st, void *v) { res r = {v, 0}; return r; }\n"
        "res r_free(void *ptr) { return from_status(cudaFree(ptr), 0); }\n"
        "res r_fill(void *ptr, int n) { int st = cudaMemset(ptr, 0, n); return from_status(st, 0); }\n"
        "res r_two(void *a, void *b) { return from_status(cudaFree(a), b ? (void *)0 : b); }\n"
        "res r_none(void *ptr) { return from_status(0, ptr); }\n"
    )
    (tmp_path / "impl" / "r_cpu.c").write_text("res r_free(void *ptr) { free(ptr); return done(0); }\n")
    view = _view(tmp_path, 'package a\n\n// #include "impl/r.h"\nimport "C"\n')
    functions = view.functions
    assert (functions["r_free"].carried, functions["r_free"].carried_args) == ("cudaFree", (0,))
    assert (functions["r_fill"].carried, functions["r_fill"].carried_args) == ("cudaMemset", (0, -1, 1))
    assert functions["r_two"].carried == "cudaFree"
    assert functions["r_none"].carried == ""


def test_a_preamble_separated_by_a_blank_line_is_no_preamble(tmp_path: Path) -> None:
    view = _view(tmp_path, 'package a\n\n// int helper(void);\n\nimport "C"\n')
    assert view.functions == {}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_hostile_c_files_are_skipped_not_waited_for(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.h")
    (tmp_path / "loop.h").symlink_to(tmp_path / "loop.h")
    (tmp_path / "bad.c").write_bytes(b"\xff\xfe int broken(( {")
    view = _view(tmp_path, 'package a\n\n// #include "pipe.h"\n// #include "loop.h"\n// int ok(void);\nimport "C"\n')
    assert "ok" in view.functions


def _strip_excepts(knowledge, families: set[str]):
    return dataclasses.replace(knowledge, families=tuple(
        dataclasses.replace(family, status_except=()) if family.name in families else family for family in knowledge.families
    ), _cache={}, _method_types=None, _status_globs={}, _role_index={})


def _findings(result) -> list[tuple[str, int, str, str]]:
    return [(f.path, f.span.start.line, f.rule_id, f.message) for f in result.findings]


@pytest.mark.skipif(not (HEADERS / "cuda.h").is_file(), reason=f"no CUDA headers in {HEADERS}: the fallback is all there is")
def test_with_the_cuda_headers_the_except_lists_are_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `except` lists of cuda-runtime, cuda-driver and cupti removed (the families
    whose headers this machine has), every fixture gives the same findings:
    the headers say which names return no status or are types."""
    with_lists = {directory: _findings(run_fixture(directory)) for directory in _package_dirs()}
    real = session.load_knowledge
    monkeypatch.setattr(session, "load_knowledge", lambda files: _strip_excepts(real(files), STRIPPED))
    stripped = _strip_excepts(real(()), STRIPPED)
    assert stripped.lookup("C", "cudaGetErrorString") is not None  # the pattern alone takes it for a status call
    for directory, expected in with_lists.items():
        assert _findings(run_fixture(directory)) == expected, directory.relative_to(FIXTURES)


def test_without_headers_the_except_lists_still_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CUDA headers anywhere: the fixtures that call the runtime and the
    driver still give exactly their wanted findings, from the lists."""
    monkeypatch.setattr(cside, "CUDA_INCLUDE_DIRS", ())
    cside._HEADER_CACHE.clear()
    try:
        for name in ("status/runtime", "status/negatives", "status/driver", "resources/acquire"):
            directory = FIXTURES / name
            result = run_fixture(directory, declared_rules(directory))
            wanted, _ = expectations(directory)
            assert Counter((f.path, f.span.start.line, f.rule_id) for f in result.findings) == +wanted, name
    finally:
        cside._HEADER_CACHE.clear()


def test_a_dlopen_loader_makes_its_trampolines_wrappers(tmp_path: Path) -> None:
    view = _view(tmp_path, (
        "package a\n\n/*\n#include <dlfcn.h>\n"
        "static int (*sync_ptr)(void);\nstatic struct { int (*free)(void *); } *api;\n"
        "static void load(void *lib) {\n"
        '\t*(void **)(&sync_ptr) = dlsym(lib, "cudaDeviceSynchronize");\n'
        '\tapi->free = dlsym(lib, "cudaFree");\n}\n'
        "static int sync_wrap(void) { return sync_ptr(); }\n"
        "static int free_wrap(void *p) { return (api->free)(p); }\n"
        "static int other(void) { return not_loaded(); }\n"
        '*/\nimport "C"\n'
    ))
    assert view.wrapped(view.functions["sync_wrap"]) == "cudaDeviceSynchronize"
    assert view.wrapped(view.functions["free_wrap"]) == "cudaFree"
    assert view.functions["free_wrap"].wrapped_args == (0,)
    assert view.wrapped(view.functions["other"]) == "not_loaded"


def test_a_helper_returning_a_local_wraps_the_call_that_set_it(tmp_path: Path) -> None:
    view = _view(tmp_path, (
        "package a\n\n/*\n"
        "static int checked_alloc(void **p, int n) {\n\tint st = cudaMalloc(p, n);\n\tif (st != 0) {\n\t\tlog_failure(st);\n\t}\n\treturn st;\n}\n"
        "static int twice(void **p) {\n\tint st = first(p);\n\tst = second(p);\n\treturn st;\n}\n"
        '*/\nimport "C"\n'
    ))
    assert view.wrapped(view.functions["checked_alloc"]) == "cudaMalloc"
    assert view.functions["checked_alloc"].wrapped_args == (0, 1)
    assert view.wrapped(view.functions["twice"]) == ""  # given two values: no single wrapped call
    view = _view(tmp_path, (
        "package a\n\n/*\n"
        "static int made_then_set(void **p, int n) {\n\tint st = cudaMalloc(p, n);\n\tif (st != 0) {\n\t\treturn st;\n\t}\n"
        "\tst = cudaMemset(*p, 0, n);\n\treturn st;\n}\n"
        '*/\nimport "C"\n'
    ))
    # returned where the first call fails, before the second: made, then configured
    assert view.wrapped(view.functions["made_then_set"]) == "cudaMalloc"


def test_a_configured_include_directory_is_read(tmp_path: Path) -> None:
    """`c-include` in the configuration: headers outside the usual places
    (a vendored toolkit) type the package's calls."""
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    (vendor / "mylib.h").write_text("typedef enum { MY_OK = 0 } cudaError_t;\ncudaError_t my_sync(void);\nvoid my_log(void);\n")
    project = tmp_path / "project"
    (project / "gpu").mkdir(parents=True)
    (project / ".cudalint.toml").write_text('c-include = ["../vendor"]\n')
    (project / "gpu" / "gpu.go").write_text(
        'package gpu\n\n// #include <mylib.h>\nimport "C"\n\nfunc f() {\n\tC.my_sync()\n\tC.my_log()\n}\n'
    )
    from clirun import cudalint

    run = cudalint("--no-cache", "--format", "json", "./...", cwd=project)
    import json

    findings = json.loads(run.stdout)["findings"]
    assert [(f["rule"], f["line"]) for f in findings] == [("CL301", 7)]
    bad = project / ".cudalint.toml"
    bad.write_text('c-include = ["../nowhere"]\n')
    failed = cudalint("--no-cache", "./...", cwd=project)
    assert failed.exit_code == 2 and "c-include" in failed.stderr and "no such directory" in failed.stderr


def test_the_c_sources_of_a_package_include_cuda_and_go_free_subdirectories(tmp_path: Path) -> None:
    """`.cu` glue beside the Go files, and in a subdirectory that holds no Go
    (a Makefile builds it into the library the package links); not a
    subdirectory that is a Go package of its own, nor a huge file."""
    (tmp_path / "gpu.go").write_text("package gpu\n")
    (tmp_path / "glue.h").write_text("void f(void);\n")
    (tmp_path / "kernels.cu").write_text("void f(void) {}\n")
    (tmp_path / "impl").mkdir()
    (tmp_path / "impl" / "glue_cuda.cu").write_text("void g(void) {}\n")
    (tmp_path / "impl" / "glue_cpu.c").write_text("void g(void) {}\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "sub.go").write_text("package sub\n")
    (tmp_path / "sub" / "sub.c").write_text("void h(void) {}\n")
    (tmp_path / "big.cu").write_bytes(b"// " + b"x" * (1 << 20) + b"\n")
    names = [path.relative_to(tmp_path).as_posix() for path in cside.local_c_files(tmp_path)]
    assert names == ["glue.h", "impl/glue_cpu.c", "impl/glue_cuda.cu", "kernels.cu"]


def test_cxx_glue_is_read_one_definition_at_a_time(tmp_path: Path) -> None:
    """A template the C grammar cannot recover from hides nothing after
    it: each definition of a `.cpp` file is parsed on its own, inside
    extern "C" and namespace blocks too; braces in comments, strings and
    preprocessor lines do not count. `return new T` (directly or through
    the one local made by new) wraps new, deleting a parameter (through a
    cast too) wraps delete; several locals, or a non-new value, wrap nothing."""
    (tmp_path / "glue.cpp").write_text(
        '#include "glue.h"\n'
        "#define OPEN {\n"
        "std::vector<std::map<int, std::string>> table; // { not a body\n"
        "template <typename T> static T twice(T v) { return v + v; }\n"
        'extern "C" {\n'
        "struct ByteArray Frame_Bytes(Frame f) {\n"
        "    return ByteArray {reinterpret_cast<char*>(f->data), static_cast<int>(f->size())};\n}\n"
        'Frame Frame_New(int n) { const char *s = "}"; return new FrameImpl(n); }\n'
        "Frame Frame_Built(int n) {\n    FrameImpl *f = new FrameImpl(n);\n    f->fill();\n    return f;\n}\n"
        "void Frame_Close(Frame f) { delete static_cast<FrameImpl *>(f); }\n"
        "Frame Frame_Either(int n) { FrameImpl *a = new FrameImpl(n); FrameImpl *b = new FrameImpl(n); return n ? a : b; }\n"
        "int Frame_Rows(Frame f) { return static_cast<FrameImpl *>(f)->rows; }\n"
        "Frames Frame_List(int n) { Frames frames; frames.frames = new Frame[n]; return frames; }\n"
        "}\n"
        "namespace glue { void Queue_Close(Queue q) { delete[] q; } }\n"
    )
    functions = _view(tmp_path, 'package a\n\n// #include "glue.h"\nimport "C"\n').functions
    assert (functions["Frame_New"].wraps, functions["Frame_Built"].wraps) == ("new", "new")
    assert (functions["Frame_Close"].wraps, functions["Frame_Close"].wrapped_args) == ("delete", (0,))
    assert (functions["Queue_Close"].wraps, functions["Queue_Close"].wrapped_args) == ("delete", (0,))
    assert functions["Frame_Either"].wraps == "" and functions["Frame_Rows"].wraps == ""
    assert functions["Frame_List"].wraps == ""  # a struct returned, with new in its field
    assert "twice" not in functions or functions["twice"].wraps == ""


def test_cxx_reading_survives_what_it_misreads_and_spares_singletons(tmp_path: Path) -> None:
    """A digit separator, an apostrophe in prose under `#if 0` and a stray
    brace cost nothing after them; a singleton (a global given new once)
    or an object the glue also keeps is no object made for the caller; in
    C, `new` is an ordinary name."""
    (tmp_path / "glue.cpp").write_text(
        "static const long kBig = 1'000;\n"
        "#if 0\nit's prose\n#endif\n"
        "}\n"
        "static Palette g_palette;\n"
        "Palette Palette_Shared(void) { if (!g_palette) g_palette = new PaletteImpl(); return g_palette; }\n"
        "Net Net_Load(const char *p) { NetImpl *n = new NetImpl(p); g_nets.push_back(n); return n; }\n"
        "Frame Frame_New(int n) { FrameImpl *f = new FrameImpl(n); f->fill(); return f; }\n"
        "void Frame_Close(Frame f) { delete f; }\n"
    )
    (tmp_path / "buf.c").write_text("Buf *Buf_New(void) { Buf *new = calloc(1, sizeof *new); return new; }\n")
    functions = _view(tmp_path, 'package a\n\n// #include "glue.h"\nimport "C"\n').functions
    assert (functions["Frame_New"].wraps, functions["Frame_Close"].wraps) == ("new", "delete")
    assert functions["Palette_Shared"].wraps != "new" and functions["Net_Load"].wraps != "new"
    assert functions["Buf_New"].wraps == "calloc"
