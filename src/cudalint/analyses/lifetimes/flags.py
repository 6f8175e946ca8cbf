"""Boolean flags a function sets: where a count is recorded (`initDone =
true`, `nm.initialized = true`), and flags its own conditions read, which
make its paths depend on state the walk does not follow."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint import syntax
from cudalint.cfg import CFG
from cudalint.functions import Unit, UnitKind
from cudalint.scope import Resolution, Role, SymbolKind

if TYPE_CHECKING:
    from cudalint.analyses.calls import CallIndex


def set_true(statement: Node | None, value: str = "true") -> list[Node]:
    """The targets an assignment statement sets to `true` (or to `value`)."""
    if statement is None or statement.type != "assignment_statement":
        return []
    left = syntax.expressions(statement.child_by_field_name("left"))
    right = syntax.expressions(statement.child_by_field_name("right"))
    return [target for target, assigned in zip(left, right) if syntax.text(assigned) == value]


def counted_up(statement: Node | None) -> list[Node]:
    """The variable a statement counts up by one (`refs++`, `refs += 1`): a
    reference count, where it is the package's (`package_flag`)."""
    if statement is not None and statement.type == "inc_statement" and statement.named_children:
        return [statement.named_children[0]]
    if statement is not None and statement.type == "assignment_statement" and syntax.text(statement.child_by_field_name("operator")) == "+=":
        left = syntax.expressions(statement.child_by_field_name("left"))
        right = syntax.expressions(statement.child_by_field_name("right"))
        return left if len(left) == 1 and len(right) == 1 and syntax.text(right[0]) == "1" else []
    return []


def set_in(body: Node, value: str = "true") -> list[Node]:
    """The targets the assignments of a body (not of its func literals) set
    to `true` (or to `value`)."""
    return [
        target for statement in syntax.walk(body, into_functions=False) if statement.type == "assignment_statement"
        for target in set_true(statement, value)
    ]


def package_flag(target: Node, resolution: Resolution) -> bool:
    """Whether a flag set true is the package's: a package-level variable
    (`initDone`), or a field of an entry of a package-level registry
    (`entry.retained` with `entry, ok := registry.m[id]`)."""
    if target.type == "selector_expression":
        root = _root_identifier(target)
        symbol = resolution.symbol(root) if root is not None else None
        target = _root_identifier(symbol.init) if symbol is not None and symbol.is_local and symbol.init is not None else None
    symbol = resolution.symbol(target) if target is not None and target.type == "identifier" else None
    return symbol is not None and symbol.kind is SymbolKind.VAR and not symbol.is_local


def _root_identifier(node: Node | None) -> Node | None:
    """`registry` of `registry.m[id]`, `&registry.entries[i]`, `e.flag`."""
    while node is not None and node.type in ("selector_expression", "index_expression", "unary_expression", "parenthesized_expression"):
        node = node.named_children[0] if node.named_children else None
    return node if node is not None and node.type == "identifier" else None


def flag_guarded(unit: Unit) -> bool:
    """Whether the function sets a boolean flag (`inited = true`,
    `c.started = false`) that one of its conditions reads: the paths it
    takes depend on that flag, which the walk does not follow. (Counters,
    `i++` of a loop, are no flags.)"""
    if unit.body is None:
        return False
    set_flags: set[str] = set()
    tested: set[str] = set()
    for node in syntax.walk(unit.body, into_functions=False):
        if node.type == "assignment_statement":
            left = syntax.expressions(node.child_by_field_name("left"))
            right = syntax.expressions(node.child_by_field_name("right"))
            for target, value in zip(left, right) if len(left) == len(right) else ():
                if value.type in ("true", "false") and target.type in ("identifier", "selector_expression"):
                    set_flags.add(syntax.text(target))
        elif node.type in ("if_statement", "for_statement"):
            condition = node.child_by_field_name("condition")
            if node.type == "for_statement":
                # `for !ok {}` has its condition as a bare child; `for i := 0; cond; i++` in its clause.
                head = next((c for c in syntax.children(node) if c != node.child_by_field_name("body")), None)
                condition = head.child_by_field_name("condition") if head is not None and head.type == "for_clause" else head
            for part in syntax.walk(condition, into_functions=False) if condition is not None else ():
                if part.type in ("identifier", "selector_expression"):
                    tested.add(syntax.text(part))
    return bool(set_flags & tested)


def flag_set_between(graph: CFG, first: int, second: int) -> bool:
    """Whether a release at `second` runs only where a flag has a value
    that a statement on the way from the release at `first` set otherwise
    (`released = true` after the free, `if !released { free }` later): no
    run releases twice there."""
    required = _required_flags(graph.ast(second))
    if not required:
        return False
    for n in graph.statement_nodes():
        setting = graph.ast(n)
        if setting is None or setting.type != "assignment_statement":
            continue
        for value in ("true", "false"):
            for target in set_true(setting, value):
                wanted = required.get(syntax.text(target))
                if wanted is not None and wanted != (value == "true") and graph.has_path(first, n) and graph.has_path(n, second):
                    return True
    return False


def _required_flags(statement: Node | None) -> dict[str, bool]:
    """The flags the enclosing ifs require, for a statement in their
    consequence: each `&&` part `x` (true) or `!x` (false)."""
    required: dict[str, bool] = {}
    functions = ("function_declaration", "method_declaration", "func_literal")
    for part in _conditions_holding(statement, lambda node: node.type in functions):
        if part.type == "unary_expression" and syntax.text(part.child_by_field_name("operator")) == "!":
            required[syntax.text(part.child_by_field_name("operand"))] = False
        elif part.type in ("identifier", "selector_expression"):
            required[syntax.text(part)] = True
    return required


