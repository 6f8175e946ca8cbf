"""The package's own C functions as API calls: a helper that wraps a
described call (`static int alloc(void **p, size_t n) { return
cudaMalloc(p, n); }`) is that call, its roles moved to the helper's
parameters; a function whose return type is a family's status type returns
a status; one whose C says it returns none is no status call, whatever
name the knowledge's pattern matched."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import CallFact
from cudalint.cside import CView, view_of
from cudalint.functions import Package
from cudalint.knowledge import ApiFunction, CallRole, Knowledge, StatusSpec


def c_helper_api(view: CView, name: str, knowledge: Knowledge, known: ApiFunction | None) -> ApiFunction | None | bool:
    """`c_helper_api_of`, and a helper that hands a parameter to an
    asynchronous call as its host memory (`cudaMemcpyAsync(dst, src, ...)`
    in `AsyncCopyHostToDevice(dst, src, ...)`) is asynchronous there too,
    unless it synchronises after the call (then it is done with it on return)."""
    found = c_helper_api_of(view, name, knowledge, known)
    function = view.functions.get(name)
    if function is None or not function.passes:
        return found
    asynchronous = [
        (parameter, api) for callee, index, parameter in function.unfinished
        if (api := knowledge.lookup("C", callee)) is not None and index in api.async_host_args
    ]
    if not asynchronous:
        return found
    host = tuple(sorted({parameter for parameter, _ in asynchronous}))
    if isinstance(found, ApiFunction):
        return replace(found, async_host_args=host)
    return ApiFunction(asynchronous[0][1].family, f"C.{name}", None, False, (), (), async_host_args=host)


def c_helper_api_of(view: CView, name: str, knowledge: Knowledge, known: ApiFunction | None, depth: int = 0) -> ApiFunction | None | bool:
    """What the package's own C says of `C.name`: the ApiFunction of a
    helper that wraps an API call (its status, and the call's acquisitions
    and releases moved to the helper's parameters), or of a function whose
    return type is a family's status type; None where its return type says
    it returns no status (void, a pointer, another type: the knowledge's
    pattern matched a name that is no status call); False where the C says
    nothing (the knowledge stands)."""
    function = view.functions.get(name)
    if function is None:
        return None if view.is_type(name) else False  # `C.cudaStream_t(x)` converts
    unpaired = known is None or not (known.acquires or known.releases)  # the knowledge pairs nothing here
    resulting = _resulting(view, function, knowledge, f"C.{name}") if unpaired else None
    if resulting is not None:
        return resulting
    if function.wraps:
        inner = knowledge.lookup("C", view.wrapped(function))
        if inner is None and view.wrapped(function) in view.functions and view.wrapped(function) != name and depth < 4:
            # `Mat Image_IMDecode(...) { ...; return Mat_New(); }`, Mat_New wrapping calloc: a helper of a helper.
            nested = c_helper_api_of(view, view.wrapped(function), knowledge, None, depth + 1)
            inner = nested if isinstance(nested, ApiFunction) and (nested.acquires or nested.releases) else None
        if inner is not None and known is not None and (known.acquires or known.releases) and inner.family is not known.family:
            return False  # the knowledge describes the function (FAISS's own `new`/`delete` glue): it wins
        if inner is not None:
            return _wrapping(inner, function, f"C.{name}")
        carried = knowledge.lookup("C", function.carried) if function.carried else None
        if carried is not None and (api := _carrying(carried, function, f"C.{name}")) is not None:
            return api
    made = _made_and_returned(view, function, knowledge, f"C.{name}") if unpaired else None
    if made is not None:
        return made
    freed = _freed_through(view, function)
    plain = function.returns == "void" or function.returns in _PLAIN_C_TYPES
    if freed >= 0 and plain and not function.pointer and (free := knowledge.lookup("C", "free")) is not None and not (
        known is not None and known.status is not None
    ):
        # `int free_mem(void *c) { freeMem(c); ... }`, freeMem freeing it: a release with no status.
        return replace(_wrapping(free, replace(function, wrapped_args=(freed,)), f"C.{name}"), status=None)
    returned = view.resolved_return(name)
    if returned is None:
        return False
    type_names, pointer = returned
    if known is not None and known.status is not None and not pointer and known.status.type in type_names:
        return known  # declared as the knowledge says (`int faiss_Index_add(...)`)
    for family in knowledge.families:
        if family.import_path == "C" and family.status is not None and not pointer and family.status.type in type_names and (
            family.status.type not in _PLAIN_C_TYPES  # FAISS's `int`: its calls are named, not typed
        ):
            if known is not None and known.status is not None:
                return known
            return ApiFunction(family, f"C.{name}", family.status, False, (), ())
    if known is not None and known.status is not None and not known.releases and not known.acquires:
        return None  # e.g. a helper named like the API that returns void
    return False


def _freed_through(view: CView, function) -> int:
    """The parameter a function of the glue frees: itself, or by passing
    it to one that does (one call deep)."""
    if function.frees >= 0:
        return function.frees
    for callee, index, parameter in function.passes:
        inner = view.functions.get(callee)
        if inner is not None and inner is not function and inner.frees == index:
            return parameter
    return -1


# A status of one of these types says nothing of its family: every C
# library returns int.
_PLAIN_C_TYPES = frozenset({"int", "unsigned", "unsigned int", "long", "size_t", "bool", "char"})


def _wrapping(inner: ApiFunction, helper, written: str) -> ApiFunction:
    """The helper as an API function: the wrapped call's roles moved to the
    helper's parameters, and its status, unless the helper returns void
    (it drops the status: its callers have none to check). A helper that
    may succeed without the call acquires nothing (`if (inited) return
    NVML_SUCCESS;`); its release, if it wraps one, is still a release."""
    roles = []
    for kind in ("acquire", "release", "transfer"):
        if kind == "acquire" and helper.succeeds_without_call:
            continue  # an init-once guard: its success may have taken nothing
        for resource, role in inner.roles(kind):
            if role.handle == "none" or role.is_result:
                roles.append((kind, resource, CallRole(written, role.handle)))
                continue
            index = role.index
            if 0 <= index < len(helper.wrapped_args) and helper.wrapped_args[index] >= 0:
                prefix = "out" if role.is_out else "arg"
                roles.append((kind, resource, CallRole(written, f"{prefix}{helper.wrapped_args[index]}")))
    status = None if helper.returns == "void" and not helper.pointer else inner.status
    return _api_of_roles(inner.family, written, status, inner.discardable, roles)


def _carrying(inner: ApiFunction, helper, written: str) -> ApiFunction | None:
    """A function that returns a struct built from an API call's status
    (`return kr_status(cudaFree(ptr), NULL);`): the call's releases, moved to
    the function's parameters. It reports no status the knowledge knows, and
    what the call acquires is in the struct, which is not followed."""
    roles = [
        (kind, resource, CallRole(written, f"arg{helper.carried_args[role.index]}"))
        for kind in ("release", "transfer") for resource, role in inner.roles(kind)
        if not role.is_result and not role.is_out and 0 <= role.index < len(helper.carried_args) and helper.carried_args[role.index] >= 0
    ]
    if not roles:
        return None
    return _api_of_roles(inner.family, written, None, True, roles)


def _resulting(view: CView, function, knowledge: Knowledge, written: str) -> ApiFunction | None:
    """A function returning a result struct (cresult.py) whose body calls a
    described API: its status is the struct (success: the message field is
    NULL), the acquisitions landing in the struct are its own with the
    struct as the handle, and the releases of the call whose status it
    carries are its own, moved to its parameters."""
    returned = view.resolved_return(function.name)
    field = next((view.result_structs[t][0] for t in returned[0] if t in view.result_structs), "") if returned is not None else ""
    if not field or returned is None or returned[1]:
        return None
    acquired = _landed(view, function, knowledge)
    carried = knowledge.lookup("C", view.loaded.get(function.carried, function.carried)) if function.carried else None
    moved = _carrying(carried, function, written) if carried is not None else None
    family = acquired[0][0] if acquired else carried.family if carried is not None else None
    if family is None:
        return None
    roles = [("acquire", resource, CallRole(written, "result0")) for _, resource in acquired]
    roles += list(moved.helper_roles) if moved is not None else []
    return _api_of_roles(family, written, StatusSpec(returned[0][0], ("nil",), "first", "field", field=field), False, roles)


def _made_and_returned(view: CView, function, knowledge: Knowledge, written: str) -> ApiFunction | None:
    """`void *gpu_malloc(size_t n) { void *p = NULL; CHECK(cudaMalloc(&p, n));
    return p; }`: a function returning the pointer a described call filled
    acquires what that call does, the pointer its handle (NULL where it
    failed: no status)."""
    acquired = _landed(view, function, knowledge) if function.pointer else []
    if not acquired:
        return None
    return _api_of_roles(acquired[0][0], written, None, False, [("acquire", resource, CallRole(written, "result0")) for _, resource in acquired])


def _api_of_roles(family, written: str, status: StatusSpec | None, discardable: bool, roles: list) -> ApiFunction:
    """A function of the package's C as an API function: its (kind,
    resource, role) triples, each kind's resources in the order found."""
    return ApiFunction(
        family, written, status, discardable,
        tuple(r for k, r, _ in roles if k == "release"), tuple(r for k, r, _ in roles if k == "acquire"),
        tuple(r for k, r, _ in roles if k == "transfer"), helper_roles=tuple(roles),
    )


