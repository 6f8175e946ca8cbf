"""CL101: an acquisition that some path to a return neither releases nor hands over."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.call_kinds import argument_of
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex
from cudalint.analyses.lifetimes import LIFETIMES, Engine, Leak, Lost, Origin
from cudalint.analyses.procs import BoundFunction
from cudalint.analyses.uses import USES, UseKind, VariableUses
from cudalint.catalog import Level, Rule
from cudalint.cside import CFunction
from cudalint.cfg import CFG, NodeKind
from cudalint.fixes.placement import after_success_check, indent_of, insert_after, insert_before, move_defer, statement_of
from cudalint.prefilter import imports_of
from cudalint.wording import acquired_here, release_statement, release_verb, where_to_fix
from cudalint.findings import Fix, Step
from cudalint.framework import Pass, Ref
from cudalint.functions import Unit, UnitKind
from cudalint.gotypes import result_types
from cudalint.knowledge import Knowledge


@dataclass(frozen=True)
class _Reads:
    """What this rule's helpers read besides the leaks: results the rule
    declared, handed on together."""

    calls: CallIndex
    uses: VariableUses
    knowledge: Knowledge
    lifetimes: Engine


def check(p: Pass) -> None:
    lifetimes = p.result_of(LIFETIMES)
    reads = _Reads(p.result_of(CALLS), p.result_of(USES), p.knowledge, lifetimes)

    fixed: set = set()

    def visit(unit: Unit, graph: CFG) -> None:
        found = lifetimes.lifetimes(unit)
        overwritten = {o.origin for o in found.overwrites}
        values: set[tuple[int, int, str, int]] = set()
        for leak in found.leaks:
            if leak.origin in overwritten and not _returns_inside_the_loop(leak, graph):
                continue  # reported once, as CL103 (a return in the loop that drops the current one is a leak of its own)
            # One value of an owning type that holds two resources (a GPU and
            # a compute instance) is one leak of that value; a wrapper that
            # acquires the same kind in two ways (`C.calloc` or `C.malloc`) into
            # one result hands out one allocation.
            owned = leak.origin.resource.owns is not None
            value = (leak.origin.call.id, leak.node, "" if owned else leak.origin.resource.name, 0 if owned else leak.origin.role.index)
            if value in values:
                continue
            values.add(value)
            message, refs = _message(reads, leak, graph)
            fix = _fix(reads, leak, graph) if leak.origin not in fixed else None
            if fix is not None:
                fixed.add(leak.origin)
            p.report(unit, leak.origin.call, message, steps=_path(leak, graph), fixes=(fix,) if fix else (), **refs)

    p.visit_graphs(lifetimes.units_with_acquisitions(), visit)


def _counted_remedy(reads: _Reads, origin: Origin) -> str | None:
    """A count another package of the module took (`c, err := dcgm.NewClient()`
    in a package whose `dcgm` is that wrapper, not go-dcgm): that package's
    one release of it, `dcgm.Shutdown()`, or the method of the value the
    acquiring call returned, `c.Close()`."""
    if origin.role.handle != "none" or not origin.via_text or origin.call.type != "call_expression":
        return None
    fact = reads.calls.call(origin.call)
    releasing = reads.lifetimes.releasing_count(fact.import_path, origin.resource.name) if fact is not None else None
    if releasing is None or "." not in origin.written:
        return None
    name, arity = releasing
    if "." not in name:
        # `util.NvmlInit(c.Nvml)` -> `util.TryNvmlShutdown(c.Nvml)`: the same
        # arguments where it takes as many; else they are the reader's to fill.
        arguments = syntax.children(origin.call.child_by_field_name("arguments"))
        written = ", ".join(syntax.text(a) for a in arguments) if len(arguments) == arity else "..." if arity else ""
        return f"defer {origin.written.rsplit('.', 1)[0]}.{name}({written})"
    owner, _, method = name.rpartition(".")
    if fact.name.rpartition(".")[0] == owner:
        # `utils.NVMLManager.Acquire()` -> `utils.NVMLManager.Release()`: a method of the same value.
        return f"defer {origin.written.rsplit('.', 1)[0]}.{method}()"
    holders = syntax.assigned_from(origin.call)
    holder = syntax.text(holders[0]) if holders and holders[0].type == "identifier" and syntax.text(holders[0]) != "_" else None
    return f"defer {holder}.{method}()" if holder is not None else None


def _remedy(reads: _Reads, origin: Origin) -> str:
    """The release to suggest: for a resource that a function of another
    package of the module handed out, that package's own release function
    (`defer gpubind.Free(p)`: the importer may not even import "C"), where it
    has exactly one; else the knowledge's release, as this file spells it."""
    resource = origin.resource
    counted = _counted_remedy(reads, origin)
    if counted is not None:
        return counted
    bare = (
        resource.owns is None and bool(resource.release) and resource.release[0].handle != "receiver"
        and not resource.any_use_releases  # a cleanup function: `defer cleanup()`
    )
    fact = reads.calls.call(origin.call) if origin.via_text and origin.role.handle != "none" and bare else None
    if fact is not None and fact.name.count(".") <= 1 and "." in origin.written:
        # `gpubind.Alloc(n)` -> gpubind.Free; `gpu.Alloc(n)` on a GPU -> gpu.Free.
        type_name, _, acquirer = fact.name.rpartition(".")
        name = reads.lifetimes.releasing_function(fact.import_path, type_name, acquirer, resource.name)
        if name is not None:
            return f"defer {origin.written.rsplit('.', 1)[0]}.{name}({origin.handle or 'x'})"
    if origin.via is not None and bare:
        # A handle the package's own function wrapped in a type of the
        # package (`NewPlain` returns a Plain): that type's release function.
        wrapper = reads.calls.callee(origin.call).target if origin.call.type == "call_expression" else None
        types = result_types(wrapper) if wrapper is not None else ()
        wrapped = types[origin.role.index] if 0 <= origin.role.index < len(types) else ""
        name = reads.lifetimes.releasing_function_of(wrapped) if wrapped else None
        if name is None and wrapper is not None and wrapper.kind is UnitKind.FUNCTION:
            name = reads.lifetimes.releasing_function_like(wrapper.name)
        if name is not None:
            return f"defer {name}({origin.handle or 'x'})"
        if wrapper is not None and wrapper.kind is UnitKind.METHOD and "." in origin.written:
            # `s.gpu.Alloc(n)` -> `s.gpu.Free(p)`: the release method of the same type.
            receiver, _, acquirer = wrapper.name.rpartition(".")
            method = reads.lifetimes.releasing_method(receiver.removeprefix("(*").removesuffix(")"), acquirer)
            if method is not None:
                return f"defer {origin.written.rsplit('.', 1)[0]}.{method}({origin.handle or 'x'})"
    return _c_helper_release(reads, origin) or _bound_release(reads, origin) or release_statement(origin)


