"""Module resolution (cudalint.resolve): imports outside the main module are
found where the go command would find them. Each test builds the layout it
needs in a temporary directory: a module cache with case-encoded paths and
versions, vendor/, local and module replacements, a go.work."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.resolve import Resolver, Settings, escape, is_standard, parse_mod, vendored_modules

NVML = "github.com/NVIDIA/go-nvml"


def _write(path: Path, text: str = "package x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _module(root: Path, text: str) -> Path:
    return _write(root / "go.mod", text)


def test_escape_encodes_upper_case_as_the_module_cache_does() -> None:
    assert escape("github.com/NVIDIA/go-nvml") == "github.com/!n!v!i!d!i!a/go-nvml"
    assert escape("v0.12.0-RC1") == "v0.12.0-!r!c1"
    assert escape("gorgonia.org/cu") == "gorgonia.org/cu"


def test_standard_library_and_cgo_are_never_resolved() -> None:
    assert is_standard("fmt") and is_standard("net/http") and not is_standard("C")
    assert not is_standard("github.com/x/y") and not is_standard("gorgonia.org/cu")


def test_go_mod_directives_in_line_and_block_form(tmp_path: Path) -> None:
    parsed = parse_mod(tmp_path, """
module example.com/svc // the service

go 1.21

require github.com/NVIDIA/go-nvml v0.12.0-1
require (
	gorgonia.org/cu v0.9.6 // indirect
	"example.com/quoted" v1.0.0
)
replace example.com/local => ../local
replace (
	example.com/fork v1.0.0 => example.com/forked v1.2.0
)
""")
    assert parsed.module == "example.com/svc" and parsed.go_version == (1, 21)
    assert parsed.requires == ((NVML, "v0.12.0-1"), ("gorgonia.org/cu", "v0.9.6"), ("example.com/quoted", "v1.0.0"))
    local, fork = parsed.replacements
    assert local.old == "example.com/local" and local.directory == tmp_path.parent / "local"
    assert fork.old_version == "v1.0.0" and fork.directory is None and (fork.new, fork.new_version) == ("example.com/forked", "v1.2.0")


def test_module_cache_path_and_version_are_case_encoded(tmp_path: Path) -> None:
    cache = tmp_path / "gopath" / "pkg" / "mod"
    package = cache / "github.com" / "!n!v!i!d!i!a" / "go-nvml@v0.12.0-!r!c1" / "pkg" / "nvml"
    _write(package / "nvml.go")
    go_mod = _module(tmp_path / "svc", f"module example.com/svc\n\ngo 1.21\n\nrequire {NVML} v0.12.0-RC1\n")
    resolver = Resolver.for_module(go_mod, Settings.from_environment({"GOPATH": str(tmp_path / "gopath")}))
    assert resolver is not None
    located = resolver.locate(f"{NVML}/pkg/nvml")
    assert located is not None and located.directory == package
    assert (located.module, located.version, located.how, located.immutable) == (NVML, "v0.12.0-RC1", "modcache", True)
    assert resolver.locate("fmt") is None
    assert resolver.locate("example.com/svc/internal/gpu") is None  # the main module's own
    assert resolver.locate(f"{NVML}/pkg/dl") is None  # not on this machine


def test_gomodcache_wins_over_gopath_and_the_longest_module_prefix_is_chosen(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _write(cache / "example.com" / "tools@v1.0.0" / "gpu" / "x.go")
    nested = _write(cache / "example.com" / "tools" / "gpu@v2.0.0" / "x.go").parent
    go_mod = _module(tmp_path / "svc", "module example.com/svc\n\nrequire (\n\texample.com/tools v1.0.0\n\texample.com/tools/gpu v2.0.0\n)\n")
    settings = Settings.from_environment({"GOMODCACHE": str(cache), "GOPATH": str(tmp_path / "elsewhere")})
    resolver = Resolver.for_module(go_mod, settings)
    assert resolver is not None
    located = resolver.locate("example.com/tools/gpu")
    assert located is not None and located.directory == nested and located.version == "v2.0.0"


def test_vendor_is_used_when_modules_txt_exists_unless_goflags_say_otherwise(tmp_path: Path) -> None:
    root = tmp_path / "svc"
    go_mod = _module(root, f"module example.com/svc\n\ngo 1.20\n\nrequire {NVML} v0.12.0\n")
    vendored = _write(root / "vendor" / "github.com" / "NVIDIA" / "go-nvml" / "pkg" / "nvml" / "nvml.go").parent
    _write(root / "vendor" / "modules.txt", f"# {NVML} v0.12.0\n## explicit; go 1.20\n{NVML}/pkg/nvml\n")
    cached = _write(tmp_path / "cache" / "github.com" / "!n!v!i!d!i!a" / "go-nvml@v0.12.0" / "pkg" / "nvml" / "nvml.go").parent
    assert vendored_modules(root) == {NVML: "v0.12.0"}

    default = Resolver.for_module(go_mod, Settings.from_environment({"GOMODCACHE": str(tmp_path / "cache")}))
    located = default.locate(f"{NVML}/pkg/nvml") if default else None
    assert located is not None and located.directory == vendored and located.how == "vendor" and not located.immutable

    module_mode = Resolver.for_module(go_mod, Settings.from_environment({"GOMODCACHE": str(tmp_path / "cache"), "GOFLAGS": "-mod=mod"}))
    located = module_mode.locate(f"{NVML}/pkg/nvml") if module_mode else None
    assert located is not None and located.directory == cached and located.how == "modcache"


def test_before_go_1_14_the_module_cache_comes_first_and_vendor_fills_in(tmp_path: Path) -> None:
    """go 1.13 does not vendor by default: the module cache is read where it
    holds the module; where it does not (nothing downloaded), the vendored
    copy of the same version is the same source, and better than none. A
    vendored copy of another version than go.mod requires is not read."""
    root = tmp_path / "svc"
    go_mod = _module(root, f"module example.com/svc\n\ngo 1.13\n\nrequire {NVML} v0.12.0\n")
    vendored = _write(root / "vendor" / "github.com" / "NVIDIA" / "go-nvml" / "pkg" / "nvml" / "nvml.go").parent
    _write(root / "vendor" / "modules.txt", f"# {NVML} v0.12.0\n")
    resolver = Resolver.for_module(go_mod, Settings.from_environment({"GOMODCACHE": str(tmp_path / "none")}))
    located = resolver.locate(f"{NVML}/pkg/nvml") if resolver else None
    assert located is not None and located.directory == vendored and located.how == "vendor"

    cached = _write(tmp_path / "cache" / "github.com" / "!n!v!i!d!i!a" / "go-nvml@v0.12.0" / "pkg" / "nvml" / "nvml.go").parent
    resolver = Resolver.for_module(go_mod, Settings.from_environment({"GOMODCACHE": str(tmp_path / "cache")}))
    located = resolver.locate(f"{NVML}/pkg/nvml") if resolver else None
    assert located is not None and located.directory == cached and located.how == "modcache"

    _write(root / "vendor" / "modules.txt", f"# {NVML} v0.11.0\n")
    resolver = Resolver.for_module(go_mod, Settings.from_environment({"GOMODCACHE": str(tmp_path / "none")}))
    assert resolver is not None and resolver.locate(f"{NVML}/pkg/nvml") is None


@pytest.mark.parametrize("target", ["../nvml-fork", "/ABSOLUTE"])
def test_a_local_replace_applies_before_anything_else(tmp_path: Path, target: str) -> None:
    root = tmp_path / "svc"
    fork = tmp_path / "nvml-fork" if target.startswith("..") else tmp_path / "abs"
    spelled = target if target.startswith("..") else str(fork)
    go_mod = _module(root, f"module example.com/svc\n\nrequire {NVML} v0.12.0\n\nreplace {NVML} => {spelled}\n")
    package = _write(fork / "pkg" / "nvml" / "nvml.go").parent
    _write(tmp_path / "cache" / "github.com" / "!n!v!i!d!i!a" / "go-nvml@v0.12.0" / "pkg" / "nvml" / "nvml.go")
    resolver = Resolver.for_module(go_mod, Settings.from_environment({"GOMODCACHE": str(tmp_path / "cache")}))
    located = resolver.locate(f"{NVML}/pkg/nvml") if resolver else None
    assert located is not None and located.directory == package and located.how == "replace"


def test_a_module_replace_reads_the_replacement_from_the_cache(tmp_path: Path) -> None:
    go_mod = _module(tmp_path / "svc", f"module example.com/svc\n\nrequire {NVML} v0.12.0\n\nreplace {NVML} v0.12.0 => github.com/Acme/go-nvml v0.12.1\n")
    package = _write(tmp_path / "cache" / "github.com" / "!acme" / "go-nvml@v0.12.1" / "pkg" / "nvml" / "nvml.go").parent
    resolver = Resolver.for_module(go_mod, Settings.from_environment({"GOMODCACHE": str(tmp_path / "cache")}))
    located = resolver.locate(f"{NVML}/pkg/nvml") if resolver else None
    assert located is not None and located.directory == package and located.module == NVML


def test_go_work_modules_are_main_modules_unless_gowork_is_off(tmp_path: Path) -> None:
    svc = tmp_path / "svc"
    go_mod = _module(svc, "module example.com/svc\n\nrequire example.com/gpu v1.0.0\n")
    gpu = tmp_path / "gpu"
    _module(gpu, "module example.com/gpu\n")
    package = _write(gpu / "nvml" / "nvml.go").parent
    _write(tmp_path / "go.work", "go 1.21\n\nuse (\n\t./svc\n\t./gpu\n)\n")
    cached = _write(tmp_path / "cache" / "example.com" / "gpu@v1.0.0" / "nvml" / "nvml.go").parent
    environ = {"GOMODCACHE": str(tmp_path / "cache")}
    located = Resolver.for_module(go_mod, Settings.from_environment(environ)).locate("example.com/gpu/nvml")
    assert located is not None and located.directory == package and located.how == "workspace"
    off = Resolver.for_module(go_mod, Settings.from_environment({**environ, "GOWORK": "off"})).locate("example.com/gpu/nvml")
    assert off is not None and off.directory == cached


def test_a_go_mod_without_module_or_unreadable_is_no_resolver(tmp_path: Path) -> None:
    assert Resolver.for_module(_module(tmp_path, "go 1.21\n")) is None
    assert Resolver.for_module(tmp_path / "missing" / "go.mod") is None


_BINDING = Path(__file__).parent / "fixtures" / "deps" / "binding" / "gpubind.go"
_SERVICE = Path(__file__).parent / "fixtures" / "deps" / "replaced" / "svc" / "svc.go"


def _service(root: Path, go_mod: str) -> None:
    _write(root / "go.mod", go_mod)
    _write(root / "svc" / "svc.go", _SERVICE.read_text(encoding="utf-8"))


def _leaks(root: Path) -> list[tuple[str, int, str]]:
    from cudalint import check

    result = check(["./..."], base=root, select=("CL1",))
    return [(finding.path, finding.span.start.line, finding.rule_id) for finding in result.findings]


def test_a_binding_in_the_module_cache_is_read_from_its_source(tmp_path: Path, monkeypatch) -> None:
    """The service's only GPU calls go through example.com/GPUBind (upper
    case: the cache path and version are case-encoded); with the module in
    the cache its leak is found, without it there is nothing to read."""
    cache = tmp_path / "gopath" / "pkg" / "mod"
    _write(cache / "example.com" / "!g!p!u!bind@v1.2.0-!r!c1" / "go.mod", "module example.com/GPUBind\n")
    _write(cache / "example.com" / "!g!p!u!bind@v1.2.0-!r!c1" / "gpubind.go", _BINDING.read_text(encoding="utf-8"))
    root = tmp_path / "svc-module"
    _service(root, "module example.com/svc\n\ngo 1.21\n\nrequire example.com/GPUBind v1.2.0-RC1\n")
    svc = root / "svc" / "svc.go"
    svc.write_text(svc.read_text(encoding="utf-8").replace('"example.com/gpubind"', 'gpubind "example.com/GPUBind"'), encoding="utf-8")
    monkeypatch.delenv("GOMODCACHE", raising=False)
    monkeypatch.delenv("GOFLAGS", raising=False)
    monkeypatch.setenv("GOWORK", "off")
    monkeypatch.setenv("GOPATH", str(tmp_path / "gopath"))
    assert _leaks(root) == [("svc/svc.go", 14, "CL101")]
    monkeypatch.setenv("GOPATH", str(tmp_path / "elsewhere"))
    assert _leaks(root) == []
    from cudalint import check
    from cudalint.findings import NotificationKind

    notes = [n for n in check(["./..."], base=root).notifications if n.kind is NotificationKind.DEPENDENCIES]
    assert len(notes) == 1 and notes[0].level == "note"
    assert "no source on this machine for 1 imported module" in notes[0].message and "example.com/GPUBind" in notes[0].message


_CXXGLUE = Path(__file__).parent / "fixtures" / "resources" / "cxxglue"


def test_a_cxx_glue_binding_in_the_module_cache_is_summarised(tmp_path: Path, monkeypatch) -> None:
    """A binding whose Go files name no API and whose C++ glue makes the
    objects its types own (`return new FrameImpl(...)`, gocv's shape) is
    summarised from the module cache all the same: its importer's leak is
    found. Without the glue's `new` it would be no binding of anything."""
    module = tmp_path / "gopath" / "pkg" / "mod" / "example.com" / "cxxglue@v0.3.0"
    _write(module / "go.mod", "module example.com/cxxglue\n")
    for name in ("cxxglue.go", "cxxglue.h", "cxxglue.cpp"):
        _write(module / name, (_CXXGLUE / name).read_text(encoding="utf-8"))
    root = tmp_path / "svc-module"
    _write(root / "go.mod", "module example.com/svc\n\ngo 1.21\n\nrequire example.com/cxxglue v0.3.0\n")
    _write(root / "svc" / "svc.go", (
        "package svc\n\nimport \"example.com/cxxglue\"\n\n"
        "func rows(n int) bool {\n\tf := cxxglue.NewFrame(n, n)\n\tif f.Empty() {\n\t\treturn false\n\t}\n"
        "\tf.Close()\n\treturn true\n}\n"
    ))
    monkeypatch.delenv("GOMODCACHE", raising=False)
    monkeypatch.delenv("GOFLAGS", raising=False)
    monkeypatch.setenv("GOWORK", "off")
    monkeypatch.setenv("GOPATH", str(tmp_path / "gopath"))
    assert _leaks(root) == [("svc/svc.go", 6, "CL101")]
    glue = module / "cxxglue.cpp"
    glue.write_text(glue.read_text(encoding="utf-8").replace("return new", "return make_new"), encoding="utf-8")
    assert _leaks(root) == []
