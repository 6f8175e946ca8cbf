"""Status wrappers: functions of the module that return an `error` made from
a CUDA-family status (`func Sync() error { return check(C.cudaDeviceSynchronize()) }`).

A call of such a wrapper is a status call for the status rules: dropping
its error drops the status inside (CL301, CL302), and a wrapper of a
release is a release (CL304). This is not errcheck: a function counts only
when every non-nil error it returns comes from a status (a converter's
error, an API call's `error`, another wrapper's, directly, through a
variable it was assigned to, or wrapped by `fmt.Errorf` / `errors.Wrap`),
as DESIGN.md says; a function that returns another error of its own making
is not a wrapper, also where it makes it in a check of its arguments before
the status call (`if len(src) > b.size { return errTooBig }`): that error
is the caller's to handle whatever CUDA says, and dropping it is errcheck's
business, not this tool's. The package's exported wrappers are its facts (a
`Wrapped` each), and wrappers of other packages of the module come from
theirs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallFact, CallIndex, unwrap
from cudalint.analyses.lifetimes.walk import tears_down
from cudalint.analyses.status import STATUS, StatusSemantics, StatusSource
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import Unit, UnitKind, by_exported_name

# Calls that wrap an error they are given into another one.
_WRAPPING = frozenset({("fmt", "Errorf"), ("github.com/pkg/errors", "Wrap"), ("github.com/pkg/errors", "Wrapf")})


@dataclass(frozen=True)
class Wrapped:
    """What a wrapper's error comes from: the status call inside, as written
    (`C.cudaDeviceSynchronize`), and whether that call is a release."""

    inner: str
    release: bool
    # The wrapper returns the status itself (`func (s *Stream) wait()
    # C.cudaError_t`, `func sync() Result { return Result(C.cudaDeviceSynchronize()) }`),
    # not an error made of it.
    raw: bool = False
    # A method that frees what its receiver holds, whatever status it
    # reports (`func (r *Rank) Abort() error` returns a synchronisation's): a release.
    teardown: bool = False

    def concerns_callers(self) -> bool:
        return True


class StatusWrappers:
    def __init__(self, calls: CallIndex, status: StatusSemantics, imported: FactView):
        self.calls = calls
        self.status = status
        # The wrappers of the other packages of the module.
        self.imported = imported
        self._found: dict[Unit, Wrapped | None] = {}
        self._sites: list[tuple[Unit, Node, Wrapped]] | None = None

    def of(self, unit: Unit) -> Wrapped | None:
        """The wrapped status, if `unit` is a status wrapper of the package."""
        if unit not in self._found:
            # Callees first; a recursive component that does not settle is
            # no wrapper (what the recursion guard answered before).
            fixpoint.solve([unit], self.calls.local_callees, self._wrapper, self._found, lambda _: None)
        return self._found[unit]

    def at(self, call: Node) -> Wrapped | None:
        """The wrapped status of a call of a wrapper (of this package or,
        through its facts, of another package of the module)."""
        callee = self.calls.callee(call)
        if callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target.kind is not UnitKind.LITERAL:
            return self.of(callee.target)
        return self._imported(callee.imported) if callee.kind is CalleeKind.MODULE else None

    def _imported(self, function: tuple[str, str] | None) -> Wrapped | None:
        """The wrapped status of a wrapper of another package of the module."""
        wrapped = self.imported.get(*function) if function is not None else None
        return wrapped if wrapped is not None and wrapped.inner else None

    def converted(self, call: Node) -> Wrapped | None:
        """The API status a call converts into an error, where it is a
        converter's call (`check(C.cudaMemcpy(...))`) or a method of a
        status type converting itself (`status(C.cudaMemcpy(...)).error("copy")`)."""
        inner = self.converted_status(call)
        return Wrapped(inner.written, inner.is_release) if inner is not None else None

    def converted_status(self, call: Node, through_locals: bool = True) -> CallFact | None:
        """The API call whose status `call` converts into an error: an
        argument of a converter of this package or another of the module
        (`check(C.cudaMemcpy(...))`, `check(st)` with `st := C.cudaMemcpy(...)`
        where `through_locals`), or the receiver of a method of the
        package's status type converting itself (`status(C.cudaSetDevice(d)).error("Set")`)."""
        if call.type != "call_expression":
            return None
        for index, argument in enumerate(syntax.children(call.child_by_field_name("arguments"))):
            inner = self._api_status_in(argument, through_locals)
            if inner is not None and self.status.converts_status_at(call, index, inner.node):
                return inner
        operand = syntax.method_operand(call)
        inner = self._api_status_in(operand, through_locals) if operand is not None else None
        return inner if inner is not None and self.status.converts_receiver_status_at(call, inner.node) else None

    def call_sites(self) -> list[tuple[Unit, Node, Wrapped]]:
        """(caller, call, wrapped status) for every call of a wrapper in the
        package: wrappers are found among the functions that call the API
        or another wrapper, their calls by name."""
        if self._sites is None:
            by_node = {unit.node: unit for unit in self.calls.package.units}
            sites: dict[Node, tuple[Unit, Node, Wrapped]] = {}
            # A call in a func literal is its function's too (`var res error;
            # b.loop.Run(func() { res = check(C.cudaMemcpy(...)) }); return res`).
            pending = list(dict.fromkeys(
                unit.outermost for unit in self.calls.units_calling_api() if unit.outermost.kind is not UnitKind.LITERAL
            ))
            for call, fact in self.calls.calls.items():
                # A function calling another package's wrapper may be one too
                # (`func SyncAll() error { return gpu.Sync() }`).
                caller = by_node.get(syntax.enclosing_function(call)) if self._imported(self.calls.module_function(fact)) else None
                if caller is not None and caller.kind is not UnitKind.LITERAL:
                    pending.append(caller)
            seen = set(pending)
            while pending:
                wrapper = pending.pop()
                wrapped = self.of(wrapper)
                if wrapped is None:
                    continue
                for call in self.calls.calls_of(wrapper):
                    caller = by_node.get(syntax.enclosing_function(call))
                    if caller is None:
                        continue
                    sites[call] = (caller, call, wrapped)
                    if caller not in seen and caller.kind is not UnitKind.LITERAL:
                        seen.add(caller)
                        pending.append(caller)
            for call, fact in self.calls.calls.items():
                wrapped = self._imported(self.calls.module_function(fact))
                if wrapped is not None:
                    caller = by_node.get(syntax.enclosing_function(call))
                    if caller is not None:
                        sites[call] = (caller, call, wrapped)
            self._sites = sorted(sites.values(), key=lambda site: site[1].start_byte)
        return self._sites

    def found(self) -> list[tuple[Unit, Wrapped]]:
        """Every wrapper of the package (those called in it and the rest)."""
        self.call_sites()
        return [(unit, wrapped) for unit, wrapped in self._found.items() if wrapped is not None]

    def _wrapper(self, unit: Unit) -> Wrapped | None:
        if unit.body is None:
            return None
        if not unit.returns_error:
            return self._raw_wrapper(unit)
        found: list[tuple[Node, Wrapped]] = []  # (return, what it returns)
        for statement in syntax.return_statements(unit.body):
            expressions = syntax.returned(statement)
            if not expressions:
                # A bare return of named results: the error is what was assigned to it.
                named = unit.results[-1] if unit.results and len(unit.results) == unit.result_count else None
                wrapped = self._assigned(unit, named, 0) if named is not None else None
                if wrapped is None:
                    return None
                found.append((statement, wrapped))
                continue
            last = syntax.unparen(expressions[-1])
            if last is not None and syntax.text(last) == "nil":
                continue
            if len(expressions) == 1 and unit.result_count > 1:
                # `return cudart.Malloc(n)`: its results, error last, are the function's.
                wrapped = self._derived(unit, last, 0)
                if wrapped is None:
                    return None
                found.append((statement, wrapped))
                continue
            wrapped = self._derived(unit, last, 0) or self._on_failure_branch(unit, statement)
            if wrapped is None and _guards_the_c_side(unit, statement):
                continue
            if wrapped is None:
                return None
            found.append((statement, wrapped))
        if not found:
            return None
        first = found[0][1]
        release = all(wrapped.release for _, wrapped in found)
        teardown = not release and tears_down(self.calls, unit)
        return Wrapped(first.inner, release or teardown, teardown=teardown)

    def _raw_wrapper(self, unit: Unit) -> Wrapped | None:
        """A function whose last result is a code status it passes through
        on every return (converted to a type of its own or not), from an
        API call, a variable set from one, or another such function; a
        return of a literal value (`return C.cudaSuccess`) may stand beside
        them."""
        if unit.result_count < 1:
            return None
        found: list[Wrapped] = []
        for statement in syntax.return_statements(unit.body):
            expressions = syntax.returned(statement)
            if not expressions:
                return None
            if len(expressions) == 1 and unit.result_count > 1:
                # `return dev.GetTotalEnergyConsumption()`: its results, status last, are the function's.
                passed = self._raw_status(unit, unwrap(expressions[0], self.calls))
                if passed is None:
                    return None
                found.append(passed)
                continue
            last = unwrap(expressions[-1], self.calls)
            for _ in range(4):  # `ret := C.cudaStreamCreate(p)`, `err := (CudaError)(ret)`, `return s, err`
                symbol = self.calls.package.resolution.symbol(last) if last is not None and last.type == "identifier" else None
                if symbol is None or symbol.function != unit.node or symbol.init is None or not self._status_of(symbol):
                    break
                last = unwrap(symbol.init, self.calls)  # `dev, ret := lib.DeviceGetHandleByUUID(u)` ... `return nil, ret`
            if last is not None and last.type == "identifier":
                symbol = self.calls.package.resolution.symbol(last)
                if symbol is not None and not symbol.is_local:
                    continue  # a constant or package-level value
            if last is not None and last.type in ("selector_expression", "int_literal"):
                continue  # a value of its own: `return C.cudaSuccess`
            wrapped = self._raw_status(unit, last)
            if wrapped is None:
                return None
            found.append(wrapped)
        return Wrapped(found[0].inner, all(w.release for w in found), raw=True) if found else None

    def _status_of(self, symbol) -> bool:
        """Whether a local holds its initialising call's status: its only
        result, or the one of several the status is (`dev, ret := ...`;
        not `temp` of `temp, ret := d.GetTemperatureThreshold(...)`)."""
        if symbol.init_index < 0:
            return True
        init = unwrap(symbol.init, self.calls)
        if init is None or init.type != "call_expression":
            return False
        holder = symbol.node.parent if symbol.node is not None else None
        count = len(syntax.expressions(holder)) if holder is not None and holder.type == "expression_list" else 0
        fact = self.calls.status_call(init)
        if fact is not None and fact.status is not None:
            return count > 1 and fact.status.result_index(count) == symbol.init_index
        nested = self._nested(None, self.calls.callee(init))
        return nested is not None and nested.raw and symbol.init_index == count - 1  # a raw wrapper's status is last

    def _raw_status(self, unit: Unit, expression: Node | None) -> Wrapped | None:
        if expression is None or expression.type != "call_expression":
            return None
        fact = self.calls.status_call(expression)
        if fact is not None and fact.status is not None and fact.status.kind != "error":
            discardable = fact.api is not None and fact.api.discardable
            return None if discardable else Wrapped(fact.written, fact.is_release, raw=True)
        nested = self._nested(unit, self.calls.callee(expression))
        return nested if nested is not None and nested.raw else None

    def _nested(self, unit: Unit | None, callee) -> Wrapped | None:
        """The wrapper a call runs: a function of the package (not `unit`
        itself), or one of another package of the module, by its facts."""
        if callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target is not unit:
            return self.of(callee.target)
        if callee.kind is CalleeKind.MODULE:
            return self._imported(callee.imported)
        return None

    def _derived(self, unit: Unit, expression: Node | None, depth: int) -> Wrapped | None:
        """Whether this error expression comes from a status."""
        expression = syntax.unparen(expression)
        if expression is None or depth > 8:
            return None
        if expression.type == "identifier":
            symbol = self.calls.package.resolution.symbol(expression)
            if symbol is None or symbol.function != unit.node:
                return None
            if symbol.init is None:
                return self._assigned(unit, symbol, depth)
            init = syntax.unparen(symbol.init)
            if init is None or init.type != "call_expression":
                return None
            if symbol.init_index > 0 and self._status_of(symbol):
                # `mem, ret := MemoryOf(i)` ... `fmt.Errorf("...: %w", ret)`: an
                # error made of a raw status (nvml.Return is an error too).
                raw = self._raw_status(unit, unwrap(init, self.calls))
                if raw is not None:
                    return replace(raw, raw=False)
            return self._derived(unit, init, depth + 1)
        if expression.type != "call_expression":
            return None
        fact = self.calls.status_call(expression)
        if fact is not None and fact.status is not None and fact.status.kind == "error":
            return Wrapped(fact.written, fact.is_release)
        callee = self.calls.callee(expression)
        arguments = syntax.children(expression.child_by_field_name("arguments"))
        operand = syntax.method_operand(expression)
        if operand is not None and callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target.returns_error:
            # `Destroy(h).Err()`: a method of the package's status type makes
            # the status a raw wrapper returned into an error.
            raw = self._raw_status(unit, unwrap(operand, self.calls))
            if raw is not None:
                return replace(raw, raw=False)
        if callee.kind is CalleeKind.LOCAL and callee.target is not None:
            nested = self.of(callee.target) if callee.target is not unit else None
            if nested is not None and not nested.raw:
                return nested
            index = _wrapped_error_parameter(callee.target)
            if index is not None and index < len(arguments) and callee.target is not unit:
                # `return wrap("destroy", dcgm.FieldGroupDestroy(h))`: a helper of
                # the package that wraps the error it is given.
                return self._derived(unit, arguments[index], depth + 1)
            return self.converted(expression) or self._converted_raw(unit, expression)
        wrapped = self._imported(callee.imported) if callee.kind is CalleeKind.MODULE else None
        if wrapped is not None:
            return wrapped
        if callee.kind is CalleeKind.MODULE:
            converted = self.converted(expression)  # `cuvs.CheckCuvs(cuvs.CuvsError(st))`
            if converted is not None:
                return converted
        called = self.calls.qualified(expression)
        if called is not None and (called.import_path, called.name) in _WRAPPING:
            for argument in arguments:
                wrapped = self._derived(unit, argument, depth + 1)
                if wrapped is not None:
                    return wrapped
        return None

    def _converted_raw(self, unit: Unit, call: Node) -> Wrapped | None:
        """`errorString(r)` with `r := dl.nvmlInit()`: a converter's call on
        the raw status a wrapper of the package passes on (the wrapper's own
        API status tells what success is)."""
        for index, argument in enumerate(syntax.children(call.child_by_field_name("arguments"))):
            value = unwrap(argument, self.calls)
            if value is not None and value.type == "identifier":
                symbol = self.calls.package.resolution.symbol(value)
                value = unwrap(symbol.init, self.calls) if symbol is not None and symbol.init is not None and symbol.function == unit.node else None
            raw = self._raw_status(unit, value) if value is not None else None
            callee = self.calls.callee(value) if raw is not None else None
            target = callee.target if callee is not None and callee.kind is CalleeKind.LOCAL else None
            source = next((
                StatusSource.of(fact.api, fact.written) for fact in self.calls.api_facts_in(target)
                if fact.api is not None and fact.status is not None and fact.status.kind != "error"
            ), None) if target is not None else None
            if source is not None and self.status.converts_at(call, index, source):
                return replace(raw, raw=False)
        return None

    def _assigned(self, unit: Unit, symbol, depth: int) -> Wrapped | None:
        """`var err error; err = check(C.cudaMemset(...))`: an error variable
        declared bare comes from a status where every value assigned to it
        (nil aside; `d, err = f()` gives f's error) does."""
        found: Wrapped | None = None
        for node in self.calls.references(symbol):
            if syntax.assignment_of(node) is None:
                continue
            assigned = syntax.assigned_value(node)
            if assigned is None or assigned[1] not in (None, -1):
                return None
            value = syntax.unparen(assigned[0])
            if value is not None and syntax.text(value) == "nil":
                continue
            wrapped = self._derived(unit, value, depth + 1)
            if wrapped is None:
                return None
            found = found or wrapped
        return found

    def _on_failure_branch(self, unit: Unit, statement: Node) -> Wrapped | None:
        """`if st := C.cudaFree(p); st != C.cudaSuccess { return errCUDA }`,
        `switch ret { case nvml.SUCCESS: ...; case nvml.ERROR_UNINITIALIZED:
        return errNotReady }`: an error of any making, returned where a
        status test failed."""
        for condition in _conditions_holding(unit, statement):
            found = self._failed_test(unit, syntax.unparen(condition))
            if found is not None:
                return found
        clause = _case_holding(unit, statement)
        fact = self.status.failed_case(unit, clause) if clause is not None else None
        return Wrapped(fact.written, fact.is_release) if fact is not None else None

    def _failed_test(self, unit: Unit, condition: Node | None) -> Wrapped | None:
        """`st != C.cudaSuccess`, `C.cudaFree(p) != 0`: true where the status
        says failure; also `ret != nvml.SUCCESS` of a raw status a wrapper
        passed on (go-nvlib's `lib.Init()`, `device.GetMemoryInfo()`)."""
        fact = self.status.failed_test(unit, condition)
        if fact is not None:
            return Wrapped(fact.written, fact.is_release)
        for subject in failure_tested(condition):
            symbol = self.calls.package.resolution.symbol(subject)
            if symbol is not None and symbol.init is not None and symbol.function == unit.node and self._status_of(symbol):
                raw = self._raw_status(unit, unwrap(symbol.init, self.calls))
                if raw is not None:
                    return replace(raw, raw=False)
        return None

    def _api_status_in(self, value: Node | None, through_locals: bool = True) -> CallFact | None:
        """The API call whose status a value is: the call itself, through
        conversions, or (`through_locals`) the call a local was initialised with."""
        value = unwrap(value, self.calls)
        if value is not None and value.type == "identifier" and through_locals:
            symbol = self.calls.package.resolution.symbol(value)
            value = unwrap(symbol.init, self.calls) if symbol is not None and symbol.init is not None else None
        inner = self.calls.status_call(value)
        return inner if inner is not None and inner.status is not None and inner.status.kind != "error" else None



