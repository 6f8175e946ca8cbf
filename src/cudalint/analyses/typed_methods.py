"""Method calls typed by what the package declares: a method the knowledge
names by receiver type (`db.Query` with `db *sql.DB`, `device.GetName()`
with `device nvml.Device`) on an operand the type oracle types, and a
method of an interface of the package declared to return a family's status
(`GetUUID() (string, nvml.Return)`), whatever implements it. Part of call
classification (`calls`), which records what these find."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import CallFact, Embeds
from cudalint.analyses.result_facts import result_entries
from cudalint.functions import Package, result_count
from cudalint.framework import ImportedFacts
from cudalint.gotypes import TypeOracle, nth_result, qualified_type
from cudalint.knowledge import ApiFunction, Family, Knowledge


class CallIndex(Protocol):
    """What these indexers read of the package's call index (calls.CallIndex)
    and how they add to it."""

    calls: dict[Node, CallFact]
    types: TypeOracle
    imported: ImportedFacts
    knowledge: Knowledge

    def record(self, fact: CallFact) -> None: ...

    def has_method(self, type_name: str, method: str) -> bool: ...


def api_of(package: Package, knowledge: Knowledge, import_path: str, name: str) -> ApiFunction | None:
    """What the knowledge says of a call of that package, or, for a binding
    with no source here, what its name says (knowledge.NamedBindings)."""
    if import_path in package.named_bindings:
        return knowledge.named_bindings.lookup(import_path, name)
    return knowledge.lookup(import_path, name)


def index_described_methods(facts: CallIndex, package: Package, knowledge: Knowledge) -> None:
    """`rows, err := db.Query(q)` with `db *sql.DB`: a method the knowledge
    names by receiver type (sql.DB.Query), on an operand the type oracle
    types: a variable, parameter, package-level variable or struct field
    declared with that type, a value made by a call whose result type the
    knowledge or the package's own declaration gives. Only files that spell
    one of those types or calls (with its package's name) are searched."""
    types = knowledge.method_types
    if not types and not package.named_bindings:
        return
    typed_results = {
        family.import_path: [call.split(".", 1)[1] for call, _ in family.result_types]
        for family in knowledge.families if family.result_types
    }
    embedding = knowledge.embedding_packages()  # go-nvlib's device.Device embeds nvml.Device
    binding_makers = {
        path for path in facts.imported.packages()
        if any(" " in entry for entry in result_entries(facts.imported, path))
    }

    def spells(parsed) -> bool:
        # As the file names each package: `nvmlapi` of `nvmlapi "github.com/NVIDIA/go-nvml/pkg/nvml"`.
        def names(path: str) -> set[str]:
            return package.resolution.import_names(parsed.root, {path})

        spelled = [
            f"{qualifier}.{name}".encode()
            for imported in parsed.imports if imported.path in types for qualifier in names(imported.path)
            for name in (*types[imported.path], *typed_results.get(imported.path, ()))
        ]
        # Any value of a binding read by its name may have methods that are its
        # API, and so may a value another package of the module returns as a
        # binding's type (`gpuinfo.DeviceByIndex(i)`).
        spelled += [
            f"{qualifier}.".encode() for imported in parsed.imports
            if imported.path in package.named_bindings or imported.path in binding_makers or imported.path in embedding
            for qualifier in names(imported.path)
        ]
        return any(needle in parsed.source.data for needle in spelled)

    if not any(spells(parsed) for parsed in package.files):
        return
    # A file that spells none may still reach the API through a type another
    # file of the package declares (`lib.NVML().Init()`, where the package's
    # interface declares `NVML() nvml.Interface`).
    for parsed in package.files:
        for node, function, operand in method_calls(facts, parsed):
            method = syntax.text(function.child_by_field_name("field"))
            declared = _receiver_type(
                facts, operand, method,
                lambda typed: typed[0] in package.named_bindings or typed[1] in types.get(typed[0], ()),
            )
            if declared is None:
                continue
            name = knowledge.canonical(declared[0], f"{declared[1]}.{method}" if declared[1] else method)
            api = api_of(package, knowledge, declared[0], name)
            if api is None:
                continue
            facts.record(CallFact(node, declared[0], name, f"{syntax.text(operand)}.{method}", api, on_value=True))


def index_interface_statuses(facts: CallIndex, package: Package, knowledge: Knowledge) -> None:
    """`uuid, _ := h.GetUUID()` where `h` is of an interface of the package
    that declares `GetUUID() (string, nvml.Return)`: whatever implements it,
    the call returns a status of that family (its status type, where the
    family's status is), so every status rule reads it as a call of the API.
    Typing the operand is the type oracle's (a parameter, a field, a value
    another method of the interface returned)."""
    statuses = {
        (family.import_path, family.status.type.rsplit(".", 1)[-1]): family
        for family in knowledge.families if family.status is not None and family.status.kind == "code"
    }
    declaring: dict[str, dict[str, ApiFunction]] = {}
    for interface in facts.types.interfaces():
        for method in facts.types.interface_methods(interface):
            result = facts.types.interface_result(interface, method)
            family = _status_family(package, result, statuses)
            if family is None:
                continue
            # A method named as a release of the family (`Shutdown`) is one:
            # `_ = lib.Shutdown()` then discards it on purpose. Its roles
            # stay the API's (no resource is followed through it).
            named = knowledge.lookup(family.import_path, method)
            releases, discardable = (named.releases, named.discardable) if named is not None and named.status == family.status else ((), False)
            if not releases:
                # `Free() nvml.Return` of an interface wrapping the binding's
                # EventSet: the name of a release method of the family's types.
                releases = tuple(
                    resource for resource in family.resources
                    if any(role.handle == "receiver" and role.call.rsplit(".", 1)[-1] == method for role in resource.release)
                )
            declaring.setdefault(interface, {})[method] = ApiFunction(family, f"{interface}.{method}", family.status, discardable, releases, ())
    if not declaring:
        return
    methods = {method for found in declaring.values() for method in found}
    for parsed in package.files:
        if not any(method.encode() in parsed.source.data for method in methods):
            continue
        for node, function, operand in method_calls(facts, parsed):
            method = syntax.text(function.child_by_field_name("field"))
            if method not in methods:
                continue
            package.resolution.ensure(parsed.root, node)
            api = declaring.get(facts.types.type_of(operand) or "", {}).get(method)
            if api is not None:
                facts.record(CallFact(node, api.family.import_path, api.name, f"{syntax.text(operand)}.{method}", api, on_value=True))


def _status_family(package: Package, result: Node | None, statuses: dict[tuple[str, str], Family]) -> Family | None:
    """The family whose status type a method's declared results carry where
    the family's status is (its first or last result)."""
    types = [nth_result(result, index) for index in range(result_count(result))]
    for family_key, family in statuses.items():
        index = family.status.result_index(len(types))
        if types and 0 <= index < len(types) and qualified_type(package.resolution, types[index]) == family_key:
            return family
    return None


def method_calls(facts: CallIndex, parsed) -> Iterator[tuple[Node, Node, Node]]:
    """(call, selector, operand) for each `x.M(...)`, `x.f.M(...)`,
    `x.f[i].M(...)` and `x.Lib().M(...)` that nothing has classified yet, in
    source order."""
    calls = list(parsed.index.qualified_calls)
    for callee in parsed.index.callee_names:
        selector = callee.parent
        operand = selector.child_by_field_name("operand") if selector.type == "selector_expression" else None
        if operand is not None and operand.type in ("selector_expression", "index_expression", "call_expression"):
            calls.append(selector.parent)
    operands = ("identifier", "selector_expression", "index_expression", "call_expression")
    return unclassified(facts, sorted(calls, key=lambda call: call.start_byte), operands)


def unclassified(facts: CallIndex, calls, operands: tuple[str, ...]) -> Iterator[tuple[Node, Node, Node]]:
    """(call, selector, operand) of these method calls that nothing has
    classified yet, whose operand is of one of these node types."""
    for node in calls:
        if node in facts.calls:
            continue
        function = syntax.unparen(node.child_by_field_name("function"))
        operand = syntax.unparen(function.child_by_field_name("operand")) if function is not None else None
        if operand is not None and operand.type in operands:
            yield node, function, operand


def _receiver_type(
    facts: CallIndex, operand: Node, method: str, described: Callable[[tuple[str, str]], bool],
) -> tuple[str, str] | None:
    """(import path, type) of the other package's type whose method
    `operand.method(...)` calls, where `described` knows it: the operand's
    own type, or, for a struct of this package with no such method, a type
    it embeds (a promoted method: `type gpu struct{ nvml.Device }`)."""
    declared = facts.types.imported_type_of(operand)
    if declared is not None:
        return declared if described(declared) else _embedded(facts, declared, method, described)
    return promoted(facts, operand, method, described)


def _embedded(
    facts: CallIndex, declared: tuple[str, str], method: str, described: Callable[[tuple[str, str]], bool],
) -> tuple[str, str] | None:
    """The type another package's type embeds that the method is promoted
    from, as that package's facts say (`device.Device` embeds nvml.Device),
    where `described` knows it and the outer type has no such method."""
    embeds = facts.imported.fact(Embeds, *declared)
    if embeds is None:
        # No source here to summarise: what the knowledge says it embeds.
        typed = facts.knowledge.embedded_type(*declared, method)
        return typed if typed is not None and described(typed) else None
    if method in embeds.methods:
        return None
    # Beside other embedded types (go-nvlib's device.Interface next to
    # nvml.Interface), only a method the API may have is its.
    found = [typed for typed in embeds.types if described(typed) and facts.knowledge.names_method(*typed, method) is not False]
    return found[0] if found else None


def promoted(
    facts: CallIndex, operand: Node, method: str, described: Callable[[tuple[str, str]], bool],
) -> tuple[str, str] | None:
    """The other package's type embedded in the operand's struct type that
    the method is promoted from, where `described` knows it: only where it
    is the one such type embedded (a test double embedding nvml.Device and
    mock.Mock gets AssertExpectations from the mock, which says nothing of
    its methods, so the knowledge's pattern for Device is no answer)."""
    local = facts.types.type_of(operand)
    if local is None or _declared_in_package(facts, local, method):
        return None
    embedded = facts.types.embedded_imported(local)
    if len(embedded) != 1:
        return None
    # The one embedded type, or what it embeds in turn as its package's facts
    # (or the knowledge) say: `*nvidia.DeviceLib` that embeds nvml.Interface.
    if not described(embedded[0]):
        return _embedded(facts, embedded[0], method, described)
    return embedded[0] if facts.knowledge.names_method(*embedded[0], method) is not False else None


def _declared_in_package(facts: CallIndex, type_name: str, method: str) -> bool:
    """Whether the type, or a type of the package it embeds (an interface
    such as `External` with `Signal()`), declares the method itself."""
    return any(
        facts.has_method(name, method) or method in facts.types.interface_methods(name)
        for name in facts.types.with_embedded(type_name)
    )
