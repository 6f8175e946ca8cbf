"""Lexical resolution: which declaration each identifier refers to."""

from __future__ import annotations

from cudalint import syntax
from cudalint.gotypes import imported_type
from cudalint.scope import Role, SymbolKind, default_import_name
from gosrc import package_of


def idents(package, name: str, line: int):
    """Identifier nodes spelled `name` on `line` (1-based), in column order."""
    found = []
    for parsed in package.files:
        for node in syntax.walk(parsed.root):
            if node.type == "identifier" and syntax.text(node) == name and syntax.line(node) == line:
                found.append(node)
    return found


def sym(package, name: str, line: int, index: int = 0):
    return package.resolution.symbol(idents(package, name, line)[index])


def test_sibling_blocks_declare_different_variables():
    pkg = package_of("""
        package p
        func f(x bool) {
        \tif x {
        \t\td := 1
        \t\tprintln(d)
        \t} else {
        \t\td := 2
        \t\tprintln(d)
        \t}
        }
    """)
    first, second = sym(pkg, "d", 5), sym(pkg, "d", 8)
    assert first is sym(pkg, "d", 4) and second is sym(pkg, "d", 7)
    assert first is not second


def test_short_var_redeclaration_same_scope_reuses_inner_scope_shadows():
    pkg = package_of("""
        package p
        func g() (int, error) { return 0, nil }
        func f() error {
        \ta, err := g()
        \tb, err := g()
        \tif true {
        \t\tc, err := g()
        \t\t_, _ = c, err
        \t}
        \t_, _ = a, b
        \treturn err
        }
    """)
    outer = sym(pkg, "err", 4)
    assert sym(pkg, "err", 5) is outer  # same scope: assignment to the existing err
    inner = sym(pkg, "err", 7)
    assert inner is not outer  # inner scope: a new err
    assert sym(pkg, "err", 8) is inner
    assert sym(pkg, "err", 11) is outer
    assert outer.init is not None and outer.init_index == 1


def test_right_hand_side_is_resolved_before_the_new_name():
    pkg = package_of("""
        package p
        func f(x int) {
        \t{
        \t\tx := x + 1
        \t\tprintln(x)
        \t}
        }
    """)
    param = sym(pkg, "x", 2)
    assert param.role is Role.PARAM
    new_x, rhs_x = idents(pkg, "x", 4)
    assert pkg.resolution.symbol(rhs_x) is param
    assert pkg.resolution.symbol(new_x) is not param
    assert sym(pkg, "x", 5) is pkg.resolution.symbol(new_x)


def test_cgo_and_aliased_imports_and_shadowing_locals():
    pkg = package_of("""
        package p

        // #include <stdlib.h>
        import "C"

        import (
        \tcuda "gorgonia.org/cu"
        \t"github.com/NVIDIA/go-nvml/pkg/nvml"
        )

        func f() {
        \tC.free(nil)
        \tcuda.MemFree(0)
        \tnvml.Init()
        \t{
        \t\tcuda := struct{ MemFree func(int) }{}
        \t\tcuda.MemFree(0)
        \t\tC := struct{ free func(any) }{}
        \t\tC.free(nil)
        \t}
        }
    """)
    res = pkg.resolution
    assert res.package_of(idents(pkg, "C", 12)[0]) == "C"
    assert res.package_of(idents(pkg, "cuda", 13)[0]) == "gorgonia.org/cu"
    assert res.package_of(idents(pkg, "nvml", 14)[0]) == "github.com/NVIDIA/go-nvml/pkg/nvml"
    local = sym(pkg, "cuda", 17)
    assert local.kind is SymbolKind.VAR and res.package_of(idents(pkg, "cuda", 17)[0]) is None
    # cgo rewrites `C.name` by spelling: in a file importing "C" no local C shadows it.
    assert res.package_of(idents(pkg, "C", 19)[0]) == "C"


def test_package_level_names_across_files_and_builtins():
    pkg = package_of(
        """
        package p
        func f() { helper(); panic(limit) }
        """,
        """
        package p
        const limit = 3
        func helper() {}
        """,
    )
    helper = sym(pkg, "helper", 2)
    assert helper.kind is SymbolKind.FUNC and helper.role is Role.GLOBAL
    assert sym(pkg, "limit", 2).kind is SymbolKind.CONST
    assert pkg.resolution.is_builtin(idents(pkg, "panic", 2)[0], "panic")


def test_statement_scopes_range_select_type_switch():
    pkg = package_of("""
        package p
        func f(xs []int, c chan int, v any) {
        \tfor i, x := range xs {
        \t\tprintln(i, x)
        \t}
        \tselect {
        \tcase x, ok := <-c:
        \t\tprintln(x, ok)
        \t}
        \tswitch t := v.(type) {
        \tcase int:
        \t\tprintln(t)
        \tcase string:
        \t\tprintln(t)
        \t}
        }
    """)
    assert sym(pkg, "x", 4) is sym(pkg, "x", 3)
    assert sym(pkg, "x", 8) is sym(pkg, "x", 7)
    assert sym(pkg, "x", 8) is not sym(pkg, "x", 3)
    in_int, in_string = sym(pkg, "t", 12), sym(pkg, "t", 14)
    assert in_int is not in_string  # one variable per clause, as in Go
    assert syntax.text(in_int.type_node) == "int"


def test_struct_literal_keys_are_not_variables_but_map_keys_are():
    pkg = package_of("""
        package p
        type S struct{ size int }
        func f(size int, k string) {
        \t_ = S{size: size}
        \t_ = map[string]int{k: size}
        }
    """)
    key, value = idents(pkg, "size", 4)
    assert pkg.resolution.symbol(key) is None
    assert pkg.resolution.symbol(value).role is Role.PARAM
    assert sym(pkg, "k", 5).role is Role.PARAM


def test_declared_types_resolve_through_imports():
    pkg = package_of("""
        package p

        import tst "testing"

        func f(t *tst.T, n int) { t.Log(n) }
    """)
    res = pkg.resolution
    assert imported_type(res, sym(pkg, "t", 5)) == ("testing", "T")
    assert imported_type(res, sym(pkg, "n", 5)) is None


def test_default_import_names():
    assert default_import_name("C") == "C"
    assert default_import_name("github.com/NVIDIA/go-nvml/pkg/nvml") == "nvml"
    assert default_import_name("gopkg.in/yaml.v3") == "yaml"
    assert default_import_name("github.com/x/y/v2") == "y"
    assert default_import_name("github.com/mattn/go-sqlite3") == "sqlite3"


def test_generic_receiver_type_parameters_and_index_keys():
    pkg = package_of("""
        package p
        type T struct{}
        type List[T any] struct{ items []T }
        func (l *List[T]) Push(v any) { _ = T(v) }
        const i0 = 0
        var names = []string{i0: "a"}
    """)
    res = pkg.resolution
    conversion = idents(pkg, "T", 4)
    assert len(conversion) == 1
    assert res.symbol(conversion[0]).role is Role.LOCAL  # the receiver's type parameter, not package T
    assert res.symbol(idents(pkg, "i0", 6)[0]).kind is SymbolKind.CONST
