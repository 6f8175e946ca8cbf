"""CL503's fix: the common reflect.SliceHeader / StringHeader shapes,
recognised exactly, rewritten with unsafe.Slice, unsafe.String,
unsafe.SliceData and unsafe.StringData. Anything not recognised exactly
gets no fix: a header is how code says "trust me", and a rewrite that
guessed a type would not compile or would change what the code does.

Recognised, with `h` any header reference of the file:

- reading a field of an overlay on a slice or string variable:
  `unsafe.Pointer((*reflect.SliceHeader)(unsafe.Pointer(&s)).Data)` is
  `unsafe.Pointer(unsafe.SliceData(s))` (Go 1.20), `.Len` is `len(s)`;
- a header literal converted in place:
  `*(*[]T)(unsafe.Pointer(&reflect.SliceHeader{Data: uintptr(p), Len: n, Cap: n}))`
  is `unsafe.Slice((*T)(p), n)` (Go 1.17; `unsafe.String((*byte)(p), n)`
  for a string, Go 1.20), also when the literal is declared in the
  statement right before the conversion and used nowhere else;
- an overlay filled in field by field right after it is made, on a
  variable declared `var s []T`: `s = unsafe.Slice((*T)(p), n)`.

The length must be the same plain expression for Len and Cap (no call but
conversions, len and cap: it is evaluated once instead of twice), and the
data an unsafe.Pointer: `uintptr(unsafe.Pointer(q))` or `uintptr(p)` with p
declared unsafe.Pointer. Where the fix takes the file's last use of
reflect, it removes the import too.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from cudalint import syntax
from cudalint.fixes import gofmt
from cudalint.fixes.placement import delete_line, replacement
from cudalint.findings import Fix, TextEdit
from cudalint.gotypes import declared_type
from cudalint.scope import Resolution, Symbol
from cudalint.source import SourceFile

SLICE, STRING = "SliceHeader", "StringHeader"
_FIELDS = {SLICE: ("Data", "Len", "Cap"), STRING: ("Data", "Len")}
_PURE_CALLS = frozenset({"len", "cap", "int", "int32", "int64", "uint", "uint32", "uint64", "uintptr"})


@dataclass(frozen=True)
class Made:
    """What a header describes: `function((*element)(pointer), length)`,
    the element None until the conversion says it."""

    function: str
    element: str | None
    pointer: Node
    length: Node

    def text(self, depth: int, element: str | None = None) -> str | None:
        """As gofmt prints it at `depth`: the pointer and the length are
        re-spaced for the arguments of a two-argument call (`n / 2` is
        `n/2` there). None where either spans lines."""
        pointer, length = gofmt.expression(self.pointer, depth + 1), gofmt.expression(self.length, depth + 1)
        if pointer is None or length is None or (element or self.element) is None:
            return None
        return f"{self.function}((*{element or self.element})({pointer}), {length})"


class Rewriter:
    """The rewrites of one file's header references."""

    def __init__(self, source: SourceFile, resolution: Resolution, go_version: tuple[int, int] | None):
        self.source = source
        self.resolution = resolution
        self.go_version = go_version or (0, 0)

    def fix(self, reference: Node, header: str) -> Fix | None:
        if self.go_version < (1, 17):
            return None
        for shape in (self._field_read, self._literal, self._overlay):
            found = shape(reference, header)
            if found is not None:
                return found
        return None

    # -- the shapes -------------------------------------------------------------

    def _field_read(self, reference: Node, header: str) -> Fix | None:
        """`(*reflect.SliceHeader)(unsafe.Pointer(&s)).Data` and `.Len`, `.Cap`."""
        overlay = _overlay_call(reference)
        target = self._overlaid(overlay, header) if overlay is not None else None
        read = _enclosing(overlay) if target is not None else None
        if read is None or read.type != "selector_expression" or _is_written(read):
            return None
        field, name = syntax.text(read.child_by_field_name("field")), syntax.text(target)
        if field in ("Len", "Cap") and (field == "Len" or header == SLICE):
            return self._replace(read, f"{field.lower()}({name})")
        if field != "Data" or self.go_version < (1, 20):
            return None
        data = f"unsafe.{'SliceData' if header == SLICE else 'StringData'}({name})"
        outer = _enclosing(read)
        if outer is not None and outer.type == "argument_list" and len(syntax.children(outer)) == 1 and syntax.is_call_of(outer.parent, "unsafe.Pointer"):
            return self._replace(outer.parent, f"unsafe.Pointer({data})")
        return self._replace(read, f"uintptr(unsafe.Pointer({data}))")

    def _literal(self, reference: Node, header: str) -> Fix | None:
        """A header literal converted to a slice or string, in place or
        through a variable declared right before."""
        literal = reference.parent
        if literal is None or literal.type != "composite_literal" or literal.child_by_field_name("type") != reference:
            return None
        made = self._made(literal, header)
        if made is None:
            return None
        holder = _enclosing(literal)
        pointer = holder if holder is not None and holder.type == "unary_expression" and _operator(holder) == "&" else literal
        if _is_argument_of_unsafe_pointer(pointer):
            conversion = _converted(pointer.parent.parent, header, made)
            return self._replace(*conversion) if conversion is not None else None
        return self._through_variable(pointer, header, made)

    def _through_variable(self, value: Node, header: str, made: Made) -> Fix | None:
        """`hdr := reflect.SliceHeader{...}` then `s := *(*[]T)(unsafe.Pointer(&hdr))`."""
        declaration = _single_declaration(value)
        following = _next_statement(declaration) if declaration is not None else None
        if following is None:
            return None
        name = syntax.children(declaration.child_by_field_name("left"))[0]
        symbol = self.resolution.symbol(name)
        uses = [n for n in syntax.walk(following) if n.type == "identifier" and self.resolution.symbol(n) is symbol]
        if symbol is None or len(uses) != 1 or self._references(symbol) != 2:
            return None
        pointer = uses[0]
        if value.type == "composite_literal":  # a struct value: its address is converted
            if pointer.parent.type != "unary_expression" or _operator(pointer.parent) != "&":
                return None
            pointer = pointer.parent
        if not _is_argument_of_unsafe_pointer(pointer):
            return None
        conversion = _converted(pointer.parent.parent, header, made)
        removed = delete_line(declaration, self.source)
        if conversion is None or removed is None:
            return None
        edits = [removed, self._edit(*conversion)]
        comments = [n for n in syntax.walk(declaration) if n.type == "comment"] + [c for c in [_trailing_comment(declaration)] if c is not None]
        if comments:  # they go with the declaration's lines: keep one on the conversion's
            if len(comments) > 1 or _trailing_comment(following) is not None:
                return None
            at = following.end_byte
            edits.append(replacement(self.source, at, at, " " + syntax.text(comments[0])))
        return Fix(f"use `{conversion[1]}`", True, tuple(edits))

    def _overlay(self, reference: Node, header: str) -> Fix | None:
        """`h := (*reflect.SliceHeader)(unsafe.Pointer(&s))` then `h.Data`,
        `h.Len`, `h.Cap` assigned, with s declared `var s []T`."""
        overlay = _overlay_call(reference)
        target = self._overlaid(overlay, header) if overlay is not None else None
        declaration = _single_declaration(overlay) if target is not None else None
        if declaration is None:
            return None
        symbol = self.resolution.symbol(syntax.children(declaration.child_by_field_name("left"))[0])
        values: dict[str, Node] = {}
        last, statement = declaration, _next_statement(declaration)
        while statement is not None and statement.type == "assignment_statement" and len(values) < len(_FIELDS[header]):
            assigned = _field_assignments(statement, symbol, self.resolution)
            if assigned is None or set(assigned) & set(values):
                return None
            values.update(assigned)
            last, statement = statement, _next_statement(statement)
        if set(values) != set(_FIELDS[header]) or self._references(symbol) != 1 + len(values):
            return None
        made = self._made_from(values, header, declared_type(self.resolution, target))
        if made is None:
            return None
        start, assignment = declaration, f"{syntax.text(target)} ="
        before = declaration.prev_named_sibling
        if before is not None and _declares_only(before, target) and _trailing_comment(before) is None:
            start, assignment = before, f"{syntax.text(target)} :="
        made_text = made.text(1)  # the value of a one-variable assignment
        if made_text is None:
            return None
        text = f"{assignment} {made_text}"
        end = last.end_byte
        comments = [c for c in map(_trailing_comment, _statements(start, last)) if c is not None]
        if len(comments) > 1:
            return None
        if comments:  # kept, at the end of the new line
            text += " " + syntax.text(comments[0])
            end = max(end, comments[0].end_byte)
        return Fix(f"use `{text}`", True, (replacement(self.source, start.start_byte, end, text),))

    # -- the parts --------------------------------------------------------------

    def _overlaid(self, overlay: Node, header: str) -> Node | None:
        """s in `(*reflect.SliceHeader)(unsafe.Pointer(&s))`, where s is a
        variable declared as a slice (a string for StringHeader)."""
        arguments = syntax.children(overlay.child_by_field_name("arguments"))
        if len(arguments) != 1 or not syntax.is_call_of(arguments[0], "unsafe.Pointer"):
            return None
        inner = syntax.children(arguments[0].child_by_field_name("arguments"))
        address = inner[0] if len(inner) == 1 else None
        if address is None or address.type != "unary_expression" or _operator(address) != "&":
            return None
        target = address.child_by_field_name("operand")
        if target is None or target.type != "identifier":
            return None
        declared = declared_type(self.resolution, target)
        wanted = "slice_type" if header == SLICE else "string"
        if declared is None or (declared.type if header == SLICE else syntax.text(declared)) != wanted:
            return None
        return target

    def _made(self, literal: Node, header: str) -> Made | None:
        body = literal.child_by_field_name("body")
        elements = syntax.children(body) if body is not None else []
        values: dict[str, Node] = {}
        for position, element in enumerate(elements):
            if element.type == "keyed_element":
                key, value = syntax.children(element)
                name, value = syntax.text(key), syntax.children(value)[0] if syntax.children(value) else None
            elif element.type == "literal_element" and position < len(_FIELDS[header]):
                name, value = _FIELDS[header][position], syntax.children(element)[0]
            else:
                return None
            if value is None or name in values:
                return None
            values[name] = value
        if set(values) != set(_FIELDS[header]):
            return None
        return self._made_from(values, header, None)

    def _made_from(self, values: dict[str, Node], header: str, declared: Node | None) -> Made | None:
        """unsafe.Slice((*T)(p), n) or unsafe.String((*byte)(p), n) from the
        header's fields, T left open where the slice type is not known yet
        (the conversion says it)."""
        length = values["Len"]
        if header == SLICE and syntax.text(values["Cap"]) != syntax.text(length):
            return None
        if not _pure(length):
            return None
        pointer = self._pointer(values["Data"])
        if pointer is None:
            return None
        if header == STRING:
            if self.go_version < (1, 20):
                return None
            return Made("unsafe.String", "byte", pointer, length)
        if declared is not None:
            if declared.type != "slice_type":
                return None
            return Made("unsafe.Slice", syntax.text(declared.child_by_field_name("element")), pointer, length)
        return Made("unsafe.Slice", None, pointer, length)

    def _pointer(self, data: Node) -> Node | None:
        """p from `uintptr(p)`, where p is an unsafe.Pointer."""
        data = syntax.unparen(data)
        if not syntax.is_call_of(data, "uintptr"):
            return None
        arguments = syntax.children(data.child_by_field_name("arguments"))
        inner = syntax.unparen(arguments[0]) if len(arguments) == 1 else None
        if inner is None:
            return None
        if syntax.is_call_of(inner, "unsafe.Pointer"):
            return inner
        if inner.type == "identifier":
            symbol = self.resolution.symbol(inner)
            if symbol is not None and symbol.type_node is not None and syntax.text(symbol.type_node) == "unsafe.Pointer":
                return inner
        return None

    def _references(self, symbol: Symbol | None) -> int:
        scope = symbol.function if symbol is not None else None
        if scope is None:
            return -1
        return sum(1 for n in syntax.walk(scope) if n.type == "identifier" and self.resolution.symbol(n) is symbol)

    def _replace(self, node: Node, text: str) -> Fix:
        return Fix(f"use `{text}`", True, (self._edit(node, text),))

    def _edit(self, node: Node, text: str) -> TextEdit:
        return replacement(self.source, node.start_byte, node.end_byte, text)


