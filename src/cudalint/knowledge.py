"""API knowledge: what the rules/*.toml files say about CUDA and its cousins.

The engine knows no API by name. Every fact (which calls return a status and
what success looks like, which calls acquire and release which resource) comes
from these files, so that a team can describe its own wrappers in TOML without
touching Python. The schema is documented in rules/README.md and checked here,
strictly: a typo in a key is an error, not a silently ignored line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase, translate
from importlib import resources
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from cudalint.api_model import ApiFunction, CallRole, Embedding, Family, ResourceSpec, StatusSpec

__all__ = ["ApiFunction", "CallRole", "Embedding", "Family", "Knowledge", "KnowledgeError", "ResourceSpec", "StatusSpec"]

SCHEMA_VERSION = 1
_HANDLE = re.compile(r"^(arg\d+|out\d+|result\d+|receiver|none)$")


class KnowledgeError(Exception):
    """A rules file that cannot be used; the message names the file and the key."""


class _Globs:
    """A list of call-name globs, most of them plain names (go-nvml's
    exceptions run to hundreds): plain names go in a set, only real globs
    are compiled, into one alternation."""

    def __init__(self, patterns: tuple[str, ...]):
        self._names = frozenset(p for p in patterns if not any(c in p for c in "*?["))
        globs = [translate(p) for p in patterns if p not in self._names]
        self._globs = re.compile("|".join(globs)) if globs else None

    def __contains__(self, name: str) -> bool:
        return name in self._names or (self._globs is not None and self._globs.match(name) is not None)


@dataclass
class Knowledge:
    families: tuple[Family, ...]
    _cache: dict[tuple[str, str], ApiFunction | None] = field(default_factory=dict, repr=False)
    _named: NamedBindings | None = field(default=None, repr=False)
    _method_types: dict[str, frozenset[str]] | None = field(default=None, repr=False)
    _interface_types: frozenset[tuple[str, str]] | None = field(default=None, repr=False)
    _status_globs: dict[int, tuple[_Globs, _Globs]] = field(default_factory=dict, repr=False)
    _role_index: dict[int, dict[str, tuple[tuple[ResourceSpec, ...], ...]]] = field(default_factory=dict, repr=False)
    _package_names: dict[str, str] | None = field(default=None, repr=False)
    _import_paths: frozenset[str] | None = field(default=None, repr=False)

    @property
    def method_types(self) -> dict[str, frozenset[str]]:
        """Import path -> the types of that package whose methods the
        knowledge names (`sql.DB.Query` makes DB one of database/sql's)."""
        if self._method_types is None:
            found: dict[str, set[str]] = {}
            for family in self.families:
                names = [role.call for resource in family.resources for role in resource.acquire + resource.release + resource.transfer]
                names += list(family.status_match) + list(family.thread_bound) + list(family.thread_locks) + list(family.thread_unlocks)
                names += [f"{type_name.removeprefix('[]')}.Method" for _, type_name in family.result_types]
                names += [f"{type_name}.Method" for type_name in family.interfaces]
                for name in names:
                    parts = name.split(".")
                    if len(parts) >= 3 and parts[0] == family.qualifier and parts[1][:1].isupper() and "*" not in parts[1]:
                        found.setdefault(family.import_path, set()).add(parts[1])
            self._method_types = {path: frozenset(types) for path, types in found.items()}
        return self._method_types

    @property
    def import_paths(self) -> frozenset[str]:
        if self._import_paths is None:
            self._import_paths = frozenset(f.import_path for f in self.families)  # (asked per call and per file)
        return self._import_paths

    @property
    def fully_described(self) -> frozenset[str]:
        """The import paths whose knowledge stands for their source: never
        read as dependencies (a family described in part is read)."""
        return frozenset(f.import_path for f in self.families if not f.partial)

    @property
    def package_names(self) -> dict[str, str]:
        """Import path -> package name, so `import "github.com/NVIDIA/go-nvml/pkg/nvml"`
        resolves `nvml.Init` without reading the imported package."""
        if self._package_names is None:
            self._package_names = {f.import_path: f.qualifier for f in self.families}
        return self._package_names

    @property
    def interface_types(self) -> frozenset[tuple[str, str]]:
        """(import path, type) of the interfaces the knowledge names (`nvml.Interface`)."""
        if self._interface_types is None:
            self._interface_types = frozenset(
                (family.import_path, name.split(".", 1)[1]) for family in self.families for name in family.interfaces
            )
        return self._interface_types

    def embedded_type(self, import_path: str, type_name: str, method: str) -> tuple[str, str] | None:
        """(import path, type) of the described type that a type of another
        package embeds, as the knowledge says, where the method is one of
        it (not one the embedding type declares itself)."""
        for family in self.families:
            for embedding in family.embedded_by:
                if (embedding.import_path, embedding.type_name) == (import_path, type_name) and method not in embedding.own:
                    return family.import_path, embedding.embeds.split(".", 1)[1]
        return None

    def names_method(self, import_path: str, type_name: str, method: str) -> bool | None:
        """Whether the C API a described Go package binds has the function a
        method of its type stands for (nvml.Device.GetName is
        nvmlDeviceGetName; a method of nvml.Interface is the function of its
        name); False where it has not (the method is then another embedded
        type's: go-nvlib's NewDevice beside nvml.Interface, a mock's
        AssertExpectations); None where no list of the API's functions says."""
        family = next((f for f in self.families if f.import_path == import_path), None)
        functions = self.named_bindings.functions(family.qualifier) if family is not None else frozenset()
        if not functions:
            return None
        bare = _unversioned(method)
        return (f"{family.qualifier}.{type_name}" in family.interfaces and bare in functions) or type_name + bare in functions

    def embedding_packages(self) -> frozenset[str]:
        """The import paths of the packages whose types embed described ones."""
        return frozenset(embedding.import_path for family in self.families for embedding in family.embedded_by)

    def result_type(self, import_path: str, name: str, *, elements: bool = False) -> str | None:
        """The type (its name within its package: "Device") of the first
        result of the call `name` of that package, where the knowledge says
        it; `elements`: of the elements of a first result that is a slice
        (`[]nvml.ComputeInstance`)."""
        for family in self.families:
            if family.import_path == import_path:
                for call, type_name in family.result_types:
                    if call == f"{family.qualifier}.{family.forwarded(name)}" and type_name.startswith("[]") == elements:
                        return type_name.split(".", 1)[1]
        return None

    def is_type(self, import_path: str, name: str) -> bool:
        key = (import_path, "type:" + name)
        if key not in self._cache:
            self._cache[key] = any(  # type: ignore[assignment]
                fnmatchcase(f"{family.qualifier}.{name}", pattern)
                for family in self.families if family.import_path == import_path
                for pattern in family.types
            )
        return bool(self._cache[key])

    def family_of(self, resource: ResourceSpec) -> Family | None:
        """The family that describes a resource, by identity or by name."""
        for candidate in self.families:
            if any(known is resource for known in candidate.resources):
                return candidate
        return next((c for c in self.families for known in c.resources if known.name == resource.name), None)

    def resource(self, family: str, name: str) -> tuple[Family, ResourceSpec] | None:
        """A resource by its family's and its own name (summaries name them so)."""
        for candidate in self.families:
            if candidate.name == family:
                for resource in candidate.resources:
                    if resource.name == name:
                        return candidate, resource
        return None

    @property
    def c_call_prefixes(self) -> tuple[bytes, ...]:
        """What a cgo call of a described C API starts with (`C.cuda`,
        `C.nvml`, `C.cublas`): the literal part of each C family's call
        names and status patterns, for finding bindings among dependencies."""
        found: set[str] = set()
        for family in self.families:
            # cgo's own C heap (C.CString, C.malloc) is in every binding of
            # anything: it says nothing of a GPU API.
            if family.import_path != "C" or (family.resources and all(r.host_side for r in family.resources) and family.status is None):
                continue
            names = [role.call for resource in family.resources for role in resource.acquire + resource.release]
            for name in [*names, *family.status_match]:
                literal = re.split(r"[*?\[]", name, maxsplit=1)[0]
                if len(literal) >= len("C.") + 3:
                    found.add(literal)
        shortest: list[str] = []
        for prefix in sorted(found):  # the names a kept prefix starts follow it
            if not shortest or not prefix.startswith(shortest[-1]):
                shortest.append(prefix)
        return tuple(prefix.encode() for prefix in shortest)

    @property
    def named_bindings(self) -> NamedBindings:
        if self._named is None:
            self._named = NamedBindings(self)
        return self._named

    def canonical(self, import_path: str, name: str) -> str:
        """The name a call goes by in the knowledge: a method of an
        interface that forwards to the package functions is that function."""
        for family in self.families:
            if family.import_path == import_path and family.interfaces:
                return family.forwarded(name)
        return name

    def lookup(self, import_path: str, name: str) -> ApiFunction | None:
        name = self.canonical(import_path, name)
        key = (import_path, name)
        if key not in self._cache:
            self._cache[key] = self._find(import_path, name)
        return self._cache[key]

    def _roles(self, position: int) -> dict[str, tuple[tuple[ResourceSpec, ...], ...]]:
        """Call name -> (resources it releases, acquires, transfers), built
        once per family (by its position): a linear scan per lookup adds up
        over a tree."""
        family = self.families[position]
        index = self._role_index.get(position)
        if index is None:
            found: dict[str, tuple[list[ResourceSpec], list[ResourceSpec], list[ResourceSpec]]] = {}
            for resource in family.resources:
                for slot, roles in enumerate((resource.release, resource.acquire, resource.transfer)):
                    for call in dict.fromkeys(role.call for role in roles):
                        found.setdefault(call, ([], [], []))[slot].append(resource)
            index = self._role_index[position] = {
                call: tuple(tuple(resources) for resources in slots) for call, slots in found.items()
            }
        return index

    def _status_patterns(self, position: int) -> tuple[_Globs, _Globs]:
        compiled = self._status_globs.get(position)
        if compiled is None:
            family = self.families[position]
            compiled = self._status_globs[position] = (_Globs(family.status_match), _Globs(family.status_except))
        return compiled

    def _find(self, import_path: str, name: str) -> ApiFunction | None:
        found: ApiFunction | None = None
        for position, family in enumerate(self.families):
            if family.import_path != import_path:
                continue
            qualified = f"{family.qualifier}.{name}"
            releases, acquires, transfers = self._roles(position).get(qualified, ((), (), ()))
            match, exclude = self._status_patterns(position)
            is_status = family.status is not None and qualified in match and qualified not in exclude
            bound = qualified in family.thread_bound
            setter = qualified in family.context_setters
            lock = "lock" if qualified in family.thread_locks else "unlock" if qualified in family.thread_unlocks else ""
            host_args = next((indexes for call, indexes in family.async_host if call == qualified), ())
            kept = next((indexes for call, indexes in family.keeps if call == qualified), ())
            if is_status or releases or acquires or transfers or bound or setter or host_args or kept or lock:
                described = ApiFunction(
                    family, qualified, family.status if is_status else None,
                    qualified in family.discardable, releases, acquires, transfers, bound, setter, host_args, kept,
                    thread_lock=lock,
                )
                if import_path == "C":
                    return described  # each C family names its own functions
                found = described if found is None else _merged(found, described)
        return found


def _merged(first: ApiFunction, other: ApiFunction) -> ApiFunction:
    """A Go package two files describe in parts (ICICLE v0's goicicle: the
    error of `CudaMalloc` in one, the int statuses of the rest and the
    memory in the other): the status where one file gives it, the roles of
    both."""
    status_of = first if first.status is not None or other.status is None else other
    return replace(
        status_of, discardable=first.discardable or other.discardable,
        releases=tuple(dict.fromkeys(first.releases + other.releases)),
        acquires=tuple(dict.fromkeys(first.acquires + other.acquires)),
        transfers=tuple(dict.fromkeys(first.transfers + other.transfers)),
        thread_bound=first.thread_bound or other.thread_bound, context_setter=first.context_setter or other.context_setter,
        async_host_args=first.async_host_args or other.async_host_args, kept_args=first.kept_args or other.kept_args,
        thread_lock=first.thread_lock or other.thread_lock,
    )


class NamedBindings:
    """Go bindings that no knowledge file describes and whose source is not
    on this machine (no vendor/, no module cache), read by their names.

    Where the knowledge says so of a C API (`[named_bindings]`), a Go
    package of that name binds it function for function (tkestack.io/nvml):
    its function `Name`, where Name is one of the API's function names
    without prefix, stands for the C function
    `<prefix>Name`: tkestack.io/nvml's DeviceGetHandleByIndex is
    nvmlDeviceGetHandleByIndex, and `dev.DeviceGetMemoryInfo()` on a value it
    returned is nvmlDeviceGetMemoryInfo. What carries over is what a Go
    binding keeps of its C function whatever its style: the status, as the
    last result (an `error` or a code compared with `<prefix>.SUCCESS`), and
    the pairings without a handle (Init / Shutdown), and that a release is
    one (its dropped status is CL304's; `_ =` on it stays allowed). No
    acquisition of a handle is read by name: where a binding keeps its
    handles (out-parameters turned into results, Go types with finalizers)
    its source would have to say, and a guess there would be a false leak.
    Where the source is readable, it is summarised instead and nothing here
    applies."""

    def __init__(self, knowledge: Knowledge):
        self._knowledge = knowledge
        self._families: dict[str, Family] = {}
        self._resources: dict[tuple[str, str], ResourceSpec] = {}
        self._found: dict[tuple[str, str], ApiFunction | None] = {}
        # The C families by the name of the Go packages that bind them.
        self.words: dict[str, Family] = {f.named_bindings: f for f in knowledge.families if f.named_bindings}
        self._functions = {word: frozenset(family.named_functions) for word, family in self.words.items()}

    def word_of(self, import_path: str) -> str | None:
        """The C API a package binds by its name: the last element of its
        import path (a `/vN` major version left out, `go-nvml` and `gonvml`
        read as `nvml`); None for a package a knowledge file describes."""
        if import_path in self._knowledge.import_paths or "/" not in import_path or import_path.startswith("."):
            return None  # described, the standard library's, or a relative import of local code
        parts = import_path.split("/")
        last = parts[-2] if re.fullmatch(r"v\d+", parts[-1]) else parts[-1]
        for word in (last, last.removeprefix("go-"), last.removeprefix("go")):
            if word in self.words:
                return word
        return None

    def functions(self, word: str) -> frozenset[str]:
        """The C API's function names, without prefix, of the family bound by that word."""
        return self._functions.get(word, frozenset())

    def needles(self, wanted: Callable[[Family], bool]) -> frozenset[bytes]:
        """How an import of such a package ends in a file's bytes, for the C
        families a rule has something to say about."""
        return frozenset(f'/{word}"'.encode() for word, family in self.words.items() if wanted(family))

    def lookup(self, import_path: str, name: str) -> ApiFunction | None:
        """The call `name` (a function, or `Type.Method`) of the package, as
        the C function of that name; None where the C knowledge says nothing
        of it."""
        key = (import_path, name)
        if key not in self._found:
            self._found[key] = self._derive(import_path, name)
        return self._found[key]

    def _derive(self, import_path: str, name: str) -> ApiFunction | None:
        word = self.word_of(import_path)
        function = name.rsplit(".", 1)[-1]
        if word is None or function not in self._functions[word]:
            return None
        c_api = self._knowledge.lookup("C", word + function)
        if c_api is None or c_api.family is not self.words[word]:
            return None
        family = self._family(import_path, word, c_api.family)
        releases = tuple(self._resource(family, r) for r in c_api.releases)
        acquires = tuple(self._resource(family, r) for r in c_api.acquires if r.handleless)
        status = family.status if c_api.status is not None else None
        if status is None and not releases and not acquires:
            return None
        return ApiFunction(family, f"{word}.{name}", status, c_api.discardable, releases, acquires)

    def _family(self, import_path: str, word: str, c_family: Family) -> Family:
        family = self._families.get(import_path)
        if family is None:
            family = self._families[import_path] = Family(
                name=f"{c_family.name} ({import_path})", description=f"{c_family.description}, bound by {import_path}",
                import_path=import_path, qualifier=word, source=f"{import_path}, read by its name",
                docs=c_family.docs, status=StatusSpec("error", (f"{word}.SUCCESS",), "last", "error"),
            )
        return family

    def _resource(self, family: Family, c_resource: ResourceSpec) -> ResourceSpec:
        """The C pairing with the binding's names (C.nvmlInit -> nvml.Init),
        one spec per package so that its Init and its Shutdown pair."""
        key = (family.import_path, c_resource.name)
        found = self._resources.get(key)
        if found is None:
            prefix = f"C.{family.qualifier}"

            def renamed(roles: tuple[CallRole, ...]) -> tuple[CallRole, ...]:
                # A binding's name has no version suffix: nvmlInit_v2 is its Init.
                return tuple(dict.fromkeys(
                    CallRole(f"{family.qualifier}.{_unversioned(role.call.removeprefix(prefix))}", role.handle)
                    for role in roles if role.call.startswith(prefix)
                ))

            found = self._resources[key] = replace(
                c_resource, acquire=renamed(c_resource.acquire), release=renamed(c_resource.release), transfer=(),
            )
        return found


def _unversioned(name: str) -> str:
    """A C function's name without its version suffix (`nvmlInit_v2`: `nvmlInit`)."""
    return re.sub(r"_v[0-9]+$", "", name)


# -- loading and validation ---------------------------------------------------

_TOP_KEYS = {
    "schema", "family", "description", "import", "name", "docs", "status", "status_calls", "resource", "types",
    "threads", "async", "keeps", "results", "interfaces", "named_bindings", "partial", "libraries", "embedded_by",
    "forks",
}
_EMBEDDED_KEYS = {"type", "embeds", "own"}
_NAMED_KEYS = {"package", "functions"}
_KEEPS_KEYS = {"call", "args"}
_THREAD_KEYS = {"bound", "context_setters", "releases_need_context", "locks", "unlocks"}
_ASYNC_KEYS = {"call", "host_args"}
_STATUS_KEYS = {"type", "success", "failure", "result", "kind"}
_STATUS_CALL_KEYS = {"match", "except", "discardable"}
_RESOURCE_KEYS = {
    "name", "acquire", "release", "transfer", "moves", "any_use_releases", "device_memory", "host_side", "needs_context",
    "outlives", "zero_release_noop", "gates_family", "glue_only",
}
_ROLE_KEYS = {"call", "handle", "when", "address"}


def _fail(source: str, where: str, message: str) -> KnowledgeError:
    return KnowledgeError(f"{source}: {where}: {message}")


def _table(source: str, where: str, value: Any, allowed: set[str]) -> dict:
    if not isinstance(value, dict):
        raise _fail(source, where, "expected a table")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise _fail(source, where, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
    return value


def _string(source: str, where: str, value: Any, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value:
        raise _fail(source, where, "expected a non-empty string")
    return value


def _strings(source: str, where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(source, where, "expected a list of non-empty strings")
    return tuple(value)


def _qualified(source: str, where: str, names: tuple[str, ...], qualifier: str) -> tuple[str, ...]:
    for name in names:
        if not name.startswith(qualifier + "."):
            raise _fail(source, where, f"{name!r} must be qualified with the family's package name {qualifier!r}")
    return names


def _roles(source: str, where: str, value: Any, qualifier: str) -> tuple[CallRole, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(source, where, "expected a non-empty list of {call, handle} tables")
    roles = []
    for i, item in enumerate(value):
        item = _table(source, f"{where}[{i}]", item, _ROLE_KEYS)
        call = _string(source, f"{where}[{i}].call", item.get("call"))
        _qualified(source, f"{where}[{i}].call", (call,), qualifier)
        handle = _string(source, f"{where}[{i}].handle", item.get("handle"))
        if not _HANDLE.match(handle):
            raise _fail(source, f"{where}[{i}].handle", f"{handle!r} is not argN, outN, resultN, receiver or none")
        address = item.get("address", False)
        if not isinstance(address, bool) or (address and not handle.startswith("arg")):
            raise _fail(source, f"{where}[{i}].address", "expected true or false, and true only with an argN handle")
        roles.append(CallRole(call, handle, _when(source, f"{where}[{i}].when", item.get("when")), address))
    return tuple(roles)


def _when(source: str, where: str, value: Any) -> tuple[tuple[int, str], ...]:
    """`when = { arg1 = "true" }`: the arguments, as written, under which the role holds."""
    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        raise _fail(source, where, "expected a table of argN = \"text\" entries")
    found = []
    for key, text in value.items():
        match = re.fullmatch(r"arg(\d+)", key)
        if match is None or not isinstance(text, str) or not text:
            raise _fail(source, f"{where}.{key}", "expected argN = \"text\" (the argument as written)")
        found.append((int(match.group(1)), text))
    return tuple(sorted(found))


def parse_family(document: dict, source: str) -> Family:
    """One knowledge file, validated table by table: any key, type or
    combination the schema does not allow is an error naming the file and
    the key, never silent dead knowledge."""
    from cudalint.scope import default_import_name

    doc = _table(source, "top level", document, _TOP_KEYS)
    schema = doc.get("schema", SCHEMA_VERSION)
    if schema != SCHEMA_VERSION:
        raise _fail(source, "schema", f"unsupported schema version {schema!r} (this cudalint reads {SCHEMA_VERSION})")
    name = _string(source, "family", doc.get("family"))
    description = _string(source, "description", doc.get("description"))
    import_path = _string(source, "import", doc.get("import"))
    qualifier = _string(source, "name", doc.get("name"), required=False) or default_import_name(import_path)
    docs = _string(source, "docs", doc.get("docs"), required=False)
    status = _status(source, doc)
    match, except_, discardable = _status_calls(source, doc, status, qualifier)
    resources = tuple(_resource(source, f"resource[{i}]", item, qualifier) for i, item in enumerate(_array(source, "resource", doc)))
    types = _qualified(source, "types", _strings(source, "types", doc.get("types")), qualifier)
    bound, setters, need_context = _threads(source, doc, qualifier)
    async_host = tuple(_async(source, f"async[{i}]", item, qualifier) for i, item in enumerate(_array(source, "async", doc)))
    keeps = tuple(_keeps(source, f"keeps[{i}]", item, qualifier) for i, item in enumerate(_array(source, "keeps", doc)))
    results = _results(source, doc, qualifier)
    interfaces = _qualified(source, "interfaces", _strings(source, "interfaces", doc.get("interfaces")), qualifier)
    for type_name in interfaces:
        if type_name.count(".") != 1 or not type_name.split(".")[1][:1].isupper():
            raise _fail(source, "interfaces", f"expected an exported type of the package as {qualifier}.Type, not {type_name!r}")
    named, functions = _named_bindings(source, doc, import_path, status)
    partial = _flag(source, "partial", doc.get("partial", False))
    if partial and import_path == "C":
        raise _fail(source, "partial", "only a Go package can be described in part (C has no source to summarise)")
    if (libraries := _strings(source, "libraries", doc.get("libraries"))) and import_path != "C":
        raise _fail(source, "libraries", "only a family of C calls is exported by shared libraries")
    embedded_by = tuple(_embedding(source, f"embedded_by[{i}]", item, qualifier) for i, item in enumerate(_array(source, "embedded_by", doc)))
    forks = _strings(source, "forks", doc.get("forks"))
    if forks and import_path == "C":
        raise _fail(source, "forks", "only a Go package is published under other import paths")
    if import_path in forks or len(set(forks)) != len(forks):
        raise _fail(source, "forks", "lists the family's own import path, or one path twice")
    locks, unlocks = _thread_locks(source, doc, qualifier)
    return Family(
        name, description, import_path, qualifier, source, docs, status,
        match, except_, discardable, resources, types, bound, setters, need_context, async_host, keeps, results,
        interfaces, named, functions, partial, libraries, embedded_by, forks, thread_locks=locks, thread_unlocks=unlocks,
    )


def with_forks(family: Family) -> list[Family]:
    """The family, and one copy of it for each import path its package is
    also published under, named after that path."""
    return [family] + [replace(family, name=f"{family.name} ({fork})", import_path=fork, forks=()) for fork in family.forks]


def _embedding(source: str, where: str, item: Any, qualifier: str) -> Embedding:
    """[[embedded_by]]: type = "path/to/pkg.Type", embeds = "nvml.Device", own = [...]."""
    table = _table(source, where, item, _EMBEDDED_KEYS)
    outer = _string(source, f"{where}.type", table.get("type"))
    import_path, dot, type_name = outer.rpartition(".")
    if not dot or "/" not in import_path or not type_name[:1].isupper():
        raise _fail(source, f"{where}.type", f"expected an import path and an exported type, \"path/to/pkg.Type\", not {outer!r}")
    (embeds,) = _qualified(source, f"{where}.embeds", (_string(source, f"{where}.embeds", table.get("embeds")),), qualifier)
    return Embedding(import_path, type_name, embeds, _strings(source, f"{where}.own", table.get("own")))


def _named_bindings(source: str, doc: dict, import_path: str, status: StatusSpec | None) -> tuple[str, tuple[str, ...]]:
    """[named_bindings]: package = "nvml", functions = ["Init", ...]."""
    table = _table(source, "[named_bindings]", doc.get("named_bindings", {}), _NAMED_KEYS)
    if not table:
        return "", ()
    if import_path != "C" or status is None:
        raise _fail(source, "[named_bindings]", "only a family of C calls with a [status] can be bound by name")
    package = _string(source, "[named_bindings].package", table.get("package"))
    if not re.fullmatch(r"[a-z][a-z0-9]*", package):
        raise _fail(source, "[named_bindings].package", f"expected a Go package name such as \"nvml\", not {package!r}")
    functions = _strings(source, "[named_bindings].functions", table.get("functions"))
    for function in functions:
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", function):
            raise _fail(source, "[named_bindings].functions", f"expected a C function's name without its prefix (\"Init\"), not {function!r}")
    return package, tuple(sorted(set(functions)))


def _results(source: str, doc: dict, qualifier: str) -> tuple[tuple[str, str], ...]:
    """[results]: call = "pkg.Type", the type of the call's first result. Both
    sides are names of the family's package (pkg.Func, pkg.Type.Method;
    pkg.Type), else the entry could never match."""
    table = doc.get("results", {})
    if not isinstance(table, dict):
        raise _fail(source, "[results]", "expected a table of call = \"pkg.Type\"")
    found = []
    for call, type_name in table.items():
        where = f"[results].{call!r}"
        (call,) = _qualified(source, where, (call,), qualifier)
        written = _string(source, where, type_name)
        slice_of = written.startswith("[]")  # `[]pkg.Type`: a slice of the type (`gi.GetComputeInstances(&info)`)
        (type_name,) = _qualified(source, where, (written.removeprefix("[]"),), qualifier)
        if type_name.count(".") != 1 or not type_name.split(".")[1][:1].isupper():
            raise _fail(source, where, f"expected an exported type of the package as {qualifier}.Type or []{qualifier}.Type, not {written!r}")
        found.append((call, "[]" * slice_of + type_name))
    return tuple(found)


def _array(source: str, key: str, doc: dict) -> list:
    raw = doc.get(key, [])
    if not isinstance(raw, list):
        raise _fail(source, f"[[{key}]]", f"expected an array of tables ([[{key}]])")
    return raw


def _status(source: str, doc: dict) -> StatusSpec | None:
    if "status" not in doc:
        return None
    table = _table(source, "[status]", doc["status"], _STATUS_KEYS)
    kind = table.get("kind", "code")
    if kind not in ("code", "error"):
        raise _fail(source, "[status].kind", f"expected 'code' or 'error', not {kind!r}")
    result = table.get("result", "first")
    if result not in ("first", "last"):
        raise _fail(source, "[status].result", f"expected 'first' or 'last', not {result!r}")
    success = _strings(source, "[status].success", table.get("success"))
    if kind == "code" and not success:
        raise _fail(source, "[status].success", "a status of kind 'code' needs its success values")
    failure = _strings(source, "[status].failure", table.get("failure"))
    if set(failure) & set(success):
        raise _fail(source, "[status].failure", "a value cannot mean both success and failure")
    return StatusSpec(_string(source, "[status].type", table.get("type")), success, result, kind, failure)


def _status_calls(source: str, doc: dict, status: StatusSpec | None, qualifier: str) -> tuple[tuple, tuple, tuple]:
    """(match, except, discardable) patterns of the family's status calls."""
    if "status_calls" not in doc:
        return (), (), ()
    if status is None:
        raise _fail(source, "[status_calls]", "needs a [status] table saying what success looks like")
    table = _table(source, "[status_calls]", doc["status_calls"], _STATUS_CALL_KEYS)

    def patterns(key: str) -> tuple:
        where = f"[status_calls].{key}"
        return _qualified(source, where, _strings(source, where, table.get(key)), qualifier)

    match = patterns("match")
    if not match:
        raise _fail(source, "[status_calls].match", "expected at least one pattern")
    return match, patterns("except"), patterns("discardable")


def _resource(source: str, where: str, item: Any, qualifier: str) -> ResourceSpec:
    item = _table(source, where, item, _RESOURCE_KEYS)
    any_use = _flag(source, f"{where}.any_use_releases", item.get("any_use_releases", False))
    device_memory = _flag(source, f"{where}.device_memory", item.get("device_memory", False))
    host_side = _flag(source, f"{where}.host_side", item.get("host_side", False))
    if device_memory and host_side:
        raise _fail(source, f"{where}.host_side", "a resource is device memory or host-side, not both")
    needs_context = _flag(source, f"{where}.needs_context", item.get("needs_context", True))
    outlives = _flag(source, f"{where}.outlives", item.get("outlives", False))
    zero_release_noop = _flag(source, f"{where}.zero_release_noop", item.get("zero_release_noop", False))
    gates_family = _flag(source, f"{where}.gates_family", item.get("gates_family", False))
    glue_only = _flag(source, f"{where}.glue_only", item.get("glue_only", False))
    acquire = _roles(source, f"{where}.acquire", item.get("acquire"), qualifier)
    release = _roles(source, f"{where}.release", item.get("release"), qualifier) if not any_use or "release" in item else ()
    transfer = _roles(source, f"{where}.transfer", item.get("transfer"), qualifier) if "transfer" in item else ()
    moves = _roles(source, f"{where}.moves", item.get("moves"), qualifier) if "moves" in item else ()
    if any(not r.handle.startswith("arg") for r in moves):
        raise _fail(source, f"{where}.moves", "a move takes the handle as argN and gives it back as its result")
    if any(r.handle == "receiver" and r.call.count(".") < 2 for r in acquire):
        raise _fail(source, f"{where}.acquire", "a receiver acquire names the method that fills its receiver as pkg.Type.Method")
    if any(r.handle == "none" for r in acquire) != all(r.handle == "none" for r in acquire):
        raise _fail(source, f"{where}.acquire", "either every acquire of a resource has handle none, or none does")
    if gates_family and not all(r.handle == "none" for r in acquire):
        raise _fail(source, f"{where}.gates_family", "only a count (every acquire's handle none) gates its family's calls")
    transfer += moves
    if any(r.is_out for r in release + transfer):
        raise _fail(source, f"{where}.release", "outN names where an acquire stores its handle; a release takes argN")
    if any(r.handle == "receiver" for r in release) and not all(r.call.count(".") >= 2 for r in release if r.handle == "receiver"):
        raise _fail(source, f"{where}.release", "a receiver release names the method as pkg.Type.Method")
    return ResourceSpec(
        _string(source, f"{where}.name", item.get("name")), acquire, release, transfer, any_use, device_memory,
        host_side=host_side, needs_context=needs_context, outlives=outlives, moves=moves,
        zero_release_noop=zero_release_noop, gates_family=gates_family, glue_only=glue_only,
    )


def _thread_locks(source: str, doc: dict, qualifier: str) -> tuple[tuple, tuple]:
    """(calls that lock the goroutine to its thread, calls that unlock it)."""
    threads = _table(source, "[threads]", doc.get("threads", {}), _THREAD_KEYS)
    locks = _qualified(source, "[threads].locks", _strings(source, "[threads].locks", threads.get("locks")), qualifier)
    unlocks = _qualified(source, "[threads].unlocks", _strings(source, "[threads].unlocks", threads.get("unlocks")), qualifier)
    return locks, unlocks


def _threads(source: str, doc: dict, qualifier: str) -> tuple[tuple, tuple, bool]:
    """(thread-bound calls, context setters, whether releases need a context)."""
    threads = _table(source, "[threads]", doc.get("threads", {}), _THREAD_KEYS)
    bound = _qualified(source, "[threads].bound", _strings(source, "[threads].bound", threads.get("bound")), qualifier)
    setters = _qualified(
        source, "[threads].context_setters", _strings(source, "[threads].context_setters", threads.get("context_setters")), qualifier,
    )
    return bound, setters, _flag(source, "[threads].releases_need_context", threads.get("releases_need_context", False))


def _async(source: str, where: str, item: Any, qualifier: str) -> tuple[str, tuple[int, ...]]:
    item = _table(source, where, item, _ASYNC_KEYS)
    call = _string(source, f"{where}.call", item.get("call"))
    _qualified(source, f"{where}.call", (call,), qualifier)
    indexes = item.get("host_args")
    if not isinstance(indexes, list) or not indexes or not all(isinstance(n, int) and n >= 0 for n in indexes):
        raise _fail(source, f"{where}.host_args", "expected a non-empty list of argument indexes (0-based)")
    return call, tuple(indexes)


def _keeps(source: str, where: str, item: Any, qualifier: str) -> tuple[str, tuple[int, ...]]:
    item = _table(source, where, item, _KEEPS_KEYS)
    call = _string(source, f"{where}.call", item.get("call"))
    _qualified(source, f"{where}.call", (call,), qualifier)
    indexes = item.get("args")
    if not isinstance(indexes, list) or not indexes or not all(isinstance(n, int) and n >= 0 for n in indexes):
        raise _fail(source, f"{where}.args", "expected a non-empty list of argument indexes (0-based)")
    return call, tuple(indexes)


def _flag(source: str, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(source, where, "expected true or false")
    return value


def builtin_rules_dir() -> Path:
    """rules/ inside an installed wheel, or at the top of a source checkout
    (editable installs)."""
    packaged = resources.files("cudalint") / "rules"
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[2] / "rules"
    if checkout.is_dir():
        return checkout
    raise KnowledgeError(f"cannot find the API knowledge files (looked in {packaged} and {checkout})")


MAX_FILE_BYTES = 4 * 1024 * 1024


def load_file(path: Path, private: bool = False) -> Family:
    """One knowledge file. `private`: the file lies outside the analysed
    repository (named by a configuration file), so an error names the file
    but echoes nothing of its content."""
    from cudalint.safeio import InputFileError, read_regular

    try:
        document = tomllib.loads(read_regular(path, MAX_FILE_BYTES).decode("utf-8"))
    except OSError as error:
        raise KnowledgeError(f"{path}: cannot read: {error.strerror or error}") from None
    except InputFileError as error:
        raise KnowledgeError(f"{path}: cannot read: {error}") from None
    except RecursionError:
        raise KnowledgeError(f"{path}: not valid TOML: nested too deeply") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise KnowledgeError(f"{path}: not valid TOML: {'(details not shown)' if private else error}") from None
    if not private:
        return parse_family(document, path.name if path.parent == builtin_rules_dir() else str(path))
    try:
        return parse_family(document, str(path))
    except KnowledgeError:
        raise KnowledgeError(
            f"{path}: not a valid cudalint knowledge file (the file is outside the repository, so its content is "
            f"not shown; check it with cudalint --rules {path})"
        ) from None


def load_knowledge(extra_files: tuple[Path, ...] = (), private: frozenset[Path] = frozenset()) -> Knowledge:
    """`private`: files of extra_files outside the repository (see load_file)."""
    files = sorted(builtin_rules_dir().glob("*.toml")) + list(extra_files)
    loaded = [load_file(path, path in private) for path in files]
    described = {family.import_path: family.source for family in loaded}
    for family in loaded:
        for fork in family.forks:
            if fork in described:
                raise KnowledgeError(f"{family.source}: forks names {fork}, which {described[fork]} describes")
    families = [copy for family in loaded for copy in with_forks(family)]
    seen: dict[str, str] = {}
    for family in families:
        if family.name in seen:
            raise KnowledgeError(f"{family.source}: family {family.name!r} is already defined in {seen[family.name]}")
        seen[family.name] = family.source
    return Knowledge(tuple(families))
