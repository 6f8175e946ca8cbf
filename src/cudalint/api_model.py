"""The vocabulary of the API knowledge (knowledge.py): what a family of
calls, a resource, a call's role and a status are, as the rules/*.toml files
say them and every analysis reads them."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class StatusSpec:
    """How a family's calls report success."""

    type: str
    success: tuple[str, ...]
    result: str = "first"  # "first" or "last" result of the call
    kind: str = "code"  # "code": compare with success values; "error": a Go error, nil on success
    # Every value that means failure, where the status has so few that a
    # comparison with one is a full test (cuVS: CUVS_ERROR = 0, CUVS_SUCCESS = 1).
    failure: tuple[str, ...] = ()
    # kind "field": the status is a struct a glue function returns, and
    # success is this pointer field of it being NULL (`KernelResult {void
    # *res; const char *err;}`, tested `r.err == nil`); found by analysis.
    field: str = ""

    def result_index(self, result_count: int) -> int:
        return 0 if self.result == "first" else result_count - 1


@dataclass(frozen=True)
class CallRole:
    """A call and where in it the handle is: "argN" (the N-th argument's value),
    "outN" (the N-th argument points to where the call stores the handle:
    `C.cudaMalloc(&p, n)`), "resultN", "receiver" (a method of the handle's
    type: `set.Free()`), or "none" (a pairing by kind, with no handle:
    nvmlInit / nvmlShutdown)."""

    call: str
    handle: str
    # The role holds only where these arguments are written so: (index,
    # text) pairs (`CopyToDevice(&d, true)` allocates; with `false` it
    # copies into memory d already holds).
    when: tuple[tuple[int, str], ...] = ()
    # A release that takes the handle's address (`nvrtcDestroyProgram(&prog)`,
    # which also clears it): how the fix spells the call.
    address: bool = False

    def holds_at(self, arguments: list[str]) -> bool:
        """Whether the role applies to a call with these arguments (as written)."""
        return all(index < len(arguments) and arguments[index] == text for index, text in self.when)

    @property
    def index(self) -> int:
        """N of argN / outN / resultN; -1 for receiver and none."""
        match = re.fullmatch(r"(?:arg|out|result)(\d+)", self.handle)
        return int(match.group(1)) if match else -1

    @property
    def is_result(self) -> bool:
        return self.handle.startswith("result")

    @property
    def is_out(self) -> bool:
        return self.handle.startswith("out")

    @property
    def method(self) -> str:
        """For a receiver role named pkg.Type.Method, the method; through a
        field (pkg.Type.Field.Method, `resp.Body.Close()`), Field.Method."""
        parts = self.call.split(".")
        return ".".join(parts[2:]) if len(parts) > 2 else parts[-1]


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    acquire: tuple[CallRole, ...]
    release: tuple[CallRole, ...]
    # Calls that take ownership of the handle (they will release it).
    transfer: tuple[CallRole, ...] = ()
    # The handle is used up by any use: calling it, passing it, storing it
    # (context.WithCancel's cancel function).
    any_use_releases: bool = False
    # GPU memory addressed by a bare pointer or integer (CL502).
    device_memory: bool = False
    # A host-side structure: C heap memory, a library's descriptor on the
    # host. It holds nothing on the GPU, so a finalizer-only release of it
    # is not the device-memory problem CL508 reports.
    host_side: bool = False
    # It outlives the process by design (a MIG instance): see leak_on_path.
    outlives: bool = False
    # Whether releasing it needs a current context, in a family whose releases
    # generally do (CL505): a context's own destroy does not.
    needs_context: bool = True
    # A value of a Go type that holds this resource in a field and frees it
    # in a method (an owning type, found by analysis, never by knowledge).
    owns: ResourceSpec | None = None
    # A release function handed out (any_use_releases) that is a callable
    # no-op where the acquisition failed (`return func() {}, ret`), found by
    # analysis: deferring it before the success check is harmless (no CL202).
    callable_when_failed: bool = False
    # A value of an owning type that its maker returns as nil where it fails
    # (`return nil, err`), found by analysis: a release method deferred before
    # the success check runs on a nil receiver there (CL202).
    nil_when_failed: bool = False
    # Release methods of an owning type that check and clear the handle
    # (`if b.ptr == nil { return }; ...; b.ptr = nil`), found by analysis: a
    # second call releases nothing (no CL102).
    idempotent: frozenset[str] = frozenset()
    # Of an owning type's methods, those that reach no GPU API (`IsNull`):
    # calling one after the release uses nothing freed.
    inert: frozenset[str] = frozenset()
    # Of `transfer`, calls that move the handle into their result (C.realloc):
    # the variable given the result holds it from then on.
    moves: tuple[CallRole, ...] = ()
    # Releasing the zero value (NULL, 0) is a documented no-op (`free(NULL)`,
    # `cudaFree(0)`): a release deferred before the acquisition's success
    # check releases nothing where it failed (no CL202).
    zero_release_noop: bool = False
    # A count (handle none) every other status call of its family needs held
    # (nvmlInit for NVML's calls): one of them after the release on every path is CL104.
    gates_family: bool = False
    # Go calls neither its acquire nor its release: only the body of a C or
    # C++ glue function does (`new`, `delete`). A function handing one out
    # bare gives its caller nothing it could release; a value of an owning
    # type of it is released through that type's method.
    glue_only: bool = False
    # Of an owning type's release methods, those that release the receiver
    # only for some values of an argument (`View(size, del)`), each with
    # that choice (an `analyses.choices.Choice`), found by analysis.
    chosen: tuple[tuple[str, Any], ...] = ()

    def __hash__(self) -> int:
        """Computed once: the resource of an owning type names every
        releasing method (some 1,800 of a generated binding's tensor), and
        a spec is a key of many lookups."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, name) for name in self.__dataclass_fields__))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict:
        # A string's hash differs from process to process: a worker's
        # cached hash must not travel with the spec (nor the method index,
        # made again where it is asked).
        return {name: value for name, value in self.__dict__.items() if name not in ("_hash", "_release_methods")}

    @property
    def handleless(self) -> bool:
        return all(role.handle == "none" for role in self.acquire)

    def release_method(self, method: str) -> CallRole | None:
        """The receiver release named `method`: looked up by name (an owning
        type's spec lists every releasing method, and every method call on a
        variable of the type asks)."""
        by_method = self.__dict__.get("_release_methods")
        if by_method is None:
            by_method = {}
            for role in self.release:
                if role.handle == "receiver":
                    by_method.setdefault(role.method, role)
            object.__setattr__(self, "_release_methods", by_method)
        return by_method.get(method)

    @property
    def first_release(self) -> str:
        return self.release[0].call if self.release else "its release"


@dataclass(frozen=True)
class Embedding:
    """A type of another package that embeds a type the family describes:
    its methods are that type's, but for those it declares itself (`own`)."""

    import_path: str  # of the embedding type's package
    type_name: str  # "Device"
    embeds: str  # the family's type, qualified: "nvml.Device"
    own: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    import_path: str
    qualifier: str
    source: str
    docs: str = ""
    status: StatusSpec | None = None
    status_match: tuple[str, ...] = ()
    status_except: tuple[str, ...] = ()
    discardable: tuple[str, ...] = ()
    resources: tuple[ResourceSpec, ...] = ()
    # Names that are types: `C.CUdeviceptr(p)` is a conversion, not a call.
    types: tuple[str, ...] = ()
    # Calls that bind state to the calling OS thread (CL401).
    thread_bound: tuple[str, ...] = ()
    # Calls that make a context current on the calling thread (CL505).
    context_setters: tuple[str, ...] = ()
    # The family's releases need a current context on the calling thread (CL505).
    releases_need_context: bool = False
    # Calls that keep using host memory after they return: (call, argument indexes) (CL504).
    async_host: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # Calls that keep a pointer they are given (callback user data, a
    # subscriber's context): (call, argument indexes). Passing a handle
    # there hands it over, whatever resource it is.
    keeps: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # What a call's first result is, for calling methods on it: (call, type)
    # (`device, ret := nvml.DeviceGetHandleByIndex(i)` makes device an
    # nvml.Device, whose methods the status patterns can then name).
    result_types: tuple[tuple[str, str], ...] = ()
    # Interface types whose methods are the package's functions of the same
    # name: go-nvml's `nvml.Interface` (`lib := nvml.New(); lib.Init()` is
    # nvml.Init), which current NVIDIA code calls instead of the package
    # functions so that tests can swap the library.
    interfaces: tuple[str, ...] = ()
    # For a C family: the name of the Go packages that bind it function for
    # function (`nvml`: tkestack.io/nvml's DeviceGetHandleByIndex is
    # nvmlDeviceGetHandleByIndex), and the C API's function names without
    # prefix or version suffix. See NamedBindings.
    named_bindings: str = ""
    named_functions: tuple[str, ...] = ()  # sorted: the family's repr is part of cache keys
    # A Go package described in part (go-dcgm: its Init and Shutdown; its
    # groups, field groups and watches are not): where its source is on
    # this machine it is summarised like any dependency, and what the
    # knowledge leaves out is what the summary says.
    partial: bool = False
    # C families: the shared libraries that export it (`nvml.dll`), whose
    # functions code may call by name without cgo (analyses/procs.py).
    libraries: tuple[str, ...] = ()
    # Types of other packages that embed one of the family's types, whose
    # source may be absent (go-nvlib's device.Device embeds nvml.Device).
    embedded_by: tuple[Embedding, ...] = ()
    # The same package published under other import paths (a fork's module
    # path: icicle-gnark's runtime is icicle's): each is described alike.
    forks: tuple[str, ...] = ()
    # Calls that lock the calling goroutine to its OS thread, and that unlock
    # it (gorgonia's `ctx.Lock()`, `ctx.Unlock()`): runtime.LockOSThread's
    # and UnlockOSThread's effects for CL402/CL403.
    thread_locks: tuple[str, ...] = ()
    thread_unlocks: tuple[str, ...] = ()

    def forwarded(self, name: str) -> str:
        """The package function a method of one of the family's interfaces
        stands for ("Interface.Init" -> "Init"); other names unchanged."""
        receiver, dot, method = name.partition(".")
        if dot and "." not in method and f"{self.qualifier}.{receiver}" in self.interfaces:
            return method
        return name


