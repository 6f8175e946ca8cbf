"""The graphs of a package's functions, built on demand and kept in a
bounded cache, and whether each function of the package can return."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.cfg.build import ExitOracle, build_cfg, ending_names
from cudalint.cfg.graph import CFG, ExitKind
from cudalint.functions import Package, Unit, UnitKind
from cudalint.scope import MAX_NESTING, NestingTooDeep, Symbol, SymbolKind


class PackageCFGs:
    """The graphs of a package's functions, built on demand and kept in a
    bounded cache: a rule asks only for the functions it has something to
    say about, and a huge generated package never holds every graph at once.

    Whether a function of the package can return is decided on demand too,
    when a caller's graph needs it: every variant of the function (one per
    platform file, build constraints being ignored) must be unable to return.
    A function of a recursive cycle is taken to return."""

    def __init__(
        self, package: Package, node_budget: int = 120_000, imported_exits: Mapping[tuple[str, str], frozenset[ExitKind]] | None = None,
    ):
        self.package = package
        self.imported_exits = imported_exits or {}
        self.failures: dict[Unit, str] = {}
        self.no_return: dict[Symbol, frozenset[ExitKind] | None] = {}
        self._literal_exits: dict[Node, frozenset[ExitKind] | None] = {}
        self._literals: dict[Node, Unit] | None = None
        self._ending_names: frozenset[str] | None = None
        self._by_name: dict[str, list[Unit]] = {}  # the package's functions' variants by name
        self._plain: dict[Unit, bool] = {}  # may_not_return's answers
        self.graphs = _LazyGraphs(self, node_budget)
        self._variants: dict[Symbol, list[Unit]] = {}
        for unit in package.units:
            if unit.kind is UnitKind.FUNCTION and unit.symbol is not None:
                self._variants.setdefault(unit.symbol, []).append(unit)

    def analysable(self, unit: Unit) -> bool:
        return unit.problem is None and unit.body is not None and unit not in self.failures

    def give_up(self, unit: Unit, problem: str) -> None:
        """An analysis cannot follow this function (too many paths): as for a
        function whose graph cannot be built, no graph of it is built from
        now on, and it is reported as too complex (the first problem found
        is the one said)."""
        self.failures.setdefault(unit, problem)

    def build(self, unit: Unit) -> CFG | None:
        if not self.analysable(unit):
            return None
        try:
            graph = build_cfg(unit, self._oracle())
        except NestingTooDeep:
            self.failures[unit] = f"nests deeper than {MAX_NESTING} levels"
            return None
        except RecursionError:
            self.failures[unit] = "nests too deeply for the analysis"
            return None
        if unit.parent is not None:
            outer = self.graphs.get(unit.parent)
            if outer is not None and not outer.created or (outer is not None and _in_dead_code(unit, outer)):
                graph.created = False
        return graph

    def _oracle(self) -> ExitOracle:
        return ExitOracle(self.package.resolution, self.exits_of_function, self.imported_exits, self.exits_of_literal)

    def exits_of_unit(self, unit: Unit) -> frozenset[ExitKind] | None:
        """How a unit's body ends the goroutine where it cannot return
        (a method, `Logger.Fatal`), None where it can or has no graph."""
        if not self.may_not_return(unit):
            return None
        return _endings([self.graphs.get(unit)])

    def may_not_return(self, unit: Unit, depth: int = 0) -> bool:
        """Whether the unit's body could end otherwise than by returning,
        judged from its last statement without building its graph. Asking a
        graph whether a function returns builds the graphs of everything it
        calls first, and nearly every function plainly returns: its last
        statement is a return, or a simple statement, a defer or a go whose
        calls spell no name that could end the goroutine (a function of the
        package counts where it plainly returns too), a loop with a
        condition, or an `if` without `else` whose initializer and condition
        call no such name (where the condition is false, it falls off the
        end). (A last statement made unreachable by an endless loop
        before it is the exception this misses; vet reports such code.)"""
        if unit not in self._plain:
            self._plain[unit] = self._last_may_end(unit, depth)
        return self._plain[unit]

    def _last_may_end(self, unit: Unit, depth: int) -> bool:
        statements = syntax.statements(unit.body)
        if not statements:
            return False
        last = statements[-1]
        if last.type == "for_statement":
            return _endless(last)
        if last.type == "if_statement" and last.child_by_field_name("alternative") is None and depth <= _PLAIN_DEPTH:
            # Where its condition is false it falls off the end and returns,
            # whatever its block does; only the condition can stop that.
            parts = (last.child_by_field_name("initializer"), last.child_by_field_name("condition"))
            return any(self._calls_may_end(part, depth) for part in parts if part is not None)
        if last.type not in _COMPLETING or depth > _PLAIN_DEPTH:
            return True
        return self._calls_may_end(last, depth)

    def _calls_may_end(self, node: Node, depth: int) -> bool:
        """Whether a call evaluated by this syntax could end the goroutine:
        it spells a name that ends one, or calls a function of the package
        that may not return, or a function value."""
        if self._ending_names is None:
            self._ending_names = ending_names(self.imported_exits)
            for symbol, variants in self._variants.items():
                self._by_name.setdefault(symbol.name, []).extend(variants)
        for call in syntax.calls_in(node):
            function = syntax.unparen(call.child_by_field_name("function"))
            if function is None or function.type not in ("identifier", "selector_expression"):
                return True
            name = syntax.text(function if function.type == "identifier" else function.child_by_field_name("field"))
            if name in self._ending_names:
                return True
            if function.type == "identifier" and any(
                variant.body is None or self.may_not_return(variant, depth + 1) for variant in self._by_name.get(name, ())
            ):
                return True
        return False

    def exits_of_literal(self, literal: Node) -> frozenset[ExitKind] | None:
        """How a function literal's body ends, None if it may return. Its
        graph is built for this answer alone: the cached graphs of literals
        ask their enclosing function's graph, which is being built."""
        if literal not in self._literal_exits:
            if self._literals is None:
                self._literals = {unit.node: unit for unit in self.package.units if unit.kind is UnitKind.LITERAL}
            unit = self._literals.get(literal)
            self._literal_exits[literal] = None
            if unit is not None and self.analysable(unit) and self.may_not_return(unit):
                try:
                    self._literal_exits[literal] = _endings([build_cfg(unit, self._oracle())])
                except (NestingTooDeep, RecursionError):
                    pass  # too deep to tell: it may return
        return self._literal_exits[literal]

    def exits_of_function(self, symbol: Symbol) -> frozenset[ExitKind] | None:
        """None if a call of this package function may return; otherwise how
        it ends the goroutine (empty: it blocks for ever). Decided callees
        first (a function's graph needs its callees' verdicts), so that a
        chain of calls is never a chain of nested graph builds; functions of
        a recursive cycle may return."""
        if symbol not in self.no_return:
            fixpoint.solve([symbol], self._called_functions, self._verdict, self.no_return, lambda _: None, rounds=0)
        return self.no_return[symbol]

    def _called_functions(self, symbol: Symbol) -> list[Symbol]:
        """The package functions called by name in the bodies of symbol's
        definitions (literals' bodies are graphs of their own)."""
        if self._returns(symbol):
            return []  # its verdict needs no callee's
        resolution = self.package.resolution
        found = []
        for unit in self._variants.get(symbol, []):
            if not self.analysable(unit):
                continue
            for call in syntax.calls_in(unit.body):
                function = syntax.unparen(call.child_by_field_name("function"))
                called = resolution.symbol(function) if function is not None and function.type == "identifier" else None
                if called is not None and called.kind is SymbolKind.FUNC and called in self._variants:
                    found.append(called)
        return found

    def _verdict(self, symbol: Symbol) -> frozenset[ExitKind] | None:
        if self._returns(symbol):
            return None
        return _endings([self.graphs.get(unit) for unit in self._variants.get(symbol, [])])

    def _returns(self, symbol: Symbol) -> bool:
        """Whether a variant of the function plainly returns (`may_not_return`)."""
        return any(unit.body is not None and not self.may_not_return(unit) for unit in self._variants.get(symbol, []))



