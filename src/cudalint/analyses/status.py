"""Status semantics: what a status of an API family says, wherever it is read.

Three questions are asked of statuses all over the analysis: is this value a
success value of that status (`C.cudaSuccess`, `0`, `nvml.SUCCESS` written
through the file's own name for the package)? does this side of a comparison
or of a switch case mean success or failure? does this function of the
package turn a status it receives into an error that is nil exactly on
success (a converter: `check(st)`, `errorString(r)`)? The resource engine
asks them to know where an acquisition is held, the status wrappers to know
which errors come from a status, the CL3 rules to know a dropped converter.
They are answered here, once, from call classification alone, so that none
of those needs the resource engine to tell a failure branch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyses.calls import CALLS, CalleeKind, CallFact, CallIndex, unwrap
from cudalint.analyses.procs import bound_status_types
from cudalint.cfg import NodeKind, PackageCFGs
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import Unit, UnitKind, exported_name
from cudalint.gotypes import type_declarations
from cudalint.scope import Symbol, SymbolKind
from cudalint.knowledge import ApiFunction, Family, StatusSpec

# A predicate asked of a status (`IsNotSupportedError(ret)`), and the words
# that name success in one (`IsSuccess`, `isOK`).
_PREDICATE = re.compile(r"^[Ii]s[A-Z_]")
_SUCCESS_WORD = re.compile(r"Success|Succeeded|OK$|Ok$")


# The index `converts` is asked about for a method's receiver.
RECEIVER = -1


class Outcome(str, Enum):
    SUCCESS = "success"
    FAILURE = "failure"


class Subject(str, Enum):
    """What the tested expression is to the one asking."""

    STATUS = "status"  # the status itself (or an error made of it)
    HANDLE = "handle"  # the handle the call produced (nil: nothing acquired)
    NULL_TEST = "null-test"  # a C helper saying whether the handle is NULL (`C.is_null(h)`)
    OK = "ok"  # a bool the call returns beside its error, true where it took the count (`installed, err := ...`)


# subject -> its role in the question, or None for an unrelated expression.
Roles = Callable[[Node], "Subject | None"]

# The status of a Go function of the code analysed that returns an error (a
# wrapper handing a resource out): its last result, nil on success.
ERROR_STATUS = StatusSpec("error", ("nil",), "last", "error")


@dataclass(frozen=True)
class StatusSource:
    """A status as the code reads it: the family's spec, and the names the
    call was written with (success values are spelt through them)."""

    status: StatusSpec | None
    qualifier: str  # the family's qualifier in the knowledge: "C", "nvml"
    written: str  # the call as written: "C.cudaMalloc", "nvml.Init"
    family: str  # the family's name (converters are per family)

    @classmethod
    def of(cls, api: ApiFunction, written: str) -> StatusSource:
        return cls(api.status, api.family.qualifier, written, api.family.name)


@dataclass(frozen=True)
class Converter:
    """The fact the status analysis exports about an exported converter
    (`cuvs.CheckCuvs(st)`): the parameters it turns into an error that is
    nil exactly on success, each with the family whose status it reads."""

    parameters: tuple[tuple[int, str], ...]

    def concerns_callers(self) -> bool:
        return False  # its callers pass it a status: they call the API anyway


class StatusSemantics:
    """The answers for one package (converters are memoised), and the
    converters other packages of the module export (`imported`)."""

    def __init__(self, calls: CallIndex, cfgs: PackageCFGs, imported: FactView | None = None):
        self.calls = calls
        self.cfgs = cfgs
        self._imported = imported
        self._converters: dict[tuple[Unit, int, str], bool] = {}

    # -- values and tests ---------------------------------------------------

    def is_success_value(self, source: StatusSource | None, value: Node) -> bool:
        """`C.cudaSuccess`, or `nvml.SUCCESS` where the file imports the
        package under another name and writes `gonvml.SUCCESS`."""
        if source is None or source.status is None:
            return False
        return self._success_value(source, value, 0)

    def _success_value(self, source: StatusSource, value: Node | None, depth: int) -> bool:
        """Also a constant of the package declared as one (`const Success
        Result = 0`, `OK = Result(C.cudaSuccess)`, the first of an iota
        block), compared after a conversion to the package's own status
        type: `if err := Result(st); err != Success`."""
        assert source.status is not None
        value = unwrap(value, self.calls)
        if value is None or depth > 8:
            return False
        text = syntax.text(value)
        if _written_among(source, text, source.status.success):
            return True
        named_after = self._c_constant(text)
        if named_after is not None and named_after in source.status.success:
            return True
        if self._described_value(value) in source.status.success:
            return True  # `icicle_runtime.Success` for ICICLE's msm, whose status is the runtime's
        if text == "iota":
            return "0" in source.status.success and value.parent is not None and _first_constant(value)
        if value.type != "identifier":
            return False
        symbol = self.calls.package.resolution.symbol(value)
        if symbol is None or symbol.kind is not SymbolKind.CONST or symbol.init is None or symbol.is_local:
            return False
        return self._success_value(source, symbol.init, depth + 1)

    def is_family_success(self, value: Node | None) -> bool:
        """A success constant of any described family (`nvml.SUCCESS`),
        however the file imports its package: what an error variable that
        holds a status (`n, ret := nvml.DeviceGetCount()` into `ret error`)
        is tested against."""
        value = syntax.unparen(value)
        described = self._described_value(value) if value is not None else None
        return described is not None and any(
            family.status is not None and described in family.status.success for family in self.calls.knowledge.families
        )

    def _described_value(self, value: Node) -> str | None:
        """`runtime.Success` for `icicle_runtime.Success`: a constant of a
        described package as its knowledge names it, however the file
        imports the package (a family's status may be another family's:
        ICICLE's curve packages return the runtime's EIcicleError)."""
        if value.type != "selector_expression":
            return None
        operand = syntax.unparen(value.child_by_field_name("operand"))
        symbol = self.calls.package.resolution.symbol(operand) if operand is not None and operand.type == "identifier" else None
        if symbol is None or symbol.kind is not SymbolKind.PACKAGE or symbol.import_path is None:
            return None
        qualifier = self.calls.knowledge.package_names.get(symbol.import_path)
        return f"{qualifier}.{syntax.text(value.child_by_field_name('field'))}" if qualifier is not None else None

    def means_success(self, source: StatusSource | None, value: Node) -> bool | None:
        """What a status equal to `value` says: True for a success value
        (`0` and `nil` too, unless the family names `0` a failure), False for
        one of a family's complete list of failures, None for anything else."""
        if self._failure_value(source, value):
            return False
        if syntax.text(value) in ("0", "nil") or self.is_success_value(source, value):
            return True
        return None

    def _failure_value(self, source: StatusSource | None, value: Node) -> bool:
        """One of the values a status with a known, complete set of
        failures (`[status].failure`) fails with: `C.CUVS_ERROR`, `0`."""
        if source is None or source.status is None or not source.status.failure:
            return False
        return _written_among(source, syntax.text(value), source.status.failure)

    def _c_constant(self, text: str) -> str | None:
        """What a constant of the package's own C is named after, as Go
        spells it: `C.goCudnnSuccess` -> `C.CUDNN_STATUS_SUCCESS`, `C.GO_OK` -> `0`."""
        view = self.calls.c_view
        value = view.constants.get(text[2:]) if view is not None and text.startswith("C.") else None
        if value is None:
            return None
        return value if value.isdigit() else f"C.{value}"

    def test(self, source: StatusSource | None, roles: Roles, condition: Node, polarity: bool) -> Outcome | None:
        """What taking this side (polarity) of `==`/`!=` condition says:
        success, failure, or nothing (a test of something else, or of one
        failure value on its false side)."""
        expression = syntax.unparen(condition)
        if expression is not None and expression.type == "unary_expression" and syntax.text(expression.child_by_field_name("operator")) == "!":
            return self.test(source, roles, expression.child_by_field_name("operand"), not polarity)
        if expression is not None and roles(expression) is Subject.OK:
            return None if polarity else Outcome.FAILURE  # `!installed`: nothing taken; `installed` leaves the error to test
        if (
            expression is not None and source is not None and source.status is not None and source.status.type == "bool"
            and roles(expression) is Subject.STATUS
        ):
            return Outcome.SUCCESS if polarity else Outcome.FAILURE  # `if !ok`: a comma-ok result
        predicate = _status_predicate(expression, roles)
        if predicate is not None:
            if predicate:  # `if IsSuccess(ret)`
                return Outcome.SUCCESS if polarity else Outcome.FAILURE
            return Outcome.FAILURE if polarity else None  # `if IsNotSupportedError(ret)`: one kind of failure
        compared = self._errors_is(expression)
        if compared is not None:
            operator, (left, right) = "==", compared
        elif expression is None or expression.type != "binary_expression":
            return None
        else:
            operator = syntax.text(expression.child_by_field_name("operator"))
            if operator not in ("==", "!="):
                return None
            left = unwrap(expression.child_by_field_name("left"), self.calls)
            right = unwrap(expression.child_by_field_name("right"), self.calls)
        for subject, other in ((left, right), (right, left)):
            verdict = self._compare(source, roles, subject, other)
            if verdict is None:
                continue
            if verdict == "error-value":
                # st == C.cudaErrorMemoryAllocation: true is a failure, false says nothing
                truth_is_failure = operator == "=="
                return Outcome.FAILURE if polarity == truth_is_failure else None
            true_means_success = verdict if operator == "==" else not verdict
            return Outcome.SUCCESS if polarity == true_means_success else Outcome.FAILURE
        return None

    def _errors_is(self, expression: Node | None) -> tuple[Node | None, Node | None] | None:
        """`errors.Is(ret, nvml.SUCCESS)`: the two sides of what is an
        equality test of a status that is also an error (go-nvml's Return)."""
        if expression is None or expression.type != "call_expression":
            return None
        fact = self.calls.qualified(expression)
        arguments = syntax.children(expression.child_by_field_name("arguments"))
        if fact is None or (fact.import_path, fact.name) != ("errors", "Is") or len(arguments) != 2:
            return None
        return unwrap(arguments[0], self.calls), unwrap(arguments[1], self.calls)

    def _compare(self, source: StatusSource | None, roles: Roles, subject: Node | None, other: Node | None):
        """True: `subject == other` means success; False: it means failure;
        "error-value": subject is compared with one specific failure value."""
        if subject is None or other is None:
            return None
        role = roles(subject)
        other_text = syntax.text(other)
        if role is Subject.STATUS:
            meaning = self.means_success(source, other)  # `st == C.CUVS_ERROR`: a full test
            if meaning is not None:
                return meaning
            if other.type in ("selector_expression", "identifier"):
                return "error-value"
            return None
        if role is Subject.HANDLE and other_text in ("nil", "0"):
            return False  # the handle itself is nil (`p == nil`, `uintptr(p) == 0`, `d == 0`): nothing was acquired
        if role is Subject.NULL_TEST and other_text in ("0", "1", "false", "true"):
            return other_text in ("0", "false")  # `C.is_null(h) == 0`: h is not NULL, it was acquired
        return None

    def case(self, source: StatusSource | None, roles: Roles, tag: Node | None, clause: Node, polarity: bool) -> Outcome | None:
        """What entering (polarity) or passing a `case` of `switch st`
        says: success where every value is a success value, failure where
        none is."""
        subject = unwrap(tag, self.calls)
        if subject is None or roles(subject) is not Subject.STATUS:
            return None
        values = syntax.expressions(clause.child_by_field_name("value"))
        if not values:
            return None
        meanings = [self.means_success(source, v) for v in values]
        if all(meaning is True for meaning in meanings):
            return Outcome.SUCCESS if polarity else Outcome.FAILURE
        if not any(meaning is True for meaning in meanings):
            return Outcome.FAILURE if polarity else None
        return None

    def failed_test(self, unit: Unit, condition: Node | None) -> CallFact | None:
        """The status call a condition tests as failed, on its true side:
        `st != C.cudaSuccess` (st declared in unit from the call),
        `C.cudaFree(p) != 0`, `st == C.CUVS_ERROR` (the only failure), each
        also after a conversion (`CUresult(r) != CUDA_SUCCESS`)."""
        operator = syntax.text(condition.child_by_field_name("operator")) if condition is not None and condition.type == "binary_expression" else ""
        if operator not in ("!=", "=="):
            return None
        sides = [unwrap(condition.child_by_field_name(side), self.calls) for side in ("left", "right")]
        for subject, other in (sides, sides[::-1]):
            if subject is None or other is None:
                continue
            if subject.type == "identifier":
                symbol = self.calls.package.resolution.symbol(subject)
                subject = syntax.unparen(symbol.init) if symbol is not None and symbol.init is not None and symbol.function == unit.node else None
            fact = self.calls.status_call(subject)
            if fact is None or fact.status is None or fact.status.kind == "error" or fact.api is None:
                continue
            meaning = self.means_success(StatusSource.of(fact.api, fact.written), other)
            if (operator == "!=" and meaning is True) or (operator == "==" and meaning is False):
                return fact
        return None

    def failed_case(self, unit: Unit, clause: Node) -> CallFact | None:
        """The status call a `switch st` clause is a failure branch of: a
        `case` none of whose values is a success value, or the `default` of
        a switch that has a case of success values (`switch ret { case
        nvml.SUCCESS: ...; default: return "", ret }`)."""
        switch = clause.parent
        if switch is None or switch.type != "expression_switch_statement":
            return None
        subject = syntax.unparen(switch.child_by_field_name("value"))
        if subject is not None and subject.type == "identifier":
            symbol = self.calls.package.resolution.symbol(subject)
            subject = syntax.unparen(symbol.init) if symbol is not None and symbol.init is not None and symbol.function == unit.node else None
        fact = self.calls.status_call(subject) if subject is not None else None
        if fact is None or fact.status is None or fact.status.kind == "error" or fact.api is None:
            return None
        source = StatusSource.of(fact.api, fact.written)

        def successes(case: Node) -> list[bool]:
            return [self.means_success(source, v) is True for v in syntax.expressions(case.child_by_field_name("value"))]

        if clause.type == "expression_case":
            found = successes(clause)
            return fact if found and not any(found) else None
        if clause.type == "default_case":
            cases = [c for c in syntax.children(switch) if c.type == "expression_case"]
            return fact if any((found := successes(c)) and all(found) for c in cases) else None
        return None

    # -- converters ---------------------------------------------------------

    def converts_at(self, call: Node, index: int, source: StatusSource) -> bool:
        """Whether the function a call calls (of this package, or exported
        by another package of the module) converts the status it is given
        as argument `index`: `check(st)`, `cuvs.CheckCuvs(cuvs.CuvsError(st))`."""
        callee = self.calls.callee(call)
        if callee.kind is CalleeKind.LOCAL and callee.target is not None:
            return self.converts(callee.target, index, source)
        if callee.kind is CalleeKind.MODULE and callee.imported is not None and self._imported is not None:
            fact = self._imported.get(*callee.imported)
            return fact is not None and (index, source.family) in fact.parameters
        return False

    def converts_receiver_status_at(self, call: Node, status_call: Node) -> bool:
        """`status(C.cudaSetDevice(d)).error("Set")`: the method a call
        calls, of this package, converts its receiver, the status this API
        call returns, into an error."""
        callee = self.calls.callee(call)
        fact = self.calls.call(status_call)
        if callee.kind is not CalleeKind.LOCAL or callee.target is None or callee.target.receiver is None:
            return False
        if fact is None or fact.api is None or fact.status is None or fact.status.kind == "error":
            return False
        return self.converts(callee.target, RECEIVER, StatusSource.of(fact.api, fact.written))

    def converts_status_at(self, call: Node, index: int, status_call: Node) -> bool:
        """`converts_at` for the status this API call returns."""
        fact = self.calls.call(status_call)
        if fact is None or fact.api is None or fact.status is None or fact.status.kind == "error":
            return False
        return self.converts_at(call, index, StatusSource.of(fact.api, fact.written))

    def converts(self, unit: Unit, index: int, source: StatusSource) -> bool:
        """Whether `unit` turns the status it receives as parameter `index`
        into an error that is nil exactly when the status says success
        (`errorString(r)`, `newError(ctx, r)`): on every path, a return of
        nil is reached only where the status was tested as success, and a
        return of anything else only where it was tested as failure."""
        key = (unit, index, source.family)
        if key not in self._converters:
            self._converters[key] = False  # while deciding: not a converter
            self._converters[key] = self._is_converter(unit, index, source) or self._decided_in_c(unit, index)
        return self._converters[key]

    def _decided_in_c(self, unit: Unit, index: int) -> bool:
        """`return newErrorCStr(ctx, C.go_cuda_cu_err(e))`: every return hands
        back what a call made of the status by way of a C function (a
        preamble helper that maps success to NULL). The decision is made in
        C, where the analysis does not look; such a function is taken for a
        converter, since the alternative (a leak on the failure branch of
        every acquisition checked through it) is what real bindings showed."""
        status = _converted_parameter(unit, index)
        if status is None or not unit.returns_error or unit.body is None:
            return False
        returns = list(syntax.return_statements(unit.body))
        if self._only_read_by_c(unit, status, returns):
            return True
        for statement in returns:
            expressions = syntax.returned(statement)
            last = syntax.unparen(expressions[-1]) if expressions else None
            if last is None or last.type != "call_expression" or not any(
                self.calls.callee(call).written.startswith("C.") and any(
                    argument.type == "identifier" and self.calls.package.resolution.symbol(argument) is status
                    for argument in map(syntax.unparen, syntax.children(call.child_by_field_name("arguments")))
                )
                for call in syntax.calls_in(last)
            ):
                return False
        return bool(returns)

    def _only_read_by_c(self, unit: Unit, status, returns: list[Node]) -> bool:
        """`msg := C.go_curand_err(e); if msg == C.nullMessage { return nil }`:
        the status is read only as an argument of C functions, and the
        function returns nil on some path and an error on another: what
        the C made of the status decides which."""
        references = [node for node in self.calls.references(status) if node != status.node]
        if not references:
            return False
        for reference in references:
            arguments = reference.parent
            call = arguments.parent if arguments is not None and arguments.type == "argument_list" else None
            if call is None or not self.calls.callee(call).written.startswith("C."):
                return False
        errors = [returned_error(statement) for statement in returns]
        return "nil" in errors and any(error not in (None, "nil") for error in errors)

    def _is_converter(self, unit: Unit, index: int, source: StatusSource) -> bool:
        graph = self.cfgs.graphs.get(unit)
        status = _converted_parameter(unit, index)
        if graph is None or status is None or not unit.returns_error:
            return False
        resolution = self.calls.package.resolution

        def is_status(symbol) -> bool:
            """The parameter, or a local made of it by a conversion to the
            package's own status type (`err := cudnnStatus(x)`, then
            `if err == Success`)."""
            if symbol is status:
                return True
            if symbol is None or symbol.init is None or symbol.init_index > 0 or symbol.function != unit.node:
                return False
            init = syntax.unparen(symbol.init)
            if init is None or init.type != "call_expression" or self.calls.callee(init).kind is not CalleeKind.CONVERSION:
                return False
            converted = unwrap(init, self.calls)
            return converted is not None and converted.type == "identifier" and resolution.symbol(converted) is status

        def roles(subject: Node) -> Subject | None:
            subject = struct_status_operand(source, subject) or subject
            return Subject.STATUS if subject.type == "identifier" and is_status(resolution.symbol(subject)) else None

        def step(n: int, outcome: Outcome | None):
            if graph.kind(n) is NodeKind.RETURN:
                return
            for edge in graph.out_edges(n):
                verdict = None
                if edge.condition is not None:
                    verdict = self.test(source, roles, edge.condition, bool(edge.polarity))
                elif edge.tests_case:
                    verdict = self.case(source, roles, edge.tag, edge.case, bool(edge.polarity))
                if verdict is not None and outcome is not None and verdict != outcome:
                    continue  # contradicts what the path already knows
                yield edge.target, verdict or outcome

        seen_nil = seen_error = False
        for n, outcome in graph.walk(graph.entry, None, step):
            kind = graph.kind(n)
            if kind is NodeKind.IMPLICIT_RETURN:
                return False
            if kind is not NodeKind.RETURN:
                continue
            returned = returned_error(graph.ast(n))
            if returned is None:
                return False  # a bare return of named results: cannot tell
            if returned == "nil":
                seen_nil = True
                if outcome is not Outcome.SUCCESS:
                    return False
            else:
                seen_error = True
                if outcome is not Outcome.FAILURE:
                    return False
        return seen_nil and seen_error


