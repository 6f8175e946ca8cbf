"""The control-flow graph on every construct of the grammar.

Nodes are found by the line they start on (each snippet puts one construct
per line); assertions check edges, branch conditions, exits and
reachability, which is what the rules stand on."""

from __future__ import annotations

from cudalint import syntax
from cudalint.cfg import CFG, Edge, ExitKind, NodeKind
from gosrc import graphs_of


def one(source: str, name: str = "f") -> CFG:
    return graphs_of(source)[name]


def at(graph: CFG, line: int, kind: NodeKind | None = None) -> int:
    found = [n for n in graph.statement_nodes() if graph.line(n) == line and (kind is None or graph.kind(n) is kind)]
    assert found, f"no node on line {line}"
    return found[0]


def succ(graph: CFG, n: int) -> set[int]:
    return set(graph.successors(n))


def exits_reached(graph: CFG) -> set[ExitKind]:
    return {kind for kind in ExitKind if graph.exit_reachable(kind)}


def edge(graph: CFG, a: int, b: int) -> Edge:
    return graph.edge(a, b)


def test_straight_line_and_implicit_return_at_closing_brace():
    g = one("""
        package p
        func f() {
        \ta := 1
        \ta++
        }
    """)
    first, second = at(g, 3), at(g, 4)
    assert succ(g, g.entry) == {first}
    assert succ(g, first) == {second}
    (implicit,) = succ(g, second)
    assert g.kind(implicit) is NodeKind.IMPLICIT_RETURN and g.line(implicit) == 5
    assert succ(g, implicit) == {g.exits[ExitKind.RETURN]}
    assert exits_reached(g) == {ExitKind.RETURN}


def test_exits_are_sinks_with_their_kind():
    g = one("""
        package p
        func f() {}
    """)
    for kind, n in g.exits.items():
        assert g.kind(n) is NodeKind.EXIT and g.exit_kind(n) is kind
        assert not succ(g, n)


def test_if_else_if_with_initializers_and_condition_polarity():
    g = one("""
        package p
        func f(x int) int {
        \tif y := x; y > 0 {
        \t\treturn 1
        \t} else if z := -x; z > 0 {
        \t\treturn 2
        \t} else {
        \t\treturn 3
        \t}
        }
    """)
    init1 = at(g, 3, NodeKind.STMT)
    cond1 = at(g, 3, NodeKind.COND)
    assert succ(g, init1) == {cond1}
    ret1, ret2, ret3 = at(g, 4), at(g, 6), at(g, 8)
    assert edge(g, cond1, ret1).polarity is True
    assert syntax.text(edge(g, cond1, ret1).condition) == "y > 0"
    init2 = at(g, 5, NodeKind.STMT)
    assert edge(g, cond1, init2).polarity is False
    cond2 = at(g, 5, NodeKind.COND)
    assert edge(g, cond2, ret2).polarity is True and edge(g, cond2, ret3).polarity is False
    assert g.kind(g.exits[ExitKind.RETURN]) is NodeKind.EXIT
    assert not any(g.kind(n) is NodeKind.IMPLICIT_RETURN for n in g.nodes())


def test_short_circuit_conditions_are_split_and_negation_flips_polarity():
    g = one("""
        package p
        func f(a, b, ok bool) {
        \tif a &&
        \t\tb {
        \t\tprintln(1)
        \t}
        \tif !ok ||
        \t\ta {
        \t\tprintln(2)
        \t}
        }
    """)
    ca, cb = at(g, 3, NodeKind.COND), at(g, 4, NodeKind.COND)
    then1 = at(g, 5)
    assert edge(g, ca, cb).polarity is True
    assert edge(g, cb, then1).polarity is True
    ok, a2 = at(g, 7, NodeKind.COND), at(g, 8, NodeKind.COND)
    assert syntax.text(g.ast(ok)) == "ok"
    then2 = at(g, 9)
    # `!ok` is true when ok is false: that edge goes to the body.
    assert edge(g, ok, then2) == Edge(ok, then2, "cond", g.ast(ok), False)
    assert edge(g, ok, a2).polarity is True
    # a false `a` skips the first body; both then-ends and else-ends meet.
    assert at(g, 7, NodeKind.COND) in succ(g, ca)


