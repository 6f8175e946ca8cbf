"""The layering the design asks for, checked on the source: analyses report
nothing and never import rules; no rule imports another rule's module or a
private name of any module; no module is over 800 lines nor any class over
500; networkx is touched only by the CFG package (the graph and its
builder) and by the call-graph ordering of fixpoint (callees first,
components iterated)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "cudalint"
MODULES = sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for each `import module` / `from module import name`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_private_name_crosses_a_module(path: Path) -> None:
    for module, name in _imports(path):
        if module.startswith("cudalint") and name is not None:
            private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            assert not private, f"{_module_name(path)} imports {module}.{name}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "checks").glob("*.py")), ids=lambda p: p.name)
def test_checks_holds_rules_only_and_a_rule_imports_no_other_rule(path: Path) -> None:
    """checks/ is the rules, one module each, and their registry: what
    rules share lives below them (`wording`, the prefilter's `imports_of`,
    the fix machinery of `cudalint.fixes`)."""
    if path.name == "__init__.py":
        return
    defined = {
        target.id for node in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(node, ast.Assign)
        for target in node.targets if isinstance(target, ast.Name)
    }
    assert "RULE" in defined, f"{path.name} defines no RULE: a module of checks/ is one rule"
    for module, name in _imports(path):
        assert not (module == "cudalint.checks" or module.startswith("cudalint.checks.")), f"{path.name} imports {module}.{name}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "analyses").rglob("*.py")), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_an_analysis_imports_no_rule_and_reports_nothing(path: Path) -> None:
    for module, _ in _imports(path):
        assert not module.startswith("cudalint.checks"), f"{path.name} imports {module}"
    assert ".report(" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted((PACKAGE / "driver").glob("*.py")), ids=lambda p: p.name)
def test_the_driver_imports_no_analysis(path: Path) -> None:
    """The driver moves facts between packages as opaque data; what they
    say is between the analysis that exports them and those that read them."""
    for module, name in _imports(path):
        assert not module.startswith("cudalint.analyses"), f"driver/{path.name} imports {module}"
        assert (module, name) != ("cudalint", "analyses"), f"driver/{path.name} imports cudalint.analyses"


def test_only_the_graph_modules_touch_networkx() -> None:
    users = {
        _module_name(path) for path in MODULES
        if any(module.startswith("networkx") or (module == "cudalint.lazy" and name == "networkx") for module, name in _imports(path))
    }
    assert users == {"cudalint.cfg.build", "cudalint.cfg.graph", "cudalint.fixpoint"}
    outside = [path for path in MODULES if not _module_name(path).startswith("cudalint.cfg")]
    assert not [path.name for path in outside if ".graph.graph" in path.read_text(encoding="utf-8")]


def test_no_module_is_over_800_lines() -> None:
    """One module per job: a module over 800 lines does several."""
    long = {
        _module_name(path): lines for path in MODULES
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert long == {}


def test_no_class_is_over_500_lines() -> None:
    """A class over 500 lines is several collaborators in one: cut it as the
    resource engine and the lock states are cut (a facade over collaborators
    given what they need in their constructors), not into mixins."""
    long = [
        f"{_module_name(path)}.{node.name}: {node.end_lineno - node.lineno + 1}"
        for path in MODULES
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 500
    ]
    assert long == []


def test_every_registered_rule_with_a_check_lives_in_its_own_module() -> None:
    from cudalint.checks import CHECKS

    modules = [rule.check.__module__ for rule in CHECKS if rule.check is not None]
    assert all(rule.retired for rule in CHECKS if rule.check is None)
    assert len(set(modules)) == len(modules)
    assert all(module.startswith("cudalint.checks.") for module in modules)


def test_only_the_status_analysis_decides_success_values() -> None:
    """A status's success values are read where they are loaded and where
    statuses are decided (success values, failure branches, converters);
    every other module asks analyses/status.py."""
    readers = {_module_name(path) for path in MODULES if re.search(r"\.success\b", path.read_text(encoding="utf-8"))}
    assert readers == {"cudalint.analyses.status", "cudalint.knowledge"}


def test_the_status_wrappers_and_cl3_rules_do_not_need_the_resource_engine() -> None:
    from cudalint.analyses.lifetimes import LIFETIMES
    from cudalint.analyses.wrappers import WRAPPERS
    from cudalint.checks import CHECKS
    from cudalint.framework import requirements

    assert LIFETIMES not in requirements((WRAPPERS,))
    for rule in CHECKS:
        if rule.id in ("CL301", "CL302", "CL304"):
            assert LIFETIMES not in requirements(rule.requires), rule.id


def _result_types() -> dict[str, type]:
    """Each analysis's name in its module (CALLS, LIFETIMES, ...) -> the
    type of its result, from the `Analysis[T]` annotation."""
    import importlib
    import typing

    from cudalint.framework import Analysis

    found = {}
    for path in sorted((PACKAGE / "analyses").rglob("*.py")):
        module = importlib.import_module(_module_name(path))
        for name, hint in typing.get_type_hints(module).items():
            if typing.get_origin(hint) is Analysis:
                found[name] = typing.get_args(hint)[0]
    return found


def _results_read(function: ast.FunctionDef, results: dict[str, type]) -> dict[str, type]:
    """The names a rule's function binds to results: `x = p.result_of(X)`,
    and parameters annotated with a result's type."""
    by_type_name = {kind.__name__: kind for kind in results.values()}
    bound = {
        argument.arg: by_type_name[ast.unparse(argument.annotation)]
        for argument in function.args.args
        if argument.annotation is not None and ast.unparse(argument.annotation) in by_type_name
    }
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "result_of"
            and node.value.args and isinstance(node.value.args[0], ast.Name) and node.value.args[0].id in results
            and isinstance(node.targets[0], ast.Name)
        ):
            bound[node.targets[0].id] = results[node.value.args[0].id]
    return bound


