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
from cudalint.knowledge import ResourceSpec

_VERBS = (
    ("unregister", "unregistered"), ("free", "freed"), ("destroy", "destroyed"), ("unload", "unloaded"),
    ("shutdown", "shut down"), ("close", "closed"), ("unsubscribe", "unsubscribed"), ("abort", "aborted"),
)


def release_verb(resource: ResourceSpec) -> str:
    release = resource.first_release.rsplit(".", 1)[-1].lower()
    return next((verb for word, verb in _VERBS if word in release), "released")


def spelled(origin: Origin, qualified: str) -> str:
    """A knowledge name as this file writes it: `cu.MemFree` is `cuda.MemFree`
    where the file imports gorgonia.org/cu as cuda (for a resource from a
    wrapper of the package, as the wrapper's file writes it)."""
    origin = origin.innermost
    if origin.via_text:
        return qualified  # acquired in another package: named as the knowledge names it
    qualifier = origin.api.family.qualifier
    if "." not in origin.written and qualified.startswith(qualifier + "."):
        return qualified[len(qualifier) + 1:]  # inside the described package: unqualified
    package = origin.written.split(".", 1)[0]
    return package + qualified[len(qualifier):] if qualified.startswith(qualifier + ".") else qualified


def release_statement(origin: Origin) -> str:
    """The statement that would release the resource, as this file spells it."""
    resource = origin.resource
    if resource.any_use_releases:
        return f"defer {origin.handle or 'x'}()"
    if not resource.release:
        return ""
    role = resource.release[0]
    if role.handle == "receiver":
        return f"defer {origin.handle or 'x'}.{role.method}()"
    call = spelled(origin, role.call)
    if role.handle == "none":
        return f"defer {call}(...)"
    handle = origin.handle or "x"  # a result never stored: name the variable to store it in
    if role.index == 0:
        argument = f"unsafe.Pointer({handle})" if role.call == "C.free" else handle
        return f"defer {call}({argument})"
    return f"defer {call}(...{handle}...)"


def where_to_fix(origin: Origin) -> str:
    return "after the error check" if origin.status is not None else "right after the acquisition"


def wrapper_what(call: Node, inner: str, release: bool) -> str:
    """"the error returned by Sync (from C.cudaDeviceSynchronize inside it)"."""
    name = syntax.text(call.child_by_field_name("function"))
    return f"the error returned by {name} (from {'the release ' if release else ''}{inner} inside it)"


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
    return f"compare it with {first_success_as_written(fact)} and handle the failure"

