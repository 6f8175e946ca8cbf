"""CL402: a thread lock undone on some paths but not on others."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CallIndex
from cudalint.analyses.locks import LOCKS, Event, concerns_threads, lock_outcomes, unlocks_somewhere
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit
from cudalint.prefilter import imports_of


def check(p: Pass) -> None:
    if not concerns_threads(p):
        return
    threads = p.result_of(LOCKS)
    calls = p.result_of(CALLS)

    def visit(unit: Unit, graph: CFG) -> None:
        happenings = threads.happenings(unit)
        if not happenings:
            return
        lost = threads.lost_token(unit)
        if lost is not None:
            lock = next(h for items in happenings.values() for h in items if h.event is Event.LOCK)
            p.report(
                unit, lock.call,
                f"runtime.LockOSThread is handed to the caller with the value {unit.name} returns, but the failing "
                f"return at @lost keeps the thread locked and returns nothing to unlock it with; "
                f"call runtime.UnlockOSThread() before returning the error",
                lost=Ref(lost, "returns the error with the thread still locked"),
            )
            return
        if not unlocks_somewhere(threads, unit) or threads.goroutine_body(unit) or threads.locks_on_success(unit):
            return
        for n, items in happenings.items():
            for happening in items:
                if happening.event is not Event.LOCK or happening.via or not graph.reachable(n):
                    continue  # a lock wrapper's failing branch holds no lock
                outcomes = lock_outcomes(threads, graph, n, happening)
                if outcomes["unlocked"] and outcomes["locked"]:
                    p.report(
                        unit, happening.call, _undone_on_some_paths(happening.call, calls),
                        kept=Ref(graph.span(outcomes["locked"][0]), "returns with the thread still locked"),
                    )

    p.visit_graphs(threads.solved_units(), visit)


def _undone_on_some_paths(call: Node, calls: CallIndex) -> str:
    written = syntax.text(call.child_by_field_name("function"))
    if written.endswith("LockOSThread"):
        return (
            "runtime.LockOSThread is undone on some paths but not on the return at @kept; "
            "add `defer runtime.UnlockOSThread()` right after it"
        )
    # A binding's lock (gorgonia's `ctx.Lock()`), undone by the unlock its
    # family names for the same type (`cu.CUContext.Unlock`: `ctx.Unlock()`).
    fact = calls.call(call)
    family = fact.api.family if fact is not None and fact.api is not None else None
    receiver = fact.api.name.rsplit(".", 1)[0] if family is not None else ""
    unlock = next((name for name in family.thread_unlocks if name.rsplit(".", 1)[0] == receiver), None) if family else None
    operand = syntax.method_operand(call)
    remedy = (
        f"add `defer {syntax.text(operand)}.{unlock.rsplit('.', 1)[1]}()` right after the call"
        if unlock is not None and operand is not None else "unlock it there too, or defer the unlock right after the lock"
    )
    return f"{written} locks the thread, and it is undone on some paths but not on the return at @kept; {remedy}"


RULE = Rule(
    "CL402", "lock-without-unlock", Level.WARNING,
    "runtime.LockOSThread undone on some paths to a return but not on others.",
    """
    ## What it does
    Reports a `runtime.LockOSThread` call that is undone by
    `runtime.UnlockOSThread` (called, deferred, or in a deferred closure) on
    some paths to a normal return but not on others; paths that end the
    goroutine (`t.Fatal`, `runtime.Goexit`) or panic do not count. A function
    that never unlocks is taken to lock on purpose (a process-lifetime lock in
    `init`, a worker goroutine that owns its thread, a lock wrapper) and is
    not reported, nor is a lock wrapper that returns locked exactly where its
    error result is nil. Conditions on a flag the function never assigns are
    followed: `if pin { Lock }` ... `if pin { Unlock }` is balanced. A
    binding's calls that the knowledge names as locking and unlocking the
    thread (gorgonia's `ctx.Lock()` and `ctx.Unlock()`) count as the runtime's.

    The body of a goroutine (a `go` literal, or a function only ever started
    with `go`) is not reported either: returning from it still locked is the
    documented way to have Go terminate a thread whose state is spoiled.

    ## Why is this bad?
    On the paths that skip the unlock the calling goroutine stays wired to
    its thread, so work the caller does next, and whatever goroutine the
    thread serves later, runs with the CUDA context left behind.

    ## Example
    ```go
    runtime.LockOSThread()
    if err := setup(); err != nil {
        return err // still locked
    }
    runtime.UnlockOSThread()
    ```

    ## Use instead
    ```go
    runtime.LockOSThread()
    defer runtime.UnlockOSThread()
    ```
    """,
    tags=("correctness", "concurrency"),
    check=check,
    requires=(CALLS, LOCKS),
    needles=lambda knowledge: frozenset({b"LockOSThread", b"UnlockOSThread"}) | imports_of(knowledge, lambda family: bool(family.thread_bound)),
)