def without_import(fix: Fix, import_spec: Node, source: SourceFile) -> Fix:
    """The fix, also removing the import it leaves unused."""
    while import_spec.type != "import_spec" and import_spec.parent is not None:
        import_spec = import_spec.parent
    declaration = import_spec.parent
    if declaration is not None and declaration.type == "import_spec_list":
        if len(syntax.children(declaration)) == 1:
            import_spec = declaration.parent
    removed = delete_line(import_spec, source)
    return Fix(fix.message, fix.safe, (*fix.edits, removed)) if removed is not None else fix


# -- syntax helpers -------------------------------------------------------------

def _operator(node: Node) -> str:
    operator = node.child_by_field_name("operator")
    return syntax.text(operator) if operator is not None else ""


def _enclosing(node: Node) -> Node | None:
    """The node's parent, through parentheses."""
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return parent


def _is_argument_of_unsafe_pointer(node: Node) -> bool:
    arguments = node.parent
    return arguments is not None and arguments.type == "argument_list" and len(syntax.children(arguments)) == 1 and syntax.is_call_of(arguments.parent, "unsafe.Pointer")


def _overlay_call(reference: Node) -> Node | None:
    """`(*reflect.SliceHeader)(x)` around the reference."""
    star = reference.parent
    parens = star.parent if star is not None and star.type == "unary_expression" and _operator(star) == "*" else None
    call = parens.parent if parens is not None and parens.type == "parenthesized_expression" else None
    if call is None or call.type != "call_expression" or call.child_by_field_name("function") != parens:
        return None
    return call


