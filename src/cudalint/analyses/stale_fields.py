"""Receiver fields a method frees to refill, left holding the freed handle
where it returns before the refill: the grow-a-buffer idiom

    if p.dQ != nil { C.cuMemFree(p.dQ) }
    if err := cuMalloc(&p.dQ, n); err != nil { return err }

leaves `p.dQ` pointing at freed memory where the allocation fails, and the
next release of `p` (this method again, since its capacity did not grow,
or its Close) frees it a second time (CL102). The same holds for a return
between the free and an assignment of the field (`ptr, err := Alloc(n);
if err != nil { return err }; p.dQ = ptr`). A method that frees a field
without refilling it (a Close) is not this idiom: whether it runs twice is
its callers' business.

Read from the method's statement lists: the release (an API release of
the field, or a function of the package that frees its parameter), the
statements after it in the same list up to the refill (an assignment of the
field, or a call given its address), and the returns among them or in the
failing branch of the refilling call's test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex, unwrap
from cudalint.analyses.owners import OWNERS, Owners
from cudalint.analyses.receiver_fields import cleared_fields, receiver_field, zero_value
from cudalint.framework import Analysis, Pass
from cudalint.functions import Unit, UnitKind


@dataclass(frozen=True)
class StaleField:
    """A field freed at `release`, refilled at `refill`, still holding the
    freed handle at the return `exit`."""

    unit: Unit
    field: str  # as written: "p.dQ"
    release: Node
    refill: Node
    exit: Node


class StaleFields:
    """The stale fields of each method, read on demand (a rule asks per unit)."""

    def __init__(self, calls: CallIndex, owners: Owners) -> None:
        self.calls = calls
        self.owners = owners
        self._wrappers: frozenset[Unit] | None = None

    def _release_wrappers(self) -> frozenset[Unit]:
        """The package's functions that free a parameter (read once: most
        packages have none, and then only API releases are looked at)."""
        if self._wrappers is None:
            self._wrappers = frozenset(unit for unit in self.calls.package.units if self.owners.released_parameters(unit))
        return self._wrappers

    def of(self, unit: Unit) -> list[StaleField]:
        """Each field of `unit`'s receiver freed to be refilled and left
        freed at a return before the refill."""
        declared = unit.node.child_by_field_name("receiver") if unit.kind is UnitKind.METHOD else None
        if unit.body is None or declared is None or "*" not in syntax.text(declared):
            return []  # a value receiver's fields are a copy's
        if not self._release_wrappers() and not any(fact.api.roles("release") for fact in self.calls.api_facts_in(unit)):
            return []  # frees nothing (asked before resolving the method: most methods of a package are never resolved)
        receiver = unit.receiver
        if receiver is None or receiver.type_node is None or receiver.type_node.type != "pointer_type":
            return []
        found = []
        releases = list(self._field_releases(unit, receiver.name))
        for call, field in releases:
            if syntax.statement_of_call(call) == "defer_statement":
                continue
            status = {syntax.text(name) for name in syntax.assigned_from(_outermost_call(call))}
            for statement in _released_statements(call, field):
                following = _following(statement)
                refill = next((i for i, later in enumerate(following) if self._settles(later, field, receiver.name) is not None), None)
                if refill is None:
                    continue  # nothing after it in this list: the guard's list, if any, is next
                if not self._settles(following[refill], field, receiver.name):
                    break  # `p.sub = nil`, `*p = T{}` or `p.reset()` after the free: cleared, not refilled
                # A return testing the release's own status is where it failed: nothing was freed.
                exits = [exit for later in following[:refill] if not _tests(later, status) for exit in _returns(later)]
                exits += _failing_returns(following[refill], field)
                again = any(
                    other is not call and same == field and _inside(other, following[:refill + 1]) for other, same in releases
                )
                if exits and not again:  # (freed again before it returns: the function's own CL102)
                    found.append(StaleField(unit, field, call, following[refill], exits[0]))
                break
        return found

    def _settles(self, statement: Node, field: str, receiver: str) -> bool | None:
        """True where the statement refills the field, False where it clears
        it (also `*p = T{}`, or a method of the receiver that sets the field
        to zero), None where it does neither."""
        for call in syntax.calls_in(statement):
            callee = self.calls.callee(call)
            operand = syntax.method_operand(call)
            if (
                callee.kind is CalleeKind.LOCAL and callee.target is not None and operand is not None
                and syntax.text(operand) == receiver and field.split(".", 1)[1] in cleared_fields(callee.target)
            ):
                return False
        return _refills(statement, field, receiver)

    def _field_releases(self, unit: Unit, receiver: str) -> Iterator[tuple[Node, str]]:
        """(release call, "r.f") for each call freeing a field of the receiver."""
        for fact in self.calls.api_facts_in(unit):
            arguments = syntax.children(fact.node.child_by_field_name("arguments"))
            for _, role in fact.api.roles("release"):
                if role.handle == "receiver":
                    released = syntax.method_operand(fact.node)
                elif 0 <= role.index < len(arguments) and not role.is_out:
                    released = unwrap(arguments[role.index], self.calls)
                else:
                    continue
                if _field_of(released, receiver):
                    yield fact.node, syntax.text(released)
        wrappers = self._release_wrappers()
        for call in syntax.calls_in(unit.body) if wrappers else ():
            callee = self.calls.callee(call)
            if callee.kind is not CalleeKind.LOCAL or callee.target not in wrappers:
                continue
            arguments = syntax.children(call.child_by_field_name("arguments"))
            for index, _ in self.owners.released_parameters(callee.target):
                released = unwrap(arguments[index], self.calls) if 0 <= index < len(arguments) else None
                if _field_of(released, receiver):
                    yield call, syntax.text(released)


def _outermost_call(call: Node) -> Node:
    """The call a release's result is handed to, and so on out
    (`check(C.cuptiUnsubscribe(c.sub))`): the one whose result is assigned."""
    while call.parent is not None and call.parent.type == "argument_list" and call.parent.parent is not None:
        call = call.parent.parent
    return call


def _inside(node: Node, statements: list[Node]) -> bool:
    """Whether the node lies within one of the statements."""
    return any(statement.start_byte <= node.start_byte and node.end_byte <= statement.end_byte for statement in statements)


def _field_of(node: Node | None, receiver: str) -> bool:
    """`p.dQ` with p the receiver."""
    return receiver_field(node, receiver) is not None


def _released_statements(call: Node, field: str) -> list[Node]:
    """The statement freeing the field, and the `if p.dQ != nil { free }`
    around it: what follows the first in its list (`p.dQ = nil`) comes
    before what follows the guard."""
    statement, guard = syntax.holding_statement(call)
    condition = syntax.text(guard.child_by_field_name("condition")) if guard is not None and guard.type == "if_statement" else ""
    if re.search(re.escape(field) + r"(?!\w)", condition):
        return [statement, guard]
    return [statement]


def _following(statement: Node) -> list[Node]:
    """The statements after this one in its list."""
    siblings = statement.parent.named_children if statement.parent is not None else []
    index = next((i for i, sibling in enumerate(siblings) if sibling == statement), len(siblings))
    return [sibling for sibling in siblings[index + 1:] if sibling.type != "comment"]


def _refills(statement: Node, field: str, receiver: str) -> bool | None:
    """True for an assignment of a new value to the field or a call given
    its address, False for one clearing it (`p.sub = nil`, `*p = T{}`), None
    for neither."""
    for node in syntax.walk(statement, into_functions=False):
        if node.type == "assignment_statement":
            left = syntax.expressions(node.child_by_field_name("left"))
            right = syntax.expressions(node.child_by_field_name("right"))
            for index, target in enumerate(left):
                if syntax.text(target).replace(" ", "") == f"*{receiver}":
                    return False  # the whole value replaced: whatever it held is no longer named
                if syntax.text(target) == field:
                    value = syntax.unparen(right[index]) if len(right) == len(left) else None
                    return not (value is not None and zero_value(value))
        elif node.type == "unary_expression" and syntax.text(node).replace(" ", "") == f"&{field}":
            return True
    return None


def _tests(statement: Node, names: set[str]) -> bool:
    """An `if` whose condition reads one of the names (the release's status)."""
    condition = statement.child_by_field_name("condition") if statement.type == "if_statement" else None
    return condition is not None and any(
        node.type == "identifier" and syntax.text(node) in names for node in syntax.walk(condition)
    )


def _returns(statement: Node) -> list[Node]:
    """The returns in a statement, not those of its func literals."""
    return [node for node in syntax.walk(statement, into_functions=False) if node.type == "return_statement"]


def _failing_returns(statement: Node, field: str) -> list[Node]:
    """The returns of the branch an `if` takes where the refilling call in
    its header fails (`if err := cuMalloc(&p.dQ, n); err != nil { return err }`)."""
    if statement.type != "if_statement" or "!=" not in syntax.text(statement.child_by_field_name("condition")):
        return []
    header = " ".join(syntax.text(statement.child_by_field_name(part)) for part in ("initializer", "condition"))
    consequence = statement.child_by_field_name("consequence")
    receiver = field.split(".", 1)[0]
    if f"&{field}" not in header.replace(" ", "") or consequence is None or _refills(consequence, field, receiver) is not None:
        return []  # (a branch that clears the field first leaves nothing freed in it)
    return _returns(consequence)


def _analyse(p: Pass) -> StaleFields:
    return StaleFields(p.result_of(CALLS), p.result_of(OWNERS))


STALE_FIELDS: Analysis[StaleFields] = Analysis(
    "stale_fields", __doc__ or "", _analyse, requires=(CALLS, OWNERS),
)
