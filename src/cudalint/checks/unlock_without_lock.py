"""CL403: an unlock with no lock before it."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.locks import LOCKS, Event, concerns_threads, exported, lock_follows, unlocked_before
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.framework import Pass
from cudalint.functions import Unit
from cudalint.prefilter import imports_of


def check(p: Pass) -> None:
    if not concerns_threads(p):
        return
    threads = p.result_of(LOCKS)

    def visit(unit: Unit, graph: CFG) -> None:
        # The unlock half of an exported lock/unlock pair is an API for
        # callers outside the package, which lock with the other half.
        if threads.wrapper(unit) is Event.UNLOCK and exported(unit) and threads.has_exported_lock:
            return
        entry = threads.entry_of(unit)
        for n, happening, locked in threads.visits(unit, graph):
            if locked != 0:
                continue
            if happening.event is Event.UNLOCK and unlocked_before(threads, graph, entry, n, happening):
                p.report(unit, happening.call, _message(unit.name, happening.call))
            elif (
                happening.event in (Event.DEFER_UNLOCK, Event.DEFER_CLOSURE) and threads.defers_unlock(happening)
                and not lock_follows(threads, graph, n)
            ):
                p.report(unit, happening.call, _message(unit.name, happening.call if happening.event is Event.DEFER_UNLOCK else None))

    p.visit_graphs(threads.solved_units(), visit)


def _message(function: str, call: Node | None) -> str:
    written = syntax.text(call.child_by_field_name("function")) if call is not None else ""
    # A binding's unlock (`ctx.Unlock()`, which calls runtime.UnlockOSThread) is named as written.
    unlock = f"{written}, which unlocks the thread," if written and not written.endswith("UnlockOSThread") else "runtime.UnlockOSThread"
    return (
        f"{unlock} can run in {function} without a runtime.LockOSThread before it "
        f"(neither here nor in every caller in this package); lock first, or remove the unlock"
    )


RULE = Rule(
    "CL403", "unlock-without-lock", Level.WARNING,
    "runtime.UnlockOSThread with no lock before it on some path.",
    """
    ## What it does
    Reports a `runtime.UnlockOSThread` (called or deferred) that some path
    reaches without a `runtime.LockOSThread` before it, in a function whose
    callers in the package have not locked either. The unlock half of a
    lock/unlock wrapper pair (`func lockGPU()` / `func unlockGPU()`) is fine.
    A binding's unlock that the knowledge names (gorgonia's `ctx.Unlock()`)
    counts as `runtime.UnlockOSThread`.

    ## Why is this bad?
    Locks nest: an unmatched unlock can undo a lock taken by someone else
    (a caller, or a library that pinned the thread on purpose), releasing a
    thread that CUDA state was bound to.

    ## Example
    ```go
    func work() error {
        defer runtime.UnlockOSThread()
        return check(C.cudaDeviceSynchronize())
    }
    ```

    ## Use instead
    ```go
    func work() error {
        runtime.LockOSThread()
        defer runtime.UnlockOSThread()
        return check(C.cudaDeviceSynchronize())
    }
    ```

    """,
    tags=("correctness", "concurrency"),
    check=check,
    requires=(CALLS, LOCKS),
    needles=lambda knowledge: frozenset({b"LockOSThread", b"UnlockOSThread"}) | imports_of(knowledge, lambda family: bool(family.thread_bound)),
)
