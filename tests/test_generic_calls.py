"""Generic functions called with one argument and explicit type arguments
(`Alloc[float32](n)`): tree-sitter's Go grammar parses them as conversions to
a generic type; `parse` reads them as calls, and a fix that would copy such a
call's text is not offered."""

from __future__ import annotations

from pathlib import Path

from tree_sitter import Parser

from cudalint import syntax
from cudalint.parse import generic_calls, parse
from cudalint.findings import Fix
from cudalint.fixes.placement import insert_before, replacement
from cudalint.framework import Pass
from cudalint.source import SourceFile
from cudalint.syntax import GO
from gosrc import package_of, package_run, unit_named

GENERIC = b"""package p

func f(n int) {
\ta := Alloc[float32](n)
\tb := pkg.Make[
\t\tint32,
\t](n)
\tc := []byte("x")
\td := Alloc[float32](n, n)
\te := pkg.Make[int64](n)
\t_, _, _, _, _ = a, b, c, d, e
}
"""


def _calls(root) -> list[str]:
    return [syntax.text(syntax.called(call)) for call in syntax.calls_in(root)]


def test_type_arguments_become_blanks_at_the_same_offsets() -> None:
    found = generic_calls(GENERIC, Parser(GO).parse(GENERIC).root_node)
    assert found is not None
    blanked, spans = found
    assert len(blanked) == len(GENERIC) and len(spans) == 2
    assert blanked.count(b"\n") == GENERIC.count(b"\n")  # lines stay where they were
    assert b"a := Alloc         (n)" in blanked and b"e := pkg.Make       (n)" in blanked
    # type arguments over lines (a name ending its line would end the statement),
    # a conversion of a slice type and a call of two arguments are left as they are
    assert b"\t\tint32,\n" in blanked
    assert b'[]byte("x")' in blanked and b"Alloc[float32](n, n)" in blanked


def test_the_parse_sees_the_calls() -> None:
    parsed = parse(SourceFile(Path("p.go"), "p.go", GENERIC))[0]
    assert parsed.blanked
    # `Alloc[float32](n, n)` parses as a call of an instantiation already
    assert _calls(parsed.root) == ["Alloc", "Alloc[float32]", "pkg.Make"]
    assert not parsed.root.has_error


def test_a_file_without_them_is_parsed_once_as_it_is() -> None:
    data = b"package p\n\nfunc f(h []func(int), b []byte) {\n\th[0](1)\n\t_ = string(b)\n}\n"
    parsed = parse(SourceFile(Path("p.go"), "p.go", data))[0]
    assert not parsed.blanked
    assert generic_calls(data, parsed.root) is None and parsed.original_text("h[0](1)") == "h[0](1)"


def test_a_fix_that_would_copy_a_blanked_call_is_not_offered() -> None:
    """A rule's fix built from the tree's text (placement.insert_before copies
    its anchor statement) would write the blanks into the file; one built
    from the file's bytes is offered."""
    source = """\
        package p

        func f(n int) {
        \ta := Alloc[float32](n)
        \t_ = a
        }
        """
    package = package_of(source)
    (parsed,) = package.files
    unit = unit_named(package, "f")
    anchor = unit.body.named_children[0].named_children[0]
    assert syntax.text(anchor) == "a := Alloc         (n)"
    copying = Fix("insert before", True, (insert_before(anchor, parsed.source, "\t", "defer g()"),))
    from_bytes = Fix("insert after", True, (replacement(parsed.source, anchor.end_byte, anchor.end_byte, "\n\tdefer g()"),))
    reporting = Pass(package_run(package), frozenset(), "CL101")
    reporting.report(unit, anchor, "m", fixes=(copying, from_bytes))
    reporting.report(unit, anchor, f"{syntax.text(anchor)} leaks")
    (finding, quoting) = reporting.findings
    assert finding.fixes == (from_bytes,)
    assert quoting.message == "a := Alloc[float32](n) leaks"  # the message quotes the file, not the blanks
