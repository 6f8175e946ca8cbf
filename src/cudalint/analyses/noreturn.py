"""Exported functions and methods that never return, for the packages that import them.

A function whose body cannot return (`Die` calling `log.Fatalf`, `Abort`
panicking) ends a path at its calls in its own package already (the CFG
builder asks its graph). This analysis tells importers the same: it exports
a `NoReturn` fact per such exported function (or method, `Logger.Fatal`),
saying how it ends, and the importer's graphs end a path at its calls, as
they do at `os.Exit`.
Only bodies that name a way to end are asked, and of those only the ones
whose last statement could end otherwise than by returning
(`PackageCFGs.may_not_return`) have their graphs built.
"""

from __future__ import annotations

from cudalint.cfg import ExitKind
from cudalint.framework import Analysis, NoReturn, Pass
from cudalint.functions import UnitKind

# A function that never returns ends in one of these (or in a call of a
# function that does, which the same words usually name).
_ENDINGS = (b"panic(", b"Exit(", b"Fatal", b"Goexit(", b"FailNow(", b"Skip", b"for {", b"select {}")


def exported_no_returns(p: Pass) -> dict[str, frozenset[ExitKind]]:
    """The exported functions of the package (not of its `_test.go` files)
    whose body cannot return, and how they end."""
    found = {}
    for unit in p.package.units:
        method = unit.kind is UnitKind.METHOD and unit.name.rsplit(".", 1)[-1][:1].isupper()
        if not (method or (unit.kind is UnitKind.FUNCTION and unit.name[:1].isupper() and unit.symbol is not None)):
            continue
        if unit.body is None or unit.file.source.path.name.endswith("_test.go"):
            continue
        body = unit.file.source.data[unit.body.start_byte:unit.body.end_byte]
        if not any(ending in body for ending in _ENDINGS):
            continue
        # A method is named as importers call it on a value: `Logger.Fatal`.
        exits = p.cfgs.exits_of_unit(unit) if method else p.cfgs.exits_of_function(unit.symbol)
        if exits is not None:
            found[f"{unit.receiver_type}.{unit.name.rsplit('.', 1)[-1]}" if method else unit.name] = exits
    return found


def _facts(p: Pass) -> dict[str, NoReturn]:
    return {
        name: NoReturn(tuple(sorted(kind.value for kind in exits)))
        for name, exits in p.result_of(NORETURN).items()
    }


NORETURN: Analysis[dict[str, frozenset[ExitKind]]] = Analysis(
    "noreturn", __doc__ or "", exported_no_returns, facts=_facts, fact_type=NoReturn,
)