def _landed(view: CView, function, knowledge: Knowledge) -> list:
    """(family, resource) of what the described calls of `into_result` acquire there."""
    acquired = []
    for callee, index in function.into_result:
        inner = knowledge.lookup("C", view.loaded.get(callee, callee))
        acquired += [
            (inner.family, resource) for resource, role in (inner.roles("acquire") if inner is not None else ())
            if role.is_out and role.index == index
        ]
    return acquired


def c_side_calls(package: Package, knowledge: Knowledge, known: Callable[[Node], CallFact | None]) -> tuple[CView | None, list[CallFact]]:
    """The package's own C (cside.py), and the calls of C functions it
    declares as that C says they are (`known`: what the call was classified
    as before); an ApiFunction of None where the C says it returns no status."""
    if not any(imported.path == "C" for parsed in package.files for imported in parsed.imports):
        return None, []
    view = view_of(package.files, package.files[0].source.path.parent, package.c_include)
    found: list[CallFact] = []
    if not view.functions:
        return view, found
    for parsed in package.files:
        for node in parsed.index.qualified_calls:
            function = syntax.unparen(node.child_by_field_name("function"))
            operand = syntax.unparen(function.child_by_field_name("operand")) if function is not None else None
            if operand is None or syntax.text(operand) != "C":
                continue
            package.resolution.ensure(parsed.root, node)
            if package.resolution.package_of(operand) != "C":
                continue  # a variable named C, in a file that does not import "C"
            name = syntax.text(function.child_by_field_name("field"))
            before = known(node)
            api = c_helper_api(view, name, knowledge, before.api if before is not None else None)
            if api is False:
                continue
            written = f"C.{name}"
            function = view.functions.get(name)
            inner = view.wrapped(function) if function is not None else ""
            if inner and api is not None and api.name == written and knowledge.lookup("C", inner) is not None:
                written = f"C.{name} (wraps {inner})"
            found.append(CallFact(node, "C", name, written, api))
    return view, found
