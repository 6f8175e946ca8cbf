"""Exported named types made of another type (`type CuvsError
C.cuvsError_t`, `type Result int32`): an importer's `cuvs.CuvsError(st)` is
a conversion, through which a status, a handle or a pointer flows, not a
call of an unknown function. Struct and interface types are left out: a
conversion to one carries no status."""

from __future__ import annotations

from dataclasses import dataclass

from cudalint import syntax
from cudalint.framework import Analysis, Pass
from cudalint.gotypes import type_declarations


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