def test_both_outcomes_to_one_node_make_an_unconditional_edge():
    g = one("""
        package p
        func f(x bool) {
        \tif x {
        \t}
        \tprintln()
        }
    """)
    c, after = at(g, 3, NodeKind.COND), at(g, 5)
    assert edge(g, c, after) == Edge(c, after)


def test_three_clause_for_loop_and_continue_to_post():
    g = one("""
        package p
        func f(n int) {
        \tfor i := 0; i < n; i++ {
        \t\tif i == 2 {
        \t\t\tcontinue
        \t\t}
        \t\tprintln(i)
        \t}
        \tprintln("done")
        }
    """)
    init = at(g, 3, NodeKind.STMT)
    cond = at(g, 3, NodeKind.COND)
    post = [n for n in g.statement_nodes() if g.line(n) == 3 and syntax.text(g.ast(n)) == "i++"][0]
    cont = at(g, 5, NodeKind.CONTINUE)
    body_end = at(g, 7)
    done = at(g, 9)
    assert succ(g, init) == {cond}
    assert succ(g, cont) == {post} and succ(g, body_end) == {post}
    assert succ(g, post) == {cond}
    assert edge(g, cond, done).polarity is False


def test_condition_only_and_infinite_loops():
    g = one("""
        package p
        func f(x bool) {
        \tfor x {
        \t\tprintln(1)
        \t}
        \tfor {
        \t\tprintln(2)
        \t}
        \tprintln(3)
        }
    """)
    cond, body = at(g, 3, NodeKind.COND), at(g, 4)
    assert succ(g, body) == {cond}
    loop = at(g, 6, NodeKind.LOOP)
    assert succ(g, at(g, 7)) == {loop}
    assert not g.reachable(at(g, 9))
    assert exits_reached(g) == set()


def test_infinite_loop_left_by_break_and_by_return():
    g = one("""
        package p
        func f(x bool) int {
        \tfor {
        \t\tif x {
        \t\t\tbreak
        \t\t}
        \t}
        \tfor {
        \t\treturn 1
        \t}
        }
    """)
    assert g.reachable(at(g, 8, NodeKind.LOOP))
    assert exits_reached(g) == {ExitKind.RETURN}


def test_range_loop_edges():
    g = one("""
        package p
        func f(xs []int) {
        \tfor _, x := range xs {
        \t\tprintln(x)
        \t}
        \tprintln()
        }
    """)
    head = at(g, 3, NodeKind.RANGE)
    body, after = at(g, 4), at(g, 6)
    assert edge(g, head, body) == Edge(head, body, "range", polarity=True)
    assert edge(g, head, after) == Edge(head, after, "range", polarity=False)
    assert succ(g, body) == {head}


def test_labeled_break_and_continue_reach_the_outer_loop():
    g = one("""
        package p
        func f(m [][]int) {
        outer:
        \tfor _, row := range m {
        \t\tfor _, v := range row {
        \t\t\tif v < 0 {
        \t\t\t\tcontinue outer
        \t\t\t}
        \t\t\tif v == 0 {
        \t\t\t\tbreak outer
        \t\t\t}
        \t\t}
        \t}
        \tprintln()
        }
    """)
    outer = at(g, 4, NodeKind.RANGE)
    assert succ(g, at(g, 7, NodeKind.CONTINUE)) == {outer}
    assert succ(g, at(g, 10, NodeKind.BREAK)) == {at(g, 14)}
    label = at(g, 3, NodeKind.LABEL)
    # The label leads to the range expression, evaluated once, then the head
    # (where `continue outer` goes, not re-evaluating `m`).
    (ranged,) = succ(g, label)
    assert g.kind(ranged) is NodeKind.STMT and succ(g, ranged) == {outer}