# Statements after which a body falls off its end unless a call in them ends the goroutine.
_COMPLETING = frozenset({
    "return_statement", "expression_statement", "assignment_statement", "short_var_declaration",
    "inc_statement", "dec_statement", "send_statement", "var_declaration", "const_declaration",
    "type_declaration", "defer_statement", "go_statement", "empty_statement",
})


# How deep may_not_return follows last calls into the package's functions.
_PLAIN_DEPTH = 16


def _endless(loop: Node) -> bool:
    """Whether a for loop has no condition to end it (`for {`, `for ;; {`,
    `for true {`): only a break or a return leaves it."""
    header = next((child for child in loop.named_children if child.type != "block"), None)
    if header is None:
        return True
    if header.type == "range_clause":
        return False
    condition = header.child_by_field_name("condition") if header.type == "for_clause" else header
    return condition is None or syntax.text(condition) == "true"


def _endings(graphs: list[CFG | None]) -> frozenset[ExitKind] | None:
    """How code with these graphs (the variants of a function) ends the
    goroutine where none of them can return; None where one can, or has no
    graph."""
    if graphs and all(g is not None and not g.exit_reachable(ExitKind.RETURN) for g in graphs):
        return frozenset(k for k in ExitKind if k is not ExitKind.RETURN and any(g.exit_reachable(k) for g in graphs))
    return None

