"""CL401: a thread-bound CUDA call in a goroutine that has not locked its OS thread."""

from __future__ import annotations

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.locks import LOCKS, Happening, concerns_threads
from cudalint.catalog import Level, Rule
from cudalint.prefilter import imports_of
from cudalint.framework import Pass
from cudalint.functions import LiteralUse, Unit


def check(p: Pass) -> None:
    if not concerns_threads(p):
        return
    threads = p.result_of(LOCKS)
    for unit, graph in p.graphs_of(threads.solved_units()):
        # Reported at the outermost unlocked call: callers in the package
        # that call this function directly carry the finding; an exported
        # function nothing here calls leaves it to its callers outside
        # (package main has none).
        if threads.callers_own_the_thread(unit) or threads.reported_by_callers(unit):
            continue
        if threads.hands_context_to_own_goroutine(unit):
            continue  # its bindings serve a goroutine of its own that locks
        with p.isolating(unit):
            for _, happening, locked in threads.visits(unit, graph):
                if locked == 0 and threads.unlocked_need(happening):
                    p.report(unit, happening.call, _message(unit, threads.chain(happening)))


def _message(unit: Unit, chain: list[Happening]) -> str:
    names = [syntax.text(h.call.child_by_field_name("function")) for h in chain]
    if chain[-1].via:
        names.append(chain[-1].via)
    where = "this goroutine" if unit.use is LiteralUse.GO else unit.name
    what = names[0] if len(names) == 1 else f"{names[0]} (through {' -> '.join(names[1:])})"
    return (
        f"{what} binds CUDA state to the current OS thread, but {where} has not called "
        f"runtime.LockOSThread on every path before it (nor have all its callers in this package): "
        f"the goroutine may move to another thread; call runtime.LockOSThread() first"
    )


RULE = Rule(
    "CL401", "context-call-unlocked", Level.ERROR,
    "A thread-bound CUDA call in a goroutine that has not locked its OS thread.",
    """
    ## What it does
    Reports a call that binds CUDA state to the calling OS thread
    (`cudaSetDevice`, `cuCtxSetCurrent`, `cuCtxPushCurrent`, `cuCtxCreate`,
    ... as `rules/*.toml` lists them under `[threads]`, or an exported
    function of another package of the module that reaches one unlocked) in a function or `go`
    literal that has not called `runtime.LockOSThread` on every path before
    it, directly or through a function of the package that locks (or of
    another package of the module, as its summary says), and whose
    callers in the package have not either. A function nothing in the package
    calls (or only itself) counts as unlocked, and an exported function or
    a method that nothing in the package calls is left to its callers
    outside (test entry points, `TestX` and `BenchmarkX`, included; except
    an exported function of package main, which nobody imports); package `init` functions run
    locked (runtime.main locks the main goroutine to the main thread while
    packages initialise), and so do the functions only they call; a context
    constructor that starts a goroutine which locks its thread and makes a
    context current there (`go w.run()`) needs no lock of its callers; a `go` literal starts unlocked,
    and so does a literal kept in a variable and started with `go v()`. A
    func literal passed as an argument runs in a context cudalint cannot see
    (often a locked worker goroutine fed through a channel) and is not
    reported, nor is a function or method used as a value (a callback). Lock
    wrappers count as locks: a function that returns with the thread locked,
    or locked exactly where its error result is nil (`lockDevice` unlocking
    on failure); the unlock half of an exported lock/unlock pair runs locked.
    A deferred call runs after the defers registered after it, so
    `defer restore(); defer runtime.UnlockOSThread()` runs `restore` unlocked.

    ## Why is this bad?
    The Go scheduler may move the goroutine to another OS thread between any
    two statements. The next CUDA call then runs with another thread's
    current device or context: allocations land on the wrong GPU, or the
    driver reports `CUDA_ERROR_INVALID_CONTEXT`, intermittently and under load.

    ## Example
    ```go
    go func(dev int) {
        if st := C.cudaSetDevice(C.int(dev)); st != C.cudaSuccess {
            return
        }
        run(dev)
    }(0)
    ```

    ## Use instead
    ```go
    go func(dev int) {
        runtime.LockOSThread()
        defer runtime.UnlockOSThread()
        if st := C.cudaSetDevice(C.int(dev)); st != C.cudaSuccess {
            return
        }
        run(dev)
    }(0)
    ```

    """,
    tags=("correctness", "concurrency"),
    check=check,
    requires=(CALLS, LOCKS),
    needles=lambda knowledge: frozenset({b"LockOSThread", b"UnlockOSThread"}) | imports_of(knowledge, lambda family: bool(family.thread_bound)),
)