def _bound_release(reads: _Reads, origin: Origin) -> str | None:
    """For what another package's bound function variable acquired
    (`boundlib.MemAlloc(&d, n)`, cuMemAlloc_v2), the variable that package
    bound to the release (`boundlib.MemFree`)."""
    fact = reads.calls.call(origin.call) if origin.call.type == "call_expression" else None
    function = syntax.unparen(origin.call.child_by_field_name("function")) if fact is not None and fact.on_value else None
    operand = syntax.unparen(function.child_by_field_name("operand")) if function is not None and function.type == "selector_expression" else None
    path = reads.calls.package.resolution.package_of(operand) if operand is not None and operand.type == "identifier" else None
    if path is None:
        return None
    releases = {role.call.removeprefix("C.") for role in origin.resource.release if role.handle.startswith("arg")}
    for name in reads.calls.imported.objects(path):
        bound = reads.calls.imported.fact(BoundFunction, path, name)
        if bound is not None and bound.name in releases:
            return f"defer {syntax.text(operand)}.{name}({origin.handle or 'x'})"
    return None


def _c_helper_release(reads: _Reads, origin: Origin) -> str | None:
    """For what a C helper of the package acquired (`C.bridge_init`, which
    wraps nvmlInit), the one helper that wraps its release: the API itself
    may be reached only through dlsym, so `C.nvmlShutdown()` would not build."""
    view = reads.calls.c_view
    if view is None or not (origin.api.helper_roles or origin.innermost.api.helper_roles) or not origin.resource.release:
        return None
    released = origin.resource.release[0].call.rpartition(".")[2]
    made = view.functions.get(origin.innermost.written.removeprefix("C.").split(" ", 1)[0])
    helpers = [name for name, function in view.functions.items() if function.wraps and view.wrapped(function) == released]
    if len(helpers) > 1:
        # Of several (`Mat_Close`, `GpuMat_Close`), the one taking what the acquiring helper returns.
        helpers = [name for name in helpers if made is not None and _takes(view.functions[name], made.returns)]
    if len(helpers) > 1 and made is not None:
        # Of several taking a `void *` (`Params_Free`, `Options_Free`), the one named for the same thing.
        helpers = _named_alike(made.name, helpers)
    # `DeviceFree(void *p) { return kr_status(cudaFree(p), NULL); }`: a result struct's release.
    helpers = helpers or [name for name, function in view.functions.items() if function.carried == released]
    statement = release_statement(origin)
    payload = view.payload(made.returns) if made is not None and origin.api.helper_roles else ""
    if payload and origin.handle:
        statement = statement.replace(f"({origin.handle})", f"({origin.handle}.{payload})")  # `C.DeviceFree(r.res)`
    return statement.replace(f"C.{released}(", f"C.{helpers[0]}(") if len(helpers) == 1 else None


