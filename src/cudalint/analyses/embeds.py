"""The other packages' types a package's exported types embed, as facts.

A binding's own wrapper often embeds the API's type: go-nvlib's `type
Device interface { nvml.Device; GetArchitectureAsString() ... }`. A call
`d.GetMigMode()` on a `device.Device` in an importer is then nvml's
`Device.GetMigMode`, which the knowledge describes; only the package that
declares the type can say what it embeds, so it says it in a fact
(`Embeds`), read by `calls` when it types a method call's receiver. The
type's own methods are listed too: those are not the embedded type's
(`GetArchitectureAsString` returns a Go error, not an nvml.Return).
"""

from __future__ import annotations

from cudalint.analyses.call_kinds import Embeds
from cudalint.analyses.calls import CALLS
from cudalint.framework import Analysis, Pass
from cudalint.gotypes import TypeOracle


def _exported_embeddings(p: Pass) -> dict[str, Embeds]:
    method_types = p.knowledge.method_types
    imported = p.imported_facts(EMBEDS)
    named = p.package.named_bindings

    def described(path: str, type_name: str) -> bool:
        embeds = imported.get(path, type_name)
        return type_name in method_types.get(path, ()) or (embeds is not None and embeds.described)

    def relevant(path: str, type_name: str) -> bool:
        """A type whose methods may be an API's: described, of a binding
        read by its name, or one another package's facts say embeds more
        (`sync.Mutex` embedded says nothing to anyone)."""
        return path in named or path in method_types or imported.get(path, type_name) is not None

    # What the package's own declarations embed, read before the call
    # index is built: most packages embed nothing that matters, and a
    # summary-only dependency then never builds one.
    declared = TypeOracle(p.package, lambda symbol: None, interfaces=p.knowledge.interface_types)
    candidates = [
        type_name for type_name in sorted(set(declared.structs()) | set(declared.embedding_types()))
        if type_name[:1].isupper() and any(relevant(*typed) for typed in declared.embedded_imported(type_name))
    ]
    if not candidates:
        return {}
    calls = p.result_of(CALLS)  # for the methods of the package's types
    found = {}
    for type_name in candidates:
        embedded = declared.embedded_imported(type_name)
        own = _own_methods(calls, declared, type_name)
        found[type_name] = Embeds(tuple(embedded), tuple(sorted(own)), any(described(*typed) for typed in embedded))
    return found


def _own_methods(calls, declared: TypeOracle, type_name: str) -> set[str]:
    """The methods a type has that are not another package's: its own, and
    those of the package's types it embeds, in turn (a `Helper` interface
    of the package embedded beside nvml.Interface)."""
    return {
        method for name in declared.with_embedded(type_name)
        for method in [unit.name.rsplit(".", 1)[-1] for unit in calls.methods_of_type(name)] + list(declared.interface_methods(name))
    }


EMBEDS: Analysis[None] = Analysis(
    "embeds", __doc__ or "", lambda p: None, requires=(CALLS,), facts=_exported_embeddings, fact_type=Embeds,
)
