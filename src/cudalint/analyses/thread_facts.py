"""The facts the lock analysis (`locks`) exports about a package's exported
functions: what each does to its caller's OS thread. In an importer, a call
of such a function is a thread-bound call (CL401's message names the call
inside: `gpu.SetDevice (through C.cudaSetDevice)`), a lock or an unlock, for
CL401-CL403. A lock wrapper that locks only where its error is nil
exports "lock-on-success": its callers count it as a lock, but its failing
branch is no lock left undone (CL402 holds only plain locks to every path).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cudalint import syntax
from cudalint.functions import exported_name


@dataclass(frozen=True)
class ThreadEffects:
    """The fact: the thread-bound call the function reaches with no lock of
    its own before it on some path ("C.cudaSetDevice"; its callers must
    hold the lock), and "lock" for a function that returns with the thread
    locked on every path, "lock-on-success" for one that returns locked
    exactly where its error is nil, "unlock" for one that only unlocks it."""

    needs_lock: str = ""
    thread: str = ""

    def concerns_callers(self) -> bool:
        return True


def exported_effects(threads: Any) -> dict[str, ThreadEffects]:
    """What each exported function does to its caller's thread, read off
    the package's solved lock states (`locks.LockStates`)."""
    found: dict[str, ThreadEffects] = {}
    for unit in threads.locked:
        name = exported_name(unit)
        if name is None:
            continue
        needs_lock = thread = ""
        need = threads.needs_lock(unit)
        if need is not None:
            inner = threads.chain(need)[-1]
            needs_lock = inner.via or syntax.text(inner.call.child_by_field_name("function"))
        wrapper = threads.wrapper(unit)
        # (A lock taken through another lock-on-success call, `lk, err :=
        # cuda.LockThread(dev)`, is held on every path by the count alone:
        # where its error is tested, only success keeps it.)
        if wrapper is not None and wrapper.value == "lock" and threads.locks_on_success(unit):
            thread = "lock-on-success"
        elif wrapper is not None and (wrapper.value == "unlock" or (wrapper.value == "lock" and threads.locks_always(unit))):
            thread = wrapper.value
        if needs_lock or thread:
            found[name] = ThreadEffects(needs_lock, thread)
    return found
