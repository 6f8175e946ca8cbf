"""CallIndex are computed lazily: only the declarations that call watched
packages are resolved up front, and everything else on demand. These tests
pin the guarantees that laziness must not break."""

from __future__ import annotations

import textwrap
from pathlib import Path

from cudalint import syntax
from cudalint.analyses.calls import CalleeKind, index_calls
from cudalint.functions import Package, collect_packages
from cudalint.parse import parse
from cudalint.source import SourceFile
from gosrc import knowledge

SOURCE = """
package p

// #include <cuda_runtime_api.h>
import "C"

import (
	"os"
	"unsafe"
)

var scratch unsafe.Pointer

func alloc() {
	C.cudaMalloc(&scratch, 64)
}

func helper() string {
	return os.Getenv("CUDA_VISIBLE_DEVICES")
}

func unrelated() string {
	local := helper()
	scratch = nil
	return local
}
"""


def lazy_package(text: str) -> Package:
    """The package as the driver sees it: nothing resolved beforehand."""
    data = textwrap.dedent(text).lstrip("\n").encode()
    parsed = [parse(SourceFile(Path("p.go"), "p.go", data))[0]]
    packages = collect_packages(parsed, ".", knowledge().package_names)
    assert len(packages) == 1
    return packages[0]


def unit_named(package: Package, name: str):
    return next(unit for unit in package.units if unit.name == name)


def identifiers_in(node, text: str):
    return [n for n in syntax.walk(node) if n.type == "identifier" and syntax.text(n) == text]


def test_functions_without_watched_calls_are_not_resolved_up_front() -> None:
    package = lazy_package(SOURCE)
    index_calls(package, knowledge())
    refs = package.resolution.refs
    assert any(node in refs for node in identifiers_in(unit_named(package, "alloc").node, "scratch"))
    assert not any(node in refs for node in identifiers_in(unit_named(package, "unrelated").node, "local"))


def test_asking_about_an_unwatched_call_leaves_the_watched_calls_unchanged() -> None:
    """Passes iterate over `calls`; classifying os.Getenv on demand while
    they do must not add to it."""
    package = lazy_package(SOURCE)
    facts = index_calls(package, knowledge())
    watched = dict(facts.calls)
    assert {fact.name for fact in watched.values()} == {"cudaMalloc"}
    helper = unit_named(package, "helper")
    getenv = next(n for n in syntax.walk(helper.node) if n.type == "call_expression")
    package.resolution.ensure(helper.file.root, getenv)
    assert facts.callee(getenv).kind is not CalleeKind.API
    assert facts.calls == watched


def test_callers_and_references_are_found_in_unresolved_functions() -> None:
    package = lazy_package(SOURCE)
    facts = index_calls(package, knowledge())
    callers = facts.calls_of(unit_named(package, "helper"))
    assert [syntax.text(call) for call in callers] == ["helper()"]
    alloc = unit_named(package, "alloc")
    scratch = package.resolution.symbol(identifiers_in(alloc.node, "scratch")[0])
    assert scratch is not None and not scratch.is_local
    unrelated = unit_named(package, "unrelated").node
    assert any(unrelated.start_byte <= node.start_byte < unrelated.end_byte for node in facts.references(scratch))


def test_the_file_index_skips_declarations_that_cannot_match_but_nothing_else() -> None:
    """A table literal has no call, key or func: the query skips it (it may
    be megabytes); the declarations around it are indexed as usual."""
    table = ", ".join(str(i % 256) for i in range(5000))
    source = f"""
    package p

    import "C"

    var before = map[string]int{{"a": 1}}

    var table = []byte{{{table}}}

    func after() {{
    	defer C.cudaDeviceReset()
    	go func() {{}}()
    }}
    """
    package = lazy_package(source)
    index = package.files[0].index
    assert [syntax.text(node) for node in index.defer_statements] == ["defer C.cudaDeviceReset()"]
    assert [syntax.text(node) for node in index.qualified_calls] == ["C.cudaDeviceReset()"]
    assert [syntax.text(node) for node in index.func_literals] == ["func() {}"]
    assert [syntax.text(node) for node in index.keyed_elements] == ['"a": 1']
    assert sorted(syntax.calls_by_name(index)) == ["cudaDeviceReset"]
    parsed = package.files[0]
    table_declaration = next(d for d in parsed.root.children if syntax.text(d).startswith("var table"))
    ranges = syntax._indexed_ranges(parsed.root, parsed.source.data)
    assert len(ranges) == 2
    assert not any(start <= table_declaration.start_byte < end for start, end in ranges)