def test_a_range_expression_is_evaluated_once_before_the_loop():
    g = one("""
        package p
        func f() {
        	for _, v := range values() {
        		println(v)
        	}
        }
    """)
    head = at(g, 3, NodeKind.RANGE)
    ranged = at(g, 3, NodeKind.STMT)
    assert succ(g, ranged) == {head} and not g.has_path(head, ranged)  # not again per iteration
    assert [node.type for node in g.evaluated(ranged)] == ["call_expression"]
    assert [node.type for node in g.evaluated(head)] == ["expression_list"]


def test_expression_switch_default_last_and_fallthrough():
    g = one("""
        package p
        func f(x int) {
        \tswitch x {
        \tdefault:
        \t\tprintln("d")
        \tcase 1:
        \t\tprintln(1)
        \t\tfallthrough
        \tcase 2, 3:
        \t\tprintln(2)
        \t}
        \tprintln("after")
        }
    """)
    tag = at(g, 3, NodeKind.SWITCH)
    case1, case2 = at(g, 6, NodeKind.CASE), at(g, 9, NodeKind.CASE)
    body_default, body1, body2, after = at(g, 5), at(g, 7), at(g, 10), at(g, 12)
    assert succ(g, tag) == {case1}
    e = edge(g, case1, body1)
    assert e.polarity is True and syntax.text(e.tag) == "x" and e.case.type == "expression_case" and e.tests_case
    assert edge(g, case1, case2).polarity is False
    # default is tried last, even though it is written first
    assert edge(g, case2, body_default).branch == "default"
    # fallthrough enters the next body in source order
    fall = at(g, 8, NodeKind.FALLTHROUGH)
    assert succ(g, fall) == {body2}
    assert succ(g, body_default) == {after} and succ(g, body2) == {after}


def test_tagless_switch_cases_are_conditions():
    g = one("""
        package p
        func f(st int) int {
        \tswitch {
        \tcase st != 0, st < -1:
        \t\treturn st
        \t}
        \treturn 0
        }
    """)
    conds = [n for n in g.statement_nodes() if g.kind(n) is NodeKind.COND]
    assert [syntax.text(g.ast(n)) for n in conds] == ["st != 0", "st < -1"]
    ret = at(g, 5)
    assert edge(g, conds[0], ret).polarity is True and edge(g, conds[1], ret).polarity is True
    assert edge(g, conds[1], at(g, 7)).polarity is False


def test_switch_where_every_arm_returns():
    with_default = one("""
        package p
        func f(x int) int {
        \tswitch x {
        \tcase 1:
        \t\treturn 1
        \tdefault:
        \t\treturn 0
        \t}
        \tprintln()
        \treturn 2
        }
    """)
    assert not with_default.reachable(at(with_default, 9))
    without_default = one("""
        package p
        func f(x int) int {
        \tswitch x {
        \tcase 1:
        \t\treturn 1
        \t}
        \treturn 2
        }
    """)
    assert without_default.reachable(at(without_default, 7))


def test_type_switch():
    g = one("""
        package p
        func f(v any) int {
        \tswitch t := v.(type) {
        \tcase int:
        \t\treturn t
        \tcase string, []byte:
        \t\treturn len(t.(string))
        \t}
        \treturn 0
        }
    """)
    head = at(g, 3, NodeKind.TYPESWITCH)
    case_int, case_str = at(g, 4, NodeKind.TYPECASE), at(g, 6, NodeKind.TYPECASE)
    assert succ(g, head) == {case_int}
    assert edge(g, case_int, case_str).polarity is False
    assert edge(g, case_str, at(g, 9)).polarity is False


def test_select_with_and_without_default_and_empty_select():
    g = one("""
        package p
        func f(a, b chan int) {
        \tselect {
        \tcase v := <-a:
        \t\tprintln(v)
        \tcase b <- 1:
        \tdefault:
        \t\tprintln("none")
        \t}
        \tselect {
        \tcase <-a:
        \t\treturn
        \t}
        \tselect {}
        \tprintln("never")
        }
    """)
    first = at(g, 3, NodeKind.SELECT)
    comm1, comm2 = at(g, 4, NodeKind.COMM), at(g, 6, NodeKind.COMM)
    default_body = at(g, 8)
    assert succ(g, first) == {comm1, comm2, default_body}
    second = at(g, 10, NodeKind.SELECT)
    assert succ(g, second) == {at(g, 11, NodeKind.COMM)}
    # the only case returns: what follows the second select is dead
    assert not g.reachable(at(g, 14, NodeKind.SELECT))
    assert not g.reachable(at(g, 15))