def _conditions_holding(node: Node | None, stop: Callable[[Node], bool]) -> Iterator[Node]:
    """The `&&` parts of the conditions of the ifs whose consequence holds
    the node, innermost first, up to the first ancestor `stop` accepts."""
    child, current = node, node.parent if node is not None else None
    while current is not None and not stop(current):
        if current.type == "if_statement" and child == current.child_by_field_name("consequence"):
            parts = [current.child_by_field_name("condition")]
            while parts:
                part = syntax.unparen(parts.pop())
                if part is None:
                    continue
                if part.type == "binary_expression" and syntax.text(part.child_by_field_name("operator")) == "&&":
                    parts += [part.child_by_field_name("left"), part.child_by_field_name("right")]
                else:
                    yield part
        child, current = current, current.parent


def held_flag(
    target: Node, resolution: Resolution, units: Iterable[Unit], releases: Callable[[Unit], bool],
    type_of: Callable[[Node], str | None],
) -> bool:
    """`nm.nvmlInitialized = true` on a value the function did not make (a
    parameter, a package variable), where a function of the package that
    gives the count back (`releases`) reads that field (`Destroy`: `if
    nm.nvmlInitialized { gonvml.Shutdown() }`): the value holds the count,
    and whoever destroys it releases it. (A method's receiver is not such a
    value: the method hands the count to its caller's value.)"""
    root = target
    while root is not None and root.type == "selector_expression":
        root = syntax.unparen(root.child_by_field_name("operand"))
    symbol = resolution.symbol(root) if root is not None and root.type == "identifier" else None
    if symbol is None or symbol.role not in (Role.PARAM, Role.GLOBAL):
        return False
    field = syntax.text(target.child_by_field_name("field"))
    holder = type_of(target.child_by_field_name("operand"))
    return holder is not None and any(
        releases(unit) and any(
            syntax.text(node.child_by_field_name("field")) == field and type_of(node.child_by_field_name("operand")) == holder
            for node in syntax.walk(unit.body) if node.type == "selector_expression"
        )
        for unit in units if unit.body is not None
    )


def guarded_release(
    defer: Node | None, acquiring: Node | None, calls: CallIndex, call_releases: Callable[[Node, str], bool], name: str,
) -> bool:
    """`defer shutDown()` (or `defer func() {...}()`) whose literal gives the
    count back only where the code says a count was taken, so that a failing
    acquisition releases nothing: under a flag of the function around it
    (`if nvmlFound { nvml.Shutdown() }`, the flag set once the init
    succeeded), or under `if v != nil` of a value the acquiring call returned
    (`l, err := NewLabeler(n)` then `defer func() { if l != nil {
    l.Shutdown() } }()`: a failing constructor returns nil)."""
    function = syntax.statement_callee(defer)
    if function is not None and function.type == "identifier":
        symbol = calls.package.resolution.symbol(function)
        literal = calls.unit_of(symbol) if symbol is not None and symbol.is_local else None
    else:
        literal = calls.literal(function)
    if literal is None or literal.kind is not UnitKind.LITERAL or literal.body is None:
        return False
    releasing = [node for node in syntax.all_calls(literal.body) if call_releases(node, name)]
    # The variables the acquiring call's non-error results are given (`l` of `l, err := NewLabeler(n)`).
    assigned = [syntax.text(target) for target in syntax.assigned_from(acquiring) if target.type == "identifier"] if acquiring is not None else []
    results = set(assigned[:-1] if len(assigned) > 1 else assigned) - {"_"}
    return bool(releasing) and all(
        _under_outer_flag(node, literal, calls) or _under_nil_test(node, literal, results) for node in releasing
    )


def _under_nil_test(node: Node, literal: Unit, results: set[str]) -> bool:
    """In the consequence of `if v != nil` (or `if v != nil && ...`), v one of `results`."""
    return any(
        part.type == "binary_expression" and syntax.text(part.child_by_field_name("operator")) == "!="
        and (right := syntax.unparen(part.child_by_field_name("right"))) is not None and right.type == "nil"
        and syntax.text(syntax.unparen(part.child_by_field_name("left"))) in results
        for part in _conditions_holding(node, lambda ancestor: ancestor == literal.node)
    )


def _under_outer_flag(node: Node, literal: Unit, calls: CallIndex) -> bool:
    """In the consequence of `if flag {` (or `if !failed {`), where the name
    is a variable of the function around the literal that that function sets
    to true (false) somewhere, `initialized = true` after the success check:
    a flag, not a constant."""
    current, child = node.parent, node
    while current is not None and current != literal.node:
        if current.type == "if_statement" and child == current.child_by_field_name("consequence"):
            condition, raised = syntax.unparen(current.child_by_field_name("condition")), "true"
            if condition is not None and condition.type == "unary_expression" and syntax.text(condition.child_by_field_name("operator")) == "!":
                condition, raised = syntax.unparen(condition.child_by_field_name("operand")), "false"
            symbol = calls.package.resolution.symbol(condition) if condition is not None and condition.type == "identifier" else None
            outer = literal.parent
            if symbol is not None and outer is not None and outer.body is not None and symbol.function == outer.node and any(
                syntax.text(target) == symbol.name for target in set_in(outer.body, raised)
            ):
                return True
        current, child = current.parent, current
    return False