def _wrapped_error_parameter(unit: Unit) -> int | None:
    """The index of the one `error` parameter of a function returning one
    `error` made of it: nil where it is nil, and otherwise a value naming it
    (`if err == nil { return nil }; return &Error{Op: op, Err: err}`)."""
    errors = [i for i, p in enumerate(unit.params) if p.type_node is not None and syntax.text(p.type_node) == "error"]
    result = unit.node.child_by_field_name("result")
    if len(errors) != 1 or result is None or syntax.text(result) not in ("error", "(error)") or unit.body is None:
        return None
    name = unit.params[errors[0]].name
    for statement in syntax.return_statements(unit.body):
        values = syntax.returned(statement)
        if len(values) != 1:
            return None
        if syntax.text(values[0]) != "nil" and not any(
            node.type == "identifier" and syntax.text(node) == name for node in syntax.walk(values[0])
        ):
            return None
    return errors[0]

def failure_tested(condition: Node | None, nil: bool = False) -> list[Node]:
    """The identifiers a condition tests as failed by how the success value
    is spelled, where the status's family is not at hand (a status a wrapper
    passed on, a variable of another function): `v != nvml.SUCCESS`,
    `v != C.cudaSuccess`, `v != C.NVRTC_SUCCESS`; with `nil`, `v != nil`."""
    condition = syntax.unparen(condition)
    if condition is None or condition.type != "binary_expression" or syntax.text(condition.child_by_field_name("operator")) != "!=":
        return []
    left, right = (syntax.unparen(condition.child_by_field_name(side)) for side in ("left", "right"))
    found = []
    for subject, other in ((left, right), (right, left)):
        if subject is None or other is None or subject.type != "identifier":
            continue
        value = syntax.text(other)
        if value.endswith(("SUCCESS", "Success")) or (nil and value == "nil"):
            found.append(subject)
    return found