class _LazyGraphs(Mapping):
    """unit -> CFG, built when first asked for; over a bound on graph nodes,
    graphs are evicted at random (with a fixed seed).

    Rules and analyses visit every function in turn, again and again: with
    a package larger than the bound, evicting the least recently used graph
    evicts each one just before it is asked for again, so every rule rebuilt
    every graph. Random eviction keeps a share of them as large as the bound
    allows, whatever the order of the visits."""

    def __init__(self, owner: PackageCFGs, node_budget: int):
        self._owner = owner
        self._budget = node_budget
        self._held = 0
        self._cache: dict[Unit, CFG] = {}
        self._order: list[Unit] = []  # the cached units, for picking one at random
        self._position: dict[Unit, int] = {}
        self._random = random.Random(0)

    def __getitem__(self, unit: Unit) -> CFG:
        graph = self._cache.get(unit)
        if graph is not None:
            return graph
        graph = self._owner.build(unit)
        if graph is None:
            raise KeyError(unit)
        while self._held + graph.graph.number_of_nodes() > self._budget and self._order:
            self._evict(self._random.randrange(len(self._order)))
        self._cache[unit] = graph
        self._position[unit] = len(self._order)
        self._order.append(unit)
        self._held += graph.graph.number_of_nodes()
        return graph

    def _evict(self, index: int) -> None:
        victim = self._order[index]
        last = self._order.pop()
        if last is not victim:
            self._order[index] = last
            self._position[last] = index
        del self._position[victim]
        self._held -= self._cache.pop(victim).graph.number_of_nodes()

    def __contains__(self, unit: object) -> bool:
        try:
            self[unit]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[Unit]:
        return (unit for unit in self._owner.package.units if unit in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def build_package_cfgs(
    package: Package, imported_exits: Mapping[tuple[str, str], frozenset[ExitKind]] | None = None,
) -> PackageCFGs:
    return PackageCFGs(package, imported_exits=imported_exits)


def _in_dead_code(unit: Unit, outer: CFG) -> bool:
    """Whether the statement holding a literal in its enclosing function is
    unreachable (then the literal is never created)."""
    holder = unit.node.parent
    while holder is not None and holder not in outer.node_of:
        holder = holder.parent
    return holder is not None and not outer.reachable(outer.node_of[holder])
