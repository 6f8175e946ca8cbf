"""What the resource engine finds: the data rules read.

An acquisition is an `Origin`; following it yields leaks, overwrites, double
releases, uses after release and mismatched releases, gathered per function
in a `UnitLifetimes`. What a function does with a value it starts with (a
parameter, a variable a func literal captures) is a `Summary` and its
`Effect`. Nothing here computes anything: these are the engine's answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tree_sitter import Node

from cudalint.analyses.uses import Use
from cudalint.functions import Unit
from cudalint.knowledge import ApiFunction, CallRole, ResourceSpec, StatusSpec
from cudalint.scope import Symbol

# The hand-out "index" of a method that acquires into its receiver's fields
# (`func (d *DeviceSlice) Malloc(n int) error` filling `d.inner`): its caller's
# variable holds what the method acquired.
RECEIVER_HANDOUT = -2

# The hand-out "index" of a function that acquires through its pointer
# parameter k (`func devAlloc(p *unsafe.Pointer, n int) error` calling
# `C.cudaMalloc(p, ...)`) is OUT_HANDOUT - k: its caller's `&d` holds it.
OUT_HANDOUT = -10


def out_parameter(index: int) -> int | None:
    """The pointer parameter an out hand-out fills, None for another index."""
    return OUT_HANDOUT - index if index <= OUT_HANDOUT else None


class Effect(str, Enum):
    """What a function does with a handle passed to one of its parameters."""

    RELEASES = "releases"
    RETAINS = "retains"
    BORROWS = "borrows"
    # Kept only where the function succeeds (stored in the value it returns
    # with a nil error): where it fails, the caller still holds the handle.
    KEEPS_ON_SUCCESS = "keeps-on-success"


@dataclass(frozen=True)
class Summary:
    """How a function's paths treat a value it starts with."""

    releases_on_some_path: bool
    releases_on_every_path: bool
    hands_over: bool  # returned, stored, passed on, on some path
    hands_over_only_on_success: bool = False  # only at returns that report success

    @property
    def effect(self) -> Effect:
        if self.releases_on_every_path and not self.hands_over:
            return Effect.RELEASES
        if self.hands_over and self.hands_over_only_on_success and not self.releases_on_some_path:
            return Effect.KEEPS_ON_SUCCESS
        if self.hands_over or self.releases_on_some_path:
            return Effect.RETAINS
        return Effect.BORROWS


@dataclass(frozen=True)
class Origin:
    unit: Unit
    node: int  # CFG node of the acquisition
    call: Node
    written: str  # the acquire call as written: "C.cudaMalloc"
    api: ApiFunction
    resource: ResourceSpec
    role: CallRole
    handle: str  # the handle as written in a message: "d", "cs"
    # Through a function of the package that hands the resource out (a
    # wrapper such as `alloc(n)`): the acquisition inside it; through a
    # function of another package of the module: where it acquires, said.
    via: Origin | None = None
    via_text: str = ""
    # Acquired inside a func literal into `captured`, a variable of this
    # function, by the literal's run at the call `through` (the literal
    # called in place, or passed to a function of the package that calls it).
    captured: Symbol | None = None
    through: Node | None = None
    # The wrapper returns it beside its failure too (`return d, fmt.Errorf(...)`):
    # held whether the call failed or not.
    beside_failure: bool = False

    @property
    def line(self) -> int:
        return self.call.start_point[0] + 1

    @property
    def innermost(self) -> Origin:
        """The API call that really acquired the resource."""
        origin = self
        while origin.via is not None:
            origin = origin.via
        return origin

    @property
    def status(self) -> StatusSpec | None:
        return self.api.status


class Lost(str, Enum):
    RETURN = "return"
    GOEXIT = "goexit"
    SCOPE = "scope"  # the variable holding it went out of scope (end of a loop iteration, a block)
    DISCARDED = "discarded"  # never stored in a variable at all