def struct_status_operand(source: StatusSource | None, subject: Node) -> Node | None:
    """`r` of `r.err`, where the status is a result struct (kind "field")
    whose message field is err: testing that field is testing the status."""
    status = source.status if source is not None else None
    if status is None or status.kind != "field" or subject.type != "selector_expression":
        return None
    if syntax.text(subject.child_by_field_name("field")) != status.field:
        return None
    return syntax.unparen(subject.child_by_field_name("operand"))


def _converted_parameter(unit: Unit, index: int) -> Symbol | None:
    """The parameter at `index`, or the receiver (RECEIVER) of a method
    whose receiver is the status (`func (s status) error(ctx string) error`)."""
    if index == RECEIVER:
        return unit.receiver
    return unit.params[index] if 0 <= index < len(unit.params) else None


def _written_among(source: StatusSource, text: str, values: tuple[str, ...]) -> bool:
    """Whether `text` is one of a family's values (`C.cudaSuccess`,
    `nvml.SUCCESS`), as the knowledge writes it or as the file does through
    its own name for the package (`gonvml.SUCCESS`)."""
    written_package = source.written.split(".", 1)[0]
    return any(text in (value, spelled(value, source.qualifier, written_package)) for value in values)


def _first_constant(iota: Node) -> bool:
    """Whether this `iota` is the value of the first spec of its const
    block, where it is 0."""
    spec = iota
    while spec is not None and spec.type != "const_spec":
        spec = spec.parent
    declaration = spec.parent if spec is not None else None
    specs = [child for child in syntax.children(declaration) if child.type == "const_spec"] if declaration is not None else []
    return bool(specs) and specs[0] == spec and syntax.text(syntax.unparen(spec.child_by_field_name("value"))) == "iota"