def test_empty_select_never_continues():
    g = one("""
        package p
        func f() {
        \tselect {}
        \tprintln()
        }
    """)
    assert succ(g, at(g, 3)) == set()
    assert not g.reachable(at(g, 4))
    assert exits_reached(g) == set()


def test_goto_forward_and_backward():
    g = one("""
        package p
        func f(n int) {
        \ti := 0
        again:
        \ti++
        \tif i < n {
        \t\tgoto again
        \t}
        \tgoto done
        \tprintln("skipped")
        done:
        \tprintln("done")
        }
    """)
    again, done = at(g, 4, NodeKind.LABEL), at(g, 11, NodeKind.LABEL)
    assert succ(g, at(g, 7, NodeKind.GOTO)) == {again}
    assert succ(g, at(g, 9, NodeKind.GOTO)) == {done}
    assert not g.reachable(at(g, 10))
    assert g.reachable(done) and g.reachable(at(g, 12))


def test_return_in_every_position_reaches_the_return_exit():
    g = one("""
        package p
        func f(xs []int, c chan int) (n int, err error) {
        \tfor _, x := range xs {
        \t\tif x < 0 {
        \t\t\treturn x, nil
        \t\t}
        \t}
        \tswitch len(xs) {
        \tcase 0:
        \t\treturn
        \t}
        \tselect {
        \tcase v := <-c:
        \t\treturn v, nil
        \tdefault:
        \t}
        \t{
        \t\treturn 0, nil
        \t}
        }
    """)
    ret = g.exits[ExitKind.RETURN]
    for line in (5, 10, 14, 18):
        n = at(g, line, NodeKind.RETURN)
        assert succ(g, n) == {ret}
    assert not any(g.kind(n) is NodeKind.IMPLICIT_RETURN for n in g.nodes())


def test_defer_and_go_do_not_end_the_flow():
    g = one("""
        package p
        func f() {
        \tdefer println("d")
        \tgo println("g")
        \tprintln()
        }
    """)
    d, go_, after = at(g, 3, NodeKind.DEFER), at(g, 4, NodeKind.GO), at(g, 5)
    assert succ(g, d) == {go_} and succ(g, go_) == {after}


def test_exit_kinds_of_no_return_calls():
    graphs = graphs_of("""
        package p

        import (
        \t"log"
        \t"os"
        \t"runtime"
        \t"syscall"
        \t"testing"
        )

        func panics()          { panic("x") }
        func exits()           { os.Exit(1) }
        func fatal()           { log.Fatalf("x") }
        func logPanic()        { log.Panicln("x") }
        func goexit()          { runtime.Goexit() }
        func sysExit()         { syscall.Exit(1) }
        func fails(t *testing.T) { t.FailNow() }
        func skips(b *testing.B) { b.Skip() }
        func tb(t testing.TB)  { t.Fatal() }
        func logger(l *log.Logger) { l.Fatal() }
        func viaHelper()       { exits() }
        func either(x bool) {
        \tif x {
        \t\tpanics()
        \t}
        \tgoexit()
        }
    """)
    expected = {
        "panics": {ExitKind.PANIC}, "exits": {ExitKind.PROCESS}, "fatal": {ExitKind.PROCESS},
        "logPanic": {ExitKind.PANIC}, "goexit": {ExitKind.GOEXIT}, "sysExit": {ExitKind.PROCESS},
        "fails": {ExitKind.GOEXIT}, "skips": {ExitKind.GOEXIT}, "tb": {ExitKind.GOEXIT},
        "logger": {ExitKind.PROCESS}, "viaHelper": {ExitKind.PROCESS},
        "either": {ExitKind.PANIC, ExitKind.GOEXIT},
    }
    assert {name: exits_reached(graphs[name]) for name in expected} == expected