def _named_alike(made: str, helpers: list[str]) -> list[str]:
    """The helpers whose names share the most words with the constructor's,
    the verbs left out (`llama_allocate_params` and `llama_free_params`,
    not `llama_free_model`): one, or all of them where that does not tell."""
    def words(name: str) -> set[str]:
        split = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
        return {word.lower() for word in split} - _VERBS

    shared = {helper: len(words(made) & words(helper)) for helper in helpers}
    best = max(shared.values(), default=0)
    chosen = [helper for helper in helpers if shared[helper] == best]
    return chosen if best and len(chosen) == 1 else helpers


_VERBS = {"alloc", "allocate", "new", "make", "create", "init", "open", "free", "delete", "destroy", "release", "close", "dispose"}


def _takes(helper: CFunction, type_name: str) -> bool:
    """Whether the releasing helper releases a parameter of this type."""
    index = helper.wrapped_args[0] if helper.wrapped_args else -1
    return 0 <= index < len(helper.param_types) and helper.param_types[index] == type_name


def _message(reads: _Reads, leak: Leak, graph: CFG) -> tuple[str, dict[str, Ref]]:
    origin = leak.origin
    refs = {"acquired": acquired_here(origin)}
    what = f"{origin.resource.name} from {origin.written} (@acquired{_through(origin)})"
    inner = origin.innermost
    if origin.via is not None and inner.unit.file is origin.unit.file:
        refs["inner"] = Ref(inner.call, f"{inner.written} acquires it inside {inner.unit.name}")
    verb = release_verb(origin.resource)
    remedy = _remedy(reads, origin)
    exit_span = graph.span(leak.node)
    if exit_span is not None:
        refs["exit"] = Ref(exit_span, f"{origin.handle or 'it'} is still held here")
    exit_at = "@exit" if exit_span is not None else f"line {leak.line}"
    if origin.resource.glue_only and "C.delete(" in remedy:
        # Go cannot delete a C++ object, and no function of the glue does.
        return (
            f"{what} is not {verb} on the path to {exit_at}; no function of the C++ glue deletes it: "
            f"add one (`delete p;` in a function of the glue) and defer its call {where_to_fix(origin)}"
        ), refs
    if leak.failing and (origin.role.handle == "none" or origin.resource.outlives):
        where = "the goroutine exit" if leak.how is Lost.GOEXIT else "the failing return"
        call = remedy.removeprefix("defer ")
        if origin.role.handle == "none":
            why, release = "the caller sees the failure and will not release it, so the count stays taken", call
        else:
            why, release = "it outlives the process, and the caller sees the failure and no handle, so nothing will", f"_ = {call}"
        return f"{what} is not {verb} on {where} at {exit_at}: {why}; release it before this return (`{release}`)", refs
    if leak.retaken:
        refs.pop("exit", None)
        return (
            f"{what} is taken again on the next iteration of the loop while the previous count is still held: "
            f"each iteration takes one more; release it in the loop (`{remedy.removeprefix('defer ')}` once done "
            f"with it) or take it once before the loop"
        ), refs
    if leak.per_call:
        return (
            f"{what} is not {verb} on the return at {exit_at}: {graph.unit.name} runs on {leak.per_call} "
            f"and takes another count each time; release it before returning (`{remedy}` {where_to_fix(origin)})"
        ), refs
    if origin.role.handle == "none":
        return (
            f"{what} is {verb} on some paths but not on the return at {exit_at}; "
            f"release it on this path too (`{remedy}` {where_to_fix(origin)})"
        ), refs
    if leak.how is Lost.DISCARDED:
        refs.pop("exit", None)
        return f"{what} is never {verb}: {leak.detail}; keep it in a variable x and `{remedy}`", refs
    if leak.how is Lost.SCOPE:
        refs.pop("exit", None)
        return (
            f"{what} is not {verb} before {origin.handle} goes out of scope at line {leak.line} "
            f"(each loop iteration or block declares a new {origin.handle}); release it before then"
        ), refs
    where = "the return" if leak.how is Lost.RETURN else "the goroutine exit"
    if graph.kind(leak.node) is NodeKind.IMPLICIT_RETURN:
        where = "the return at the end of the function"
        place = f"({exit_at})"
    else:
        place = f"at {exit_at}"
    fix_place = where_to_fix(origin).removeprefix("right ")
    if leak.held_in:
        # Appended to a slice, then a later step failed: every element is lost.
        advice = (
            f"by then it is held in {leak.held_in}, which this return drops: release what "
            f"{leak.held_in} holds before returning" + (" (a failure part-way leaks every earlier one)" if leak.failing else "")
        )
        return f"{what} is not {verb} on {where} {place}; {advice}", refs
    if leak.other_defer is not None:
        refs["defer"] = Ref(graph.ast(leak.other_defer), "the defer")
        if leak.defer_too_early:
            advice = f"the defer at @defer ran before the acquisition and released the old value: move it to right {fix_place}"
        else:
            advice = f"the defer at @defer is not registered on this path: move it to right {fix_place}"
    elif leak.kept_by:
        advice = (
            f"release it before this return (`{remedy.removeprefix('defer ')}`): {leak.kept_by} keeps it "
            f"where it succeeds, so a deferred release would free what it keeps"
        )
    elif _handed_out(reads, leak):
        # A constructor: a defer would release what it returns on success.
        release = _immediate_release(reads, origin) or remedy.removeprefix("defer ")
        advice = (
            f"release it before this return (`{release}`): {origin.unit.name} hands it on "
            f"when it succeeds, so a deferred release would free what it hands on"
        )
    elif (user := _earlier_user(leak, graph)) is not None:
        refs["user"] = Ref(user, f"this defer uses {origin.handle}")
        advice = (
            f"the defer at @user uses {origin.handle} and would run after `{remedy}` added here "
            f"(the last registered runs first): release {origin.handle} at the end of that defer"
        )
    elif graph.in_loop(origin.node):
        advice = (
            f"release it before this return (`{remedy.removeprefix('defer ')}`): it is acquired in a loop, "
            f"where a deferred release would wait for the function's end"
        )
    else:
        advice = f"add `{remedy}` {where_to_fix(origin)}"
    return f"{what} is not {verb} on {where} {place}; {advice}", refs