def spelled(success: str, qualifier: str, written_package: str) -> str:
    """A success value as a file writes it: the knowledge's `nvml.SUCCESS`
    is `gonvml.SUCCESS` where the file imports the package as gonvml."""
    if success.startswith(qualifier + "."):
        return written_package + success[len(qualifier):]
    return success


def _status_predicate(expression: Node | None, roles: Roles) -> bool | None:
    """`IsGPULostError(ret)`, `nvmlerrors.IsNotSupported(ret)`: a predicate
    `Is...` asked of the status says, where true, that it is one kind of
    failure (False), or, named for success (`IsSuccess`, `IsOK`), that the
    call succeeded (True); None for anything else."""
    if expression is None or expression.type != "call_expression":
        return None
    function = syntax.unparen(expression.child_by_field_name("function"))
    if function is not None and function.type == "selector_expression":
        function = function.child_by_field_name("field")
    name = syntax.text(function) if function is not None and function.type in ("identifier", "field_identifier") else ""
    if not _PREDICATE.match(name):
        return None
    if not any(roles(unwrapped) is Subject.STATUS for argument in syntax.children(expression.child_by_field_name("arguments"))
               if (unwrapped := syntax.unparen(argument)) is not None):
        return None
    return bool(_SUCCESS_WORD.search(name))