def test_the_logging_packages_services_use_end_the_process_too():
    """logrus, klog, glog and zap are never read (they reach no GPU API):
    their Fatal and Exit functions are known as the standard log's are."""
    graphs = graphs_of("""
        package p

        import (
        \tlogrus "github.com/sirupsen/logrus"
        \t"github.com/golang/glog"
        \t"go.uber.org/zap"
        \t"k8s.io/klog/v2"
        )

        func lr()                       { logrus.Fatalf("x") }
        func lrPanic()                  { logrus.Panic("x") }
        func entry(e *logrus.Entry)     { e.Fatal("x") }
        func kl()                       { klog.Exitf("x") }
        func gl()                       { glog.FatalDepth(1, "x") }
        func sugared(s *zap.SugaredLogger) { s.Fatalw("x") }
        func info()                     { klog.Infof("x") }
        func warn(s *zap.SugaredLogger) { s.Warnw("x") }
    """)
    expected = {
        "lr": {ExitKind.PROCESS}, "lrPanic": {ExitKind.PANIC}, "entry": {ExitKind.PROCESS},
        "kl": {ExitKind.PROCESS}, "gl": {ExitKind.PROCESS}, "sugared": {ExitKind.PROCESS},
        "info": {ExitKind.RETURN}, "warn": {ExitKind.RETURN},
    }
    assert {name: exits_reached(graphs[name]) for name in expected} == expected


def test_shadowed_names_return_normally():
    graphs = graphs_of("""
        package p

        import "os"

        type exiter struct{}

        func (exiter) Exit(int) {}

        func f() {
        \tos := exiter{}
        \tos.Exit(1)
        \tpanic := func(string) {}
        \tpanic("no")
        }
        func g(t *exiter) {
        \tt.Exit(1)
        }
        func h() {
        \tos.Exit(2)
        }
    """)
    assert exits_reached(graphs["f"]) == {ExitKind.RETURN}
    assert exits_reached(graphs["g"]) == {ExitKind.RETURN}
    assert exits_reached(graphs["h"]) == {ExitKind.PROCESS}


def test_code_after_no_return_call_is_unreachable():
    g = one("""
        package p

        import "os"

        func f() {
        \tos.Exit(1)
        \tprintln()
        }
    """)
    assert not g.reachable(at(g, 7))


def test_every_live_node_reaches_an_exit_or_a_loop():
    g = one("""
        package p
        func f(x int) {
        \tfor i := 0; i < x; i++ {
        \t\tswitch {
        \t\tcase i > 3:
        \t\t\tbreak
        \t\tdefault:
        \t\t\tcontinue
        \t\t}
        \t}
        }
    """)
    sinks = set(g.exits.values())
    for n in g.live:
        assert n in sinks or g.has_path(n, g.exits[ExitKind.RETURN])


def test_a_function_declared_per_platform_never_returns_only_if_no_variant_returns():
    from gosrc import package_of
    from cudalint.cfg import build_package_cfgs

    linux = """
        package p

        import "os"

        func die() { os.Exit(1) }
        func f() int { die(); return 1 }
    """
    other = """
        package p

        func die() {}
    """
    for order in ((linux, other), (other, linux)):
        package = package_of(*order, names=("a.go", "b.go"))
        built = build_package_cfgs(package)
        f = next(g for u, g in built.graphs.items() if u.name == "f")
        assert f.exit_reachable(ExitKind.RETURN)
        assert not [symbol for symbol, verdict in built.no_return.items() if verdict is not None]


def test_format_dumps_nodes_edges_conditions_and_dead_code():
    """The text dump `--dump-cfg` prints, as go/cfg's Format does."""
    g = one("""
        package p
        func f(x int) int {
        \tif x > 0 {
        \t\treturn 1
        \t}
        \treturn 2
        \tprintln("dead")
        }
    """)
    assert g.format() == (
        "cfg f: entry 0\n"
        ".0: entry\n"
        "    -> .5\n"
        ".1: exit (return)\n"
        ".2: exit (goexit) [dead]\n"
        ".3: exit (panic) [dead]\n"
        ".4: exit (process-exit) [dead]\n"
        ".5: cond line 3: x > 0\n"
        "    -> .6 if `x > 0` is true\n"
        "    -> .7 if `x > 0` is false\n"
        ".6: return line 4: return 1\n"
        "    -> .1\n"
        ".7: return line 6: return 2\n"
        "    -> .1\n"
        ".8: stmt line 7: println(\"dead\") [dead]\n"
        "    -> .9\n"
        ".9: implicit-return line 8: } [dead]\n"
        "    -> .1\n"
    )