def _returns_inside_the_loop(leak: Leak, graph: CFG) -> bool:
    """Whether the return that leaks a handle overwritten each iteration is in
    the loop that acquires it (`Sweep` returning on a failed copy): after
    the loop, what runs there usually releases the last one under a test
    the paths do not correlate (`if len(gpus) > 0`)."""
    loop = leak.origin.call.parent
    while loop is not None and loop.type not in ("for_statement", "function_declaration", "method_declaration", "func_literal"):
        loop = loop.parent
    exit_node = graph.ast(leak.node)
    return (
        leak.how is Lost.RETURN and loop is not None and loop.type == "for_statement" and exit_node is not None
        and loop.start_byte <= exit_node.start_byte and exit_node.end_byte <= loop.end_byte
    )


def _earlier_user(leak: Leak, graph: CFG) -> Node | None:
    """A defer registered before the place a deferred release would go,
    that uses the handle (see earlier_defer_using)."""
    origin = leak.origin
    if leak.how is not Lost.RETURN or not origin.handle:
        return None
    anchor = after_success_check(origin.call, origin.status is not None)
    return earlier_defer_using(origin, anchor.end_byte if anchor is not None else origin.call.end_byte)


def _fix(reads: _Reads, leak: Leak, graph: CFG) -> Fix | None:
    origin = leak.origin
    if leak.how is not Lost.RETURN or origin.role.handle == "none" or not origin.handle or leak.held_in:
        return None
    if leak.other_defer is not None:
        return None if leak.defer_too_early else _earlier_defer_fix(reads, leak, graph)
    if _handed_out(reads, leak):
        return _release_before_returns_fix(reads, leak, graph)
    if graph.in_loop(origin.node):
        return None  # a defer in the loop would hold every iteration's until the function returns (CL201)
    return _defer_fix(reads, leak)