def first_success_as_written(fact: CallFact) -> str:
    """The success value to compare this call's status with, in the file's
    spelling, for messages. A method (`device.GetName()`) is written with
    its receiver, not its package: named as the knowledge names it."""
    assert fact.status is not None
    family = fact.api.family if fact.api is not None else None
    if family is None:
        return fact.status.success[0]
    if "." not in fact.written and not fact.on_value:
        # Inside the described package (`GetActiveDevice()` in icicle's runtime): unqualified.
        success = fact.status.success[0]
        return success[len(family.qualifier) + 1:] if success.startswith(family.qualifier + ".") else success
    written_package = family.qualifier if fact.on_value or "." in fact.name else fact.written.split(".", 1)[0]
    return spelled(fact.status.success[0], family.qualifier, written_package)


def returned_error(statement: Node | None) -> str | None:
    """The text of the last value a return statement returns (None for a
    bare return)."""
    expressions = syntax.returned(statement)
    return syntax.text(expressions[-1]) if expressions else None


def _exported_converters(p: Pass) -> dict[str, Converter]:
    """The package's exported converters, by the name importers call them.
    Only a parameter whose type is a family's status type (written as such,
    or a type of the package declared as one: `type CuvsError
    C.cuvsError_t`) is tried, against that family; a package with no such
    parameter costs no status analysis."""
    declared: dict[str, str] | None = None
    candidates: list[tuple[Unit, str, int, list[Family]]] = []
    for unit in p.package.units:
        name = exported_name(unit)
        if name is None or unit.kind is UnitKind.LITERAL or not unit.returns_error:
            continue
        if declared is None:
            declared = {type_name: syntax.text(body) for type_name, body in type_declarations(p.package).items()}
            declared.update(bound_status_types(p.package, p.knowledge))  # purego's `Result`: the C family's status
        # Read off the declaration: resolving every exported function's
        # parameters would cost a scope analysis of each (a fifth of moby's run).
        for index, written in enumerate(_parameter_types(unit)):
            families = _families_of(p.knowledge.families, declared.get(written, written))
            if families:
                candidates.append((unit, name, index, families))
    if not candidates:
        return {}
    status: StatusSemantics = p.result_of(STATUS)
    parameters: dict[str, list[tuple[int, str]]] = {}
    for unit, name, index, families in candidates:
        for family in families:
            # Success values are spelt through the file's own name for the package.
            spelt = min(p.package.resolution.import_names(unit.file.root, {family.import_path}), default=family.qualifier)
            if status.converts(unit, index, StatusSource(family.status, family.qualifier, f"{spelt}.{name}", family.name)):
                parameters.setdefault(name, []).append((index, family.name))
                break
    return {name: Converter(tuple(found)) for name, found in parameters.items()}


