"""How messages name things: a resource's release verb, a knowledge name as
the file spells it (imports may be renamed), the statement that would fix a
leak, what a status call returns and what success looks like. Shared by the
checks so that every message says the same thing the same way."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CallFact
from cudalint.analyses.lifetimes import Origin
from cudalint.analyses.status import first_success_as_written
from cudalint.framework import Ref
from cudalint.gotypes import result_type_nodes
from cudalint.knowledge import CallRole, ResourceSpec

_VERBS = (
    ("unregister", "unregistered"), ("free", "freed"), ("destroy", "destroyed"), ("unload", "unloaded"),
    ("shutdown", "shut down"), ("close", "closed"), ("unsubscribe", "unsubscribed"), ("abort", "aborted"),
)


def acquired_here(origin: Origin) -> Ref:
    """The acquisition a lifetime finding points back to, labelled the same
    way in every rule's message."""
    return Ref(origin.call, f"{origin.resource.name} acquired here")


def release_verb(resource: ResourceSpec) -> str:
    release = resource.first_release.rsplit(".", 1)[-1].lower()
    return next((verb for word, verb in _VERBS if word in release), "released")


def spelled(origin: Origin, qualified: str) -> str:
    """A knowledge name as this file writes it: `cu.MemFree` is `cuda.MemFree`
    where the file imports gorgonia.org/cu as cuda (for a resource from a
    wrapper of the package, as the wrapper's file writes it), and
    `m.lib.Shutdown` where the acquisition was `m.lib.Init()` on an
    interface value that forwards to the package functions."""
    outer, origin = origin, origin.innermost
    if origin.via_text:
        return qualified  # acquired in another package: named as the knowledge names it
    family = origin.api.family
    qualifier = family.qualifier
    if not qualified.startswith(qualifier + "."):
        return qualified
    imported = next((i for i in origin.unit.file.imports if i.path == family.import_path), None)
    if "." not in origin.written and imported is None:
        return qualified[len(qualifier) + 1:]  # inside the described package: unqualified
    receiver = _as_caller_passes(outer, origin, origin.written.rsplit(".", 1)[0])
    if "." in origin.written and origin.api.name.count(".") == 1:  # a package function, on the package or on a forwarding value
        return receiver + qualified[len(qualifier):]
    if "." in origin.written and qualified.rsplit(".", 1)[0] == origin.api.name.rsplit(".", 1)[0]:
        return receiver + "." + qualified.rsplit(".", 1)[1]  # a method of the acquiring value's type
    # A method of a handle type (`dev.CreateGpuInstance`), or a package
    # function kept in a variable (`createGroup := dcgm.CreateGroup`): the
    # release is a package function, written with the name this file imports it by.
    name = imported.name if imported is not None and imported.name not in (None, "_", ".") else qualifier
    return name + qualified[len(qualifier):]


def _as_caller_passes(outer: Origin, inner: Origin, receiver: str) -> str:
    """`l` where the wrapper's `lib.Init()` took the count through its
    parameter `lib` and the caller's `initSupported(l)` passed l: the
    release as the caller's file can write it (one wrapper deep)."""
    if outer.via is not inner or outer.call.type != "call_expression":
        return receiver
    index = next((i for i, param in enumerate(inner.unit.params) if param.name == receiver), None)
    arguments = syntax.children(outer.call.child_by_field_name("arguments"))
    argument = syntax.unparen(arguments[index]) if index is not None and index < len(arguments) else None
    return syntax.text(argument) if argument is not None and argument.type in ("identifier", "selector_expression") else receiver


