"""The engine's front: one object per package that rules and analyses ask.

It wires the jobs together, each given its collaborators: `effects`
(callees' summaries, computed by the walk), `closures` (func literals and
defers the walk meets), `walk` (the path walk), `origins` (acquisitions and
their birth), `handouts` (what the package's functions give their callers)
and `collect` (following each acquisition into outcomes). The effects and
the walk need each other (a summary is a walk; a walk asks callees'
summaries), so the effects reach the walk through this front.

A function's outcomes are computed once, on first demand, within a budget
of path states; a function beyond it is given up (a `too-complex`
notification), never analysed in silence or in gigabytes.
"""

from __future__ import annotations

import re
from functools import partial
from collections.abc import Callable

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CallIndex
from cudalint.analyses.call_kinds import value_parent
from cudalint.analyses.choices import Choice
from cudalint.analyses.lifetimes.closures import Closures
from cudalint.analyses.lifetimes.collect import Collector
from cudalint.analyses.lifetimes.counted import Counted, is_counted
from cudalint.analyses.lifetimes.effects import Effects
from cudalint.analyses.lifetimes.flags import flag_guarded, flag_set_between
from cudalint.analyses.lifetimes.constructions import Constructions
from cudalint.analyses.lifetimes.handouts import HandOuts
from cudalint.analyses.lifetimes.origins import Origins
from cudalint.analyses.lifetimes.nils import NilLocals
from cudalint.analyses.lifetimes.outcomes import Effect, Origin, Summary, UnitLifetimes
from cudalint.analyses.lifetimes.resources import VariableResources
from cudalint.analyses.lifetimes.states import PathBudgetExceeded, State, WalkRecord
from cudalint.analyses.lifetimes.walk import Walker
from cudalint.analyses.owners import Owners
from cudalint.analyses.status import StatusSemantics, success_beside, success_spelled
from cudalint.analyses.uses import Use, UseKind, VariableUses
from cudalint.cfg import CFG, NodeKind, PackageCFGs
from cudalint.framework import FactView
from cudalint.functions import Unit, UnitKind, exported_name
from cudalint.gotypes import named_type
from cudalint.knowledge import ResourceSpec, StatusSpec
from cudalint.scope import Role, Symbol

# Path states one function's lifetimes may visit, over all its origins and
# the summaries they need: beyond it the function is reported as too complex
# (a `too-complex` notification), never analysed in silence or in gigabytes.
UNIT_BUDGET = 100_000


