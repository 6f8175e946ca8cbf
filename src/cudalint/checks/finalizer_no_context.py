"""CL505 (retired): a driver-API release in a finalizer.

Retired in 0.2.0: its premise, that a finalizer's release fails for want of
a current CUDA context, is false on current drivers (see the documentation
below). The ID stays reserved so that suppressions, selections and
configurations naming it keep meaning the same thing; it never reports.
The finalizer bugs that do exist are CL507 and CL508.
"""

from __future__ import annotations

from cudalint.catalog import Level, Rule

RULE = Rule(
    "CL505", "finalizer-no-context", Level.NOTE,
    "Retired in 0.2.0 (releases in finalizers work without a current context); see CL507 and CL508.",
    """
    ## Retired
    Retired in 0.2.0. This rule reported a CUDA driver-API release
    (`cuMemFree`, `cuStreamDestroy`, ...) inside a `runtime.SetFinalizer`
    function that never made a context current, on the grounds that a
    finalizer runs on an OS thread with no current context, so the release
    would fail with `CUDA_ERROR_INVALID_CONTEXT` and the resource would leak.

    Measured on an NVIDIA H200 with driver 580, that premise is false:
    `cuMemFree`, `cuStreamDestroy` and `cuEventDestroy` called on a fresh
    thread with no current context, even with the owning context current on
    no thread at all, return `CUDA_SUCCESS` and the memory comes back;
    `cudaFree` from another thread succeeds too. Every CL505 finding on real
    code was therefore a false positive.

    The ID stays reserved and the rule never reports. `--select CL505`,
    `--ignore CL505` and `//cudalint:ignore CL505 <reason>` are accepted with
    a note saying the rule is retired (never an error): remove them at
    leisure.

    The finalizer bugs that do corrupt or exhaust GPU memory are reported by
    CL507 (finalizer-double-release: a finalizer frees a handle an explicit
    `Free` may already have freed, and the stale free releases another
    allocation that reused the address) and CL508 (finalizer-only-release:
    device memory released only when the GC, which cannot see it, gets
    around to it).
    """,
    tags=("retired",),
    retired=True,
)