def release_statement(origin: Origin) -> str:
    """The statement that would release the resource, as this file spells it."""
    resource = origin.resource
    if resource.any_use_releases and (origin.role.handle != "none" or not resource.release):
        return f"defer {origin.handle or 'x'}()"
    if not resource.release:
        return ""
    role = _release_role(origin)
    if role.handle == "receiver":
        return f"defer {origin.handle or 'x'}.{role.method}()"
    call = spelled(origin, role.call)
    if role.handle == "none":
        # A count is given back with no argument (nvml.Shutdown(), whatever
        # Init, InitWithFlags or dcgm.Init(mode) took), unless it is one per
        # device whose acquisition also writes a handle out (the primary
        # context: `cuDevicePrimaryCtxRetain(&ctx, dev)`, released by device).
        taken = origin.innermost.call
        arguments = syntax.children(taken.child_by_field_name("arguments")) if taken.type == "call_expression" else []
        per_device = any(
            syntax.is_address_of(argument)
            for argument in map(syntax.unparen, arguments)
        )
        return f"defer {call}(...)" if per_device else f"defer {call}()"
    handle = origin.handle or "x"  # a result never stored: name the variable to store it in
    if role.index == 0:
        if role.call == "C.free":
            # C memory handed out as a Go slice (`unsafe.Slice(p, n)`) is freed through its data pointer.
            handle = f"unsafe.SliceData({handle})" if _handed_out_as_slice(origin) else handle
            argument = f"unsafe.Pointer({handle})"
        else:
            argument = f"&{handle}" if role.address else handle
        return f"defer {call}({argument})"
    return f"defer {call}(...{handle}...)"


def _handed_out_as_slice(origin: Origin) -> bool:
    """Whether the wrapper that handed the resource out declares it as a
    slice (`func allocate(n int) ([]byte, error)`)."""
    if origin.via is None or origin.role.index < 0:
        return False
    types = result_type_nodes(origin.via.unit)
    chosen = types[origin.role.index] if origin.role.index < len(types) else None
    return chosen is not None and chosen.type == "slice_type"


def _release_role(origin: Origin) -> CallRole:
    """The release to suggest: a method of the type whose method acquired
    (`ctx.MemFree` after `ctx.MemAlloc`: gorgonia's context methods run on
    the context's own thread), else the knowledge's first."""
    resource = origin.resource
    acquired_on = origin.innermost.api.name.rsplit(".", 1)[0]
    same_type = [role for role in resource.release if role.handle != "receiver" and role.call.rsplit(".", 1)[0] == acquired_on]
    return same_type[0] if acquired_on.count(".") == 1 and same_type else resource.release[0]


def where_to_fix(origin: Origin) -> str:
    if origin.status is not None:
        return "after the error check"
    if origin.beside_failure:
        # `d, err := load(h)` of a function that returns d beside its failure too.
        return f"right after the call, before the error check ({called_name(origin.call)} returns it where it fails too)"
    return "right after the acquisition"


def wrapper_what(call: Node, inner: str, release: bool, raw: bool = False, teardown: bool = False) -> str:
    """"the error returned by Sync (from C.cudaDeviceSynchronize inside it)";
    "the status returned by wait (...)" for a wrapper that passes the status
    through; a teardown method's is said to come from what it frees."""
    name = syntax.text(call.child_by_field_name("function"))
    what = "status" if raw else "error"
    if teardown:
        return f"the {what} returned by {name} (which frees what its receiver holds; from {inner} inside it)"
    return f"the {what} returned by {name} (from {'the release ' if release else ''}{inner} inside it)"


def wrapper_advice(raw: bool) -> str:
    """What to do with a wrapper's dropped result."""
    return "check it and handle the failure" if raw else "check that it is nil and handle the failure"


def status_what(fact: CallFact) -> str:
    """"the cudaError_t returned by C.cudaMemcpy"."""
    status = fact.status
    assert status is not None
    return f"the {'error' if status.kind == 'error' else status.type} returned by {fact.written}"


def success_hint(fact: CallFact) -> str:
    """What checking the status means, in this file's spelling."""
    status = fact.status
    assert status is not None
    if status.kind == "error":
        return "check that it is nil and handle the failure"
    if status.kind == "field":
        return f"check that its {status.field} is nil and handle the failure"
    return f"compare it with {first_success_as_written(fact)} and handle the failure"


def called_name(call: Node) -> str:
    """What a call calls, short, for messages: `s.Sync`, `check`,
    `status(...).error` (a method of a value a call made)."""
    function = syntax.called(call)
    operand = syntax.method_operand(call)
    if function is not None and operand is not None and operand.type == "call_expression":
        return f"{syntax.text(operand.child_by_field_name('function'))}(...).{syntax.text(function.child_by_field_name('field'))}"
    return syntax.text(function)
