"""Functions that hand a parameter to an asynchronous C call as its host
buffer: a binding's `MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer,
n int64, s Stream)` passing `src` to `C.cuMemcpyHtoDAsync`, or
`MemHostRegister(p HostPtr, ...)` registering it. Go memory given there
is what CL504 reports at the API call itself, so it is reported at the
call of the wrapper, in the package and in its importers (`AsyncHostParams`).
Solved callees first (`fixpoint`): a wrapper of such a wrapper is one too.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from cudalint import fixpoint, syntax
from cudalint.analyses.calls import CALLS, CallIndex, unwrap
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import Unit, by_exported_name
from cudalint.scope import Role, switched_expression


@dataclass(frozen=True)
class AsyncHostParams:
    """The fact: the parameters (by position) a function hands to an
    asynchronous C call as host memory, and that call, for messages."""

    indexes: tuple[int, ...]
    via: str

    def concerns_callers(self) -> bool:
        return True


class AsyncParams:
    """The package's functions that hand a parameter to an asynchronous C
    call's host buffer, and the calls of them (and of importers' facts).
    Only the functions that make such a call, directly or through the
    package's or an imported package's wrapper, and their callers, are
    asked: classifying every call of a package is what a run cannot afford."""

    def __init__(self, calls: CallIndex, imported: FactView) -> None:
        self.calls = calls
        self.imported = imported
        self._memo: dict[Unit, AsyncHostParams | None] = {}
        self._wrappers: dict[Unit, AsyncHostParams] | None = None

    def wrappers(self) -> dict[Unit, AsyncHostParams]:
        """The package's functions that hand a parameter on, and what to."""
        if self._wrappers is None:
            calls = self.calls
            by_node = {unit.node: unit for unit in calls.package.units}
            seeds = {
                unit for unit in calls.package.units
                if any(fact.api.async_host_args for fact in calls.api_facts_in(unit))
            }
            for import_path, name, _ in self.imported.items():
                seeds.update(unit for unit, _ in calls.calls_to(import_path, name))
            found: dict[Unit, AsyncHostParams] = {}
            # A call in a func literal is its function's (`doCGoCall(func() C.Res {
            # return C.AsyncCopy(dst, src, n) })` runs it with the parameters).
            pending = [unit.outermost for unit in seeds]
            while pending:
                unit = pending.pop()
                if unit in found:
                    continue
                fact = self.of(unit)
                if fact is None:
                    continue
                found[unit] = fact
                for call in calls.calls_of(unit):
                    caller = by_node.get(syntax.enclosing_function(call))
                    if caller is not None and not caller.nested and caller not in found:
                        pending.append(caller)
            self._wrappers = found
        return self._wrappers

    def of(self, unit: Unit) -> AsyncHostParams | None:
        if unit not in self._memo:
            fixpoint.solve([unit], self.calls.local_callees, self._here, self._memo, lambda _: None)
        return self._memo[unit]

    def calls_of_wrappers(self) -> list[tuple[Unit, Node, AsyncHostParams, str]]:
        """(caller, call, what it hands on, the callee as written) for each
        call of such a function, of the package or of an imported package."""
        calls = self.calls
        by_node = {unit.node: unit for unit in calls.package.units}
        found = []
        for wrapper, fact in self.wrappers().items():
            for call in calls.calls_of(wrapper):
                caller = by_node.get(syntax.enclosing_function(call))
                if caller is not None:
                    found.append((caller, call, fact, syntax.text(call.child_by_field_name("function"))))
        for import_path, name, fact in self.imported.items():
            for caller, call in calls.calls_to(import_path, name):
                described = calls.call(call)
                if described is not None and described.api is not None and described.api.async_host_args:
                    continue  # the knowledge describes it too: CL504's own call
                found.append((caller, call, fact, syntax.text(call.child_by_field_name("function"))))
        return found

    def _here(self, unit: Unit) -> AsyncHostParams | None:
        """Reading its callees' answers from the memo."""
        if unit.body is None or not unit.params:
            return None
        found: dict[int, str] = {}
        for call in syntax.all_calls(unit.body):
            fact = self.calls.call(call)
            if fact is not None and fact.api is not None and fact.api.async_host_args:
                indexes, via = fact.api.async_host_args, fact.written
            elif fact is not None and fact.api is None and self.imported.get(fact.import_path, fact.name) is not None:
                inner = self.imported.get(fact.import_path, fact.name)
                indexes, via = inner.indexes, inner.via
            else:
                target = self.calls.local_target(call) if fact is None else None
                inner = self._memo.get(target) if target is not None else None
                if inner is None:
                    continue
                indexes, via = inner.indexes, inner.via
            arguments = syntax.children(call.child_by_field_name("arguments"))
            for index in indexes:
                position = self._parameter(unit, arguments[index]) if index < len(arguments) else None
                if position is not None:
                    found.setdefault(position, via)
        if not found:
            return None
        return AsyncHostParams(tuple(sorted(found)), found[min(found)])

    def _parameter(self, unit: Unit, argument: Node) -> int | None:
        """The position of the parameter an argument is, through conversions
        (`unsafe.Pointer(src)`)."""
        value = unwrap(argument, self.calls)
        resolution = self.calls.package.resolution
        symbol = resolution.symbol(value) if value is not None and value.type == "identifier" else None
        switched = switched_expression(symbol) if symbol is not None and symbol.role is Role.LOCAL else None
        clause_type = syntax.text(symbol.type_node) if switched is not None and symbol.type_node is not None else ""
        # A clause of `*float32` is a caller's typed Go pointer; one of
        # unsafe.Pointer or uintptr may be what pinned memory arrives as.
        if switched is not None and switched.type == "identifier" and clause_type.startswith("*"):
            symbol = resolution.symbol(switched)  # `switch v := src.(type) { case *int: C.f(unsafe.Pointer(v)) }`
        if symbol is None or symbol.role is not Role.PARAM or symbol.function != unit.node or self._reassigned(symbol):
            return None
        return next((i for i, param in enumerate(unit.params) if param is symbol), None)

    def _reassigned(self, symbol) -> bool:
        """`src = pinned` before the call: what the caller gave is not what is passed."""
        return any(syntax.assignment_of(mention) is not None for mention in self.calls.references(symbol))


def _facts(p: Pass) -> dict[str, AsyncHostParams]:
    return by_exported_name(p.result_of(ASYNC_PARAMS).wrappers().items())


ASYNC_PARAMS: Analysis[AsyncParams] = Analysis(
    "async_params", __doc__ or "",
    lambda p: AsyncParams(p.result_of(CALLS), p.imported_facts(ASYNC_PARAMS)),
    requires=(CALLS,), facts=_facts, fact_type=AsyncHostParams,
)
