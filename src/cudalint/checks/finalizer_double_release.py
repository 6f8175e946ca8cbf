"""CL507: a finalizer that frees a handle an explicit release may already have freed."""

from __future__ import annotations

from tree_sitter import Node

from cudalint.analyses.finalizers import FINALIZERS, Registration
from cudalint.catalog import Level, Rule
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit
from cudalint.prefilter import imports_of


def place(registration: Registration, unit: Unit, node: Node, name: str, label: str, refs: dict[str, Ref]) -> str:
    """`@name` for a location in the finding's file, else file:line."""
    if unit.file is registration.unit.file:
        refs[name] = Ref(node, label)
        return f"@{name}"
    return f"{unit.file.display}:{node.start_point[0] + 1}"


def check(p: Pass) -> None:
    found = p.result_of(FINALIZERS)
    reported: set[int] = set()
    # One defect, one finding: the same finalizer registered in several
    # places, with the same unguarded explicit release, is reported at the first.
    defects: set[tuple[int, int, tuple[str, ...]]] = set()
    for double in found.double_releases():
        registration = double.registration
        release, explicit = double.finalizer_release, double.explicit
        defect = (id(registration.finalizer), id(explicit.unit), release.path)
        if id(registration) in reported or defect in defects:
            continue
        reported.add(id(registration))
        defects.add(defect)
        handle = registration.handle(release.path)
        obj = registration.object_text
        refs: dict[str, Ref] = {}
        at_release = place(registration, release.api_unit, release.api_call, "release", "the finalizer's release", refs)
        at_explicit = place(registration, explicit.unit, explicit.node, "explicit", "the explicit release", refs)
        others = len({d.finalizer_release.path for d in found.double_releases() if d.registration is registration}) - 1
        more = f" (and {others} more handle{'s' if others > 1 else ''})" if others > 0 else ""
        if explicit.unit is registration.finalizer:
            head = (
                f"{registration.finalizer.name} is registered as the finalizer of {obj} and can also be called: after "
                f"an explicit call, the GC calls it again and {release.written} (at {at_release}) frees {handle} a second time{more}"
            )
            fix = f"set {handle} to nil after the release and skip a nil handle, or call runtime.SetFinalizer({obj}, nil) in it"
        else:
            head = (
                f"{explicit.unit.name} frees {handle} (at {at_explicit}), and {registration.finalizer_label} frees it "
                f"again with {release.written} (at {at_release}) when the GC collects {obj}{more}"
            )
            fix = (
                f"in {explicit.unit.name}, call runtime.SetFinalizer({obj}, nil) or set {handle} to nil after the release"
            )
        p.report(
            registration.unit, registration.call,
            f"{head}: nothing clears the handle, runs the release once, or cancels the finalizer in between, and "
            f"{_consequence(release.resource.name)}; {fix}",
            **refs,
        )


def _consequence(resource: str) -> str:
    if "memory" in resource:
        return (
            "by then CUDA may have handed the address to another allocation, which the second free releases"
        )
    thing = resource if resource.endswith("handle") else f"{resource} handle"
    return f"the second release destroys a {thing} that may already name another one"


RULE = Rule(
    "CL507", "finalizer-double-release", Level.ERROR,
    "A finalizer that frees a handle an explicit release may already have freed.",
    """
    ## What it does
    Reports a `runtime.SetFinalizer` registration whose finalizer (a method
    expression such as `(*Buffer).Free`, a func literal, a function of the
    package, followed through the functions it calls) releases a handle of
    the object, such as `b.ptr`, that another function of the package can
    release first: an exported method (`Free`, `Close`), or any function that
    code outside the finalizer runs. The finding is at the registration.

    It is not reported when the explicit release is guarded against the
    finalizer running after it:

    - the field is set to nil or zero after the release on every path
      (`b.ptr = nil`, `*b = Buffer{}`, or copied to a local and cleared
      before freeing the copy), also in a closure deferred on the way
      (`defer func() { b.ptr = nil }()`), except on the paths where the
      release's own status says it failed (nothing was freed there); the
      finalizer then frees nil, which frees nothing;
    - the release runs inside the same `sync.Once` (`b.once.Do(...)`) on
      both paths;
    - the explicit path sets a flag field that the finalizer checks before
      releasing (plain under a mutex, or atomic: `b.closed.CompareAndSwap`,
      `atomic.SwapInt32(&b.freed, 1)`);
    - the explicit path cancels the finalizer: `runtime.SetFinalizer(b, nil)`;
    - the registering code marks the object as owned by its finalizer
      (`b.gc = true`, `&Buffer{gc: true}`) and the explicit release does
      nothing for such an object (`if b.gc { return nil }`).

    Guards and releases are followed into the functions of the package that
    each side calls (a `Close` that calls `b.forget()`, which cancels the
    finalizer, is guarded). A constructor that frees on its error path before
    it registers the finalizer is not an explicit release of a finalized
    object, and code that a constant switches off (`const gcOwns = true`,
    `if gcOwns { return }`) never runs. Clearing a field of a struct received
    by value (`func (b Buffer) Free()`) clears a copy, which guards nothing.

    ## Why is this bad?
    Measured on an NVIDIA H200 with driver 580: after `cudaFree(a)`, the next
    `cudaMalloc` of the same size returned the same address `a`; a second,
    stale `cudaFree(a)` then returned `cudaSuccess`, and the new owner's
    `cudaMemset` failed with `cudaErrorInvalidValue`. The allocator hands a
    freed address out again at once, so a double free is not an error the
    driver catches: it silently frees another live allocation. With a
    finalizer, every user who calls `Free` and then drops the object
    triggers it, some time later, on the GC's goroutine, far from the cause.

    ## Example
    ```go
    type Buffer struct{ ptr unsafe.Pointer }

    func NewBuffer(n C.size_t) (*Buffer, error) {
        b := &Buffer{}
        if C.cudaMalloc(&b.ptr, n) != C.cudaSuccess {
            return nil, errors.New("cudaMalloc failed")
        }
        runtime.SetFinalizer(b, (*Buffer).Free)
        return b, nil
    }

    func (b *Buffer) Free() {
        _ = C.cudaFree(b.ptr)
    }
    ```

    ## Use instead
    Keep the constructor, and make `Free` skip a cleared handle, clear the
    handle it frees and cancel the finalizer:
    ```go
    type Buffer struct{ ptr unsafe.Pointer }

    func (b *Buffer) Free() {
        if b.ptr == nil {
            return
        }
        _ = C.cudaFree(b.ptr)
        b.ptr = nil
        runtime.SetFinalizer(b, nil)
    }
    ```

    """,
    tags=("correctness", "memory-corruption"),
    since="0.2.0",
    check=check,
    requires=(FINALIZERS,),
    # A finalizer matters where it releases a resource: the package reaches
    # an API (or calls a dependency's wrapper of one, analysed for that).
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
