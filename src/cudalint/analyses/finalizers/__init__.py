"""Finalizers: what `runtime.SetFinalizer` registers, what the registered
function releases, what guards those releases, and which other functions of
the package release the same handles.

A handle is named by an access path from a variable: `b.ptr` is the field
`ptr` of `b`, `mem.Ptr()` the accessor `Ptr` of `mem`. Each function gets a
summary: the releases it makes (API releases from the knowledge, directly or
through functions of the package it calls, func literals it calls in place,
defers, or passes to `sync.Once.Do`), each on an access path from one of its
variables, with the guards around it:

* CLEARED: the field (or what holds it: the slice of handles, the whole
  struct with `*b = T{}`) is assigned on every path through the release,
  after it or (with the handle copied to a local first) before it: set to
  nil or zero, or to a new handle, it no longer holds the freed one;
* CANCELLED: the function calls `runtime.SetFinalizer(x, nil)`;
* ONCE: the release runs inside `x.once.Do(...)`;
* CHECKED / SET: the release is reached only through a condition that reads
  a flag field of the same object (plain, atomic or under a mutex), and the
  function writes that flag.

A release in a callee is mapped to the caller through the argument it was
passed (`b.free()` releases the receiver's `ptr`, so the call releases
`b.ptr`), and picks up the caller's guards around the call.

The result pairs each registration's releases with the explicit releases of
the same handle (same owner type, same path) in functions that can run other
than as the finalizer: exported functions and methods, `main`/`init`,
functions used as values, and, through their callers, the helpers those call.
A release guarded against running after the other is not a double release.
Rules read `double_releases()` (CL507) and `finalizer_only()` (CL508).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cudalint.analyses.calls import CALLS, CallIndex
from cudalint.analyses.finalizers.access import AccessPaths
from cudalint.analyses.finalizers.explicit import ExplicitReleases
from cudalint.analyses.finalizers.guards import Guards
from cudalint.analyses.finalizers.model import Form, Guard, GuardKind, Registration, Release
from cudalint.analyses.finalizers.registrations import Registrations
from cudalint.analyses.finalizers.releases import Summaries
from cudalint.analyses.owners import OWNERS
from cudalint.analyses.status import STATUS, StatusSemantics
from cudalint.framework import Analysis, Pass
from cudalint.gotypes import Paths
from cudalint.knowledge import ResourceSpec

__all__ = [
    "FINALIZERS", "FinalizerDoubleRelease", "FinalizerOnly", "Finalizers", "Form", "Guard", "GuardKind",
    "Registration", "Release", "gpu_resource",
]


@dataclass(frozen=True)
class FinalizerDoubleRelease:
    registration: Registration
    finalizer_release: Release
    explicit: Release


@dataclass(frozen=True)
class FinalizerOnly:
    registration: Registration
    release: Release


@dataclass
class Finalizers:
    registrations: list[Registration] = field(default_factory=list)
    _double_releases: list[FinalizerDoubleRelease] = field(default_factory=list)
    _finalizer_only: list[FinalizerOnly] = field(default_factory=list)

    def double_releases(self) -> list[FinalizerDoubleRelease]:
        """Finalizers that can free what an explicit release already freed (CL507)."""
        return self._double_releases

    def finalizer_only(self) -> list[FinalizerOnly]:
        """GPU resources that only a finalizer releases (CL508)."""
        return self._finalizer_only


# -- pairing --------------------------------------------------------------------


def gpu_resource(resource: ResourceSpec) -> bool:
    """Whether a resource occupies the GPU's resources (CL508 reports
    finalizer-only releases of these): not what the knowledge calls
    host-side (C heap memory, descriptors), not a handle-less pairing."""
    return not (resource.host_side or resource.any_use_releases or resource.handleless)


def _relative(types: Paths, release: Release, type_name_: str | None, path: tuple[str, ...]) -> tuple[str, ...] | None:
    """If `release` frees the handle `path` of an object of type
    `type_name_` (its root, or an object its path goes through), the prefix
    that leads from its root to that object."""
    if type_name_ is None or len(release.path) < len(path):
        return None
    along = types.along(release.root_type, release.path)
    k = len(release.path) - len(path)
    if release.path[k:] == path and along[k] == type_name_:
        return release.path[:k]
    return None


def _guarded(explicit: Release, prefix: tuple[str, ...], finalizer: Release, registration: Registration) -> bool:
    """Whether the explicit release cannot be followed by the finalizer's:
    it overwrites the handle inside the object, cancels the object's
    finalizer, shares a Once with the finalizer, sets a flag the finalizer
    checks, or checks a flag that the registration sets (the object is
    marked as owned by its finalizer: `b.gogc = true`)."""
    if explicit.has(GuardKind.CANCELLED, prefix):
        return True
    relative = {
        Guard(g.kind, g.path[len(prefix):]) for g in explicit.guards
        if g.path[: len(prefix)] == prefix and len(g.path) > len(prefix)
    }
    if any(g.kind is GuardKind.CLEARED for g in relative):
        return True
    if any(g.kind is GuardKind.CHECKED and g.path in registration.flags for g in relative):
        return True
    for guard in finalizer.guards:
        if guard.kind is GuardKind.ONCE and guard in relative:
            return True
        if guard.kind is GuardKind.CHECKED and Guard(GuardKind.SET, guard.path) in relative:
            return True
    return False


def find_finalizers(p: Pass) -> Finalizers:
    result = Finalizers()
    calls: CallIndex = p.result_of(CALLS)
    status: StatusSemantics = p.result_of(STATUS)
    types = calls.types.paths()
    if not any(True for _ in calls.calls_to("runtime", "SetFinalizer")):
        return result
    access_paths = AccessPaths(p.package, calls)
    guards = Guards(calls, status, access_paths)
    summaries = Summaries(p.package, p.cfgs, calls, access_paths, guards, p.result_of(OWNERS))
    registrations = Registrations(summaries)
    result.registrations = registrations.find()
    if not any(r.releases for r in result.registrations):
        return result
    explicit = ExplicitReleases(summaries, registrations.arguments).of(result.registrations)
    for registration in result.registrations:
        seen_paths: set[tuple[str, ...]] = set()
        for release in registration.releases:
            if release.path in seen_paths:
                continue
            seen_paths.add(release.path)
            matching = [
                (e, prefix) for e in explicit
                if (prefix := _relative(types, e, registration.type_name, release.path)) is not None
            ]
            if not matching:
                if gpu_resource(release.resource):
                    result._finalizer_only.append(FinalizerOnly(registration, release))
                continue
            for e, prefix in matching:
                if not _guarded(e, prefix, release, registration):
                    result._double_releases.append(FinalizerDoubleRelease(registration, release, e))
                    break
    return result


FINALIZERS: Analysis[Finalizers] = Analysis("finalizers", __doc__ or "", find_finalizers, requires=(CALLS, STATUS, OWNERS))