def _exported_wrappers(p: Pass) -> dict[str, Wrapped]:
    """The package's exported status wrappers, by the name importers call them."""
    return by_exported_name(p.result_of(WRAPPERS).found())


WRAPPERS: Analysis[StatusWrappers] = Analysis(
    "wrappers", __doc__ or "",
    lambda p: StatusWrappers(p.result_of(CALLS), p.result_of(STATUS), p.imported_facts(WRAPPERS)),
    requires=(CALLS, STATUS), facts=_exported_wrappers, fact_type=Wrapped,
)


def _guards_the_c_side(unit: Unit, statement: Node) -> bool:
    """`if C.nvmlHandle == nil { return errLibraryNotLoaded }`: an error
    returned where a test of the binding's own C state failed is the C
    library's failure too, not a validation of the caller's arguments."""
    return any(
        node.type == "selector_expression" and syntax.text(node.child_by_field_name("operand")) == "C"
        and node.parent is not None and node.parent.type != "call_expression"
        for condition in _conditions_holding(unit, statement) if condition is not None
        for node in syntax.walk(condition)
    )


def _case_holding(unit: Unit, statement: Node) -> Node | None:
    """The innermost `case` or `default` clause of a switch holding the
    statement, inside the unit."""
    parent = statement.parent
    while parent is not None and parent != unit.body:
        if parent.type in ("expression_case", "default_case"):
            return parent
        if parent.type in ("func_literal", "function_declaration", "method_declaration"):
            return None
        parent = parent.parent
    return None


def _conditions_holding(unit: Unit, statement: Node) -> Iterator[Node | None]:
    """The conditions of the `if`s whose then-branch holds the statement,
    innermost first, up to the unit's body (not out of a func literal)."""
    child, parent = statement, statement.parent
    while parent is not None and parent != unit.body:
        if parent.type == "if_statement" and parent.child_by_field_name("consequence") == child:
            yield parent.child_by_field_name("condition")
        if parent.type in ("func_literal", "function_declaration", "method_declaration"):
            return
        child, parent = parent, parent.parent