class Engine:
    def __init__(
        self, cfgs: PackageCFGs, calls: CallIndex, uses: VariableUses, owners: Owners, status: StatusSemantics, imported: FactView,
    ):
        self.owners = owners  # the package's owning types, for its exported summary
        self._imported = imported
        self._uses = uses
        self._cfgs = cfgs
        self._calls = calls
        self._results: dict[Unit, UnitLifetimes] = {}
        self._analysing: set[Unit] = set()
        self._effects = Effects(
            cfgs, calls, self._walk_from_entry, imported, lambda graph, kind, before: self._counted.fails(graph, None, kind, before),
        )
        closures = Closures(calls, uses, self._effects)
        self._resources = VariableResources(calls, owners)
        nils = NilLocals(calls, status)
        counted = Counted(calls, uses, status, self._effects.imported, nils, partial(_never_returns, cfgs))
        self._walker = Walker(calls, uses, status, self._resources, self._effects, closures, counted, nils)
        made = Constructions(calls, owners)
        self._hand_outs = HandOuts(
            calls, owners, self.lifetimes, self._analysing.__contains__, self._effects.hands_out, self._releases_captured(uses),
            counted.releases, status.converts_at, made.functions,
        )
        self._origins = Origins(calls, self._effects, self._hand_outs.handed_out, self.lifetimes, owners, made)
        self._collector = Collector(self._origins, self._walker, closures, uses, counted)
        self._counted = counted

    def _releases_captured(self, uses: VariableUses) -> Callable[[Unit, str], bool]:
        """Whether a func literal releases, on every path, the variable of
        that name it captures (`func() { C.cudaStreamDestroy(s) }`)."""

        def releases(literal: Unit, name: str) -> bool:
            return any(
                symbol.name == name and self._effects.summary(literal, symbol).releases_on_every_path
                for symbol in uses.captures(literal)
            )

        return releases

    def releasing_function(self, import_path: str, type_name: str = "", acquirer: str = "", resource: str = "") -> str | None:
        """The function of another package of the module that releases its
        one parameter and hands nothing out (`gpubind.Free`), or the method
        of its type `type_name` that does (`GPU.Free`, named "Free"), to
        name in a remedy where a resource came from that package: the one
        there is, or of several the one named like the acquirer
        (`DestroyGroup` for `CreateGroup`, `FieldGroupDestroy` for
        `FieldGroupCreate`), else like the resource (`DestroyGroup` for a
        "DCGM GPU group" from `WatchPidFields`); None otherwise."""
        prefix = type_name + "." if type_name else ""
        found = [
            name[len(prefix):] for name in self._imported.names(import_path)
            if name.startswith(prefix) and "." not in name[len(prefix):]
            and (effects := self._imported.get(import_path, name)) is not None
            and effects.params == ("releases",) and not effects.hands_out
        ]
        if len(found) > 1 and acquirer:
            named = [name for name in found if _stem(name) == _stem(acquirer)]
            if not named and resource:
                # The longest stem the resource's name ends with: "DCGM field group" is a FieldGroup.
                spelled = resource.replace(" ", "").lower()
                ends = [name for name in found if _stem(name) and spelled.endswith(_stem(name).lower())]
                longest = max((len(_stem(name)) for name in ends), default=0)
                named = [name for name in ends if len(_stem(name)) == longest]
            found = named
        return found[0] if len(found) == 1 else None

    def releasing_count(self, import_path: str, resource: str) -> tuple[str, int] | None:
        """The one exported function or method (`Shutdown`, `Client.Close`) of
        another package of the module that gives back a count of `resource`
        and hands nothing out, and how many parameters it takes, to name in a
        remedy where that package's wrapper took the count: the importer may
        not import the binding."""
        found = [
            (name, len(effects.params)) for name in self._imported.names(import_path)
            if (effects := self._imported.get(import_path, name)) is not None and not effects.hands_out
            and any(kind == resource for _, kind in effects.counted_releases)
        ]
        return found[0] if len(found) == 1 else None

    def releasing_method(self, type_name: str, acquirer: str) -> str | None:
        """The method of the package's type `type_name` that takes one value
        and releases it (`func (cudaGPU) Free(p unsafe.Pointer) error`), to
        name in a remedy for what another of its methods handed out: the
        one there is, or of several the one named like the acquirer."""
        found = [
            unit.name.rsplit(".", 1)[-1] for unit in self._calls.methods_of_type(type_name) if self._releases_its_parameter(unit)
        ]
        if len(found) > 1:
            found = [name for name in found if _stem(name) == _stem(acquirer)]
        return found[0] if len(found) == 1 else None

    def releasing_function_of(self, type_name: str) -> str | None:
        """The function of this package that takes one value of the package's
        type `type_name` (or a pointer to it) and releases it (`func
        DestroyPlain(p Plain)`), to name in a remedy for a wrapped handle:
        None unless there is exactly one."""
        found = [
            unit.name for unit in self._calls.package.units
            if unit.kind is UnitKind.FUNCTION and len(unit.params) == 1 and unit.params[0].type_node is not None
            and named_type(unit.params[0].type_node) == type_name and self._releases_its_parameter(unit)
        ]
        return found[0] if len(found) == 1 else None

    def releasing_function_like(self, acquirer: str) -> str | None:
        """The one function of this package that takes one value and
        releases it, named like the acquirer (`CloseIpcMemHandle` for
        `OpenIpcMemHandle`), where the handle's type is another package's."""
        found = [
            unit.name for unit in self._calls.package.units
            if unit.kind is UnitKind.FUNCTION and _stem(unit.name) == _stem(acquirer) and unit.name != acquirer
            and self._releases_its_parameter(unit)
        ]
        return found[0] if len(found) == 1 else None

    def success_spelled(self, status: StatusSpec) -> tuple[str, ...]:
        """A status's success values, and the package's constants made of them."""
        return success_spelled(status, self._calls)

    def success_beside(self, unit: Unit, index: int) -> tuple[str, ...]:
        """The values of the last result that say `unit` handed out result
        `index` (`true`, `OK`), where it returns no error."""
        return success_beside(unit, index, self._calls)

    def chosen_by(self, unit: Unit, origin: Origin) -> Choice | None:
        """The values of `unit`'s arguments for which its acquisition `origin` runs."""
        return self._origins.choice(unit, origin.call)

    def _releases_its_parameter(self, unit: Unit) -> bool:
        """A function or method of the package with one parameter, which it releases."""
        return len(unit.params) == 1 and self._effects.effect(unit, unit.params[0]) is Effect.RELEASES

    # -- outcomes ---------------------------------------------------------------

    def lifetimes(self, unit: Unit) -> UnitLifetimes:
        """What happens to every acquisition of `unit` (empty for a function
        given up: over the budget of path states)."""
        found = self._results.get(unit)
        if found is None:
            self._analysing.add(unit)
            try:
                with self._walker.budget(UNIT_BUDGET):
                    found = self._analyse(unit)
            except PathBudgetExceeded:
                self._cfgs.give_up(unit, f"has too many paths to follow (over {UNIT_BUDGET:,} path states)")
                found = UnitLifetimes(unit)
            finally:
                self._analysing.discard(unit)
            self._results[unit] = found
        return found

    def units_with_acquisitions(self) -> list[Unit]:
        """The functions that acquire something: by an API call, or by a
        call of a function of the package that hands a resource out."""
        return self._hand_outs.units_with_acquisitions()

    def units_with_releases(self) -> list[Unit]:
        """The functions that acquire or may release something (a handle
        that arrives as a parameter, released by its own method: `m.Unload()`),
        whose double releases and uses after release are followed."""
        releasing = self.owners.releasing_units()
        acquiring = {unit.node for unit in self.units_with_acquisitions()}
        return [unit for unit in self._calls.package.units if unit.node in acquiring or unit.node in releasing]

    def units_with_effects(self) -> list[Unit]:
        """The functions whose exported facts can say something: those that
        acquire, and those that hand a parameter to a function of another
        package of the module whose facts say what it does with it (`func
        (p provider) DestroyGroup(g dcgm.GroupHandle) error { return
        dcgm.DestroyGroup(g) }` releases g; AddEntityToGroup borrows it)."""
        found = {unit.node: unit for unit in self.units_with_acquisitions()}
        releasing = self._calls.units_calling_module(
            lambda path, name: (effects := self._imported.get(path, name)) is not None and bool(effects.params),
        )
        for unit in releasing:
            found.setdefault(unit.node, unit)
        # And those that hand a parameter to such a function of the package
        # (`FindBestForwardAlgo(h, ...)` calling the generated
        # `FindConvolutionForwardAlgorithm(h, ...)`), up the package's calls.
        # (The calls of each found function, by its name: no body is resolved for this.)
        by_node = {unit.node: unit for unit in self._calls.package.units}
        pending = [unit for unit in found.values()]
        while pending:
            for call in self._calls.calls_of(pending.pop()):
                caller = by_node.get(syntax.enclosing_function(call))
                if caller is not None and caller.node not in found and caller.kind is not UnitKind.LITERAL and caller.params:
                    found[caller.node] = caller
                    pending.append(caller)
        if self._releases_counts():
            # A function that only gives a count back (`func Shutdown() error
            # { return shutdown() }`): its importers' remedy names it.
            for unit in self._calls.package.units:
                if unit.node not in found and exported_name(unit) is not None and self.counted_releases(unit):
                    found[unit.node] = unit
        return [unit for unit in self._calls.package.units if unit.node in found]

    def _releases_counts(self) -> bool:
        """Whether some call of the package releases a counted kind."""
        return any(
            fact.api is not None and any(role.handle == "none" for _, role in fact.api.roles("release"))
            for fact in self._calls.calls.values()
        )

    def c_borrowers(self, summarised: list[Unit]) -> list[tuple[Unit, tuple[bool, ...]]]:
        """The exported functions, not otherwise summarised, that lend
        parameters to C (`func StrLen(p *C.char) int { return
        int(C.strlen(p)) }`, a generated binding's thousands of `func
        AtgAbs(ptr *Ctensor, self Ctensor) { C.atg_abs(ptr, self) }`), and
        per parameter whether it is only lent: every use of it an argument
        of a C call that neither releases nor keeps it, or a read. Told from
        the syntax, without a walk: an importer's handle passed to one is
        borrowed, not handed over. `summarised`: the functions whose facts
        the walks make (`units_with_effects`), left to them."""
        walked = {unit.node for unit in summarised}
        by_node = {unit.node: unit for unit in self._calls.package.units if exported_name(unit) is not None}
        candidates: dict[Node, Unit] = {}
        for node, fact in self._calls.calls.items():
            if fact.import_path == "C":
                unit = by_node.get(syntax.enclosing_function(node))
                if unit is not None and unit.node not in walked and unit.params and unit.body is not None:
                    candidates.setdefault(unit.node, unit)
        found = []
        for unit in candidates.values():
            uses = self._uses.uses([unit.body])
            lent = tuple(
                all(
                    use.kind in (UseKind.PASS_API, UseKind.READ) or self._field_lent_to_c(use) or self._only_read(use)
                    for use in uses if use.symbol is param
                )
                for param in unit.params
            )
            if any(lent):
                found.append((unit, lent))
        return found

    def _only_read(self, use, depth: int = 0) -> bool:
        """`if v.p != nil` (a field compared), `if !pv.IsNil()` or
        `f.Empty()` (a method of the package that only reads its receiver,
        or lends it to C in turn): reads of a value lent to C."""
        if use.kind is UseKind.DEREF and use.field and use.node.parent is not None:
            parent = use.node.parent.parent
            return parent is not None and parent.type == "binary_expression" and syntax.text(
                parent.child_by_field_name("operator")
            ) in ("==", "!=")
        if use.kind is UseKind.METHOD and use.call is not None and depth < 2:
            target = self._calls.callee(use.call).target
            return target is not None and target.body is not None and all(
                inner.kind in (UseKind.PASS_API, UseKind.READ) or self._field_lent_to_c(inner) or self._only_read(inner, depth + 1)
                for inner in self._uses.uses([target.body]) if inner.symbol.role is Role.RECEIVER
            )
        return False

    def _field_lent_to_c(self, use) -> bool:
        """`C.GpuResize(src.p, dst.p, ...)` (gocv): a field of the value
        handed as is (conversions aside) to a C call that neither frees nor
        keeps that argument: the value is lent."""
        if use.kind is not UseKind.DEREF or not use.field or use.node.parent is None:
            return False
        value, arguments = value_parent(use.node.parent, self._calls.callee)
        fact = self._calls.calls.get(arguments.parent) if arguments is not None and arguments.type == "argument_list" else None
        if fact is None or fact.import_path != "C":
            return False
        index = [c.id for c in syntax.children(arguments)].index(value.id)
        api = fact.api
        return api is None or (
            index not in api.kept_args and not any(role.index == index for _, role in api.roles("release") + api.roles("transfer"))
        )

    def handed_out(self, unit: Unit) -> list[tuple[Origin, int]]:
        """What a function of the package hands its caller: (acquisition,
        result index) for each resource it acquires, never leaks, and
        returns."""
        return self._hand_outs.handed_out(unit)

    def returns_on_success(self, origin: Origin) -> list[int]:
        """The return statements reached from the acquisition on its success
        side (where the resource is held), in node order."""
        graph = self._cfgs.graphs[origin.unit]
        birth = self._origins.birth(origin)
        if birth is None or birth[1] is None:
            return []
        state = birth[1]
        walker = self._walker

        def step(n: int, _: None):
            if n != origin.node and graph.kind(n) is NodeKind.RETURN:
                return
            for edge in graph.out_edges(n):
                if walker.through_edge(origin, state, edge) is not None:
                    yield edge.target, None

        return sorted(n for n, _ in graph.walk(origin.node, None, step) if graph.kind(n) is NodeKind.RETURN)

    def counted_releases(self, unit: Unit) -> tuple[tuple[str, str], ...]:
        """The counted (handle-less) kinds `unit` releases on some path,
        (family, resource): for its exported facts."""
        found = []
        for family in self._calls.knowledge.families:
            for resource in family.resources:
                if any(role.handle == "none" for role in resource.release) and self._counted.releases(unit, resource.name):
                    found.append((family.name, resource.name))
        return tuple(found)

    # -- effects ------------------------------------------------------------------

    def effect(self, unit: Unit, symbol: Symbol) -> Effect:
        """What `unit` does with the value of `symbol` it starts with (a
        parameter, or a variable a func literal captures)."""
        return self._effects.effect(unit, symbol)

    def summary(self, unit: Unit, symbol: Symbol) -> Summary:
        """How `unit`'s paths treat the value of `symbol` it starts with."""
        return self._effects.summary(unit, symbol)

    def effect_of_use(self, use: Use) -> Effect:
        """What the function a handle is passed to does with it."""
        return self._effects.effect_of_use(use)

    def effect_of_argument(self, unit: Unit, index: int) -> Effect:
        """What `unit` does with its argument at `index`."""
        return self._effects.effect_of_argument(unit, index)

    def resources_of(self, symbol: Symbol, origin: Origin | None = None) -> list[ResourceSpec]:
        """The resources a variable may hold: the followed origin's, or those
        its declared type or its initialising call say."""
        return self._resources.of(symbol, origin)

    # -- the jobs, wired ------------------------------------------------------------

    def _analyse(self, unit: Unit) -> UnitLifetimes:
        result = UnitLifetimes(unit)
        graph = self._cfgs.graphs.get(unit)
        if graph is None:
            return result
        api_facts = self._calls.api_facts_in(unit)
        origins = self._origins.of_wrappers(unit, graph) + self._origins.of_literals(unit, graph) + self._origins.of_constructions(unit, graph)
        if api_facts:
            origins += self._origins.of_api_calls(unit, graph)
        # Where counts of one kind are taken: a shutdown deferred after one
        # of them is that one's, not a later one's.
        counted = [(o.node, o.resource.name) for o in origins if is_counted(o)]
        for origin in origins:
            self._collector.follow(graph, origin, result, counted)
        if any(fact.api.is_release for fact in api_facts) or unit.node in self.owners.releasing_units():
            self._collector.released_parameters(graph, result)
        if result.double_releases and flag_guarded(unit):
            result.double_releases = [d for d in result.double_releases if not flag_set_between(graph, d.first, d.node)]
        return result

    def _walk_from_entry(self, graph: CFG, state: State) -> WalkRecord:
        """A summary's walk: the value held at the function's entry."""
        return self._walker.walk(graph, None, graph.entry, state, summary=True)


_VERBS = re.compile(r"Create|New|Alloc|Make|Open|Init|Destroy|Delete|Free|Release|Close|Remove|Shutdown|Unload|Load")


def _stem(name: str) -> str:
    """A function's name without its verbs: what it makes or frees (`Group`)."""
    return _VERBS.sub("", name)


def _never_returns(cfgs: PackageCFGs, unit: Unit) -> bool:
    return unit.kind is UnitKind.FUNCTION and unit.symbol is not None and cfgs.exits_of_function(unit.symbol) is not None