def _parameter_types(unit: Unit) -> list[str]:
    """The type of each parameter, as written (`func f(a, b C.int)`: two)."""
    parameters = unit.node.child_by_field_name("parameters")
    found = []
    for declaration in syntax.children(parameters) if parameters is not None else ():
        type_node = declaration.child_by_field_name("type")
        names = declaration.children_by_field_name("name")
        found += [syntax.text(type_node) if type_node is not None else ""] * max(1, len(names))
    return found


def _families_of(families: tuple[Family, ...], written: str) -> list[Family]:
    """The families whose status type a parameter type is: `C.cuvsError_t`,
    `nvml.Return` (under whatever name the file imports the package)."""
    found = []
    for family in families:
        spec = family.status
        if spec is None or spec.kind != "code":
            continue
        if family.import_path == "C" and written in (f"C.{spec.type}", f"C.enum_{spec.type}"):
            found.append(family)
        elif family.import_path != "C" and "." in written and written.rsplit(".", 1)[1] == spec.type.rsplit(".", 1)[-1]:
            found.append(family)
    return found


STATUS: Analysis[StatusSemantics] = Analysis(
    "status", __doc__ or "",
    lambda p: StatusSemantics(p.result_of(CALLS), p.cfgs, p.imported_facts(STATUS)), requires=(CALLS,),
    facts=_exported_converters, fact_type=Converter,
)


