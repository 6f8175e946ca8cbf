"""Test helpers: run the pipeline's early stages over Go source held in a string."""

from __future__ import annotations

import textwrap
from pathlib import Path

from cudalint import syntax
from cudalint.cfg import CFG, build_package_cfgs
from cudalint.framework import Analysis, PackageRun, Pass, requirements
from cudalint.functions import Package, Unit, collect_packages
from cudalint.knowledge import load_knowledge
from cudalint.parse import parse
from cudalint.source import SourceFile

_KNOWLEDGE = None


def knowledge():
    global _KNOWLEDGE
    if _KNOWLEDGE is None:
        _KNOWLEDGE = load_knowledge()
    return _KNOWLEDGE


def package_of(*sources: str, names: tuple[str, ...] = ()) -> Package:
    parsed = []
    for i, text in enumerate(sources):
        data = textwrap.dedent(text).lstrip("\n").encode()
        name = names[i] if i < len(names) else f"file{i}.go"
        parsed.append(parse(SourceFile(Path(name), name, data))[0])
    packages = collect_packages(parsed, ".", knowledge().package_names)
    assert len(packages) == 1, packages
    packages[0].resolution.ensure_all()  # the tests look at every identifier
    return packages[0]


def package_run(package: Package) -> PackageRun:
    """A run over the package with no rule enabled: analyses answer on demand."""
    return PackageRun(package, build_package_cfgs(package), knowledge(), frozenset())


def result_of(run: PackageRun, analysis: Analysis):
    """An analysis's result, as a rule requiring it reads it."""
    return Pass(run, requirements((analysis,))).result_of(analysis)


def package_from_file(path: Path) -> Package:
    source = SourceFile(path, path.name, path.read_bytes())
    packages = collect_packages([parse(source)[0]], ".", knowledge().package_names)
    assert len(packages) == 1
    return packages[0]


def graphs_of(*sources: str) -> dict[str, CFG]:
    package = package_of(*sources)
    built = build_package_cfgs(package)
    assert not built.failures, built.failures
    return {unit.name: graph for unit, graph in built.graphs.items()}


def unit_named(package: Package, name: str) -> Unit:
    return next(u for u in package.units if u.name == name)


def enclosing_function(node):
    current = node.parent
    while current is not None and current.type not in syntax.FUNCTION_NODES:
        current = current.parent
    return current


def calls_to(root, name: str):
    """Expression statements that call the identifier `name`."""
    for node in syntax.walk(root):
        if node.type != "expression_statement":
            continue
        inner = syntax.children(node)
        call = syntax.unparen(inner[0]) if inner else None
        if call is not None and call.type == "call_expression" and syntax.call_name(call) == (None, name):
            yield node
