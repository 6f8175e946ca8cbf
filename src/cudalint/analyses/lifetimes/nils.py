"""What a path knows of local error (and pointer) variables: nil, or not.

A status test that fails often only sets an error declared nil before it,
and the function returns on that error later:

    var err error
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        err = fmt.Errorf("cudaMalloc: %d", st)
    }
    if err != nil {
        return err
    }
    defer C.cudaFree(d)

On the path where the allocation succeeded `err` is still nil, so that
return is never taken with `d` held; on the failing path `err` holds an
error, so the defer is never registered there. Neither test says anything
of the allocation itself: what decides is what the path assigned to the
variable. The walks carry, per path, the locals known to be nil and those
known to hold a value (`Nilness`), and cut the edges of a `x != nil` /
`x == nil` test that the path contradicts.

A status kept in a local and tested twice (`if st != C.cudaSuccess { free
}` then `if st == C.cudaSuccess { use }`) is tracked the same way: equal to
its success value stands for nil.

A boolean flag set beside an acquisition (`owned := false` ... `d, err =
load(h)` ... `owned = true`, then `if owned { d.Free() }`) is tracked the
same way: false stands for nil, true for not nil, and a condition that is
the flag itself (or its negation, which the graph turns into the same
test) is its test.

Only locals compared with nil (or a status with its success, or flags tested) in a condition of the function are tracked,
declared in it and never mentioned in a func literal (a closure could
assign them where the path does not show it). What a variable holds where
a walk starts comes from a must-analysis over the paths from the
function's entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CallIndex
from cudalint.analyses.status import StatusSemantics, StatusSource
from cudalint.cfg import CFG, Edge
from cudalint.scope import Symbol, SymbolKind

# A local named for an error (`err`, `initErr`, `errCopy`), where no type is declared.
_ERROR_NAME = re.compile(r"(?i)err|.*err(or)?|err[A-Z0-9_].*")

# How many boolean flags one function's walks follow.
_MAX_FLAGS = 3

# Calls that always return a non-nil error.
_NEW_ERRORS = frozenset({("fmt", "Errorf"), ("errors", "New")})


@dataclass(frozen=True)
class Nilness:
    """The tracked locals known nil, and those known not nil, on one path."""

    nil: frozenset[Symbol] = frozenset()
    not_nil: frozenset[Symbol] = frozenset()

    def assigned(self, symbol: Symbol, value: bool | None) -> Nilness:
        """After `symbol = v`, where v is nil (True), not nil (False) or unknown (None)."""
        nil, not_nil = self.nil - {symbol}, self.not_nil - {symbol}
        if value is True:
            nil |= {symbol}
        elif value is False:
            not_nil |= {symbol}
        return Nilness(nil, not_nil)


NOTHING_KNOWN = Nilness()

# What a node does to the tracked locals: (symbol, nil / not nil / unknown), in source order.
Assignments = tuple[tuple[Symbol, "bool | None"], ...]


class NilLocals:
    """Per function: the tracked locals, what each node assigns them, and
    what is known of them where a walk starts."""

    def __init__(self, calls: CallIndex, status: StatusSemantics) -> None:
        self._calls = calls
        self._status = status
        self._resolution = calls.package.resolution
        # unit -> (the graph it was made for, assignments by node, known after each node)
        self._made: dict = {}
        # The tracked tests of every function made: condition -> (local, whether `== nil`).
        self._tests: dict[Node, tuple[Symbol, bool]] = {}
        self._statuses: dict[Symbol, StatusSource | None] = {}

    def _of(self, graph: CFG) -> tuple[dict[int, Assignments], dict[int, Nilness]]:
        made = self._made.get(graph.unit)
        if made is None or made[0] is not graph:
            tests = self._tests_of(graph)
            self._tests.update(tests)
            assignments = self._assignments(graph, {symbol for symbol, _ in tests.values()})
            made = self._made[graph.unit] = (graph, assignments, _must(graph, assignments) if assignments else {})
        return made[1], made[2]

    def at(self, graph: CFG, n: int) -> Nilness:
        """What is known on every path from the entry once node n has run."""
        return self._of(graph)[1].get(n, NOTHING_KNOWN)

    def after(self, graph: CFG, n: int, known: Nilness) -> Nilness:
        """`known`, once node n has run."""
        for symbol, value in self._of(graph)[0].get(n, ()):
            known = known.assigned(symbol, value)
        return known

    def through(self, edge: Edge, known: Nilness) -> Nilness:
        """`known` past the edge: taking `err != nil` makes err not nil on
        that path (a local the function tracks)."""
        test = self._tests.get(edge.condition) if edge.condition is not None else None
        if test is None:
            return known
        symbol, equal = test
        return known.assigned(symbol, equal == bool(edge.polarity))

    def contradicts(self, edge: Edge, known: Nilness) -> bool:
        """Whether taking the edge tests a tracked local against nil with
        the answer the path rules out (`known` comes from `at` and `after`,
        which made the function's tests)."""
        if edge.condition is None or (not known.nil and not known.not_nil):
            return False
        test = self._tests.get(edge.condition)
        if test is None:
            return False
        symbol, equal = test
        is_nil = equal == bool(edge.polarity)  # the edge is taken where symbol == nil
        return (symbol in known.nil and not is_nil) or (symbol in known.not_nil and is_nil)

    # -- what the function's syntax says -------------------------------------------

    def _tests_of(self, graph: CFG) -> dict[Node, tuple[Symbol, bool]]:
        """Condition leaves `x == nil` (True) and `x != nil` (False) of
        locals the function declares and no func literal mentions."""
        found: dict[Node, tuple[Symbol, bool]] = {}
        flags: dict[Node, tuple[Symbol, bool]] = {}
        for n in graph.nodes():
            for edge in graph.out_edges(n):
                condition = edge.condition
                if condition is None or condition in found:
                    continue
                compared = _nil_comparison(condition)
                symbol = self._resolution.symbol(compared[0]) if compared is not None else None
                if symbol is not None and self._trackable(graph, symbol):
                    found[condition] = (symbol, compared[1])
                    continue
                tested = syntax.unparen(condition)
                symbol = self._resolution.symbol(tested) if tested is not None and tested.type == "identifier" else None
                if symbol is not None and self._is_flag(symbol) and self._trackable(graph, symbol, untyped=True):
                    flags[condition] = (symbol, False)  # `if owned`: taken where it is true, "not nil"
                    continue
                compared = _value_comparison(condition)
                symbol = self._resolution.symbol(compared[0]) if compared is not None else None
                source = self._status_of(symbol) if symbol is not None else None
                if source is not None and self._status.means_success(source, compared[2]) is True and self._trackable(graph, symbol, untyped=True):
                    found[condition] = (symbol, compared[1])  # `st == C.cudaSuccess` stands for `err == nil`
        # A few flags at most: each one tracked can double the walks' states,
        # and a function testing many (options parsed into locals) would
        # exceed their bound and go unanalysed.
        if len({symbol for symbol, _ in flags.values()}) <= _MAX_FLAGS:
            found.update(flags)
        return found

    def _status_of(self, symbol: Symbol) -> StatusSource | None:
        """The status a local holds where it is only ever given the
        statuses of API calls (`st := C.cudaMemcpy(...)`): compared with
        its success value, it is tracked as an error is with nil."""
        if symbol not in self._statuses:
            self._statuses[symbol] = self._given_status(symbol) if symbol.is_local else None
        return self._statuses[symbol]

    def _given_status(self, symbol: Symbol) -> StatusSource | None:
        found = None
        for mention in self._calls.references(symbol):
            if syntax.assignment_of(mention, declarations=True) is None:
                continue
            written = syntax.assigned_value(mention, declarations=True)
            if written is None or written[1] is not None:
                return None  # `st, n := f()`: not one to one
            fact = self._calls.calls.get(syntax.unparen(written[0]))
            if fact is None or fact.api is None or fact.status is None or fact.status.kind != "code":
                return None
            found = found or StatusSource.of(fact.api, fact.written)
        return found

    def _is_flag(self, symbol: Symbol) -> bool:
        """A local boolean only ever given `true` or `false` (declared
        `bool` or made of one of them): a flag, whose value a path knows."""
        if not symbol.is_local or symbol.kind is not SymbolKind.VAR:
            return False
        declared = syntax.text(symbol.type_node) if symbol.type_node is not None else ""
        init = syntax.unparen(symbol.init) if symbol.init is not None and symbol.init_index < 0 else None
        if declared != "bool" and (init is None or init.type not in ("true", "false")):
            return False
        for mention in self._calls.references(symbol):
            if syntax.assignment_of(mention, declarations=True) is None:
                continue
            written = syntax.assigned_value(mention, declarations=True)
            if written is None or written[1] is not None or syntax.unparen(written[0]).type not in ("true", "false"):
                return False
        return True

    def _trackable(self, graph: CFG, symbol: Symbol, untyped: bool = False) -> bool:
        """An error local of the function (declared `error`, or named for
        one: `err`, `initErr`; with `untyped`, a status or a flag) that no
        func literal mentions and whose address is never taken (`p := &err`
        writes it where the path does not show). No pointers: pointers
        tested for nil in a row of independent branches would multiply the
        walks' states."""
        unit_node = graph.unit.node
        if not symbol.is_local or symbol.function != unit_node:
            return False
        declared = syntax.text(symbol.type_node) if symbol.type_node is not None else ""
        if not untyped and declared != "error" and not (not declared and _ERROR_NAME.fullmatch(symbol.name)):
            return False
        for mention in self._calls.references(symbol):
            literal = syntax.enclosing_function(mention)
            if literal is not None and literal != unit_node:
                return False
            parent = mention.parent
            while parent is not None and parent.type == "parenthesized_expression":
                parent = parent.parent
            if syntax.is_address_of(parent):
                return False
        return True

    def _assignments(self, graph: CFG, tracked: set[Symbol]) -> dict[int, Assignments]:
        by_node: dict[int, list[tuple[Node, Symbol, bool | None]]] = {}
        for symbol in tracked:
            for mention in self._calls.references(symbol):
                value = self._assigned_value(mention)
                if value is None:
                    continue
                n = graph.node_containing(mention)
                if n is not None:
                    by_node.setdefault(n, []).append((mention, symbol, value[0]))
        return {
            n: tuple((symbol, value) for _, symbol, value in sorted(found, key=lambda item: item[0].start_byte))
            for n, found in by_node.items()
        }

    def _assigned_value(self, identifier: Node) -> tuple[bool | None] | None:
        """Where `identifier` is written: (nil, not nil or unknown); None
        where it is only read."""
        parent = identifier.parent
        while parent is not None and parent.type == "parenthesized_expression":
            identifier, parent = parent, parent.parent  # `(err) = f()`
        if parent is None:
            return None
        if parent.type == "var_spec":
            names = parent.children_by_field_name("name")
            values = syntax.expressions(parent.child_by_field_name("value"))
            if not values:
                return (True,)  # `var err error`: the zero value
            return (self._value(values[names.index(identifier)]) if len(values) == len(names) else None,)
        holder = parent.parent if parent.type == "expression_list" else None
        if holder is not None and holder.type in ("receive_statement", "range_clause") and holder.child_by_field_name("left") == parent:
            return (None,)  # `case err = <-errc:`, `for _, err = range errs`
        if holder is None or holder.type not in ("assignment_statement", "short_var_declaration"):
            return None
        if holder.child_by_field_name("left") != parent:
            return None
        if holder.type == "assignment_statement" and syntax.text(holder.child_by_field_name("operator")) != "=":
            return (None,)
        left = syntax.expressions(parent)
        right = syntax.expressions(holder.child_by_field_name("right"))
        if len(left) != len(right):
            return (None,)
        return (self._value(right[[node.id for node in left].index(identifier.id)]),)

    def _value(self, expression: Node) -> bool | None:
        """Whether an assigned expression is nil (True), certainly not nil
        (False: a new error, an address) or either (None)."""
        node = syntax.unparen(expression)
        if node is None:
            return None
        if node.type in ("nil", "false"):
            return True  # a flag's false stands for nil
        if node.type == "true":
            return False
        if node.type == "identifier":
            # A sentinel: `var errCUDA = errors.New("cuda")`.
            symbol = self._resolution.symbol(node)
            init = symbol.init if symbol is not None and not symbol.is_local and symbol.kind is SymbolKind.VAR else None
            return False if init is not None and init.type == "call_expression" and self._value(init) is False else None
        if syntax.is_address_of(node):
            return False
        if node.type == "call_expression":
            arguments = syntax.children(node.child_by_field_name("arguments"))
            function = syntax.unparen(node.child_by_field_name("function"))
            if function is not None and function.type == "identifier" and syntax.text(function) == "error" and len(arguments) == 1:
                return self._value(arguments[0])  # `error(nil)`
            fact = self._calls.qualified(node)
            if fact is not None and (fact.import_path, fact.name) in _NEW_ERRORS:
                return False
        return None


def _nil_comparison(condition: Node) -> tuple[Node, bool] | None:
    """`x == nil` -> (x, True), `x != nil` -> (x, False)."""
    compared = _value_comparison(condition, ("nil",))
    return (compared[0], compared[1]) if compared is not None else None


def _value_comparison(condition: Node, values: tuple[str, ...] = ("selector_expression", "int_literal", "identifier")) -> tuple[Node, bool, Node] | None:
    """A local compared for equality with a value of one of these node
    types: `st == C.cudaSuccess` -> (st, True, C.cudaSuccess), `st != 0`
    -> (st, False, 0)."""
    compared = syntax.equality(condition)
    if compared is None:
        return None
    left, right, equal = compared
    for variable, value in ((left, right), (right, left)):
        if variable.type == "identifier" and value.type in values:
            return variable, equal, value
    return None


def _must(graph: CFG, assignments: dict[int, Assignments]) -> dict[int, Nilness]:
    """What holds after each node on every path from the entry: the
    meet (intersection) over predecessors, iterated to a fixpoint."""
    after: dict[int, Nilness] = {}
    predecessors: dict[int, list[int]] = {}
    for n in graph.nodes():
        for successor in graph.successors(n):
            predecessors.setdefault(successor, []).append(n)
    pending = [graph.entry]
    queued = {graph.entry}
    while pending:
        n = pending.pop()
        queued.discard(n)
        seen = [after[p] for p in predecessors.get(n, ()) if p in after]
        if n == graph.entry or not seen:
            known = NOTHING_KNOWN
        else:
            known = Nilness(
                frozenset.intersection(*(k.nil for k in seen)), frozenset.intersection(*(k.not_nil for k in seen)),
            )
        for symbol, value in assignments.get(n, ()):
            known = known.assigned(symbol, value)
        if after.get(n) == known:
            continue
        after[n] = known
        for successor in graph.successors(n):
            if successor not in queued:
                queued.add(successor)
                pending.append(successor)
    return after


def holds_new_error(symbol: Symbol | None, calls: CallIndex, new_error: Callable[[Node], bool]) -> bool:
    """`err := fmt.Errorf("no device")`, never assigned again: a failure
    wherever it is returned."""
    init = syntax.unparen(symbol.init) if symbol is not None and symbol.is_local and symbol.init_index < 0 else None
    if init is None or not new_error(init):
        return False
    return not any(
        mention != symbol.node and syntax.assignment_of(mention, declarations=True) is not None
        for mention in calls.references(symbol)
    )
