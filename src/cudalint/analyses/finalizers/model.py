"""What the finalizer analysis speaks of: access paths to handles, the
releases made on them and the guards around those releases, and the
finalizer registrations."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tree_sitter import Node

from cudalint.functions import Unit
from cudalint.knowledge import ResourceSpec
from cudalint.scope import Symbol


class GuardKind(str, Enum):
    CLEARED = "cleared"
    CANCELLED = "cancelled"
    ONCE = "once"
    CHECKED = "checked"
    SET = "set"


@dataclass(frozen=True)
class Guard:
    kind: GuardKind
    # ONCE, CHECKED, SET: the field (path from the release's root);
    # CANCELLED: the object whose finalizer is cancelled; CLEARED: the
    # location assigned, a prefix of the handle's path ("*" for `*b = T{}`).
    path: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Release:
    """A release of the handle at `root.path`, made in `unit` at `node`
    (the API call itself, or the call or statement that leads to it)."""

    unit: Unit
    node: Node
    api_call: Node  # the API release call, in whatever function it is
    api_unit: Unit
    written: str  # "C.cudaFree"
    resource: ResourceSpec
    family: str  # the knowledge family of the release: "cuda-runtime"
    root: Symbol | None
    root_type: str | None
    path: tuple[str, ...]
    guards: frozenset[Guard] = frozenset()
    through: tuple[str, ...] = ()  # the functions called on the way, outermost first

    def has(self, kind: GuardKind, path: tuple[str, ...] | None = None) -> bool:
        return any(g.kind is kind and (path is None or g.path == path) for g in self.guards)


class Form(str, Enum):
    METHOD = "method expression"
    FUNCTION = "function"
    LITERAL = "func literal"
    VARIABLE = "func literal in a variable"


@dataclass
class Registration:
    """One `runtime.SetFinalizer(obj, f)` whose f the analysis can follow."""

    unit: Unit  # the function that registers
    call: Node
    obj: Node  # the first argument
    finalizer: Unit
    form: Form
    type_name: str | None  # the finalized object's type, pointers stripped
    object_text: str  # how messages name the object: "b"
    releases: list[Release] = field(default_factory=list)  # on the object, paths relative to it
    # Fields of the object the registering code sets (`b.gogc = true`, `&T{gogc: true}`).
    flags: set[tuple[str, ...]] = field(default_factory=set)

    @property
    def finalizer_label(self) -> str:
        """How messages name the finalizer: "the finalizer (*Buffer).Free"."""
        if self.form is Form.LITERAL:
            return "the finalizer literal"
        if self.form is Form.VARIABLE:
            stored = self.finalizer.stored_in
            return f"the finalizer literal in {stored.name if stored is not None else 'a variable'}"
        return f"the finalizer {self.finalizer.name}"

    def handle(self, path: tuple[str, ...]) -> str:
        return self.object_text + "".join("[i]" if p == "[]" else "." + p for p in path)


@dataclass
class Access:
    """An access path: `path` from the variable `root` (of type `root_type`)."""

    root: Symbol | None
    root_type: str | None
    path: tuple[str, ...]
