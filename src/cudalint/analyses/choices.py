"""Hand-outs that an argument's value chooses.

A factory often acquires for one value of its argument and not for the
others:

```go
func NewEmbedder(config *Config) (Embedder, error) {
	switch config.Provider {
	case "local":
		return NewLocalGGUF(config) // loads a model: the caller must Close it
	case "ollama":
		return NewOllama(config), nil // an HTTP client: nothing to release
	}
	...
}

func NewTensor(data []float32, device ...string) *Tensor {
	dev := "cpu"
	if len(device) > 0 {
		dev = device[0]
	}
	if dev == "gpu" {
		C.cudaMalloc(&p, n) ...
```

A caller that passes `&Config{Provider: "ollama"}`, or no device at all,
acquires nothing at that call, and reporting its "leak" is a false
finding. The choice is read from the syntax around the acquisition (a
switch case, an if branch, an `if x != c { return }` before it) where the
tested value comes from a parameter (a field of it, the first of a
variadic list) or from constants; the caller's arguments are read as
constants where they are literals, constants of the package, or locals
made once of such a literal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.provenance import root_variable
from cudalint.functions import Unit
from cudalint.scope import Resolution
from cudalint.scope.symbols import Role, Symbol, SymbolKind

# The first element of a variadic parameter: `device[0]`.
FIRST = "[0]"


@dataclass(frozen=True)
class Source:
    """A value the tested expression may hold: the argument at `parameter`
    (its fields `path`, `FIRST` for a variadic list's first), or the
    constant `constant` where `parameter` is -1."""

    parameter: int
    path: tuple[str, ...] = ()
    constant: str = ""


@dataclass(frozen=True)
class Choice:
    """The acquisition happens only where the tested value is one of
    `values` (with `negated`: none of them)."""

    sources: tuple[Source, ...]
    values: tuple[str, ...]
    negated: bool = False
    # The index of the function's variadic parameter, where the choice
    # travels without its function (-1: none, or given at each question).
    variadic_from: int = -1

    def excludes(self, arguments: list[Node], variadic_from: int, resolution: Resolution) -> bool:
        """Whether no value these arguments give takes the acquiring branch:
        every value the test may see is known, and none is chosen."""
        return self.decides(arguments, variadic_from, resolution) is False

    def decides(self, arguments: list[Node], variadic_from: int, resolution: Resolution) -> bool | None:
        """True where every value these arguments give takes the branch,
        False where none does, None where that is not known here."""
        variadic_from = variadic_from if variadic_from >= 0 else self.variadic_from
        # `del := false; if len(delOpt) > 0 { del = delOpt[0] }`: the
        # constants are what the local holds without a variadic argument.
        given = any(
            source.path[:1] == (FIRST,) and len(arguments) > source.parameter >= variadic_from >= 0 for source in self.sources
        )
        seen = []
        for source in self.sources:
            if source.parameter < 0:
                if not given:
                    seen.append(source.constant)
                continue
            if source.path[:1] == (FIRST,) and source.parameter >= variadic_from >= 0:
                if source.parameter >= len(arguments):
                    continue  # no variadic argument: `device[0]` is never read
                value = constant_of(arguments[source.parameter], source.path[1:], resolution)
            else:
                if source.parameter >= len(arguments):
                    return None
                value = constant_of(arguments[source.parameter], source.path, resolution)
            if value is None:
                return None
            seen.append(value)
        chosen = {(value in self.values) != self.negated for value in seen}
        return chosen.pop() if len(chosen) == 1 else None


def through_call(choice: Choice, arguments: list[Node], params: list[Symbol], resolution: Resolution) -> Choice | None:
    """The callee's `choice` as the caller's: each argument the test reads is
    a constant there or a parameter of the caller passed on unchanged
    (`ts.View(size, del)` in `MustView(size, del)`). None where one is
    neither: the caller's arguments do not decide it."""
    sources: list[Source] = []
    for source in choice.sources:
        if source.parameter < 0:
            sources.append(source)
            continue
        if source.parameter >= len(arguments) or source.path[:1] == (FIRST,):
            return None
        argument = syntax.unparen(arguments[source.parameter])
        constant = constant_of(argument, source.path, resolution)
        if constant is not None:
            sources.append(Source(-1, constant=constant))
            continue
        symbol = resolution.symbol(argument) if argument is not None and argument.type == "identifier" else None
        index = next((i for i, param in enumerate(params) if param is symbol), None) if symbol is not None else None
        if index is None:
            return None
        sources.append(Source(index, source.path))
    return Choice(tuple(sources), choice.values, choice.negated)


def with_variadic(choice: Choice | None, unit: Unit) -> Choice | None:
    """The choice carrying where its function's variadic parameter starts."""
    return replace(choice, variadic_from=variadic_from(unit)) if choice is not None else None


def choice_in(unit: Unit, node: Node, resolution: Resolution) -> Choice | None:
    """The choice of `unit`'s arguments under which its acquisition at `node` runs."""
    body = unit.body
    if body is None or unit.nested:
        return None
    writes = [n for n in syntax.walk(body) if n.type in ("assignment_statement", "short_var_declaration")]
    return choice_of(node, body, unit.params, resolution, writes)


def variadic_from(unit: Unit) -> int:
    """The index of the variadic parameter, -1 where there is none."""
    return len(unit.params) - 1 if unit.variadic else -1


def choice_of(node: Node, body: Node, params: list[Symbol], resolution: Resolution, writes: list[Node]) -> Choice | None:
    """The innermost test of a parameter's value that decides whether `node`
    (an acquiring call in the function whose `body` is given) runs.
    `writes`: the assignments in the function, to follow a local."""
    child = node
    while child.parent is not None and child.id != body.id:
        parent = child.parent
        found: list[tuple[Node, tuple[str, ...], bool] | None] = []
        if parent.type == "expression_case" and child.type == "statement_list":
            found = [_case_choice(parent, parent.parent, False, resolution)]
        elif parent.type == "default_case" and child.type == "statement_list":
            found = [_case_choice(parent, parent.parent, True, resolution)]
        elif parent.type == "if_statement":
            found = [_branch_choice(parent, child, resolution)]
        elif parent.type == "statement_list":
            found = _guarded_before(parent, child, resolution)
        for tested, values, negated in filter(None, found):
            sources = _sources(tested, params, resolution, writes)
            if sources is not None:
                return Choice(sources, values, negated)
        child = parent
    return None


def constant_of(expression: Node | None, path: tuple[str, ...], resolution: Resolution) -> str | None:
    """The constant an argument gives at `path` (its fields): a literal, a
    constant of the package, or a composite literal's keyed field (through
    `&`, and through a local made once of it and never written after)."""
    value = syntax.unparen(expression)
    if value is None:
        return None
    if not path:
        return _constant(value, resolution)
    value = _pointee(value)  # `&chosen.Config{...}`, `&config`
    if value is not None and value.type == "identifier":
        value = _pointee(_made_once(value, resolution))  # `config := &Config{...}`
    if value is None or value.type != "composite_literal":
        return None
    body = value.child_by_field_name("body")
    for element in syntax.children(body) if body is not None else []:
        if element.type != "keyed_element":
            continue
        parts = syntax.children(element)
        if len(parts) == 2 and syntax.text(parts[0]) == path[0]:
            inner = parts[1].named_children[0] if parts[1].type == "literal_element" and parts[1].named_children else parts[1]
            return constant_of(inner, path[1:], resolution)
    return None


def _pointee(value: Node | None) -> Node | None:
    """x of `&x`; anything else as it is."""
    if value is not None and value.type == "unary_expression" and syntax.is_address_of(value):
        return syntax.unparen(value.child_by_field_name("operand"))
    return value


def _made_once(identifier: Node, resolution: Resolution) -> Node | None:
    """`config := &Config{...}` never assigned, addressed or written through after."""
    symbol = resolution.symbol(identifier)
    if symbol is None or symbol.role is not Role.LOCAL or symbol.init is None or symbol.init_index >= 0:
        return None
    function = symbol.function
    for mention in syntax.walk(function) if function is not None else []:
        if mention.type != "identifier" or mention.id == identifier.id or syntax.text(mention) != symbol.name:
            continue
        if _argument(mention):
            continue
        if resolution.symbol(mention) is symbol and mention.id != symbol.node.id:
            return None  # any other mention might change it: `config.Provider = "local"`
    return symbol.init


def _argument(mention: Node) -> bool:
    """Passed as an argument (`NewEmbedder(config)`, `NewStream(&config)`): read, not written."""
    parent = mention.parent
    if parent is not None and parent.type == "unary_expression" and syntax.is_address_of(parent):
        parent = parent.parent
    return parent is not None and parent.type == "argument_list"


def _constant(value: Node, resolution: Resolution) -> str | None:
    if value.type in ("interpreted_string_literal", "raw_string_literal"):
        return "s:" + syntax.text(value)[1:-1]
    if value.type in ("int_literal", "rune_literal"):
        return "i:" + syntax.text(value)
    if value.type in ("true", "false", "nil"):
        return value.type
    if value.type == "identifier":
        symbol = resolution.symbol(value)
        if symbol is not None and symbol.kind is SymbolKind.CONST and symbol.init is not None and symbol.init.id != value.id:
            init = syntax.unparen(symbol.init)
            return _constant(init, resolution) if init is not None and init.type != "identifier" else None
    return None


def _case_choice(
    case: Node, switch: Node | None, negated: bool, resolution: Resolution,
) -> tuple[Node, tuple[str, ...], bool] | None:
    """`switch config.Provider { case "local": ... }`: the tested value and
    the case's constants (a default case: every other case's)."""
    if switch is None or switch.type != "expression_switch_statement" or switch.child_by_field_name("initializer") is not None:
        return None
    tested = switch.child_by_field_name("value")
    if tested is None:
        return None
    cases = [c for c in syntax.children(switch) if c.type == "expression_case"] if negated else [case]
    values: list[str] = []
    for clause in cases:
        if _falls_through(clause):
            return None
        for value in syntax.expressions(clause.child_by_field_name("value")):
            constant = _constant(syntax.unparen(value), resolution)
            if constant is None:
                return None  # a value not known here might be the argument's
            values.append(constant)
    return tested, tuple(values), negated


def _falls_through(case: Node) -> bool:
    body = next((c for c in syntax.children(case) if c.type == "statement_list"), None)
    last = syntax.children(body)[-1] if body is not None and syntax.children(body) else None
    return last is not None and last.type == "fallthrough_statement"


def _branch_choice(statement: Node, branch: Node, resolution: Resolution) -> tuple[Node, tuple[str, ...], bool] | None:
    """`if dev == "gpu" { ... }` (in its consequence), `if x != c {} else {...}`."""
    if statement.child_by_field_name("initializer") is not None:
        return None
    condition = syntax.unparen(statement.child_by_field_name("condition"))
    consequence = statement.child_by_field_name("consequence")
    in_consequence = consequence is not None and branch.id == consequence.id
    alternative = statement.child_by_field_name("alternative")
    if not in_consequence and (alternative is None or branch.id != alternative.id):
        return None
    for test in _conjuncts(condition) if in_consequence else [condition]:
        compared = _comparison(test, resolution)
        if compared is not None:
            tested, value, equal = compared
            return tested, (value,), not equal if in_consequence else equal
    return None


def _guarded_before(statements: Node, child: Node, resolution: Resolution) -> list[tuple[Node, tuple[str, ...], bool] | None]:
    """`if dev != "gpu" { return ... }` before the acquisition: past it, dev is "gpu"."""
    found: list[tuple[Node, tuple[str, ...], bool] | None] = []
    for statement in syntax.children(statements):
        if statement.id == child.id:
            break
        if statement.type != "if_statement" or statement.child_by_field_name("alternative") is not None:
            continue
        if statement.child_by_field_name("initializer") is not None:
            continue
        body = syntax.statements(statement.child_by_field_name("consequence"))
        if not body or body[-1].type != "return_statement":
            continue
        compared = _comparison(syntax.unparen(statement.child_by_field_name("condition")), resolution)
        if compared is not None:
            tested, value, equal = compared
            found.append((tested, (value,), equal))
    return found


def _conjuncts(condition: Node | None) -> list[Node]:
    condition = syntax.unparen(condition)
    if condition is None:
        return []
    if condition.type == "binary_expression" and syntax.text(condition.child_by_field_name("operator")) == "&&":
        return _conjuncts(condition.child_by_field_name("left")) + _conjuncts(condition.child_by_field_name("right"))
    return [condition]


def _comparison(test: Node | None, resolution: Resolution) -> tuple[Node, str, bool] | None:
    """`x == c` or `c != x` with c a literal or constant: (x, c, equal); a
    boolean tested bare (`if del`, `if !del`) is compared with true."""
    test = syntax.unparen(test)
    if test is not None and test.type in ("identifier", "selector_expression") and _constant(test, resolution) is None:
        return test, "true", True
    if test is not None and test.type == "unary_expression" and syntax.text(test.child_by_field_name("operator")) == "!":
        operand = syntax.unparen(test.child_by_field_name("operand"))
        if operand is not None and operand.type in ("identifier", "selector_expression"):
            return operand, "true", False
    compared = syntax.equality(test)
    if compared is None:
        return None
    left, right, equal = compared
    value = _constant(right, resolution)
    if value is None:
        left, value = right, _constant(left, resolution)
    return (left, value, equal) if value is not None else None


def _sources(
    tested: Node, params: list[Symbol], resolution: Resolution, writes: list[Node], depth: int = 0,
) -> tuple[Source, ...] | None:
    """The values `tested` may hold, as parameters' parts or constants."""
    tested = syntax.unparen(tested)
    path: list[str] = []
    while tested is not None and tested.type == "selector_expression":
        path.insert(0, syntax.text(tested.child_by_field_name("field")))
        tested = syntax.unparen(tested.child_by_field_name("operand"))
    if tested is not None and tested.type == "index_expression" and syntax.text(tested.child_by_field_name("index")) == "0":
        path.insert(0, FIRST)
        tested = syntax.unparen(tested.child_by_field_name("operand"))
    if tested is None or tested.type != "identifier":
        return None
    symbol = resolution.symbol(tested)
    if symbol is None:
        return None
    if symbol.role is Role.PARAM:
        index = next((i for i, param in enumerate(params) if param is symbol), None)
        if index is None or _written(symbol, writes, resolution):
            return None
        return (Source(index, tuple(path)),)
    if symbol.role is not Role.LOCAL or path or depth > 0:
        return None
    # A local made of constants and of a parameter: `dev := "cpu"; if ... { dev = device[0] }`.
    assigned = [symbol.init] if symbol.init is not None and symbol.init_index < 0 else []
    for statement in writes:
        for targets, values in syntax.assignment_sides(statement):
            for position, target in enumerate(targets):
                if symbol.node is not None and target.id == symbol.node.id:
                    continue  # the declaration: its value is the symbol's init
                if syntax.text(target) != symbol.name:
                    continue
                if len(targets) != len(values) or resolution.symbol(target) is not symbol:
                    return None  # `dev, err = pick()`, or a name that may be it
                assigned.append(values[position])
    if not assigned:
        return None
    sources: list[Source] = []
    for value in assigned:
        value = syntax.unparen(value)
        constant = _constant(value, resolution) if value is not None else None
        if constant is not None:
            sources.append(Source(-1, constant=constant))
            continue
        inner = _sources(value, params, resolution, writes, depth + 1) if value is not None else None
        if inner is None:
            return None
        sources.extend(inner)
    return tuple(sources)


def _written(symbol: Symbol, writes: list[Node], resolution: Resolution) -> bool:
    """Whether an assignment writes the parameter or a part of it (`config.Provider = ...`)."""
    for statement in writes:
        for targets, _ in syntax.assignment_sides(statement):
            for target in targets:
                root = root_variable(target)
                if root is not None and root.type == "identifier" and resolution.symbol(root) is symbol:
                    return True
    return False
