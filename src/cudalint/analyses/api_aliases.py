"""API functions kept in package-level variables: `var dcgmCreateGroup =
dcgm.CreateGroup`, written so that tests can swap in a fake. Where no file
but a test assigns the variable, `dcgmCreateGroup(name)` is a call of
`dcgm.CreateGroup`, with every rule that applies to one (its group must be
destroyed, its error checked); swapped elsewhere, which function runs is not
known and the call stays unknown.
"""

from __future__ import annotations

from typing import Protocol

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import CallFact
from cudalint.analyses.typed_methods import api_of
from cudalint.functions import Package
from cudalint.knowledge import Knowledge
from cudalint.scope import Symbol, SymbolKind


class CallIndex(Protocol):
    """What this module needs of the call index it adds to."""

    def call(self, node: Node | None) -> CallFact | None: ...

    def record(self, fact: CallFact) -> None: ...

    def swapped_outside_tests(self, symbol: Symbol) -> bool: ...


def index_api_aliases(facts: CallIndex, package: Package, knowledge: Knowledge) -> None:
    """Record each call of a package-level variable bound to an API function
    as a call of that function."""
    resolution = package.resolution
    aliases = {}
    described = knowledge.import_paths | package.named_bindings
    for parsed in package.files:
        # Only a selector on a package the knowledge describes can name its
        # API: the rest is never resolved for this (`var out = os.Stdout`).
        qualifiers = resolution.import_names(parsed.root, described)
        for declaration in syntax.children(parsed.root) if qualifiers else ():
            if declaration.type != "var_declaration":
                continue
            for spec in syntax.value_specs(declaration):
                names = spec.children_by_field_name("name")
                values = syntax.expressions(spec.child_by_field_name("value"))
                for name, value in zip(names, values) if len(names) == len(values) else ():
                    value = syntax.unparen(value)
                    operand = syntax.unparen(value.child_by_field_name("operand")) if value is not None and value.type == "selector_expression" else None
                    if operand is None or operand.type != "identifier" or syntax.text(operand) not in qualifiers:
                        continue
                    resolution.ensure(parsed.root, value)
                    import_path = resolution.package_of(operand)
                    function = syntax.text(value.child_by_field_name("field"))
                    api = api_of(package, knowledge, import_path, function) if import_path is not None else None
                    symbol = resolution.symbol(name)
                    if api is not None and symbol is not None and symbol.kind is SymbolKind.VAR:
                        aliases[syntax.text(name)] = (symbol, import_path, function, api)
    if not aliases:
        return
    for parsed in package.files:
        for name, calls in syntax.calls_by_name(parsed.index).items():
            alias = aliases.get(name)
            if alias is None:
                continue
            symbol, import_path, function, api = alias
            for call in calls:
                callee = syntax.unparen(call.child_by_field_name("function"))
                if callee is None or callee.type != "identifier" or facts.call(call) is not None:
                    continue
                resolution.ensure(parsed.root, call)
                if resolution.symbol(callee) is symbol and not facts.swapped_outside_tests(symbol):
                    facts.record(CallFact(call, import_path, function, name, api))