def _earlier_defer_fix(reads: _Reads, leak: Leak, graph: CFG) -> Fix | None:
    """The safe fix of a defer registered too late (after a return that
    leaks): move it to right after the success check. Safe where nothing
    between the check and the defer uses the handle but API calls that
    borrow it (no release, no hand-over, no new value) and no other defer
    is registered there (whose order against this one would change)."""
    origin = leak.origin
    defer = graph.ast(leak.other_defer)
    anchor = after_success_check(origin.call, origin.status is not None)
    if defer is None or anchor is None or anchor.end_byte > defer.start_byte or anchor.parent != defer.parent:
        return None
    between = [s for s in syntax.children(anchor.parent) if anchor.end_byte <= s.start_byte and s.end_byte <= defer.start_byte]
    if any(node.type == "defer_statement" for statement in between for node in syntax.walk(statement)):
        return None
    if not _only_borrowed(reads, origin, between):
        return None
    edits = move_defer(defer, anchor, origin.unit.file.source, origin.handle)
    if edits is None:
        return None
    return Fix(f"move `{syntax.text(defer)}` to right {where_to_fix(origin).removeprefix('right ')}", True, edits)


def _release_call(reads: _Reads, origin: Origin) -> str | None:
    """`C.cudaFree(d)` as this file spells it; None where it cannot be
    written out: more arguments than the handle, or `unsafe.Pointer(cs)` in
    a file that does not import unsafe, or a C call in one without cgo."""
    remedy = _remedy(reads, origin)
    if not remedy.startswith("defer ") or "..." in remedy or "unsafe.SliceData(" in remedy:
        return None  # (unsafe.SliceData needs Go 1.20, which the module may not require)
    imported = {i.path for i in origin.unit.file.imports}
    if "unsafe.Pointer(" in remedy and "unsafe" not in imported:
        return None
    if remedy.startswith("defer C.") and "C" not in imported:
        return None
    return remedy.removeprefix("defer ")


def _defer_fix(reads: _Reads, leak: Leak) -> Fix | None:
    """The safe fix of the plainest leak: a function that never releases the
    handle and never hands it on gets `defer <release>` right after the
    acquisition's success check (or the acquisition, for a call with no
    status), indented as the acquisition, in the file's spelling of the
    release. Any other use of the handle than an API call that borrows it
    (a helper, a method, a store, a return) means no fix is offered."""
    origin = leak.origin
    release = _release_call(reads, origin)
    if release is None or not _only_borrowed(reads, origin):
        return None
    remedy = f"defer {release}"
    file = origin.unit.file
    anchor = after_success_check(origin.call, origin.status is not None)
    statement = statement_of(origin.call)
    indent = indent_of(statement, file.source.data) if statement is not None else None
    if anchor is None or indent is None or earlier_defer_using(origin, anchor.end_byte) is not None:
        return None
    return Fix(f"add `{remedy}` {where_to_fix(origin)}", True, (insert_after(anchor, file.source, indent, remedy),))


def _immediate_release(reads: _Reads, origin: Origin) -> str | None:
    """The release as a statement of its own: `_ = C.cudaFree(d)` where it
    returns a status (a bare one is CL304), `C.free(unsafe.Pointer(cs))`
    where it returns nothing; None for a method or an unknown release."""
    release = _release_call(reads, origin)
    if release is None or not origin.resource.release or origin.resource.any_use_releases:
        return None
    role = origin.resource.release[0]
    family = origin.innermost.api.family
    if role.handle == "receiver" or not role.call.startswith(family.qualifier + "."):
        return None
    api = reads.knowledge.lookup(family.import_path, role.call[len(family.qualifier) + 1:])
    if api is None:
        return None
    return f"_ = {release}" if api.status is not None and not api.discardable else release