def success_beside(unit: Unit, index: int, calls: CallIndex) -> tuple[str, ...]:
    """What a function that returns no error returns as its last result
    beside the handle it hands out at `index` (`return p, true`, `return
    DevPtr(p), OK`, `return s, C.cudaSuccess`): the values that say it
    succeeded, where every such return gives a constant (`true`, a number,
    a constant of the package, a C name). Its callers hold the handle where
    that result tests equal to one of them (`if !ok`, `if st != gpu.OK`
    fail). Empty where it returns no such result or says it otherwise."""
    if unit.returns_error or unit.body is None or unit.result_count < 2 or index < 0 or index == unit.result_count - 1:
        return ()
    found: list[str] = []
    for statement in syntax.return_statements(unit.body):
        expressions = syntax.returned(statement)
        if len(expressions) != unit.result_count:
            return ()  # a bare return, or the results of a call: not told
        handle, last = unwrap(expressions[index], calls), syntax.unparen(expressions[-1])
        if handle is None or last is None or syntax.text(handle) in ("nil", "0"):
            continue  # a failing return: nothing handed out
        if _constant(last, calls):
            found.append(syntax.text(last))
            continue
        passed = _passed_status(unit, last, calls)
        if passed is None:
            return ()
        found += passed
    return tuple(dict.fromkeys(found))


