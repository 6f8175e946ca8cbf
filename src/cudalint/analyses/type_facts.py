"""Exported named types made of another type (`type CuvsError
C.cuvsError_t`, `type Result int32`): an importer's `cuvs.CuvsError(st)` is
a conversion, through which a status, a handle or a pointer flows, not a
call of an unknown function. Struct and interface types are left out: a
conversion to one carries no status."""

from __future__ import annotations

from dataclasses import dataclass

from cudalint import syntax
from cudalint.framework import Analysis, Pass


@dataclass(frozen=True)
class NamedType:
    """What an exported named type is declared as (`C.cuvsError_t`)."""

    underlying: str

    def concerns_callers(self) -> bool:
        return False  # it sharpens the reading of code analysed anyway


def exported_named_types(p: Pass) -> dict[str, NamedType]:
    found: dict[str, NamedType] = {}
    for parsed in p.package.files:
        if parsed.source.path.name.endswith("_test.go"):
            continue
        for declaration in syntax.children(parsed.root):
            for spec in syntax.children(declaration) if declaration.type == "type_declaration" else ():
                name, body = spec.child_by_field_name("name"), spec.child_by_field_name("type")
                if spec.type != "type_spec" or name is None or body is None or not syntax.text(name)[:1].isupper():
                    continue
                if body.type not in ("struct_type", "interface_type"):
                    found[syntax.text(name)] = NamedType(syntax.text(body))
    return found


NAMED_TYPES: Analysis[None] = Analysis(
    "named_types", __doc__ or "", lambda p: None, facts=exported_named_types, fact_type=NamedType,
)
