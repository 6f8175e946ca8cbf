"""What a call is, as data: the kinds of callee, the fact recorded for a
classified call, the result types `calls` exports and the embedded types
`embeds` exports. Kept apart from the classification (`calls`) so that the
data every analysis reads has a small home of its own; `calls` re-exports
these names."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

from tree_sitter import Node

from cudalint import syntax
from cudalint.functions import Unit
from cudalint.knowledge import ApiFunction, Knowledge, StatusSpec
from cudalint.scope import Symbol


class CalleeKind(str, Enum):
    API = "api"  # a function the knowledge describes (status, acquire, release, transfer)
    FAMILY = "family"  # another function of a package the knowledge covers, or any C function
    CONVERSION = "conversion"  # a type: T(x) converts, the value flows through
    LOCAL = "local"  # a function or method of this package: summarised
    MODULE = "module"  # an exported function of another package of the module: its facts apply
    BUILTIN = "builtin"
    STD_BORROW = "std-borrow"
    VALUE = "value"  # a call through a variable holding a function
    UNKNOWN = "unknown"  # another package, an interface method, anything else


@dataclass(frozen=True)
class CallFact:
    node: Node
    import_path: str
    name: str
    written: str  # the callee as written, e.g. "C.cudaMalloc" or "cuda.MemFree"
    api: ApiFunction | None
    # Called on a value (`device.GetName()`, `lib.Init()` on an nvml.Interface),
    # not through the package's name: the written receiver is no package.
    on_value: bool = False
    # What discards every result on purpose (`_ = C.cudaFree(p)`; `_, _, _ =`
    # for a procedure's `Call`, which returns three).
    blanks: str = "_"

    @property
    def status(self) -> StatusSpec | None:
        return self.api.status if self.api is not None else None

    @property
    def is_release(self) -> bool:
        return self.api is not None and self.api.is_release


@dataclass(frozen=True)
class Callee:
    kind: CalleeKind
    written: str
    api: ApiFunction | None = None
    target: Unit | None = None  # LOCAL: the unit called
    symbol: Symbol | None = None  # VALUE: the variable called through
    imported: tuple[str, str] | None = None  # MODULE: (import path, name), what its facts are about


@dataclass(frozen=True)
class ResultTypes:
    """The fact `calls` exports about an exported function: per result, the
    package's own type it is declared with ("" for others)."""

    results: tuple[str, ...]

    def concerns_callers(self) -> bool:
        """A result of a type the knowledge describes ("import/path Device"):
        a method call on it in an importer is an API call. The package's own
        types are filed only where their methods have facts of their own."""
        return any(" " in result for result in self.results)


@dataclass(frozen=True)
class Embeds:
    """The fact `embeds` exports about an exported type: the other
    packages' types it embeds (import path, type), shallowest first, and the
    names of the methods it has of its own (not promoted)."""

    types: tuple[tuple[str, str], ...]
    methods: tuple[str, ...]
    # Some embedded type is one the knowledge describes, or embeds one (go-nvlib's
    # Device embeds nvml.Device): a promoted method call on the type is an API call.
    described: bool = False

    def concerns_callers(self) -> bool:
        return self.described


def value_parent(node: Node, callee_of: Callable[[Node], Callee]) -> tuple[Node, Node | None]:
    """The node that consumes a value, skipping parentheses and conversions
    (`callee_of` classifies a call: `CallIndex.callee`)."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type == "parenthesized_expression" or (
            # `(*[1 << 30]*C.char)(C.malloc(n))`: a conversion to a type
            # the grammar cannot take for a call.
            parent.type == "type_conversion_expression" and parent.child_by_field_name("operand") == child
        ):
            child, parent = parent, parent.parent
            continue
        if parent.type == "argument_list":
            call = parent.parent
            if call is not None and callee_of(call).kind is CalleeKind.CONVERSION:
                child, parent = call, call.parent
                continue
        return child, parent
    return child, None


def argument_of(node: Node, callee_of: Callable[[Node], Callee]) -> tuple[Node, Node] | None:
    """(the call, the argument) an expression is passed in, through `&`,
    parentheses and conversions (`C.cudaMemset(unsafe.Pointer(p), ...)`
    for p: the memset and its first argument)."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type in ("parenthesized_expression", "unary_expression"):
            child, parent = parent, parent.parent
        elif parent.type == "argument_list" and parent.parent is not None:
            call = parent.parent
            if callee_of(call).kind is not CalleeKind.CONVERSION:
                return call, child
            child, parent = call, call.parent
        else:
            return None
    return None


def as_written(fact: CallFact) -> CallFact:
    """The fact with its function as its arguments make it (an acquisition
    that holds only for some arguments: `CopyToDevice(&d, true)`)."""
    api = fact.api
    if api is None or not any(role.when for resource in api.acquires for role in resource.acquire):
        return fact
    arguments = [syntax.text(argument) for argument in syntax.children(fact.node.child_by_field_name("arguments"))]
    narrowed = api.at(arguments)
    return fact if narrowed is api else replace(fact, api=narrowed)


def described_type_conversion(knowledge: Knowledge, fact: CallFact, call: Node) -> bool:
    """`nvml.Device(d)`: a conversion to a type whose methods the knowledge
    describes (go-nvlib's `type nvmlDevice nvml.Device` converts back to
    call them), not a call."""
    return (
        fact.api is None and fact.name in knowledge.method_types.get(fact.import_path, frozenset())
        and len(syntax.children(call.child_by_field_name("arguments"))) == 1
    )


def logs(call: Node) -> bool:
    """A logging or printing call of a package or value nobody described
    (`logger.Errorf("acquire: %v", ret)`, `klog.Infof(...)`, `log.Error("msg",
    "err", err)`): a Printf-style or leveled name whose first argument is a
    message literal. It reads the values it prints and keeps none."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "selector_expression":
        return False
    arguments = syntax.children(call.child_by_field_name("arguments"))
    first = syntax.unparen(arguments[0]) if arguments else None
    return (
        _LOGGING.fullmatch(syntax.text(function.child_by_field_name("field"))) is not None
        and first is not None and first.type in ("interpreted_string_literal", "raw_string_literal")
    )


_LOGGING = re.compile(r"(?:Debug|Info|Warn|Warning|Error|Fatal|Panic|Print|Trace|Notice|Critical)(?:f|w|ln|S)?")
