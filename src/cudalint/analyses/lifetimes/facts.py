"""The facts the resource engine (`lifetimes`) exports about a package's
exported functions: what each does with each parameter (releases, retains
or only borrows it) and which resources it hands out (result k holds
resource R, held where its error is nil). In an importer, a call of such a
function is an acquisition, or a release or a borrow of its arguments,
exactly as the API knowledge would make it: a leak through `gpu.Alloc` in
package `svc` is found, and a `gpu.Fill(d)` that only borrows `d` is no
hand-over.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from cudalint.analyses.choices import Choice, variadic_from
from cudalint.analyses.lifetimes.outcomes import RECEIVER_HANDOUT, out_parameter
from cudalint.analyses.lifetimes.counted import hand_out_status, nil_when_failed
from cudalint.analyses.owners import owner_type
from cudalint.functions import Unit, exported_name
from cudalint.knowledge import StatusSpec


@dataclass(frozen=True)
class HandOut:
    """Result `index` of the function holds a `resource` of `family`."""

    index: int
    family: str
    resource: str
    returns_error: bool
    via: str  # the acquisition inside, for messages: "C.cudaMalloc at line 12 of memory.go"
    # A value of an owning type of the package holding the resource (`*Buffer`
    # from NewBuffer), released by any of its `methods`; "" for the bare handle.
    owner: str = ""
    methods: tuple[str, ...] = ()
    # The result is the function that releases it (`return s, func() {
    # destroy(s) }, nil`): any use of it disposes of it; and whether it is a
    # callable no-op where the function failed (`return func() {}, err`).
    cleanup: bool = False
    callable_when_failed: bool = False
    # Where it returns no error: the values of its last result that say it
    # succeeded (`true`, `OK`), as its package writes them; held where equal.
    succeeds_with: tuple[str, ...] = ()
    # The value is nil where the function fails (`return nil, err`).
    nil_when_failed: bool = False
    idempotent: tuple[str, ...] = ()  # of `methods`, those a second call of is harmless
    inert: tuple[str, ...] = ()  # the owning type's methods that reach no GPU API
    chosen: tuple[tuple[str, Choice], ...] = ()  # of `methods`, those that release for some arguments only
    # Acquired only for some values of an argument (`NewTensor(data, shape, "gpu")`),
    # and the index of the function's variadic parameter (-1: none).
    chosen_by: Choice | None = None
    variadic_from: int = -1


@dataclass(frozen=True)
class ResourceEffects:
    """The fact: the resources handed out, and per parameter "releases",
    "retains" or "borrows"."""

    hands_out: tuple[HandOut, ...] = ()
    params: tuple[str, ...] = ()
    # The counted (handle-less) kinds it releases on some path, (family,
    # resource): `defer gpu.Shutdown()` in an importer gives NVML's count back.
    counted_releases: tuple[tuple[str, str], ...] = ()
    # The last parameter is variadic: an argument past it gets its effect.
    variadic: bool = False

    def effect_at(self, index: int) -> str:
        """What the function does with its argument at `index`."""
        if self.variadic and index >= len(self.params) > 0:
            index = len(self.params) - 1
        return self.params[index] if 0 <= index < len(self.params) else "retains"

    def concerns_callers(self) -> bool:
        """A parameter only kept or lent concerns a caller only where it
        holds a resource, which something else must have given it."""
        return bool(self.hands_out or self.counted_releases) or "releases" in self.params


def exported_effects(engine: Any) -> dict[str, ResourceEffects]:
    """The facts of the package's exported functions that say something (a
    function that hands nothing out and only retains says nothing new).
    Only a function that calls the API, or a wrapper of it, can hand out,
    release or use a handle in a way the knowledge describes; any other
    keeps the conservative default at its callers (a hand-over)."""
    found: dict[str, ResourceEffects] = {}
    summarised = engine.units_with_effects()
    for unit in summarised:
        name = exported_name(unit)
        if name is None or unit.body is None:
            continue
        # A count (index -1) travels where its condition does: a nil error,
        # a success status of its family as the last result (`return
        # s.lib.Init()`), or a function with no result at all.
        hands_out = tuple(
            replace(
                _hand_out(origin, index, unit.returns_error, _success(engine, unit, origin, index), nil_when_failed(unit, index)),
                chosen_by=engine.chosen_by(unit, origin), variadic_from=variadic_from(unit),
            )
            for origin, index in engine.handed_out(unit)
            if (index >= 0 and origin.role.handle != "none") or index == RECEIVER_HANDOUT or unit.returns_error
            or unit.node.child_by_field_name("result") is None or _counted_status(unit, origin, index) is not None
            or out_parameter(index) is not None
        )
        params = tuple(engine.effect_of_argument(unit, i).value for i in range(len(unit.params)))
        counted = engine.counted_releases(unit)
        if hands_out or counted or any(effect != "retains" for effect in params):
            found[name] = ResourceEffects(hands_out, params, counted, variadic=unit.variadic)
    for unit, lent in engine.c_borrowers(summarised):
        name = exported_name(unit)
        if name is not None and name not in found:
            found[name] = ResourceEffects((), tuple("borrows" if only_lent else "retains" for only_lent in lent))
    return found


def _counted_status(unit: Unit, origin: Any, index: int) -> StatusSpec | None:
    """The status a count's initialiser returns last, of the count's own
    family, where it returns no error (`func (s *Service) Init() nvml.Return`)."""
    if index >= 0 or unit.returns_error or origin.role.handle != "none":
        return None
    handed = hand_out_status(unit, origin)
    return handed[1] if handed is not None and handed[1] is not None else None


def _success(engine: Any, unit: Unit, origin: Any, index: int) -> tuple[str, ...]:
    """The values of the last result that say the handle or count was handed out."""
    status = _counted_status(unit, origin, index)
    if status is None and out_parameter(index) is not None and not unit.returns_error:
        status = origin.api.status  # filled through a pointer, its own status returned as it came
    return engine.success_spelled(status) if status is not None else engine.success_beside(unit, index)


def _hand_out(origin: Any, index: int, returns_error: bool, success: tuple[str, ...], nil: bool) -> HandOut:
    inner = origin.innermost
    resource = origin.resource
    via = f"{inner.written} at line {inner.line} of {inner.unit.file.source.path.name}"
    if resource.owns is None:
        return HandOut(
            index, inner.api.family.name, resource.name, returns_error, via,
            cleanup=resource.any_use_releases, callable_when_failed=resource.callable_when_failed, succeeds_with=success,
        )
    methods = tuple(role.method for role in resource.release)
    # A type of another package (`ts.Tensor` handed on by `nn.NewConv2D`) keeps its qualifier.
    qualifier = resource.release[0].call.split(".")[0] if resource.release else "_"
    owner = owner_type(resource) if qualifier == "_" else f"{qualifier}.{owner_type(resource)}"
    return HandOut(
        index, inner.api.family.name, resource.owns.name, returns_error, via, owner, methods, succeeds_with=success,
        nil_when_failed=nil, idempotent=tuple(sorted(resource.idempotent)), inert=tuple(sorted(resource.inert)), chosen=resource.chosen,
    )