def _passed_status(unit: Unit, value: Node, calls: CallIndex) -> list[str] | None:
    """`return nvmlGpuInstance(gi), Return(r)` with `gi, r :=
    nvml.Device(d).CreateGpuInstance(info)`: the API's status passed on
    (converted or not) says whether the handle was made. Its success values
    are the API's and the package's constants made of them (`const SUCCESS
    = Return(nvml.SUCCESS)`), which callers compare it with."""
    inner = unwrap(value, calls)
    symbol = calls.package.resolution.symbol(inner) if inner is not None and inner.type == "identifier" else None
    if symbol is None or symbol.function != unit.node or symbol.init is None:
        return None
    fact = calls.status_call(unwrap(symbol.init, calls))
    if fact is None or fact.status is None or fact.status.kind == "error" or fact.api is None:
        return None
    return list(success_spelled(fact.status, calls))


def success_spelled(status: StatusSpec, calls: CallIndex) -> tuple[str, ...]:
    """A status's success values as a package that passes it on may also
    spell them: its own constants made of them (`const SUCCESS =
    Return(nvml.SUCCESS)`), which its callers compare with."""
    success = list(status.success)
    for name, constant in calls.package.resolution.package_symbols.items():
        made_of = unwrap(constant.init, calls) if constant.kind is SymbolKind.CONST and constant.init is not None else None
        if made_of is not None and syntax.text(made_of) in status.success:
            success.append(name)
    return tuple(success)


