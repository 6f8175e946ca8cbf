"""What a method's body says of its receiver's fields, read from its
syntax alone: which it tests against nil or zero and clears (a release
that a second call makes harmless), which it returns early on and which
it raises (a method that does nothing after the type's release), and
whether a statement runs only before a failing return. The owning types
(`owners`) read their methods' idempotence and inertness from these."""

from __future__ import annotations

import re

from tree_sitter import Node

from cudalint import syntax
from cudalint.functions import Unit


def clears_handle(method: Unit, handles: set[str] | None = None) -> bool:
    """A release method a second call of releases nothing: it tests a field
    of its receiver against nil (or 0) and sets that field to nil (or 0)
    (`if b.ptr == nil { return nil }; err := free(b.ptr); b.ptr = nil`), or
    releases under a `sync.Once` of the receiver (`b.once.Do(...)`)."""
    body, receiver = method.body, method.receiver
    if body is None or receiver is None:
        return False
    tested = set()
    for node in syntax.walk(body):
        if node.type == "binary_expression" and syntax.text(node.child_by_field_name("operator")) in ("==", "!="):
            sides = (node.child_by_field_name("left"), node.child_by_field_name("right"))
            if any(syntax.text(side) in ("nil", "0") for side in sides):
                tested.update(_tested_field(side, receiver.name) for side in sides)
        elif node.type == "call_expression":
            function = syntax.text(node.child_by_field_name("function"))
            if function.startswith(f"{receiver.name}.") and function.endswith(".Do") and function.count(".") == 2:
                return True  # `b.once.Do(func() {...})`
    # The field tested and cleared must be one the release takes (`handles`),
    # not a configuration struct reset beside it.
    checked = tested & cleared_fields(method)
    if handles:
        checked &= handles
    return bool(checked) or bool(flags_guarding(method) & flags_raised(method))


def cleared_fields(method: Unit) -> set[str]:
    """The receiver's fields the method sets to nil (or 0)."""
    cleared = set()
    for node in syntax.walk(method.body) if method.body is not None and method.receiver is not None else ():
        if node.type == "assignment_statement":
            left = syntax.expressions(node.child_by_field_name("left"))
            right = syntax.expressions(node.child_by_field_name("right"))
            for target, value in zip(left, right) if len(left) == len(right) else ():
                if zero_value(value):
                    cleared.add(receiver_field(target, method.receiver.name))
    return cleared - {None}


def zero_value(value: Node) -> bool:
    """`nil`, `0`, or an empty composite literal (`dcgm.FieldHandle{}`)."""
    if syntax.text(value) in ("nil", "0"):
        return True
    body = value.child_by_field_name("body") if value.type == "composite_literal" else None
    return body is not None and not body.named_children


def _tested_field(side: Node | None, receiver: str) -> str | None:
    """The receiver's field a side of a nil or zero test reads: `b.ptr`,
    also through the field's own fields and accessors (`c.group.handle`,
    `c.group.GetHandle()`)."""
    node = syntax.unparen(side)
    for _ in range(4):
        if node is None:
            return None
        field = receiver_field(node, receiver)
        if field is not None:
            return field
        if node.type == "call_expression" and not syntax.children(node.child_by_field_name("arguments")):
            node = node.child_by_field_name("function")
        if node is None or node.type != "selector_expression":
            return None
        node = syntax.unparen(node.child_by_field_name("operand"))
    return None


def flags_guarding(method: Unit) -> set[tuple[str, str]]:
    """The receiver's fields the method returns early on, with the value
    that makes it return: set (`if e.closed { return }`) or zero (`if
    c.ctx == nil { return nil }`). Where its type's release left a field
    so (`flags_raised`), the method does nothing after the release."""
    body, receiver = method.body, method.receiver
    if body is None or receiver is None:
        return set()
    found = set()
    for node in syntax.walk(body, into_functions=False):
        if node.type != "if_statement":
            continue
        consequence = node.child_by_field_name("consequence")
        if consequence is not None and any(statement.type == "return_statement" for statement in syntax.statements(consequence)):
            found.update(_guards(node.child_by_field_name("condition"), receiver.name))
    return found


