"""The API knowledge files: every shipped file validates, the schema is
strict, and lookups classify real calls correctly."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cudalint.knowledge import KnowledgeError, builtin_rules_dir, load_file, load_knowledge, parse_family

RULES = Path(__file__).resolve().parents[1] / "rules"


@pytest.mark.parametrize("path", sorted(RULES.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_file_validates(path: Path) -> None:
    family = load_file(path)
    assert family.description and family.import_path
    for resource in family.resources:
        assert resource.acquire and resource.release


def test_family_names_are_unique_and_builtin_dir_is_found() -> None:
    knowledge = load_knowledge()
    names = [family.name for family in knowledge.families]
    assert len(names) == len(set(names))
    assert {"cgo-host-memory", "cuda-runtime", "cuda-driver"} <= set(names)
    assert builtin_rules_dir().resolve() in (RULES.resolve(), builtin_rules_dir().resolve())


@pytest.mark.parametrize(
    ("name", "family", "status", "release"),
    [
        ("cudaMalloc", "cuda-runtime", "cudaError_t", False),
        ("cudaFree", "cuda-runtime", "cudaError_t", True),
        ("cuInit", "cuda-driver", "CUresult", False),
        ("cuMemFree", "cuda-driver", "CUresult", True),
        ("free", "cgo-host-memory", None, True),
        ("CString", "cgo-host-memory", None, False),
    ],
)
def test_lookup_classifies_calls(name: str, family: str, status: str | None, release: bool) -> None:
    api = load_knowledge().lookup("C", name)
    assert api is not None and api.family.name == family
    assert (api.status.type if api.status else None) == status
    assert api.is_release is release


@pytest.mark.parametrize("name", ["cudaGetErrorString", "cudaGetErrorName", "cudaStream_t", "CUdeviceptr", "puts"])
def test_non_status_names_are_unknown_or_statusless(name: str) -> None:
    api = load_knowledge().lookup("C", name)
    assert api is None or api.status is None


def test_cudaGetLastError_is_a_discardable_status_call() -> None:
    api = load_knowledge().lookup("C", "cudaGetLastError")
    assert api is not None and api.status is not None and api.discardable


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"description": "x", "import": "C"}, "family: expected a non-empty string"),
        ({"family": "f", "description": "x", "import": "C", "colour": 1}, "unknown key 'colour'"),
        ({"family": "f", "description": "x", "import": "C", "schema": 2}, "unsupported schema version 2"),
        ({"family": "f", "description": "x", "import": "C", "status_calls": {"match": ["C.x"]}}, "needs a [status] table"),
        (
            {"family": "f", "description": "x", "import": "C", "status": {"type": "t", "success": ["0"]},
             "status_calls": {"match": ["cuda*"]}},
            "must be qualified with the family's package name 'C'",
        ),
        ({"family": "f", "description": "x", "import": "C", "status": {"type": "t"}}, "needs its success values"),
        (
            {"family": "f", "description": "x", "import": "C",
             "resource": [{"name": "r", "acquire": [{"call": "C.a", "handle": "out"}], "release": [{"call": "C.b", "handle": "arg0"}]}]},
            "'out' is not argN, outN, resultN, receiver or none",
        ),
        ({"family": "f", "description": "x", "import": "C", "keeps": [{"call": "C.k", "args": []}]}, "keeps[0].args: expected a non-empty list"),
        ({"family": "f", "description": "x", "import": "C", "keeps": [{"call": "k", "args": [1]}]}, "must be qualified"),
        ({"family": "f", "description": "x", "import": "C", "keeps": {"call": "C.k"}}, "expected an array of tables ([[keeps]])"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "results": {"Open": "nv.Dev"}}, "must be qualified with the family's package name 'nv'"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "results": {"nv.Open": "Dev"}}, "must be qualified"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "results": {"nv.Open": "nv.dev"}}, "expected an exported type of the package as nv.Type"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "results": {"nv.Open": "nv.A.B"}}, "expected an exported type"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "results": {"nv.List": "[]nv.dev"}}, "not '[]nv.dev'"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "results": ["nv.Open"]}, "[results]: expected a table"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "interfaces": ["Lib"]}, "must be qualified with the family's package name 'nv'"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "interfaces": ["nv.lib"]}, "interfaces: expected an exported type"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "interfaces": "nv.Lib"}, "interfaces"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "libraries": ["nv.dll"]}, "libraries: only a family of C calls"),
        ({"family": "f", "description": "x", "import": "C", "libraries": "nv.dll"}, "libraries: expected a list of non-empty strings"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "embedded_by": [{"type": "Device", "embeds": "nv.Dev"}]}, "expected an import path and an exported type"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "embedded_by": [{"type": "g.io/lib.Device", "embeds": "Dev"}]}, "must be qualified"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "embedded_by": [{"type": "g.io/lib.Device", "embeds": "nv.Dev", "size": 1}]}, "unknown key 'size'"),
        ({"family": "f", "description": "x", "import": "C", "forks": ["g.io/nv"]}, "forks: only a Go package"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "forks": "g.io/nv2"}, "forks: expected a list of non-empty strings"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "forks": ["g.io/nv"]}, "forks: lists the family's own import path"),
        ({"family": "f", "description": "x", "import": "g.io/nv", "forks": ["g.io/a", "g.io/a"]}, "or one path twice"),
    ],
)
def test_schema_errors_name_the_file_and_key(document: dict, message: str) -> None:
    with pytest.raises(KnowledgeError) as error:
        parse_family(document, "mine.toml")
    assert str(error.value).startswith("mine.toml: ")
    assert message in str(error.value)


def test_user_file_for_a_go_wrapper(tmp_path: Path) -> None:
    extra = tmp_path / "acme.toml"
    extra.write_text(
        'family = "acme"\ndescription = "ACME wrapper"\nimport = "acme.example/gpu"\n'
        '[status]\ntype = "error"\nkind = "error"\nresult = "last"\n'
        '[status_calls]\nmatch = ["gpu.*"]\nexcept = ["gpu.Count"]\n'
    )
    knowledge = load_knowledge((extra,))
    assert knowledge.package_names["acme.example/gpu"] == "gpu"
    api = knowledge.lookup("acme.example/gpu", "Alloc")
    assert api is not None and api.status is not None and api.status.result_index(2) == 1
    assert knowledge.lookup("acme.example/gpu", "Count") is None


def test_bad_toml_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("family = \n")
    with pytest.raises(KnowledgeError, match="broken.toml: not valid TOML"):
        load_knowledge((broken,))


def test_result_types_make_methods_known() -> None:
    knowledge = load_knowledge(())
    path = "github.com/NVIDIA/go-nvml/pkg/nvml"
    assert knowledge.result_type(path, "DeviceGetHandleByIndex") == "Device"
    assert knowledge.result_type(path, "Device.GetGpuInstanceById") == "GpuInstance"
    assert knowledge.result_type(path, "DeviceGetCount") is None
    # A slice of handles: its elements have the type, the slice has none.
    assert knowledge.result_type(path, "GpuInstance.GetComputeInstances", elements=True) == "ComputeInstance"
    assert knowledge.result_type(path, "GpuInstance.GetComputeInstances") is None
    assert knowledge.result_type(path, "DeviceGetHandleByIndex", elements=True) is None
    assert {"Device", "GpuInstance", "EventSet"} <= knowledge.method_types[path]
    name = knowledge.lookup(path, "Device.GetName")
    assert name is not None and name.status is not None and name.status.type == "nvml.Return"
    assert knowledge.lookup(path, "Device.GetTemperatureV") is None  # returns a handler


def test_kept_arguments_are_known() -> None:
    kept = load_knowledge().lookup("C", "cudnnSetCallback")
    assert kept is not None and kept.kept_args == (1,) and kept.status is not None


def test_check_wants_tests_a_users_knowledge_file(tmp_path: Path) -> None:
    """`--check-wants` (documented in rules/README.md): a user's knowledge
    file against their own annotated Go file; exact agreement exits 0, every
    difference is printed and exits 1."""
    from clirun import cudalint

    (tmp_path / "files.toml").write_text(
        'family = "my-files"\ndescription = "files"\nimport = "os"\nname = "os"\n'
        '[status]\ntype = "error"\nkind = "error"\nresult = "last"\n'
        '[status_calls]\nmatch = ["os.Open"]\n'
        '[[resource]]\nname = "open file"\nacquire = [{ call = "os.Open", handle = "result0" }]\n'
        'release = [{ call = "os.File.Close", handle = "receiver" }]\n'
    )
    good = (
        'package p\n\nimport "os"\n\nfunc leak(name string) error {\n\tf, err := os.Open(name) // want "CL101 open file"\n'
        '\tif err != nil {\n\t\treturn err\n\t}\n\t_ = f.Name()\n\treturn nil\n}\n'
    )
    (tmp_path / "p.go").write_text(good)
    args = ("--no-cache", "--isolated", "--knowledge", "files.toml", "--select", "CL1", "--check-wants", "p.go")
    run = cudalint(*args, cwd=tmp_path)
    assert run.exit_code == 0 and "1 of 1 wanted findings reported, 0 differences" in run.stdout
    (tmp_path / "p.go").write_text(good.replace(' // want "CL101 open file"', "").replace("\t_ = f.Name()", '\t_ = f.Name() // want "CL102"'))
    run = cudalint(*args, cwd=tmp_path)
    assert run.exit_code == 1
    assert "p.go:6: unexpected CL101: open file from os.Open" in run.stdout and "p.go:10: missing CL102" in run.stdout


def test_host_side_resources_are_said_by_the_knowledge_not_guessed_from_names() -> None:
    """CL508 leaves host-side structures alone: which ones is a field of the
    knowledge. The cuFFT multi-GPU descriptor (cufftXtMalloc) owns memory on
    every GPU of the plan, whatever its name says."""
    resources = {r.name: r for family in load_knowledge().families for r in family.resources}
    assert resources["C heap memory"].host_side
    assert resources["cuBLASLt matrix layout"].host_side
    assert not resources["cuFFT multi-GPU descriptor"].host_side
    assert not resources["device memory"].host_side


def test_a_resource_cannot_be_device_memory_and_host_side() -> None:
    document = (
        'family = "x"\ndescription = "x"\nimport = "C"\n[[resource]]\nname = "r"\ndevice_memory = true\nhost_side = true\n'
        'acquire = [{ call = "C.a", handle = "result0" }]\nrelease = [{ call = "C.f", handle = "arg0" }]\n'
    )
    with pytest.raises(KnowledgeError, match="host_side"):
        parse_family(tomllib.loads(document), "x.toml")


def test_interface_methods_are_the_package_functions() -> None:
    """go-nvml's `lib.Init()` on an nvml.Interface is nvml.Init: the same
    API function (status, resource roles) and the same result types."""
    knowledge = load_knowledge(())
    path = "github.com/NVIDIA/go-nvml/pkg/nvml"
    assert "Interface" in knowledge.method_types[path]
    assert knowledge.canonical(path, "Interface.Init") == "Init"
    assert knowledge.canonical(path, "Device.GetName") == "Device.GetName"
    through = knowledge.lookup(path, "Interface.Init")
    assert through is not None and through is knowledge.lookup(path, "Init") and through.acquires
    assert knowledge.result_type(path, "Interface.DeviceGetHandleByIndex") == "Device"
    assert knowledge.result_type(path, "New") == "Interface"
    assert knowledge.lookup(path, "Interface.ErrorString") is None


def test_shared_libraries_are_prefilter_needles() -> None:
    """A package that loads nvml.dll and calls it by name has no cgo import:
    the library's name is what lets it through the prefilter."""
    from cudalint.prefilter import imports_of

    knowledge = load_knowledge()
    needles = imports_of(knowledge, lambda family: family.status is not None)
    assert b"nvml.dll" in needles and b"nvcuda.dll" in needles
    assert all(not family.libraries for family in knowledge.families if family.import_path != "C")


