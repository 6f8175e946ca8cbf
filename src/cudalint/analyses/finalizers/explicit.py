"""Who can release a handle other than as the finalizer: exported
functions and methods, `main`/`init`, functions used as values, and, through
their callers, the helpers those call; and the explicit releases they make."""

from __future__ import annotations

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import unwrap
from cudalint.analyses.finalizers.model import Registration, Release
from cudalint.analyses.finalizers.releases import Summaries, is_once_do
from cudalint.functions import LiteralUse, Unit, UnitKind
from cudalint.scope import Role, Symbol

_ENTRY_NAMES = frozenset({"main", "init"})


class ExplicitReleases:
    """The explicit releases of one package. `registered` holds the
    finalizers the registrations name (Registrations.arguments): naming
    one there hands it to nobody."""

    def __init__(self, summaries: Summaries, registered: set[Node]):
        self.summaries = summaries
        self.registered = registered
        self._by_node: dict[Node, Unit] = {u.node: u for u in summaries.package.units}

    def finalizer_only_units(self, registrations: list[Registration]) -> set[Unit]:
        """Functions that run only as a finalizer: the registered ones that
        nothing outside can call, and the helpers only those call."""
        only = {r.finalizer for r in registrations if not self._callable_from_outside(r.finalizer)}
        changed = True
        while changed:
            changed = False
            for unit in self.summaries.package.units:
                if unit in only or unit.kind is UnitKind.LITERAL or self._callable_from_outside(unit):
                    continue
                users = self._users(unit)
                if users and all(user in only for user in users):
                    only.add(unit)
                    changed = True
        return only

    def _callable_from_outside(self, unit: Unit) -> bool:
        if unit.kind is UnitKind.LITERAL:
            return False
        name = unit.name.rsplit(".", 1)[-1]
        return name[:1].isupper() or (unit.kind is UnitKind.FUNCTION and name in _ENTRY_NAMES)

    def _users(self, unit: Unit) -> list[Unit] | None:
        """The functions that call or name `unit`; None when some use is
        not a plain call (a value handed on: anyone may call it)."""
        by_node = self._by_node
        users: list[Unit] = []
        for call in self.summaries.calls.calls_of(unit):
            user = by_node.get(syntax.enclosing_function(call))
            if user is not None:
                users.append(user)
        values: list[Node] = []
        if unit.kind is UnitKind.METHOD:
            values = self.summaries.calls.method_values(unit)
        elif unit.symbol is not None:
            for reference in self.summaries.calls.references(unit.symbol):
                parent = reference.parent
                if reference == unit.node.child_by_field_name("name"):
                    continue
                if parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == reference:
                    continue
                values.append(reference)
        for value in values:
            holder = value.parent.parent if value.parent is not None and value.parent.type == "argument_list" else None
            if value in self.registered or (holder is not None and is_once_do(holder)):
                user = by_node.get(syntax.enclosing_function(value))
                if user is not None:
                    users.append(user)
                continue
            return None
        return users

    def is_entry(self, unit: Unit, only: set[Unit]) -> bool:
        """Whether code outside the package's own calls can run `unit`."""
        if unit in only:
            return False
        if unit.kind is UnitKind.LITERAL:
            # Stored or returned, it may run anywhere; otherwise it runs with its function.
            return unit.node not in self.registered and unit.use in (LiteralUse.STORED, LiteralUse.RETURNED)
        if self._callable_from_outside(unit):
            return True
        return self._users(unit) is None

    def of(self, registrations: list[Registration]) -> list[Release]:
        only = self.finalizer_only_units(registrations)
        registered_on = {}
        for registration in registrations:
            symbol = self.summaries.resolution.symbol(registration.obj) if syntax.unparen(registration.obj).type == "identifier" else None
            if symbol is not None:
                registered_on.setdefault((registration.unit, symbol), []).append(registration.call)
        out = []
        for unit in self.summaries.package.units:
            if unit in only or (unit.kind is UnitKind.LITERAL and not self.is_entry(unit, only)):
                continue
            entry = None
            for release in self.summaries.summary(unit):
                root = release.root
                if root is not None and root.role in (Role.PARAM, Role.RECEIVER) and root.function == unit.node:
                    if entry is None:
                        entry = self.is_entry(unit, only)
                    if not entry:
                        continue
                if root is not None and root.role is Role.LOCAL and root.function == unit.node:
                    if not self._registered_before(unit, root, release, registered_on.get((unit, root), [])):
                        continue
                out.append(release)
        return out

    def _registered_before(self, unit: Unit, root: Symbol, release: Release, registrations: list[Node]) -> bool:
        """A release of a local object: does a finalizer guard that object
        by then? One registered in this function counts only if it can run
        before the release; a fresh `&T{}` has none (a constructor freeing
        on its error path before registering is fine)."""
        graph = self.summaries.cfgs.graphs.get(unit)
        if registrations and graph is not None:
            n = graph.node_containing(release.node)
            return any(
                (m := graph.node_containing(call)) is not None and n is not None and m != n and graph.has_path(m, n)
                for call in registrations
            )
        init = unwrap(root.init, self.summaries.calls) if root.init is not None and root.init_index < 0 else None
        while syntax.is_address_of(init):
            init = unwrap(init.child_by_field_name("operand"), self.summaries.calls)
        if init is not None and init.type == "composite_literal":
            return False
        if init is not None and init.type == "call_expression" and syntax.text(syntax.unparen(init.child_by_field_name("function"))) == "new":
            return False
        if root.init is None and root.type_node is not None:
            return False  # `var b Buffer`: a fresh zero value
        return True