def guards_through(method: Unit, by_name: dict[str, Unit], depth: int = 0) -> set[tuple[str, str]]:
    """The method's own guards (`flags_guarding`), and those of the method
    of its type it hands the whole call to (`func (c *Context) Generate(p
    string) (string, error) { return c.generate(p, nil) }`, where generate
    returns at once on `c.closed`)."""
    found = flags_guarding(method)
    if method.body is None or method.receiver is None or depth >= 3:
        return found
    receiver = method.receiver.name
    # The body's one use of the receiver is that call, and no C call.
    uses = [node for node in syntax.walk(method.body) if node.type == "identifier" and syntax.text(node) == receiver]
    calls_c = any(syntax.text(node.child_by_field_name("function")).startswith("C.") for node in syntax.calls_in(method.body))
    function = uses[0].parent if len(uses) == 1 and not calls_c else None
    if (
        function is not None and function.type == "selector_expression" and function.parent is not None
        and function.parent.type == "call_expression" and function.parent.child_by_field_name("function") == function
        and (target := by_name.get(syntax.text(function.child_by_field_name("field")))) is not None and target is not method
    ):
        found |= guards_through(target, by_name, depth + 1)
    return found


def _guards(condition: Node | None, receiver: str) -> set[tuple[str, str]]:
    """The guards of a condition, each alternative of `||` on its own (`if
    t.stopped || t.handle == nil { return ... }` returns on either)."""
    condition = syntax.unparen(condition)
    if condition is not None and condition.type == "binary_expression" and syntax.text(condition.child_by_field_name("operator")) == "||":
        return _guards(condition.child_by_field_name("left"), receiver) | _guards(condition.child_by_field_name("right"), receiver)
    guard = _guard(condition, receiver)
    return {guard} if guard is not None else set()


def _guard(condition: Node | None, receiver: str) -> tuple[str, str] | None:
    """("closed", "set") for `e.closed`, ("ctx", "zero") for `c.ctx == nil` (or `== 0`)."""
    condition = syntax.unparen(condition)
    field = receiver_field(condition, receiver)
    if field is not None:
        return field, "set"
    if condition is None or condition.type != "binary_expression" or syntax.text(condition.child_by_field_name("operator")) != "==":
        return None
    left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
    for side, other in ((left, right), (right, left)):
        if syntax.text(other) in ("nil", "0") and (field := receiver_field(side, receiver)) is not None:
            return field, "zero"
    return None


def flags_raised(method: Unit) -> set[tuple[str, str]]:
    """The receiver's fields the method sets to true (`e.closed = true`:
    set) or clears (`c.ctx = nil`: zero); a value receiver's are a copy's."""
    body, receiver = method.body, method.receiver
    if body is None or receiver is None or receiver.type_node is None or receiver.type_node.type != "pointer_type":
        return set()
    found = set()
    for node in syntax.walk(body, into_functions=False):
        if node.type == "assignment_statement":
            left = syntax.expressions(node.child_by_field_name("left"))
            right = syntax.expressions(node.child_by_field_name("right"))
            for target, value in zip(left, right) if len(left) == len(right) else ():
                field = receiver_field(target, receiver.name)
                written = syntax.text(value)
                if field is not None and written in ("true", "nil", "0"):
                    found.add((field, "set" if written == "true" else "zero"))
    return found


def before_failing_return(node: Node) -> bool:
    """Whether the statement holding `node` is in a block that ends by
    returning a new error (`if ret != nvml.SUCCESS { d.Shutdown(); return
    fmt.Errorf(...) }`): a release there happens only where the method
    fails, which its callers read as the failure they handle."""
    statement, branch = syntax.holding_statement(node)
    if statement.type == "return_statement" or branch is None or branch.type != "if_statement":
        return False  # a method's own body ending in `return fmt.Errorf(...)` frees on its success paths too
    consequence = branch.child_by_field_name("consequence")
    if consequence is None or not consequence.start_byte <= statement.start_byte < consequence.end_byte:
        return False
    last = statement.parent.named_children[-1] if statement.parent is not None and statement.parent.named_children else None
    if last is None or last.type != "return_statement":
        return False
    results = syntax.expressions(last.named_children[0]) if last.named_children else []
    error = syntax.unparen(results[-1]) if results else None
    function = error.child_by_field_name("function") if error is not None and error.type == "call_expression" else None
    return function is not None and _NEW_ERROR.fullmatch(syntax.text(function)) is not None


_NEW_ERROR = re.compile(r"fmt\.Errorf|errors\.(New|Errorf)")  # (errors.Wrap(nil, ...) is nil)


def receiver_field(node: Node | None, receiver: str) -> str | None:
    """"ptr" for `b.ptr` where b is the receiver."""
    node = syntax.unparen(node)
    if node is None or node.type != "selector_expression" or syntax.text(node.child_by_field_name("operand")) != receiver:
        return None
    return syntax.text(node.child_by_field_name("field"))