def _release_before_returns_fix(reads: _Reads, leak: Leak, graph: CFG) -> Fix | None:
    """The unsafe fix of a constructor's leak: the release, as a statement
    of its own, before each return that leaks the handle. Unsafe because the
    analysis may not see every path that reaches such a return (one where
    the acquisition failed, a `goto`); offered only where no path leaves
    through one of them with the handle released and no return names it."""
    origin = leak.origin
    release = _immediate_release(reads, origin)
    if release is None or leak.released_through_held or not leak.held_at:
        return None
    source = origin.unit.file.source
    edits = []
    for n in leak.held_at:
        statement = graph.ast(n)
        if statement is None or statement.type != "return_statement":
            return None
        if any(node.type == "identifier" and syntax.text(node) == origin.handle for node in syntax.walk(statement)):
            return None
        if earlier_defer_using(origin, statement.start_byte) is not None:
            return None  # it would run after the release
        indent = indent_of(statement, source.data)
        if indent is None:
            return None
        edits.append(insert_before(statement, source, indent, release))
    lines = sorted(edit.span.start.line for edit in edits)
    where = f"the return at line {lines[0]}" if len(lines) == 1 else f"the returns at lines {_listed(lines)}"
    return Fix(f"add `{release}` before {where}", False, tuple(edits))


def earlier_defer_using(origin: Origin, before: int) -> Node | None:
    """A `defer` of the function, registered before the offset, that can
    use the handle when it runs: its call or closure names the handle's
    variable, or a variable given the handle's address or a closure over it
    before then (`s := scratch{&d, n}` then `defer s.clear()`). A release
    deferred after it runs first (LIFO), so it would use what was freed."""
    body = origin.unit.body
    if body is None:
        return None
    tied = {_variable(origin.handle)}
    early = [node for node in syntax.walk(body, into_functions=False) if node.start_byte < before]
    for node in early:  # in source order: a variable is tied by what it was given before
        if node.type in ("short_var_declaration", "assignment_statement", "var_spec"):
            value = node.child_by_field_name("right") or node.child_by_field_name("value")
            if value is not None and _names(value) & tied:
                left = node.child_by_field_name("left")
                tied |= _names(left) if left is not None else {syntax.text(n) for n in node.children_by_field_name("name")}
    field = origin.handle.partition(".")[2]
    return next((node for node in early if node.type == "defer_statement" and _names(node, field) & tied), None)


def _variable(handle: str) -> str:
    """The variable a handle lives in: b for `b.d`, d for `d`."""
    match = re.match(r"[*&(]*([A-Za-z_]\w*)", handle)
    return match.group(1) if match else handle


def _names(node: Node, field: str = "") -> set[str]:
    """The variables the syntax names; with a field (a handle held in
    `o.path`), not those only read through another field (`o.name`)."""
    return {syntax.text(n) for n in syntax.walk(node) if n.type == "identifier" and not (field and _other_field(n, field))}


def _other_field(identifier: Node, field: str) -> bool:
    selector = identifier.parent
    if selector is None or selector.type != "selector_expression" or selector.child_by_field_name("operand") != identifier:
        return False
    call = selector.parent
    if call is not None and call.type == "call_expression" and call.child_by_field_name("function") == selector:
        return False  # `o.close()`: a method may use every field
    return syntax.text(selector.child_by_field_name("field")) != field


def _listed(numbers: list[int]) -> str:
    words = [str(n) for n in numbers]
    return ", ".join(words[:-1]) + " and " + words[-1]


def _only_borrowed(reads: _Reads, origin: Origin, statements: list[Node] | None = None) -> bool:
    """Whether every use of the handle in the function (or in the given
    statements), besides its acquisition, is a comparison or an argument of
    an API call that does not release it."""
    within = statements if statements is not None else [origin.unit.body]
    variable, _, field = origin.handle.partition(".")  # `o.name`: held in a field of the struct o
    for node in (node for statement in within for node in syntax.walk(statement)):
        if node.type != "identifier" or syntax.text(node) != variable or node.start_byte < origin.call.end_byte:
            continue  # uses before it (its declaration) and in it do not matter
        if field and _other_field(node, field):
            continue
        if field and node.parent is not None and node.parent.type == "selector_expression":
            node = node.parent
        if node.parent is not None and node.parent.type == "binary_expression":
            continue  # `p == nil`: a read
        passed = argument_of(node, reads.calls.callee)
        call = passed[0] if passed is not None else None
        callee = reads.calls.callee(call) if call is not None else None
        if callee is None or callee.kind is not CalleeKind.API or callee.api is None or callee.api.is_release or callee.api.roles("transfer"):
            return False  # (`C.realloc(buf, n)` moves it: a deferred free of buf would free a stale block)
    return True


def _through(origin) -> str:
    """", via C.cudaMalloc at line 12 of memory.go" for a resource a wrapper
    of the package handed out."""
    if origin.via_text:
        return f", via {origin.via_text}"
    if origin.via is None:
        return ""
    inner = origin.innermost
    at = "@inner" if inner.unit.file is origin.unit.file else f"line {inner.line}"
    return f", via {inner.written} at {at} of {inner.unit.file.source.path.name}"


