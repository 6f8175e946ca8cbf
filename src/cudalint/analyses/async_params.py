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
from cudalint.analyses.calls import CALLS, CalleeKind, CallIndex, unwrap
from cudalint.framework import Analysis, FactView, Pass
from cudalint.functions import Unit, exported_name
from cudalint.scope import Role


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
    call's host buffer, and the calls of them (and of importers' facts)."""

    def __init__(self, calls: CallIndex, imported: FactView) -> None:
        self.calls = calls
        self.imported = imported
        self._memo: dict[Unit, AsyncHostParams | None] = {}

    def of(self, unit: Unit) -> AsyncHostParams | None:
        if unit not in self._memo:
            fixpoint.solve([unit], self.calls.local_callees, self._here, self._memo, lambda _: None)
        return self._memo[unit]

    def of_call(self, call: Node) -> AsyncHostParams | None:
        """What a call of a function of the package or of an importer's
        package hands to an asynchronous call (None for API calls: those
        are CL504's own)."""
        callee = self.calls.callee(call)
        if callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target.params:
            return self.of(callee.target)
        if callee.kind is CalleeKind.MODULE and callee.imported is not None:
            return self.imported.get(*callee.imported)
        return None

    def _here(self, unit: Unit) -> AsyncHostParams | None:
        """Reading its callees' answers from the memo."""
        if unit.body is None or not unit.params:
            return None
        found: dict[int, str] = {}
        for call in syntax.calls_in(unit.body):
            fact = self.calls.call(call)
            if fact is not None and fact.api is not None and fact.api.async_host_args:
                indexes, via = fact.api.async_host_args, fact.written
            else:
                callee = self.calls.callee(call)
                inner = self._memo.get(callee.target) if callee.kind is CalleeKind.LOCAL and callee.target is not None else (
                    self.imported.get(*callee.imported) if callee.kind is CalleeKind.MODULE and callee.imported else None
                )
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
        symbol = self.calls.package.resolution.symbol(value) if value is not None and value.type == "identifier" else None
        if symbol is None or symbol.role is not Role.PARAM or symbol.function != unit.node:
            return None
        return next((i for i, param in enumerate(unit.params) if param is symbol), None)


def _facts(p: Pass) -> dict[str, AsyncHostParams]:
    found = {}
    params = p.result_of(ASYNC_PARAMS)
    for unit in p.package.units:
        name = exported_name(unit)
        fact = params.of(unit) if name is not None else None
        if fact is not None:
            found[name] = fact
    return found


ASYNC_PARAMS: Analysis[AsyncParams] = Analysis(
    "async_params", __doc__ or "",
    lambda p: AsyncParams(p.result_of(CALLS), p.imported_facts(ASYNC_PARAMS)),
    requires=(CALLS,), facts=_facts, fact_type=AsyncHostParams,
)