def status_beside(success: tuple[str, ...]) -> StatusSpec | None:
    """The status a caller reads in a wrapper's last result, succeeding
    with those values; None where there are none."""
    if not success:
        return None
    return StatusSpec("bool" if success == ("true",) else "", success, "last", "code")


def _constant(value: Node, calls: CallIndex) -> bool:
    if value.type in ("true", "false", "int_literal"):
        return True
    if value.type == "selector_expression":
        return syntax.text(value.child_by_field_name("operand")) == "C"
    if value.type != "identifier":
        return False
    symbol = calls.package.resolution.symbol(value)
    return symbol is not None and symbol.kind is SymbolKind.CONST and not symbol.is_local


def as_imported(success: tuple[str, ...], unit: Unit, import_path: str) -> tuple[str, ...]:
    """Success values of another package's wrapper as this file writes
    them: its constant `OK` is `gpu.OK` (the name the file imports it by);
    its C names cannot be written here."""
    imported = next((i for i in unit.file.imports if i.path == import_path), None)
    name = imported.name if imported is not None and imported.name not in (None, "_", ".") else import_path.rsplit("/", 1)[-1]
    spelled = []
    for value in success:
        if value.startswith("C."):
            continue
        spelled.append(f"{name}.{value}" if value.isidentifier() and value not in ("true", "false") else value)
    return tuple(spelled)