def test_rules_read_results_only_through_their_public_methods() -> None:
    """A rule reads what it declared: calling a result's public methods (or
    properties). An attribute holding data, another analysis's result above
    all (`lifetimes.uses`, `defers.calls`), would read around `requires`."""
    import inspect

    results = _result_types()
    assert {"CALLS", "USES", "LIFETIMES", "LOCKS", "DEFERS", "STATUS", "WRAPPERS"} <= set(results)
    reached = []
    for path in sorted((PACKAGE / "checks").glob("*.py")):
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef):
                continue
            bound = _results_read(function, results)
            for node in ast.walk(function):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
                    attribute = inspect.getattr_static(bound[node.value.id], node.attr, None)
                    if not (callable(attribute) or isinstance(attribute, property)) or node.attr.startswith("_"):
                        reached.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert reached == []



def test_no_import_circle_even_for_type_checking() -> None:
    """Modules import each other in one direction only, `if TYPE_CHECKING`
    imports included (a type-only circle still couples the two designs)."""
    import networkx as nx

    graph = nx.DiGraph()
    for path in MODULES:
        name = _module_name(path)
        graph.add_node(name)
        for module, imported in _imports(path):
            for target in (module, f"{module}.{imported}"):
                file = PACKAGE.parent / target.replace(".", "/")
                if target.startswith("cudalint.") and target != name and (file.with_suffix(".py").exists() or (file / "__init__.py").exists()):
                    graph.add_edge(name, target)
    assert list(nx.simple_cycles(graph)) == []


# The inferences the type oracle (cudalint.gotypes) owns: no other module
# defines a function or method of these names.
_TYPE_INFERENCES = frozenset({
    "type_of", "type_name", "named_type", "short_type", "_types", "struct_types_of",
    "element_type", "_element_type", "element_name", "declared_type", "_declared_type", "imported_type",
    "range_element", "_range_element", "ranged_type", "range_position", "element_of", "declared_type_of", "result_type", "_result_type", "result_types", "_result_types", "first_result",
})
# The knowledge's result_type reads a table of other packages' results (the
# API knowledge files); it infers nothing from syntax.
_TABLE_LOOKUPS = {"knowledge.py": {"result_type"}}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_go_types_are_inferred_only_by_the_type_oracle(path: Path) -> None:
    if path.name == "gotypes.py" and path.parent == PACKAGE:
        return
    text = path.read_text(encoding="utf-8")
    defined = {
        node.name for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    inferred = defined & _TYPE_INFERENCES - _TABLE_LOOKUPS.get(path.relative_to(PACKAGE).as_posix(), set())
    assert not inferred, f"{path.name} infers Go types: {sorted(inferred)}"
    # Struct fields (and embedded types) are read off a declaration only there.
    assert not ('"struct_type"' in text and '"field_declaration"' in text), f"{path.name} reads struct fields"


# The package's front door imports the application lazily (`cudalint.check`),
# and `python -m cudalint` starts it.
_DOORS = {"cudalint", "cudalint.__main__"}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_the_application_is_on_top(path: Path) -> None:
    """The application (cudalint.app: command line, session, configuration,
    baseline, changes) uses the pipeline and nothing below uses it; the fix
    machinery (cudalint.fixes) serves rules and application and imports
    neither."""
    name = _module_name(path)
    if name == "cudalint.app" or name.startswith("cudalint.app.") or name in _DOORS:
        return
    for module, _ in _imports(path):
        assert not (module == "cudalint.app" or module.startswith("cudalint.app.")), f"{name} imports {module}"
        if name.startswith("cudalint.fixes"):
            assert not module.startswith("cudalint.checks"), f"{name} imports {module}"


def test_the_command_line_and_the_library_share_one_run() -> None:
    """Only the session calls the driver's analysis: the command line and
    `cudalint.check` both go through it, so they cannot drift apart."""
    callers = {
        _module_name(path) for path in MODULES
        if not _module_name(path).startswith("cudalint.driver")
        and any(module.startswith("cudalint.driver") and name == "analyze" for module, name in _imports(path))
    }
    assert callers == {"cudalint.app.session"}
