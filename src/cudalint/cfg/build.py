"""The builder of one function's graph, with go/cfg's semantics, and the
oracle it asks whether a call returns."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

from cudalint import syntax
from cudalint.cfg.graph import CFG, ExitKind, NodeKind
from cudalint.functions import Unit
from cudalint.gotypes import imported_type, returned_imported_type
from cudalint.lazy import networkx as nx
from cudalint.scope import Nesting, Resolution, Symbol, SymbolKind


# Standard-library calls that never return, and how the goroutine ends.
_NO_RETURN_FUNCS: dict[tuple[str, str], ExitKind] = {
    ("os", "Exit"): ExitKind.PROCESS,
    ("syscall", "Exit"): ExitKind.PROCESS,
    ("log", "Fatal"): ExitKind.PROCESS,
    ("log", "Fatalf"): ExitKind.PROCESS,
    ("log", "Fatalln"): ExitKind.PROCESS,
    ("log", "Panic"): ExitKind.PANIC,
    ("log", "Panicf"): ExitKind.PANIC,
    ("log", "Panicln"): ExitKind.PANIC,
    ("runtime", "Goexit"): ExitKind.GOEXIT,
}
_FATAL = {"Fatal": ExitKind.PROCESS, "Fatalf": ExitKind.PROCESS, "Fatalln": ExitKind.PROCESS}
_PANIC = {"Panic": ExitKind.PANIC, "Panicf": ExitKind.PANIC, "Panicln": ExitKind.PANIC}
_EXIT = {"Exit": ExitKind.PROCESS, "Exitf": ExitKind.PROCESS, "Exitln": ExitKind.PROCESS, "ExitDepth": ExitKind.PROCESS}
_LOGRUS, _ZAP = "github.com/sirupsen/logrus", "go.uber.org/zap"
# The logging packages GPU services use end the process the same way (their
# Fatal logs, then calls os.Exit(1)). They reach no GPU API, so they are
# never read for summaries: without this, `if err != nil { klog.Fatal(err) }`
# would be a path that goes on.
_NO_RETURN_FUNCS.update({
    (path, name): kind
    for path, names in (
        (_LOGRUS, {**_FATAL, **_PANIC, "Exit": ExitKind.PROCESS}),
        ("k8s.io/klog/v2", {**_FATAL, "FatalDepth": ExitKind.PROCESS, **_EXIT}),
        ("k8s.io/klog", {**_FATAL, "FatalDepth": ExitKind.PROCESS, **_EXIT}),
        ("github.com/golang/glog", {**_FATAL, "FatalDepth": ExitKind.PROCESS, **_EXIT}),
    )
    for name, kind in names.items()
})
_TESTING_GOEXIT = frozenset({"Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow"})
_NO_RETURN_METHODS: dict[tuple[str, str], dict[str, ExitKind]] = {
    **{("testing", t): {m: ExitKind.GOEXIT for m in _TESTING_GOEXIT} for t in ("T", "B", "F", "TB")},
    ("log", "Logger"): {**_FATAL, **_PANIC},
    (_LOGRUS, "Logger"): {**_FATAL, **_PANIC},
    (_LOGRUS, "Entry"): {**_FATAL, **_PANIC},
    (_ZAP, "Logger"): {"Fatal": ExitKind.PROCESS, "Panic": ExitKind.PANIC},
    (_ZAP, "SugaredLogger"): {**_FATAL, "Fatalw": ExitKind.PROCESS, **_PANIC, "Panicw": ExitKind.PANIC},
}


def ending_names(imported_exits: Mapping[tuple[str, str], frozenset[ExitKind]]) -> frozenset[str]:
    """The names a call must spell for the oracle to say it does not
    return: `panic`, the no-return functions and methods known here, what
    imported summaries say never returns (`Fatal` of `Logger.Fatal`) and a
    `sync.Once`'s `Do`. A call spelling none of them returns; a package's
    own functions are added by the caller, which knows them."""
    return frozenset({
        "panic", "Do",
        *(name for _, name in _NO_RETURN_FUNCS),
        *(name for methods in _NO_RETURN_METHODS.values() for name in methods),
        *(name.rpartition(".")[2] for _, name in imported_exits),
    })


class ExitOracle:
    """Answers "does this call return?" for the CFG builder: builtins, the
    standard library's no-return functions, and functions of the same package
    whose bodies cannot return (decided on demand by PackageCFGs)."""

    def __init__(
        self, resolution: Resolution, package_exits: Callable[[Symbol], frozenset[ExitKind] | None],
        imported_exits: Mapping[tuple[str, str], frozenset[ExitKind]] | None = None,
        literal_exits: Callable[[Node], frozenset[ExitKind] | None] | None = None,
    ):
        self.resolution = resolution
        self.package_exits = package_exits
        # How a function literal's body ends, None if it may return.
        self.literal_exits = literal_exits
        # Exported functions of other packages of the module that never
        # return, as their summaries say: (import path, name) -> exits.
        self.imported_exits = imported_exits or {}

    def exits_of(self, call: Node) -> frozenset[ExitKind] | None:
        """None if the call may return; otherwise how it ends the goroutine
        (an empty set for a call that blocks forever)."""
        function = syntax.unparen(call.child_by_field_name("function"))
        if function is None:
            return None
        res = self.resolution
        if function.type == "identifier":
            symbol = res.symbol(function)
            if symbol is None:
                return None
            if symbol.kind is SymbolKind.BUILTIN and symbol.name == "panic":
                return frozenset({ExitKind.PANIC})
            if symbol.kind is SymbolKind.FUNC:
                return self.package_exits(symbol)
            return None
        if function.type == "selector_expression":
            operand = syntax.unparen(function.child_by_field_name("operand"))
            name = syntax.text(function.child_by_field_name("field"))
            if operand is None or operand.type != "identifier":
                return None
            path = res.package_of(operand)
            if path is not None:
                kind = _NO_RETURN_FUNCS.get((path, name))
                return frozenset({kind}) if kind is not None else self.imported_exits.get((path, name))
            declared = imported_type(res, res.symbol(operand)) or returned_imported_type(res, res.symbol(operand))
            if declared == ("sync", "Once") and name == "Do":
                return self._first_do_exits(call, res.symbol(operand))
            if declared is not None:
                kind = _NO_RETURN_METHODS.get(declared, {}).get(name)
                return frozenset({kind}) if kind is not None else self.imported_exits.get((declared[0], f"{declared[1]}.{name}"))
            return self._made_by_package_exits(res.symbol(operand), name)
        return None

    def _made_by_package_exits(self, variable: Symbol | None, method: str) -> frozenset[ExitKind] | None:
        """`log := logger.New()` then `log.Fatal(...)`: the variable made by
        a function of another package of the module, whose one type with a
        method of that name never returns (`Logger.Fatal`)."""
        init = syntax.unparen(variable.init) if variable is not None and variable.kind is SymbolKind.VAR and variable.init_index <= 0 else None
        function = syntax.unparen(init.child_by_field_name("function")) if init is not None and init.type == "call_expression" else None
        operand = function.child_by_field_name("operand") if function is not None and function.type == "selector_expression" else None
        path = self.resolution.package_of(operand) if operand is not None and operand.type == "identifier" else None
        if path is None:
            return None
        found = [exits for (owner, name), exits in self.imported_exits.items() if owner == path and name.endswith(f".{method}")]
        return found[0] if len(found) == 1 else None

    def _first_do_exits(self, call: Node, once: Symbol | None) -> frozenset[ExitKind] | None:
        """`once.Do(func() { ...; os.Exit(code) })`: the Do that runs the
        literal ends the process, and any other Do waits for it or finds the
        process gone, so the call cannot return. A literal that panics (or
        ends its goroutine) marks the Once done: then only a Once of the
        calling function's own, whose first Do this is, cannot return."""
        arguments = syntax.children(call.child_by_field_name("arguments"))
        if once is None or self.literal_exits is None or len(arguments) != 1:
            return None
        literal = syntax.unparen(arguments[0])
        exits = self.literal_exits(literal) if literal is not None and literal.type == "func_literal" else None
        if exits is None or exits <= {ExitKind.PROCESS}:
            return exits
        return exits if once.is_local and once.function == syntax.enclosing_function(call) else None