@dataclass(frozen=True)
class ApiFunction:
    """Everything the knowledge says about one callee, e.g. C.cudaFree."""

    family: Family
    name: str
    status: StatusSpec | None
    discardable: bool
    releases: tuple[ResourceSpec, ...]
    acquires: tuple[ResourceSpec, ...]
    transfers: tuple[ResourceSpec, ...] = ()
    thread_bound: bool = False
    context_setter: bool = False
    async_host_args: tuple[int, ...] = ()
    kept_args: tuple[int, ...] = ()
    # A project's own C helper that wraps an API call: its roles, the API
    # call's moved to the helper's parameters ((kind, resource, role)).
    helper_roles: tuple[tuple[str, ResourceSpec, CallRole], ...] = ()
    # "lock" or "unlock": the call locks or unlocks the goroutine's OS thread.
    thread_lock: str = ""

    @property
    def is_release(self) -> bool:
        return bool(self.releases)

    def at(self, arguments: list[str]) -> ApiFunction:
        """This function as a call with these arguments (as written) sees
        it: without the acquisitions whose `when` the arguments do not meet
        (`CopyToDevice(&d, false)` acquires nothing)."""
        unmet = [
            resource for resource in self.acquires
            if any(role.call == self.name and role.when and not role.holds_at(arguments) for role in resource.acquire)
        ]
        if not unmet:
            return self
        return replace(self, acquires=tuple(resource for resource in self.acquires if resource not in unmet))

    def roles(self, kind: str) -> list[tuple[ResourceSpec, CallRole]]:
        """(resource, role) pairs of this call for kind "acquire", "release" or "transfer"."""
        found = [(resource, role) for role_kind, resource, role in self.helper_roles if role_kind == kind]
        for resource in (self.acquires if kind == "acquire" else self.releases if kind == "release" else self.transfers):
            for role in getattr(resource, kind):
                if role.call == self.name:
                    found.append((resource, role))
        return found