def _handed_out(reads: _Reads, leak: Leak) -> bool:
    """Whether the function returns the handle, or stores it where its
    caller finds it (a field of what it returns), on some path."""
    unit = leak.origin.unit
    if unit.body is None or not leak.origin.handle:
        return False
    uses = reads.uses.uses([unit.body])
    holders = {leak.origin.handle.partition(".")[0]}  # `o.name`: held in o
    holders |= {
        use.target.name for use in uses
        if use.symbol.name == leak.origin.handle and use.target is not None and (use.field or use.element)
    }  # `retVal := &Op{internal: internal}` then `return retVal, nil`
    return any(
        use.symbol.name in holders and use.symbol.function == unit.node and use.kind in (UseKind.RETURN, UseKind.STORE)
        for use in uses
    )


def _path(leak: Leak, graph: CFG) -> tuple[Step, ...]:
    """acquire -> each branch taken -> the leaking exit, for SARIF codeFlows."""
    source = leak.origin.unit.file.source
    steps = [Step(source.span(leak.origin.call), f"{leak.origin.resource.name} acquired by {leak.origin.written}")]
    for u, v in zip(leak.path, leak.path[1:]):
        edge = graph.edge(u, v)
        if edge.condition is not None:
            steps.append(Step(source.span(edge.condition), f"`{syntax.text(edge.condition)}` is {'true' if edge.polarity else 'false'}"))
        elif edge.tests_case:
            value = edge.case.child_by_field_name("value")
            taken = "taken" if edge.polarity else "not taken"
            steps.append(Step(source.span(value if value is not None else edge.case), f"case {taken}"))
    span = graph.span(leak.node)
    if span is not None and leak.how is not Lost.DISCARDED:
        steps.append(Step(span, f"{leak.origin.handle or 'it'} is still held here"))
    return tuple(steps)


