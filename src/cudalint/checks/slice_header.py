"""CL503: reflect.SliceHeader / reflect.StringHeader."""

from __future__ import annotations


from cudalint import syntax
from cudalint.catalog import Level, Rule
from cudalint.framework import Pass
from cudalint.fixes.header_rewrite import Rewriter, without_import
from cudalint.functions import innermost_unit
from cudalint.parse import ParsedFile


def check(p: Pass) -> None:
    resolution = p.package.resolution
    for parsed in p.package.files:
        if not any(i.path == "reflect" for i in parsed.imports) or b"Header" not in parsed.source.data:
            continue
        file_scope = resolution.file_scopes.get(parsed.root)
        units = [u for u in p.package.units if u.file is parsed]
        rewriter = Rewriter(parsed.source, resolution, p.package.go_version)
        reports = []
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
            reports.append((node, header, imported, rewriter.fix(node, header)))
        if reports and all(fix is not None for *_, fix in reports) and _only_uses(parsed, reports):
            # The fixes take every use of reflect: each removes the import (the same edit, made once).
            spec = next(i.node for i in parsed.imports if i.path == "reflect")
            reports = [(node, header, imported, without_import(fix, spec, parsed.source)) for node, header, imported, fix in reports]
        for node, header, _, fix in reports:
            unit = innermost_unit(units, node)
            replacement = "unsafe.Slice / unsafe.SliceData" if header == "SliceHeader" else "unsafe.String / unsafe.StringData"
            p.report_in(
                parsed, unit.name if unit is not None else "", node,
                f"reflect.{header} hides the data pointer from the GC and is deprecated; use {replacement}",
                fixes=(fix,) if fix is not None else (),
            )


def _only_uses(parsed: ParsedFile, reports: list) -> bool:
    """Whether the header references are the file's only uses of reflect."""
    name = syntax.text(reports[0][0].child_by_field_name("package") or reports[0][0].child_by_field_name("operand"))
    uses = [
        n for declaration in syntax.children(parsed.root) if declaration.type != "import_declaration"
        for n in syntax.walk(declaration) if n.type in ("identifier", "package_identifier") and syntax.text(n) == name
    ]
    return len(uses) == len(reports)


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

    ## Fix safety
    Safe, for the shapes recognised exactly, and only with what the
    module's `go` directive allows (`unsafe.Slice` needs go 1.17;
    `unsafe.String`, `unsafe.SliceData` and `unsafe.StringData` need 1.20):
    `(*reflect.SliceHeader)(unsafe.Pointer(&s)).Data` of a slice variable
    becomes `unsafe.SliceData(s)` (`.Len` becomes `len(s)`); a header
    literal converted to `[]T` or `string`, in place or through a variable
    declared right before and used nowhere else, becomes `unsafe.Slice` or
    `unsafe.String`; an overlay filled in field by field right after it is
    made, on a variable declared `var s []T`, becomes
    `s = unsafe.Slice((*T)(p), n)`. Len and Cap must be the same expression
    without calls, and the data an `unsafe.Pointer`. The `reflect` import
    goes with its last use. Anything else gets no fix.
    """,
    tags=("correctness", "memory-safety"),
    check=check,
    needles=lambda knowledge: frozenset({b"SliceHeader", b"StringHeader"}),
    local_needles=True,
)
