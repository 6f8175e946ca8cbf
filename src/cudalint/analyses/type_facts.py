"""Exported named types made of another type (`type CuvsError
C.cuvsError_t`, `type Result int32`): an importer's `cuvs.CuvsError(st)` is
a conversion, through which a status, a handle or a pointer flows, not a
call of an unknown function. Struct and interface types are left out: a
conversion to one carries no status. And the types of exported structs'
exported fields that are named types (`Launch *kernels.Launcher` of a
`device.Worker`): an importer's `w.Launch.AbsDiffSum(a, b, n)` is then a
call of a method whose facts it has. And the types of exported
package-level variables (`var NVMLManager = &nvmlManager{}`): an
importer's `utils.NVMLManager.Acquire()` is a call of that method."""

from __future__ import annotations

from dataclasses import dataclass

from cudalint import syntax
from cudalint.framework import Analysis, ErrorType, Pass
from cudalint.gotypes import TypeOracle, named_type, qualified_type, type_declarations
from cudalint.scope import SymbolKind


@dataclass(frozen=True)
class NamedType:
    """What an exported named type is declared as (`C.cuvsError_t`)."""

    underlying: str

    def concerns_callers(self) -> bool:
        return False  # it sharpens the reading of code analysed anyway


def exported_named_types(p: Pass) -> dict[str, NamedType]:
    """The package's exported named types that are neither structs nor
    interfaces, by name (test files left out: importers never see them)."""
    return {
        name: NamedType(syntax.text(body)) for name, body in type_declarations(p.package, with_tests=False).items()
        if name[:1].isupper() and body.type not in ("struct_type", "interface_type")
    }


NAMED_TYPES: Analysis[None] = Analysis(
    "named_types", __doc__ or "", lambda p: None, facts=exported_named_types, fact_type=NamedType,
)


@dataclass(frozen=True)
class FieldTypes:
    """An exported struct's exported fields of named types: (field, import
    path, type), pointers stripped."""

    fields: tuple[tuple[str, str, str], ...]

    def concerns_callers(self) -> bool:
        return False  # it sharpens the reading of code analysed anyway

    def of(self, field: str) -> tuple[str, str] | None:
        return next(((path, name) for f, path, name in self.fields if f == field), None)


def exported_field_types(p: Pass) -> dict[str, FieldTypes]:
    own = p.package.import_path
    declared = TypeOracle(p.package, lambda symbol: None)
    found = {}
    for name, (fields, embedded) in declared.structs().items():
        if not name[:1].isupper():
            continue
        typed_fields = []
        for field, type_node in fields.items():
            if not field[:1].isupper() or field in embedded:
                continue
            typed = qualified_type(p.package.resolution, type_node)
            local = named_type(type_node) if typed is None else None
            if typed is None and local is not None and local[:1].isupper() and own:
                typed = (own, local)
            if typed is not None:
                typed_fields.append((field, *typed))
        if typed_fields:
            found[name] = FieldTypes(tuple(typed_fields))
    return found


FIELD_TYPES: Analysis[None] = Analysis(
    "field_types", "The types of exported structs' exported fields, for importers' method calls through them.",
    lambda p: None, facts=exported_field_types, fact_type=FieldTypes,
)


@dataclass(frozen=True)
class VariableType:
    """An exported package-level variable's type, pointers stripped."""

    import_path: str
    type_name: str

    def concerns_callers(self) -> bool:
        return False  # it sharpens the reading of code analysed anyway


def exported_variable_types(p: Pass) -> dict[str, VariableType]:
    """The types of the package's exported variables, as their declarations
    say them: a declared type (`var Default *Client`) or a composite literal
    (`var Manager = &manager{...}`), whether or not the type is exported
    (its methods are callable through the variable all the same)."""
    resolution, own = p.package.resolution, p.package.import_path
    tests = {parsed.root for parsed in p.package.files if parsed.source.path.name.endswith("_test.go")}
    found = {}
    for name, symbol in resolution.package_symbols.items():
        if symbol.kind is not SymbolKind.VAR or not name[:1].isupper() or symbol.node is None or syntax.root_of(symbol.node) in tests:
            continue
        type_node = symbol.type_node
        if type_node is None and symbol.init is not None and symbol.init_index < 0:
            literal = syntax.unparen(symbol.init)
            if literal is not None and literal.type == "unary_expression" and syntax.text(literal.child_by_field_name("operator")) == "&":
                literal = syntax.unparen(literal.child_by_field_name("operand"))
            type_node = literal.child_by_field_name("type") if literal is not None and literal.type == "composite_literal" else None
        typed = qualified_type(resolution, type_node)
        local = named_type(type_node) if typed is None and type_node is not None else None
        if typed is None and local is not None and own:
            typed = (own, local)
        if typed is not None:
            found[name] = VariableType(*typed)
    return found


VARIABLE_TYPES: Analysis[None] = Analysis(
    "variable_types", "The types of exported package-level variables, for importers' method calls through them.",
    lambda p: None, facts=exported_variable_types, fact_type=VariableType,
)


def exported_error_types(p: Pass) -> dict[str, ErrorType]:
    """The package's exported types whose values report failure as non-nil:
    its own error interfaces (`type Error interface { error; Code() int }`)
    and its types with an `Error() string` method, as pointers."""
    resolution = p.package.resolution
    found = {}
    for name in type_declarations(p.package, with_tests=False):
        if not name[:1].isupper():
            continue
        if resolution.error_like(name, False):
            found[name] = ErrorType(pointer=False)
        elif resolution.error_like(name, True):
            found[name] = ErrorType(pointer=True)
    return found


ERROR_TYPES: Analysis[None] = Analysis(
    "error_types", "The exported error types, for importers whose functions return them.",
    lambda p: None, facts=exported_error_types, fact_type=ErrorType,
)