def test_a_type_that_embeds_a_described_one_has_its_methods_but_its_own() -> None:
    """go-nvlib's device.Device embeds nvml.Device: GetName is NVML's,
    IsMigEnabled is go-nvlib's own (a Go error, no NVML status)."""
    knowledge = load_knowledge()
    nvlib = "github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
    assert knowledge.embedded_type(nvlib, "Device", "GetName") == ("github.com/NVIDIA/go-nvml/pkg/nvml", "Device")
    assert knowledge.embedded_type(nvlib, "Device", "IsMigEnabled") is None
    assert knowledge.embedded_type(nvlib, "MigDevice", "GetProfile") is None
    assert knowledge.embedded_type(nvlib, "Interface", "GetDevices") is None
    assert nvlib in knowledge.embedding_packages()


def test_a_fork_is_described_like_the_package_it_forks() -> None:
    """icicle-gnark publishes icicle's runtime under its own module path."""
    knowledge = load_knowledge()
    original = knowledge.lookup("github.com/ingonyama-zk/icicle/v3/wrappers/golang/runtime", "CreateStream")
    fork = knowledge.lookup("github.com/ingonyama-zk/icicle-gnark/v3/wrappers/golang/runtime", "CreateStream")
    assert original is not None and fork is not None
    assert original.family.name == "icicle"
    assert fork.family.name == "icicle (github.com/ingonyama-zk/icicle-gnark/v3/wrappers/golang/runtime)"
    assert [r.name for r in fork.acquires] == [r.name for r in original.acquires] == ["ICICLE stream"]
    assert knowledge.lookup("github.com/ingonyama-zk/icicle-other/v3/wrappers/golang/runtime", "CreateStream") is None


