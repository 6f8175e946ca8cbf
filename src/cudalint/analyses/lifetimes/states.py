"""What the path walk carries and records.

A walk follows one handle (an acquisition, or a value a function starts
with) over (node, state) pairs. The state is small and finite so that the
walk terminates: which variables hold the handle, whether it is held or
released, the variable that carries the acquire's status, and the releases
registered to run at exit. What the walk sees on the way (exits with the
handle held, releases, hand-overs, double releases, uses after release) is
written into a `WalkRecord`, which the engine turns into outcomes.

The transition shared by the walk and the closures it meets (a release)
lives here too, so that neither reaches into the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from tree_sitter import Node

from cudalint.analyses.lifetimes.nils import NOTHING_KNOWN, Nilness
from cudalint.analyses.lifetimes.outcomes import Origin
from cudalint.analyses.uses import Use
from cudalint.cfg import ExitKind
from cudalint.knowledge import ResourceSpec
from cudalint.scope import Symbol


class Phase(str, Enum):
    HELD = "held"
    RELEASED = "released"


@dataclass(frozen=True)
class State:
    phase: Phase
    names: frozenset[Symbol]
    # The status of the acquire, while it has not been tested: a variable
    # (`st := C.cudaMalloc(&p, n)`) or the call itself inside a condition.
    proxy: Symbol | Node | None = None
    # The `defer release(x)` registered while held (it captured the value).
    deferred_release: int | None = None
    # That defer calls a release method that checks and clears the handle:
    # released before, it frees nothing at exit.
    deferred_idempotent: bool = False
    # Variables a deferred closure will release at exit, whatever they hold then,
    # and the defer statements of those that release on every path.
    closure_released: frozenset[Symbol] = frozenset()
    closure_always: frozenset[tuple[Symbol, int]] = frozenset()
    # A variable that went out of scope was captured by such a closure: the
    # closure still sees the value and releases it at exit.
    captured_release: bool = False
    released_at: int | None = None  # the node that released it
    # That release was a method that checks and clears the handle: the value
    # is empty from there on, and using it uses nothing freed.
    cleared: bool = False
    released_kind: str | None = None  # the resource it gave back there, where the release said
    # Of `names`, the local slices it was appended to (`bufs = append(bufs, d)`).
    collections: frozenset[Symbol] = frozenset()
    # Of `names`, the local slices of pointers to its variable (a kernel's
    # parameters): handing one to a call lends the variable, it does not
    # give the handle away.
    pointers: frozenset[Symbol] = frozenset()
    # Of `names`, the local structs that hold it in a field (`o.name = cs`),
    # with that field: only a release or use of that field is one of it.
    fields: frozenset[tuple[Symbol, str]] = frozenset()
    # The function's error locals known nil or not on this path (`var err error`).
    nils: Nilness = NOTHING_KNOWN
    # The node of a call that keeps the handle only where it succeeds (`b,
    # err := NewBlas(s)`, which stores s in the Blas it returns), whose error
    # the proxy now is: on the success side of its test the handle is the callee's.
    pending_at: int | None = None

    @property
    def pending(self) -> bool:
        return self.pending_at is not None

    @property
    def covered(self) -> bool:
        """A release registered to run at exit will release the handle."""
        return self.deferred_release is not None or self.captured_release or bool(self.names & self.closure_released)

    def holds_in_field(self, symbol: Symbol) -> bool:
        return any(holder is symbol for holder, _ in self.fields)


@dataclass
class WalkRecord:
    """Result of following one origin (or one parameter, for a summary)."""

    held_exits: list[tuple[int, ExitKind, tuple[int, ...]]] = field(default_factory=list)
    # Per held exit, the variables that held it there (`bufs`, where a
    # slice kept what the handle's own variable no longer does).
    held_in: dict[int, frozenset[str]] = field(default_factory=dict)
    released_exits: int = 0
    released_after: set[int] = field(default_factory=set)  # the statements those exits leave from
    transferred: int = 0
    # Of those, at a return that reports success (`return &Blas{stream: s}, nil`).
    kept_on_success: int = 0
    lost_in_scope: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)  # (node, line, path)
    overwrites: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    double_releases: list[tuple[int, int, bool]] = field(default_factory=list)  # (second, first, by defer)
    uses_after_release: list[tuple[int, Use, int]] = field(default_factory=list)  # (node, use, released at)
    # Calls of a count's family (`gates_family`) reached released, (node,
    # call, released at), and the calls reached with the count held.
    gated_after_release: list[tuple[int, Node, int]] = field(default_factory=list)
    gated_while_held: set[int] = field(default_factory=set)
    mismatches: list[tuple[int, str, ResourceSpec]] = field(default_factory=list)
    # Paths on which a count reaches its own acquisition again, still held
    # (a loop that takes it on every iteration).
    retaken: list[tuple[int, ...]] = field(default_factory=list)
    # Returned beside a failure (`return d, fmt.Errorf(...)`): its callers
    # hold it where the call failed too.
    returned_failing: bool = False
    # The call that keeps the handle where it succeeds (`NewBlas` of `b, err
    # := NewBlas(s)`), as written: a deferred release would free what it keeps.
    kept_by: str = ""


class PathBudgetExceeded(Exception):
    """The function has more paths than the engine follows."""


class LeftControl(Exception):
    """The followed handle left the function's control (transferred or failed)."""


def note_gated_call(fact, origin: Origin, state: State, n: int, call: Node, record: WalkRecord) -> None:
    """A status call of the family a count gates (`nvml.DeviceGetCount()`
    under NVML's count; `fact`: the call index's fact of the call): where
    the walk reaches it, released or held."""
    api = fact.api if fact is not None else None
    if not origin.resource.gates_family or api is None or api.status is None or api.acquires or api.releases:
        return
    if api.family.name != origin.api.family.name:
        return
    if state.phase is Phase.RELEASED:
        record.gated_after_release.append((n, call, state.released_at or 0))
    else:
        record.gated_while_held.add(call.id)


def release(origin: Origin | None, state: State, n: int, deferred: bool, record: WalkRecord, role, kind: str | None = None) -> State:
    """Node n releases the handle, now or (deferred) at exit: a second
    release is recorded, and so is a release of another kind of resource
    (`role`). `kind`: the resource the release gives back, where no role is
    checked against the acquisition's."""
    if role is not None and origin is not None:
        resource, _ = role
        if resource != origin.resource and resource.name != origin.resource.name:
            record.mismatches.append((n, role[1].call, resource))
    if deferred:
        if state.phase is Phase.RELEASED:
            record.double_releases.append((n, state.released_at or 0, False))
            return state
        if state.deferred_release is not None:
            record.double_releases.append((n, state.deferred_release, True))
            return state
        return replace(state, deferred_release=n)
    kind = role[0].name if role is not None else kind
    if state.phase is Phase.RELEASED:
        if kind is not None and state.released_kind is not None and kind != state.released_kind:
            return state  # `C.cudaHostUnregister(p)` then `C.free(p)`: one pointer, two resources
        record.double_releases.append((n, state.released_at or 0, False))
        return state
    return replace(state, phase=Phase.RELEASED, released_at=n, proxy=None, released_kind=kind)


def path_to(parents: dict, key) -> tuple[int, ...]:
    """The graph nodes from a search's start to `key`, read back through the
    parent links of a breadth-first search whose keys are (node, ...) tuples:
    the path a finding names, kept out of the search's states so that a
    state stays small."""
    nodes = []
    while key is not None:
        nodes.append(key[0])
        key = parents.get(key)
    return tuple(reversed(nodes))