def _converted(pointer_call: Node, header: str, made: Made) -> tuple[Node, str] | None:
    """The `*(*[]T)(pointer_call)` (or `*(*string)(...)`) around the call,
    and what replaces it."""
    parent = pointer_call.parent
    target: Node | None = None
    whole: Node | None = None
    if parent is not None and parent.type == "type_conversion_expression":
        # tree-sitter reads `*(*[]T)(x)` as a conversion to the type `*(*[]T)`.
        outer = parent.child_by_field_name("type")
        inner = syntax.children(outer)[0] if outer is not None and outer.type == "pointer_type" and syntax.children(outer) else None
        pointed = syntax.children(inner)[0] if inner is not None and inner.type == "parenthesized_type" else None
        if pointed is not None and pointed.type == "pointer_type":
            target, whole = syntax.children(pointed)[0], parent
    elif parent is not None and parent.type == "argument_list" and len(syntax.children(parent)) == 1:
        call = parent.parent
        function = call.child_by_field_name("function") if call is not None else None
        star = syntax.children(function)[0] if function is not None and function.type == "parenthesized_expression" else None
        deref = call.parent if call is not None else None
        if star is not None and star.type == "unary_expression" and _operator(star) == "*" and deref is not None \
                and deref.type == "unary_expression" and _operator(deref) == "*":
            target, whole = star.child_by_field_name("operand"), deref
    if target is None or whole is None:
        return None
    if header == STRING:
        text = made.text(gofmt.depth_of(whole)) if syntax.text(target) == "string" else None
    elif target.type == "slice_type":
        text = made.text(gofmt.depth_of(whole), syntax.text(target.child_by_field_name("element")))
    else:
        text = None
    return (whole, text) if text is not None else None