RULE = Rule(
    "CL101", "leak-on-path", Level.ERROR,
    "A successful acquisition that some path to a return neither releases nor hands over.",
    """
    ## What it does
    Follows every acquisition (`C.cudaMalloc(&d, n)`, `C.cuStreamCreate(&s, 0)`,
    `cs := C.CString(name)`, `cublasCreate(&h)`, ... as listed in `rules/*.toml`)
    along every path of the function and reports it at the acquiring call when
    some path reaches a `return` (or ends the goroutine with `runtime.Goexit`,
    `t.FailNow`, `t.Fatal`) with the resource still held: not released, no
    `defer` of a release registered for it, not returned, not stored in a
    field, map, slice, global or through a pointer, not sent on a channel, not
    captured by an escaping closure, not passed to a function that takes it.
    A handle appended to a local slice (`bufs = append(bufs, d)`, also a
    cleanup function in a `[]func()`) is held by the slice: a return that
    drops the slice after a later step failed leaks every earlier element.
    A function of the module that keeps the handle only in the value it
    returns with a nil error (`return &Queue{stream: s}, nil`) takes it only
    where it succeeds: `q, err := NewQueue(s)` then `if err != nil { return
    err }` leaks s. A kernel's parameter array (`[]unsafe.Pointer{unsafe.Pointer(&d)}`)
    lends d to the launch; d still holds the memory.

    It is held only after its status says success: in
    `if st := C.cudaMalloc(&d, n); st != C.cudaSuccess { return err }` the
    early return leaks nothing, because nothing was allocated. The same holds
    for `err != nil` after a Go wrapper, and for `p == nil` after `C.malloc`.
    A wrapper of the package that returns the handle beside its own failure
    (`return d, fmt.Errorf(...)`, not beside a sentinel error) hands it out
    where it fails too: a caller that returns on the error without freeing
    it is reported at its call. An error variable declared nil and set only
    where the status test failed (`var err error; if st != ok { err = ... }`)
    is nil on the success path, so `if err != nil { return err }` returns
    nothing held there. A function that acquires only for some values of an
    argument (`switch config.Provider { case "local": ... }`, `if dev ==
    "gpu"` with `dev` the first of a variadic `device ...string`, else
    "cpu") hands out nothing at a call whose argument is a constant of
    another branch (`NewEmbedder(&Config{Provider: "ollama"})`,
    `NewTensor(data)`).
    Paths that end in `panic`, `os.Exit` or `log.Fatal` (or the Fatal and
    Exit functions of logrus, klog, glog and zap) are not reported, nor is an
    acquisition whose error a test asserts non-nil (`require.Error(t, err)`,
    directly or through a helper of the package): it succeeds only where the
    test fails.

    A count with no handle (`nvml.Init`, `C.dcgmInit`,
    `C.cuDevicePrimaryCtxRetain`, paired by kind with their releases) is
    reported on a *failing* return that holds it (a non-nil error, a failure
    status, `false` as a last `bool` result: Go's comma-ok), even in a
    function that never releases it: the caller sees the
    failure and never gives the count back. A function that keeps it where
    it succeeds is an initialiser: its callers acquire it at their call, up
    to `main`, `init`, `TestMain` and exported functions. A function that a
    framework calls again and again is no initialiser, exported or not: a
    Prometheus collector's `Collect(ch chan<- prometheus.Metric)` (every
    scrape) or an HTTP handler, a function or literal taking `(w
    http.ResponseWriter, r *http.Request)` (every request), that keeps a
    count takes one more on each call, and is reported on its succeeding
    returns too, as is a count a loop takes on every iteration and never
    gives back in it (the same call, given only constants, reached again
    with the count held): each iteration takes one more. Neither is
    reported in a function that sets a boolean flag one of its conditions
    tests (`if !c.inited { ...; c.inited = true }`): it takes the count once. Where one
    succeeding return gives the count back and another keeps it, the keeping
    one is reported (the caller cannot know which it got), unless it hands
    out a value of the package whose type gives the count back (a manager
    whose `Stop` calls `nvml.Shutdown()`). A count taken after
    the function gave one back on every path (`nvml.Shutdown()` then
    `nvml.Init()`: a re-initialisation) replaces it and is not reported,
    nor is one the function records in a package-level flag (`initDone =
    true`) or reference count (`refCount++`): the package keeps it until
    whoever reads the flag (or counts down to zero) gives it back.

    A resource that outlives the process by design (a MIG GPU or compute
    instance, `outlives = true` in its knowledge file) is kept wherever the
    function succeeds; it is reported only on a failing return after it was
    made (the caller gets an error and no handle: `_ = gi.Destroy()` before
    the return is the fix). A configuration applier that makes instances in
    a loop and leaves what it made in place where it fails, without handing
    them on or destroying them where it succeeds, is not reported.

    A variable declared inside a loop body is a new variable in each iteration:
    losing its resource at the end of an iteration is a leak too. A result
    that is never stored (`C.puts(C.CString(s))`) is reported as well.

    ## Why is this bad?
    Device memory, pinned host memory and C heap memory are invisible to Go's
    garbage collector. A leak on an error path is invisible in tests and
    slowly exhausts the GPU of a long-running service until allocations fail
    or the OOM killer steps in.

    ## Example
    ```go
    var d unsafe.Pointer
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        return errAlloc // fine: nothing was allocated
    }
    if st := C.cudaMemset(d, 0, n); st != C.cudaSuccess {
        return errMemset // leaks d
    }
    defer C.cudaFree(d)
    ```

    ## Use instead
    ```go
    var d unsafe.Pointer
    if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
        return errAlloc
    }
    defer C.cudaFree(d)
    if st := C.cudaMemset(d, 0, n); st != C.cudaSuccess {
        return errMemset
    }
    ```

    ## Fix safety
    Safe, where the function never releases the handle and never hands it
    on, and uses it only as an argument of API calls that borrow it: `defer`
    of the release, in the file's spelling, right after the success check.
    No fix where a `defer` registered before that point can use the handle
    (a deferred closure naming it, a deferred method of a value given its
    address): deferred calls run last-registered first, so it would run
    after the release.
    Safe, where a `defer` of the release is registered after a return that
    leaks: the defer moves to right after the success check, when only API
    calls that borrow the handle, and no other `defer`, sit between.
    Unsafe (`--unsafe-fixes`), in a constructor that hands the handle on when
    it succeeds: the release as a statement of its own (`_ = C.cudaFree(d)`
    where it returns a status) before each return that leaks it, when no
    path reaches one of those returns with the handle released, no such
    return names it and no `defer` registered before it uses the handle; a
    path the analysis does not see (a `goto`, a failed acquisition reaching
    the same return) would need a look.
    """,
    tags=("correctness", "resource-leak"),
    check=check,
    requires=(CALLS, USES, LIFETIMES),
    needles=lambda knowledge: imports_of(knowledge, lambda family: bool(family.resources)),
)
