"""CL503: reflect.SliceHeader / reflect.StringHeader."""

from __future__ import annotations


from cudalint import syntax
from cudalint.catalog import Level, Rule
from cudalint.framework import Pass
from cudalint.functions import innermost_unit


def check(p: Pass) -> None:
    resolution = p.package.resolution
    for parsed in p.package.files:
        if not any(i.path == "reflect" for i in parsed.imports) or b"Header" not in parsed.source.data:
            continue
        file_scope = resolution.file_scopes.get(parsed.root)
        units = [u for u in p.package.units if u.file is parsed]
        for node in syntax.header_references(parsed.root):
            if node.type == "qualified_type":
                package, name = node.child_by_field_name("package"), node.child_by_field_name("name")
            else:
                package, name = node.child_by_field_name("operand"), node.child_by_field_name("field")
            header = syntax.text(name)
            if header not in ("SliceHeader", "StringHeader"):
                continue
            imported = file_scope.names.get(syntax.text(package)) if file_scope is not None and package is not None else None
            if imported is None or imported.import_path != "reflect":
                continue
            if node.type == "selector_expression" and resolution.symbol(package) is not imported:
                continue  # a local variable named reflect
            unit = innermost_unit(units, node)
            replacement = "unsafe.Slice / unsafe.SliceData" if header == "SliceHeader" else "unsafe.String / unsafe.StringData"
            p.report_in(
                parsed, unit.name if unit is not None else "", node,
                f"reflect.{header} hides the data pointer from the GC and is deprecated; use {replacement}",
            )


RULE = Rule(
    "CL503", "slice-header", Level.WARNING,
    "Use of `reflect.SliceHeader` or `reflect.StringHeader`.",
    """
    ## What it does
    Reports every use of `reflect.SliceHeader` and `reflect.StringHeader`,
    typically to view C memory as a Go slice.

    ## Why is this bad?
    The headers' `Data` field is a `uintptr`: the GC does not see it, so a
    header built by hand does not keep its memory alive, and code that
    fills one in is easy to get subtly wrong. Both types are deprecated.

    ## Example
    ```go
    var s []float32
    h := (*reflect.SliceHeader)(unsafe.Pointer(&s))
    h.Data, h.Len, h.Cap = uintptr(p), n, n
    ```

    ## Use instead
    ```go
    s := unsafe.Slice((*float32)(p), n)
    ```
    (and `unsafe.String` / `unsafe.StringData` for strings).
    """,
    tags=("correctness", "memory-safety"),
    check=check,
    needles=lambda knowledge: frozenset({b"SliceHeader", b"StringHeader"}),
)
