"""Calls of dot-imported packages.

`import . "cuda"` (ucx's Go examples, GOPATH-era tools) brings a package's
exported names into the file's scope: `CudaSetDevice()` there is
`cuda.CudaSetDevice()`. A call of a name the file does not declare is that
package's where one dot-imported package the run knows declares it: the
knowledge describes it, or its package's facts name it.
"""

from __future__ import annotations

from typing import Any

from cudalint import syntax
from cudalint.analyses.call_kinds import CallFact, as_written
from cudalint.analyses.typed_methods import api_of
from cudalint.functions import Package
from cudalint.knowledge import Knowledge


def index_dot_imports(facts: Any, package: Package, knowledge: Knowledge, watched: frozenset[str] | set[str]) -> None:
    """Record, in the call index `facts`, each such call as a call of the
    package that declares its name."""
    resolution = package.resolution
    for parsed in package.files:
        dotted = [imported.path for imported in parsed.imports if imported.name == "." and imported.path in watched]
        if not dotted:
            continue
        for name, calls in syntax.calls_by_name(parsed.index).items():
            declaring = [
                (path, api) for path in dotted
                if (api := api_of(package, knowledge, path, name)) is not None or facts.imported.knows(path, name)
            ]
            if len(declaring) != 1:
                continue
            path, api = declaring[0]
            for node in calls:
                function = syntax.unparen(node.child_by_field_name("function"))
                if node in facts.calls or function is None or function.type != "identifier":
                    continue
                resolution.ensure(parsed.root, node)
                if resolution.symbol(function) is None:
                    facts.record(as_written(CallFact(node, path, name, name, api)))