def test_walk_visits_each_node_state_pair_once_in_breadth_first_order():
    g = one("""
        package p
        func f(n int) {
        \tfor i := 0; i < n; i++ {
        \t\tprintln(i)
        \t}
        }
    """)

    def step(node, count):
        for successor in g.successors(node):
            yield successor, min(count + 1, 3)

    visits = list(g.walk(g.entry, 0, step))
    assert len(visits) == len(set(visits))
    assert visits[0] == (g.entry, 0)
    depths = [count for _, count in visits]
    assert depths == sorted(depths)  # breadth first
    assert (g.exits[ExitKind.RETURN], 3) in visits


def test_whether_a_function_returns_is_read_off_its_last_statement_before_any_graph_is_built():
    """Asking whether a package function returns built its graph, and first
    the graphs of everything it calls. A body whose last statement is a
    return, or a simple statement calling nothing that could end the
    goroutine, or a loop with a condition, returns: no graph is built for
    the answer. Bodies ending otherwise are still asked of their graph."""
    from gosrc import package_of
    from cudalint.cfg import build_package_cfgs

    package = package_of("""
        package p

        import (
        \t"fmt"
        \t"log"
        )

        func helper() int { return 1 }
        func plain() int { helper(); return helper() }
        func logs() { fmt.Println(helper()) }
        func loops(n int) {
        \tfor i := 0; i < n; i++ {
        \t\tplain()
        \t}
        }
        func dies() { log.Fatal("no") }
        func diesThrough() { dies() }
        func spins() {
        \tfor {
        \t\tplain()
        \t}
        }
        func branches(x bool) {
        \tif x {
        \t\tdies()
        \t} else {
        \t\tpanic(x)
        \t}
        }
        func returnsInLoop() {
        \tfor {
        \t\treturn
        \t}
        }
    """)
    cfgs = build_package_cfgs(package)
    verdicts = {
        name: cfgs.exits_of_function(symbol)
        for name in ("plain", "logs", "loops", "dies", "diesThrough", "spins", "branches", "returnsInLoop")
        for symbol in [next(u.symbol for u in package.units if u.name == name)]
    }
    assert verdicts["plain"] is verdicts["logs"] is verdicts["loops"] is verdicts["returnsInLoop"] is None
    assert verdicts["dies"] == verdicts["diesThrough"] == {ExitKind.PROCESS}
    assert verdicts["spins"] == frozenset()
    assert verdicts["branches"] == {ExitKind.PROCESS, ExitKind.PANIC}
    built = {unit.name for unit in cfgs.graphs._cache}
    assert not built & {"helper", "plain", "logs", "loops"}, built
    assert {"dies", "diesThrough", "spins", "branches", "returnsInLoop"} <= built


def test_a_last_if_without_else_returns_unless_its_condition_cannot():
    """Whether a function may end otherwise than by returning is read off
    its last statement before any graph is built: an `if` without `else`
    falls off the end where its condition is false, whatever its block does
    (`check` calling log.Fatal returns), unless evaluating the condition
    itself may not (`stop`: its graph is asked)."""
    from gosrc import package_of
    from cudalint.cfg import build_package_cfgs

    package = package_of("""
        package p

        import "log"

        func check(err error) {
        \tif err != nil {
        \t\tlog.Fatal(err)
        \t}
        }

        func fail() bool { panic("no") }

        func stop() {
        \tif fail() {
        \t}
        }

        func f(err error) int {
        \tcheck(err)
        \treturn 1
        }
    """)
    built = build_package_cfgs(package)
    units = {unit.name: unit for unit in package.units}
    assert not built.may_not_return(units["check"])
    assert built.may_not_return(units["stop"])
    assert built.graphs.get(units["f"]).exit_reachable(ExitKind.RETURN)
