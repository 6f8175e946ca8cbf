"""Units: names as the Go toolchain prints them, parameters and results, and
how each func literal is used by the code around it."""

from __future__ import annotations

from cudalint.functions import LiteralUse, UnitKind
from gosrc import package_of, unit_named


SOURCE = """
    package p

    var hook = func() {}

    type Buf struct{}

    func (b *Buf) Close() error { return nil }
    func (b Buf) Len() int { return 0 }

    func run(fn func()) {}

    func outer(n int) (res int, err error) {
    \tdefer func() {}()
    \tgo func() {
    \t\tfunc() {}()
    \t}()
    \trun(func() {})
    \tcleanup := func() {}
    \tcleanup()
    \tch := make(chan func(), 1)
    \tch <- func() {}
    \tdefer cleanup()
    \treturn 0, nil
    }

    func factory() func() {
    \treturn func() {}
    }
"""


def test_unit_names_follow_the_go_toolchain():
    pkg = package_of(SOURCE)
    names = [u.name for u in pkg.units]
    assert names == [
        "(*Buf).Close", "Buf.Len", "run", "outer",
        "outer.func1", "outer.func2", "outer.func2.1", "outer.func3", "outer.func4", "outer.func5",
        "factory", "factory.func1", "glob..func1",
    ]
    assert unit_named(pkg, "(*Buf).Close").kind is UnitKind.METHOD
    assert unit_named(pkg, "outer.func2.1").parent is unit_named(pkg, "outer.func2")


def test_parameters_results_and_receiver():
    pkg = package_of(SOURCE)
    outer = unit_named(pkg, "outer")
    assert [p.name for p in outer.params] == ["n"]
    assert [r.name for r in outer.results] == ["res", "err"] and outer.result_count == 2
    close = unit_named(pkg, "(*Buf).Close")
    assert close.receiver.name == "b" and close.result_count == 1 and not close.results
    assert unit_named(pkg, "outer").symbol.name == "outer"


def test_literal_uses():
    pkg = package_of(SOURCE)
    uses = {u.name: u.use for u in pkg.units if u.kind is UnitKind.LITERAL}
    assert uses == {
        "outer.func1": LiteralUse.DEFERRED,
        "outer.func2": LiteralUse.GO,
        "outer.func2.1": LiteralUse.CALLED,
        "outer.func3": LiteralUse.PASSED,
        "outer.func4": LiteralUse.STORED,
        "outer.func5": LiteralUse.STORED,
        "factory.func1": LiteralUse.RETURNED,
        "glob..func1": LiteralUse.STORED,
    }
    assert unit_named(pkg, "outer.func4").stored_in.name == "cleanup"
    assert unit_named(pkg, "glob..func1").stored_in.name == "hook"


def test_functions_with_syntax_errors_are_marked_and_others_kept():
    pkg = package_of("""
        package p
        func good() { println(1) }
        func bad() { if { }
        func alsoGood() { println(2) }
    """)
    problems = {u.name: u.problem for u in pkg.units}
    assert problems["good"] is None
    assert problems["bad"] == "contains a syntax error"