def _single_declaration(value: Node) -> Node | None:
    """The `x := value` statement whose only value it is."""
    values = value.parent
    statement = values.parent if values is not None and values.type == "expression_list" else None
    if statement is None or statement.type != "short_var_declaration" or len(syntax.children(values)) != 1:
        return None
    if len(syntax.children(statement.child_by_field_name("left"))) != 1 or statement.parent.type != "statement_list":
        return None
    return statement


def _next_statement(statement: Node) -> Node | None:
    """The statement right after it, past its trailing comment (None past a
    comment on a line of its own: a rewrite would lose it)."""
    following = statement.next_named_sibling
    if following is not None and following == _trailing_comment(statement):
        following = following.next_named_sibling
    return following if following is not None and following.type != "comment" else None


def _trailing_comment(statement: Node) -> Node | None:
    """`// ...` after the statement on its last line."""
    following = statement.next_named_sibling
    if following is not None and following.type == "comment" and following.start_point[0] == statement.end_point[0]:
        return following
    return None


def _field_assignments(statement: Node, overlay: Symbol | None, resolution: Resolution) -> dict[str, Node] | None:
    """{"Data": value, ...} of `h.Data, h.Len = ...`; None for anything else."""
    if syntax.text(statement.child_by_field_name("operator")) != "=":
        return None
    left = syntax.children(statement.child_by_field_name("left"))
    right = syntax.children(statement.child_by_field_name("right"))
    if len(left) != len(right):
        return None
    found = {}
    for target, value in zip(left, right):
        operand = target.child_by_field_name("operand") if target.type == "selector_expression" else None
        if operand is None or operand.type != "identifier" or overlay is None or resolution.symbol(operand) is not overlay:
            return None
        found[syntax.text(target.child_by_field_name("field"))] = value
    return found if len(found) == len(left) else None


def _statements(first: Node, last: Node) -> list[Node]:
    found, statement = [first], first
    while statement != last and statement.next_named_sibling is not None:
        statement = statement.next_named_sibling
        if statement.type != "comment":
            found.append(statement)
    return found


def _declares_only(statement: Node, variable: Node) -> bool:
    """`var s []T`: one name, a type, no value."""
    if statement.type != "var_declaration":
        return False
    specs = syntax.children(statement)
    spec = specs[0] if len(specs) == 1 and specs[0].type == "var_spec" else None
    if spec is None or spec.child_by_field_name("value") is not None:
        return False
    names = [c for c in syntax.children(spec) if c.type == "identifier"]
    return len(names) == 1 and syntax.text(names[0]) == syntax.text(variable)


def _is_written(selector: Node) -> bool:
    parent = _enclosing(selector)
    if parent is None:
        return False
    if parent.type == "unary_expression" and _operator(parent) == "&":
        return True
    if parent.type in ("inc_statement", "dec_statement"):
        return True
    holder = parent.parent if parent.type == "expression_list" else None
    return holder is not None and holder.type == "assignment_statement" and holder.child_by_field_name("left") == parent


def _pure(expression: Node) -> bool:
    """No call but a conversion to an integer type, len or cap."""
    for node in syntax.walk(expression):
        if node.type == "call_expression" and syntax.text(node.child_by_field_name("function")) not in _PURE_CALLS:
            return False
        if node.type in ("unary_expression",) and _operator(node) == "<-":
            return False
    return True