Pending = list[tuple[int, dict]]


@dataclass
class _Target:
    label: str | None
    is_loop: bool
    breaks: Pending = field(default_factory=list)
    continues: Pending = field(default_factory=list)


_SIMPLE = frozenset({
    "short_var_declaration", "assignment_statement", "inc_statement", "dec_statement",
    "send_statement", "var_declaration", "const_declaration", "type_declaration",
})


class _Builder:
    """Builds one function's graph, statement by statement."""

    def __init__(self, unit: Unit, oracle: ExitOracle):
        self.unit = unit
        self.oracle = oracle
        self.g = nx.DiGraph()
        self.node_of: dict[Node, int] = {}
        self.entry = self._node(NodeKind.ENTRY, None, syntax.line(unit.node))
        self.exits = {kind: self._node(NodeKind.EXIT, None, 0, exit=kind) for kind in ExitKind}
        self.pending: Pending = [(self.entry, {})]
        self.targets: list[_Target] = []
        self.labels: dict[str, int] = {}
        self.gotos: list[tuple[int, str]] = []
        self.fallthrough: Pending = []
        self.nesting = Nesting()

    # -- graph primitives ---------------------------------------------------

    def _node(self, kind: NodeKind, ast: Node | None, line: int, **attrs) -> int:
        n = self.g.number_of_nodes()
        self.g.add_node(n, kind=kind, ast=ast, line=line, **attrs)
        if ast is not None and ast not in self.node_of:
            self.node_of[ast] = n
        return n

    def _edge(self, source: int, target: int, attrs: dict) -> None:
        existing = self.g.get_edge_data(source, target)
        if existing is None:
            self.g.add_edge(source, target, **attrs)
        elif existing != attrs:
            # Both outcomes of a test reach the same node: the edge constrains nothing.
            self.g.remove_edge(source, target)
            self.g.add_edge(source, target)

    def connect(self, pending: Pending, target: int) -> None:
        for source, attrs in pending:
            self._edge(source, target, attrs)

    def add(self, kind: NodeKind, ast: Node | None, line: int | None = None, **attrs) -> int:
        n = self._node(kind, ast, line if line is not None else syntax.line(ast), **attrs)
        self.connect(self.pending, n)
        self.pending = [(n, {})]
        return n

    def end_at(self, n: int, kinds: Iterable[ExitKind]) -> None:
        for kind in kinds:
            self._edge(n, self.exits[kind], {})
        self.pending = []

    # -- function -----------------------------------------------------------

    def build(self) -> CFG:
        body = self.unit.body
        if body is not None:
            self.statements(syntax.statements(body))
            if self.pending:
                n = self.add(NodeKind.IMPLICIT_RETURN, body, line=body.end_point[0] + 1)
                self.node_of.pop(body, None)
                self.end_at(n, [ExitKind.RETURN])
        for n, label in self.gotos:
            if label in self.labels:
                self._edge(n, self.labels[label], {"branch": "goto"})
        return CFG(self.unit, self.g, self.entry, self.exits, self.node_of)

    def statements(self, statements: list[Node]) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: Node | None, label: str | None = None) -> None:
        if node is None:
            return
        with self.nesting(node):
            kind = node.type
            if kind in _SIMPLE:
                self.add(NodeKind.STMT, node)
            elif kind == "expression_statement":
                self.expression_statement(node)
            elif kind == "block":
                self.statements(syntax.statements(node))
            elif kind == "return_statement":
                self.end_at(self.add(NodeKind.RETURN, node), [ExitKind.RETURN])
            elif kind == "defer_statement":
                self.add(NodeKind.DEFER, node)
            elif kind == "go_statement":
                self.add(NodeKind.GO, node)
            elif kind == "if_statement":
                self.if_statement(node)
            elif kind == "for_statement":
                self.for_statement(node, label)
            elif kind == "expression_switch_statement":
                self.switch_statement(node, label, typed=False)
            elif kind == "type_switch_statement":
                self.switch_statement(node, label, typed=True)
            elif kind == "select_statement":
                self.select_statement(node, label)
            elif kind == "labeled_statement":
                self.labeled_statement(node)
            elif kind == "goto_statement":
                n = self.add(NodeKind.GOTO, node)
                self.gotos.append((n, _label_of(node)))
                self.pending = []
            elif kind == "break_statement":
                self.jump(node, NodeKind.BREAK)
            elif kind == "continue_statement":
                self.jump(node, NodeKind.CONTINUE)
            elif kind == "fallthrough_statement":
                self.fallthrough = [(self.add(NodeKind.FALLTHROUGH, node), {"branch": "fallthrough"})]
                self.pending = []
            elif kind == "empty_statement":
                pass
            else:
                self.add(NodeKind.STMT, node)

    def expression_statement(self, node: Node) -> None:
        n = self.add(NodeKind.STMT, node)
        inner = syntax.children(node)
        call = syntax.unparen(inner[0]) if inner else None
        if call is not None and call.type == "call_expression":
            exits = self.oracle.exits_of(call)
            if exits is not None:
                self.end_at(n, exits)

    def jump(self, node: Node, kind: NodeKind) -> None:
        n = self.add(kind, node)
        self.pending = []
        label = _label_of(node)
        for target in reversed(self.targets):
            if label is not None and target.label != label:
                continue
            if kind is NodeKind.CONTINUE and not target.is_loop:
                continue
            edge = (n, {"branch": kind.value})
            (target.continues if kind is NodeKind.CONTINUE else target.breaks).append(edge)
            return

    # -- conditions ---------------------------------------------------------

    def cond(self, expression: Node | None) -> tuple[Pending, Pending]:
        """Evaluate a boolean expression; return the pending edges taken when
        it is true and when it is false."""
        with self.nesting(expression):
            e = syntax.unparen(expression)
            if e is not None and e.type == "binary_expression":
                operator = syntax.text(e.child_by_field_name("operator"))
                if operator == "&&":
                    true_left, false_left = self.cond(e.child_by_field_name("left"))
                    self.pending = true_left
                    true_right, false_right = self.cond(e.child_by_field_name("right"))
                    return true_right, false_left + false_right
                if operator == "||":
                    true_left, false_left = self.cond(e.child_by_field_name("left"))
                    self.pending = false_left
                    true_right, false_right = self.cond(e.child_by_field_name("right"))
                    return true_left + true_right, false_right
            if e is not None and e.type == "unary_expression" and syntax.text(e.child_by_field_name("operator")) == "!":
                when_true, when_false = self.cond(e.child_by_field_name("operand"))
                return when_false, when_true
            n = self.add(NodeKind.COND, e, line=syntax.line(e) if e is not None else None)
            return [(n, {"branch": "cond", "cond": e, "polarity": True})], [(n, {"branch": "cond", "cond": e, "polarity": False})]

    # -- compound statements -------------------------------------------------

    def if_statement(self, node: Node) -> None:
        self.statement(node.child_by_field_name("initializer"))
        when_true, when_false = self.cond(node.child_by_field_name("condition"))
        self.pending = when_true
        self.statement(node.child_by_field_name("consequence"))
        after = self.pending
        self.pending = when_false
        self.statement(node.child_by_field_name("alternative"))
        self.pending = after + self.pending

    def loop_body(self, node: Node, label: str | None, entry: Pending) -> _Target:
        target = _Target(label, is_loop=True)
        self.targets.append(target)
        self.pending = entry
        self.statement(node.child_by_field_name("body"))
        self.targets.pop()
        return target

    def for_statement(self, node: Node, label: str | None) -> None:
        header = next((c for c in syntax.children(node) if c.type != "block"), None)
        if header is not None and header.type == "range_clause":
            ranged = header.child_by_field_name("right")
            if ranged is not None:
                # Go evaluates the range expression once, before the first iteration.
                self.add(NodeKind.STMT, ranged)
            head = self.add(NodeKind.RANGE, header)
            target = self.loop_body(node, label, [(head, {"branch": "range", "polarity": True})])
            self.connect(self.pending + target.continues, head)
            self.pending = [(head, {"branch": "range", "polarity": False})] + target.breaks
            return
        condition = update = None
        if header is not None and header.type == "for_clause":
            self.statement(header.child_by_field_name("initializer"))
            condition = header.child_by_field_name("condition")
            update = header.child_by_field_name("update")
        elif header is not None:
            condition = header
        if condition is not None:
            first = self.g.number_of_nodes()
            when_true, when_false = self.cond(condition)
            head = first
        else:
            head = self.add(NodeKind.LOOP, node)
            when_true, when_false = [(head, {})], []
        target = self.loop_body(node, label, when_true)
        self.pending = self.pending + target.continues
        if update is not None:
            self.add(NodeKind.STMT, update)
        self.connect(self.pending, head)
        self.pending = when_false + target.breaks

    def switch_statement(self, node: Node, label: str | None, typed: bool) -> None:
        self.statement(node.child_by_field_name("initializer"))
        tag = node.child_by_field_name("value")
        if typed:
            self.add(NodeKind.TYPESWITCH, node)
        elif tag is not None:
            self.add(NodeKind.SWITCH, tag)
        case_types = ("type_case", "default_case") if typed else ("expression_case", "default_case")
        clauses = [c for c in syntax.children(node) if c.type in case_types]
        entries: dict[Node, Pending] = {}
        for clause in clauses:
            if clause.type == "default_case":
                continue
            if tag is None and not typed:
                entries[clause], self.pending = self.any_of(syntax.expressions(clause.child_by_field_name("value")))
            else:
                n = self.add(NodeKind.TYPECASE if typed else NodeKind.CASE, clause)
                edge = {"branch": "case", "case": clause, "tag": tag}
                entries[clause] = [(n, {**edge, "polarity": True})]
                self.pending = [(n, {**edge, "polarity": False})]
        no_match = self.pending
        after: Pending = []
        default = next((c for c in clauses if c.type == "default_case"), None)
        if default is not None:
            entries[default] = [(source, {**attrs, "branch": "default"}) for source, attrs in no_match]
        else:
            after = no_match
        target = _Target(label, is_loop=False)
        self.targets.append(target)
        falling: Pending = []
        for clause in clauses:
            # A second `default` (invalid Go, but it parses) is never entered.
            self.pending = entries.get(clause, []) + falling
            self.fallthrough = []
            self.statements(syntax.statements(clause))
            falling = self.fallthrough
            self.fallthrough = []
            after = after + self.pending
        self.targets.pop()
        self.pending = after + target.breaks

    def any_of(self, values: list[Node]) -> tuple[Pending, Pending]:
        """`case a, b:` of a tagless switch: true if any value is true."""
        matched: Pending = []
        for value in values:
            when_true, when_false = self.cond(value)
            matched += when_true
            self.pending = when_false
        return matched, self.pending

    def select_statement(self, node: Node, label: str | None) -> None:
        head = self.add(NodeKind.SELECT, node)
        target = _Target(label, is_loop=False)
        self.targets.append(target)
        after: Pending = []
        for clause in syntax.children(node):
            if clause.type == "communication_case":
                self.pending = [(head, {"branch": "comm"})]
                self.add(NodeKind.COMM, clause.child_by_field_name("communication") or clause)
            elif clause.type == "default_case":
                self.pending = [(head, {"branch": "default"})]
            else:
                continue
            self.statements(syntax.statements(clause))
            after = after + self.pending
        self.targets.pop()
        self.pending = after + target.breaks

    def labeled_statement(self, node: Node) -> None:
        name = syntax.text(node.child_by_field_name("label"))
        self.labels[name] = self.add(NodeKind.LABEL, node, label=name)
        for inner in syntax.children(node):
            if inner.type != "label_name":
                self.statement(inner, label=name)


def _label_of(node: Node) -> str | None:
    for child in syntax.children(node):
        if child.type == "label_name":
            return syntax.text(child)
    return None


def build_cfg(unit: Unit, oracle: ExitOracle) -> CFG:
    return _Builder(unit, oracle).build()


