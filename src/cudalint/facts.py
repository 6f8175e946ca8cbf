"""The facts stage: what each call in a package is, as the API knowledge sees it.

Computed once per package and read by every pass: `C.cudaMalloc(...)` is a
status call of the cuda-runtime family that acquires device memory; `cu.MemFree`
through an aliased import is the same wrapper function under another name; a
call through a local variable named `C` is nothing the knowledge knows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from cudalint import syntax
from cudalint.functions import Package
from cudalint.knowledge import ApiFunction, Knowledge, StatusSpec


@dataclass(frozen=True)
class CallFact:
    node: Node
    import_path: str
    name: str
    written: str  # the callee as written, e.g. "C.cudaMalloc" or "cuda.MemFree"
    api: ApiFunction | None

    @property
    def status(self) -> StatusSpec | None:
        return self.api.status if self.api is not None else None

    @property
    def is_release(self) -> bool:
        return self.api is not None and self.api.is_release


@dataclass
class Facts:
    calls: dict[Node, CallFact] = field(default_factory=dict)

    def call(self, node: Node | None) -> CallFact | None:
        if node is None:
            return None
        return self.calls.get(syntax.unparen(node))


def _qualified_call(node: Node, package: Package, knowledge: Knowledge) -> CallFact | None:
    function = syntax.unparen(node.child_by_field_name("function"))
    if function is None or function.type != "selector_expression":
        return None
    operand = syntax.unparen(function.child_by_field_name("operand"))
    if operand is None or operand.type != "identifier":
        return None
    import_path = package.resolution.package_of(operand)
    if import_path is None:
        return None
    name = syntax.text(function.child_by_field_name("field"))
    written = f"{syntax.text(operand)}.{name}"
    return CallFact(node, import_path, name, written, knowledge.lookup(import_path, name))


def compute_facts(package: Package, knowledge: Knowledge) -> Facts:
    """Classify every package-qualified call of the package (`pkg.F(...)`)."""
    facts = Facts()
    for parsed in package.files:
        for node in syntax.walk(parsed.root):
            if node.type == "call_expression":
                fact = _qualified_call(node, package, knowledge)
                if fact is not None:
                    facts.calls[node] = fact
    return facts
