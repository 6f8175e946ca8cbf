"""CL508: a GPU resource whose only release is a finalizer."""

from __future__ import annotations

from tree_sitter import Node

from cudalint.analyses.finalizers import FINALIZERS, Registration
from cudalint.catalog import Level, Rule
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit
from cudalint.prefilter import imports_of


def _place(registration: Registration, unit: Unit, node: Node, refs: dict[str, Ref]) -> str:
    if unit.file is registration.unit.file:
        refs["release"] = Ref(node, "the finalizer's release")
        return "@release"
    return f"{unit.file.display}:{node.start_point[0] + 1}"


def check(p: Pass) -> None:
    found = p.result_of(FINALIZERS)
    by_registration: dict[int, list] = {}
    for only in found.finalizer_only():
        by_registration.setdefault(id(only.registration), []).append(only)
    # Every registration is reported: each is a constructor whose callers
    # get no way to release what it made (a finalizer shared by 40 NPP
    # allocators is 40 findings, fixed by one exported Free).
    for group in by_registration.values():
        registration = group[0].registration
        release = group[0].release
        refs: dict[str, Ref] = {}
        at = _place(registration, release.api_unit, release.api_call, refs)
        handles = ", ".join(f"{registration.handle(o.release.path)} ({o.release.resource.name})" for o in group)
        obj = registration.object_text
        owner = registration.type_name
        give = f"give {owner} an exported" if owner is not None and "." not in owner else "provide an exported"
        p.report(
            registration.unit, registration.call,
            f"{handles} {'is' if len(group) == 1 else 'are'} released only by {registration.finalizer_label} "
            f"({release.written} at {at}): the GC runs finalizers when the Go heap grows and cannot see GPU memory, "
            f"so the device can run out long before it does; {give} "
            f"Close or Free that releases {'it' if len(group) == 1 else 'them'}, clears the handle and calls "
            f"runtime.SetFinalizer({obj}, nil), and keep the finalizer only as a safety net",
            **refs,
        )


RULE = Rule(
    "CL508", "finalizer-only-release", Level.NOTE,
    "A GPU resource whose only release is a runtime.SetFinalizer finalizer.",
    """
    ## What it does
    Reports a `runtime.SetFinalizer` registration whose finalizer releases
    device memory or another GPU resource (a stream, an event, a module, a
    library handle, pinned host memory) that no other function of the
    package releases: no exported method frees it and no code outside the
    finalizer calls a function that does. A release method that is
    unexported and only ever registered as the finalizer counts as
    finalizer-only, and so does one that a constant switches off
    (`if gcOwns { return nil }` with `const gcOwns = true`). The finalizer is
    followed into the functions it calls, the literals it hands to a worker
    (`w.Run(func() {...})`) and the goroutines it starts; a finalizer taking
    `interface{}` frees, for each registered type, what its type-switch
    clause for that type frees, and one ranging over a slice of the object
    (`for _, r := range p.regions { C.cudaFree(r.start) }`) frees each
    element. Resources the
    knowledge marks `host_side` (C heap memory, cuDNN and cuBLASLt
    descriptors) are not reported. A finalizer registered by several
    constructors is reported at each registration.

    ## Why is this bad?
    The GC runs when the Go heap grows. A small Go struct holding gigabytes
    of device memory adds a few bytes to the Go heap, so a program can fill
    the GPU and fail with `cudaErrorMemoryAllocation` while the garbage that
    would free it waits for a collection that Go-heap pressure never
    triggers. Finalizers are also not guaranteed to run at all before the
    program exits. An explicit release lets callers free the device memory
    when they are done with it; the finalizer can stay as a safety net.

    ## Example
    ```go
    type Stream struct{ s C.cudaStream_t }

    func NewStream() (*Stream, error) {
        s := &Stream{}
        if C.cudaStreamCreate(&s.s) != C.cudaSuccess {
            return nil, errors.New("cudaStreamCreate failed")
        }
        runtime.SetFinalizer(s, func(s *Stream) { _ = C.cudaStreamDestroy(s.s) })
        return s, nil
    }
    ```

    ## Use instead
    Give the type an exported release that callers can run when they are
    done, and register it as the finalizer, which stays only as a safety net:
    `runtime.SetFinalizer(s, (*Stream).Destroy)`.
    ```go
    type Stream struct{ s C.cudaStream_t }

    // Destroy releases the stream once; a later call, or the finalizer after
    // it, finds the handle cleared.
    func (s *Stream) Destroy() error {
        if s.s == nil {
            return nil
        }
        st := C.cudaStreamDestroy(s.s)
        s.s = nil
        runtime.SetFinalizer(s, nil)
        if st != C.cudaSuccess {
            return errors.New("cudaStreamDestroy failed")
        }
        return nil
    }
    ```

    """,
    tags=("resource-leak",),
    since="0.2.0",
    check=check,
    requires=(FINALIZERS,),
    # A finalizer matters where it releases a resource: the package reaches
    # an API (or calls a dependency's wrapper of one, analysed for that).
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