def test_a_familys_status_type_is_a_type() -> None:
    """`(C.ncclResult_t)(r)` converts a status: rules/nccl.toml lists no
    `types`, but its status type is one."""
    knowledge = load_knowledge()
    assert knowledge.is_type("C", "ncclResult_t")
    assert knowledge.is_type("C", "cudaError_t")
    assert not knowledge.is_type("C", "ncclCommInitRank")


def test_a_fork_another_file_describes_is_an_error(tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text(
        'schema = 1\nfamily = "mine"\ndescription = "x"\nimport = "example.com/mine"\n'
        'forks = ["github.com/NVIDIA/go-nvml/pkg/nvml"]\n', encoding="utf-8",
    )
    with pytest.raises(KnowledgeError, match="forks names github.com/NVIDIA/go-nvml/pkg/nvml, which go-nvml.toml describes"):
        load_knowledge((mine,))


def test_an_acquire_may_hold_only_for_some_arguments() -> None:
    """ICICLE's `host.CopyToDevice(&d, true)` allocates d; with `false` it
    copies into the memory d holds: the call acquires nothing."""
    knowledge = load_knowledge()
    copy = knowledge.lookup("github.com/ingonyama-zk/icicle/v3/wrappers/golang/core", "HostSlice.CopyToDevice")
    assert copy is not None and [r.name for r in copy.acquires] == ["ICICLE device slice"]
    assert copy.roles("acquire")[0][1].when == ((1, "true"),)
    assert copy.at(["&d", "true"]) is copy
    assert copy.at(["&d", "false"]).acquires == () and copy.at(["d", "shouldAllocate"]).acquires == ()
    fork = knowledge.lookup("github.com/ingonyama-zk/icicle-gnark/v3/wrappers/golang/core", "HostSlice.CopyToDevice")
    assert fork is not None and fork.at(["&d", "false"]).acquires == ()


@pytest.mark.parametrize("when, message", [
    ('{ first = "true" }', "argN"),
    ('{ arg1 = 1 }', "argN"),
    ('"arg1"', "table"),
])
def test_a_bad_when_is_an_error(when: str, message: str) -> None:
    document = (
        'family = "x"\ndescription = "x"\nimport = "example.com/x"\n[[resource]]\nname = "r"\n'
        f'acquire = [{{ call = "x.Alloc", handle = "out0", when = {when} }}]\nrelease = [{{ call = "x.Free", handle = "arg0" }}]\n'
    )
    with pytest.raises(KnowledgeError, match=message):
        parse_family(tomllib.loads(document), "x.toml")


def test_a_success_value_may_name_another_familys_package() -> None:
    """ICICLE's curve packages return the runtime's status: `runtime.Success`."""
    knowledge = load_knowledge()
    msm = knowledge.lookup("github.com/ingonyama-zk/icicle/v3/wrappers/golang/curves/bls12381/msm", "Msm")
    assert msm is not None and msm.status is not None and "runtime.Success" in msm.status.success
    assert knowledge.package_names["github.com/ingonyama-zk/icicle/v3/wrappers/golang/runtime"] == "runtime"


def test_a_release_may_take_the_handles_address() -> None:
    """nvrtcDestroyProgram(&prog): the fix CL101 suggests spells the address."""
    knowledge = load_knowledge()
    destroy = knowledge.lookup("C", "nvrtcDestroyProgram")
    assert destroy is not None and destroy.roles("release")[0][1].address
    assert not knowledge.lookup("C", "cudaFree").roles("release")[0][1].address
    bad = (
        'family = "x"\ndescription = "x"\nimport = "example.com/x"\n[[resource]]\nname = "r"\n'
        'acquire = [{ call = "x.Alloc", handle = "out0", address = true }]\nrelease = [{ call = "x.Free", handle = "arg0" }]\n'
    )
    with pytest.raises(KnowledgeError, match="address"):
        parse_family(tomllib.loads(bad), "x.toml")


def test_a_resource_finds_its_release_method_by_name_and_travels_without_its_caches() -> None:
    """An owning type's resource names each of its releasing methods (3,185
    for gotch's tensor), indexed by name on first use: the index answers as
    a scan of the roles would (the first receiver role of that method), and
    neither it nor the cached hash goes into a pickle, since a worker's
    string hashes are its own."""
    import pickle

    from cudalint.api_model import CallRole, ResourceSpec

    roles = (
        CallRole("ts.Tensor.Drop", "receiver"),
        CallRole("ts.Tensor.Drop", "receiver", when=((0, "true"),)),
        CallRole("ts.Free", "arg0"),
        CallRole("ts.Tensor.Body.Close", "receiver"),
    )
    resource = ResourceSpec("Tensor (owns a tensor)", (), roles)
    assert resource.release_method("Drop") is roles[0]
    assert resource.release_method("Body.Close") is roles[3]
    assert resource.release_method("Free") is None  # a function's argument, not a method's receiver
    assert resource.release_method("Shape") is None
    hash(resource)
    copied = pickle.loads(pickle.dumps(resource))
    assert "_hash" not in copied.__dict__ and "_release_methods" not in copied.__dict__
    assert copied == resource and copied.release_method("Drop") == roles[0]