@dataclass(frozen=True)
class Leak:
    origin: Origin
    how: Lost
    node: int  # where it is lost: the return, the last node in scope, the acquire
    line: int
    path: tuple[int, ...]
    detail: str = ""  # DISCARDED: what happened to the temporary
    # A `defer` releasing this handle that does not cover this path: registered
    # before the acquisition (it released the old value), or never reached.
    other_defer: int | None = None  # its CFG node
    defer_too_early: bool = False
    # Every statement after which a path leaves the function with the
    # handle held (the first is `node`), and whether some path leaves
    # through one of them with it released: where a release could go.
    held_at: tuple[int, ...] = ()
    released_through_held: bool = False
    # The variables that still hold it there when its own no longer does: a
    # slice it was appended to (`bufs = append(bufs, d)`).
    held_in: str = ""
    # A count (a handle-less acquisition) held on a return that fails: the
    # caller sees the failure and never releases it.
    failing: bool = False
    # A handle lost on a return that reports a failure (a non-nil error):
    # on the paths where the function succeeds it may still hand it on.
    on_failure: bool = False
    # A call that keeps it where it succeeds, as written (`NewBlas`): a
    # deferred release would free what that call keeps.
    kept_by: str = ""
    # A count kept by a function a framework calls again and again (a
    # collector's Collect, an HTTP handler): what it is called on.
    per_call: str = ""
    # A count taken again by the same call on the next iteration of a loop,
    # the previous one still held.
    retaken: bool = False


@dataclass(frozen=True)
class Overwrite:
    origin: Origin
    node: int
    path: tuple[int, ...]


@dataclass(frozen=True)
class DoubleRelease:
    origin: Origin | None
    node: int  # the second release (a defer statement when by_defer)
    first: int  # the first release
    by_defer: bool  # the second release is a deferred one, running at exit
    handle: str


@dataclass(frozen=True)
class UseAfterRelease:
    origin: Origin | None
    node: int
    use: Use
    released: int  # the node that released it


@dataclass(frozen=True)
class GatedCallAfterRelease:
    """A call of the family a count gates, reached only after the release."""

    origin: Origin
    node: int
    call: Node
    released: int  # the node that released it


@dataclass(frozen=True)
class EarlyRelease:
    """A release registered (deferred) before the acquisition succeeded,
    reached on a path where it failed and the function returns."""

    origin: Origin
    defer: int  # the defer statement's node
    node: int  # the last node before the exit
    path: tuple[int, ...]
    panics: bool = False  # the exit is a panic, which runs the defer as it unwinds
    asserted: bool = False  # the exit is a failed `require.NoError(t, err)`, which ends the test
    unchecked: bool = False  # the acquisition's status is dropped: it may have failed anywhere after it


@dataclass(frozen=True)
class Mismatch:
    origin: Origin
    node: int
    release_call: str
    release_resource: ResourceSpec


@dataclass
class UnitLifetimes:
    unit: Unit
    origins: list[Origin] = field(default_factory=list)
    leaks: list[Leak] = field(default_factory=list)
    overwrites: list[Overwrite] = field(default_factory=list)
    double_releases: list[DoubleRelease] = field(default_factory=list)
    uses_after_release: list[UseAfterRelease] = field(default_factory=list)
    gated_after_release: list[GatedCallAfterRelease] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    # (acquisition, variable of the enclosing function that holds it): what a
    # func literal hands to the function around it.
    handed_up: list[tuple[Origin, Symbol]] = field(default_factory=list)
    # Counts (handle-less acquisitions) held on a succeeding return: handed
    # to the caller, which acquires the kind at its call.
    counted_out: list[Origin] = field(default_factory=list)
    early_releases: list[EarlyRelease] = field(default_factory=list)
    # Acquisitions returned beside a failure on some path (`return d,
    # fmt.Errorf(...)`): what the function hands out even where it fails.
    returned_failing: list[Origin] = field(default_factory=list)
