"""The facts `calls` exports about exported functions' result types, and
the result types of calls read off those facts and the knowledge: the
package's own type a result is declared with (importers type their
variables by it, so method facts apply), or a type of a binding the
knowledge describes ("import/path Type": `func DeviceByIndex(i int)
(nvml.Device, error)` makes a value whose methods are nvml's), or a slice
of either ("[]Device", "[]import/path Type": `func Devices() []nvml.Device`
makes values whose methods are nvml's where they are ranged over or
indexed)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import ResultTypes, described_type_conversion
from cudalint.analyses.type_facts import FieldTypes, VariableType
from cudalint.framework import ImportedFacts, Pass
from cudalint.functions import UnitKind, exported_name
from cudalint.gotypes import element_of, named_type, nth_result, qualified_type, result_types, sole_implementations
from cudalint.scope import Symbol

# `facts` below is the package's `calls.CallIndex` (which imports this module).


def exported_result_types(p: Pass) -> dict[str, ResultTypes]:
    """The result types of the package's exported functions and methods, where one of
    them is a type some method of which the analyses above this one export
    facts about (else importers have nothing to look up through it)."""
    typed = {name.split(".", 1)[0] for name in p.exported_objects() if "." in name}
    # Types with a method that releases a field through the C side (an
    # owning type: `func (b DeviceBuffer) Free() { C.dev_free(b.ptr) }`),
    # whose facts other analyses export after this one: importers type a
    # variable by them (a deferred literal's `d.Free()` releases it).
    if any(imported.path == "C" for parsed in p.package.files for imported in parsed.imports):
        typed |= {unit.receiver_type for unit in p.package.units if unit.kind is UnitKind.METHOD and _calls_c(unit)}
    described = p.knowledge.method_types
    found = _typed_results(p, typed, described)
    # A type whose own methods return described types (go-nvlib-style
    # `Library.NVML() nvml.Interface`), and the interface its one
    # implementation stands behind: its constructor's result is typed too
    # (`nvmlLib := lib.NewDefault(); nvmlLib.NVML().Shutdown()`).
    more = {name.split(".", 1)[0] for name in found if "." in name}
    more |= {interface for interface, implementation in sole_implementations(p.package).items() if implementation in typed | more}
    return _typed_results(p, typed | more, described) if more - typed else found


def _typed_results(p: Pass, typed: set[str], described) -> dict[str, ResultTypes]:
    found = {}
    for unit in p.package.units:
        # Methods too: `lib.DeviceGetHandleByUUID(u)` of go-nvlib's own
        # `Interface` makes its `Device`, whose methods are wrappers.
        if unit.kind not in (UnitKind.FUNCTION, UnitKind.METHOD) or exported_name(unit) is None:
            continue
        results = list(result_types(unit))
        declared = unit.node.child_by_field_name("result")
        for index, own in enumerate(results):
            if own:
                continue
            # A type of a binding the knowledge describes (`func
            # DeviceByIndex(i int) (nvml.Device, error)`): "import/path Type".
            declared_type = nth_result(declared, index)
            other = qualified_type(p.package.resolution, declared_type)
            if other is not None and other[1] in described.get(other[0], ()):
                results[index] = f"{other[0]} {other[1]}"
                continue
            element = element_of(declared_type) if declared_type is not None and declared_type.type in ("slice_type", "array_type") else None
            own_element = named_type(element) if element is not None else None
            other = qualified_type(p.package.resolution, element) if element is not None else None
            if own_element in typed:
                results[index] = f"[]{own_element}"
            elif other is not None and other[1] in described.get(other[0], ()):
                results[index] = f"[]{other[0]} {other[1]}"
        if any(result.removeprefix("[]") in typed or " " in result for result in results):
            found[exported_name(unit)] = ResultTypes(tuple(results))
    return found


def _calls_c(unit) -> bool:
    return unit.body is not None and any(
        syntax.text(syntax.unparen(call.child_by_field_name("function"))).startswith("C.") for call in syntax.calls_in(unit.body)
    )


def result_entries(imported: ImportedFacts, path: str) -> Iterator[str]:
    """The result types the facts of a package's functions give."""
    for name in imported.objects(path):
        typed = imported.fact(ResultTypes, path, name)
        if typed is not None:
            yield from typed.results


def result_type_in(typed: ResultTypes, path: str, index: int, elements: bool) -> tuple[str, str] | None:
    """(import path, type) a function's facts give its result at `index`, or
    with `elements` the elements of that result, a slice; the function is of
    the package at `path`."""
    if index >= len(typed.results):
        return None
    entry = typed.results[index]
    if entry.startswith("[]") != elements or not entry:
        return None
    entry = entry.removeprefix("[]")
    other_path, _, other = entry.partition(" ")
    return (other_path, other) if other else (path, entry)


def module_result_typed(facts: Any, symbol: Symbol | None) -> tuple[str, str] | None:
    """(import path, type) of a variable made by a function of another
    package of the module whose facts type that result."""
    if symbol is None or symbol.init is None:
        return None
    return module_call_typed(facts, syntax.unparen(symbol.init), max(symbol.init_index, 0))


def imported_field_type(facts: Any, import_path: str, type_name: str, field: str) -> tuple[str, str] | None:
    """(import path, type) of an exported field of another package's struct,
    as that package's facts give it."""
    fields = facts.imported.fact(FieldTypes, import_path, type_name)
    return fields.of(field) if fields is not None else None


def imported_variable_type(facts: Any, import_path: str, name: str) -> tuple[str, str] | None:
    """(import path, type) of another package's exported variable, as that
    package's facts give it."""
    typed = facts.imported.fact(VariableType, import_path, name)
    return (typed.import_path, typed.type_name) if typed is not None else None


def module_call_typed(facts: Any, call: Node | None, index: int, elements: bool = False) -> tuple[str, str] | None:
    """(import path, type) of a call's result at `index` (of its elements,
    a slice's, with `elements`), where the call is of a function of another
    package of the module whose facts type it."""
    function = facts.module_function(facts.calls.get(call))
    typed = facts.imported.fact(ResultTypes, *function) if function is not None else None
    return result_type_in(typed, function[0], index, elements) if typed is not None else None


def api_result_type(facts: Any, call: Node, elements: bool = False) -> tuple[str, str] | None:
    """(import path, type) of the first result of a classified call whose
    result type the knowledge gives (`nvml.DeviceGetHandleByIndex(i)`, and
    a method of such a value: `device.GetGpuInstanceById(id)`); `elements`:
    of its elements, where it is a slice (`gi.GetComputeInstances(&info)`)."""
    fact = facts.qualified(call)
    if fact is None:
        return None
    if elements:
        type_name = facts.knowledge.result_type(fact.import_path, fact.name, elements=True)
        return (fact.import_path, type_name) if type_name is not None else None
    if described_type_conversion(facts.knowledge, fact, call):
        return fact.import_path, fact.name  # `nvml.Device(d)`: d as the binding's Device
    if fact.import_path in facts.package.named_bindings and fact.api is not None:
        return fact.import_path, ""  # a value of the binding; only its source would name the type
    type_name = facts.knowledge.result_type(fact.import_path, fact.name)
    return (fact.import_path, type_name) if type_name is not None else None
