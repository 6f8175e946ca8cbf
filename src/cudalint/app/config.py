"""Configuration: `[tool.cudalint]` in pyproject.toml, or a `.cudalint.toml`
(same keys, at its top level), the nearest one found walking up from the
working directory. In one directory `.cudalint.toml` wins over pyproject.toml;
a pyproject.toml without a `[tool.cudalint]` table is passed over.

    select = ["CL1", "CL3"]             # rule-ID prefixes to enable (default: all)
    ignore = ["CL302"]                  # rule-ID prefixes to disable
    exclude = ["third_party", "**/*_gen.go"]
    knowledge = ["ci/our-wrappers.toml"]  # extra API knowledge files (older spelling: rules)
    c-include = ["/opt/nvidia/cuda/include"]  # C headers (the CUDA toolkit's) not in a usual place
    preview = false                     # also run preview rules
    fixable = ["CL"]                    # rules whose fixes --fix and --diff may apply (default: all)
    unfixable = ["CL101"]               # rules whose fixes are never offered (ruff's semantics)
    unsafe-fixes = false                # also the fixes that need a human look (--unsafe-fixes; the editor's code actions)
    show-fixes = false                  # --fix lists what it fixed (as --show-fixes)
    max-same-issues = 0                 # at most N findings of one rule with one message (0: no cap)
    [tool.cudalint.level]               # per-rule level: error, warning or note
    CL201 = "error"
    [tool.cudalint.per-file-ignores]    # glob -> rule-ID prefixes
    "internal/legacy/**" = ["CL3"]

Paths and globs are relative to the directory of the configuration file.
Unknown keys and bad values are errors (the command line exits with 2), never
silently ignored. Command-line flags override the file: --select, --ignore
and --exclude replace its lists; --knowledge files are loaded in addition.
"""

from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudalint.catalog import RULE_PREFIX, Level
from cudalint.globs import PerFileIgnores, glob_regex
from cudalint.source import display_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

CONFIG_FILE = ".cudalint.toml"
PYPROJECT = "pyproject.toml"
# `rules` is the older spelling of `knowledge` (API knowledge files, not lint rules).
KEYS = (
    "c-include", "exclude", "fixable", "ignore", "knowledge", "level", "max-same-issues", "per-file-ignores", "preview",
    "rules", "select", "show-fixes", "unfixable", "unsafe-fixes",
)
LEVELS = tuple(level.value for level in Level)


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    path: Path | None = None  # None: no configuration file
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    levels: dict[str, Level] = field(default_factory=dict)  # rule-ID prefix -> level
    exclude: tuple[str, ...] = ()
    rules: tuple[Path, ...] = ()  # API knowledge files (the `knowledge` key)
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    preview: bool = False
    # Directories of C headers (the CUDA toolkit's, where it is not in a usual place).
    c_include: tuple[Path, ...] = ()
    # Rule-ID prefixes whose fixes are offered (None: every rule's) and not.
    fixable: tuple[str, ...] | None = None
    unfixable: tuple[str, ...] = ()
    show_fixes: bool = False
    max_same_issues: int = 0  # 0: no cap
    unsafe_fixes: bool = False

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def level_for(self, rule_id: str, default: Level) -> Level:
        """The most specific (longest) matching prefix wins."""
        matching = [prefix for prefix in self.levels if rule_id.startswith(prefix)]
        return self.levels[max(matching, key=len)] if matching else default

    def is_fixable(self, rule_id: str) -> bool:
        """ruff's semantics: a rule's fixes are offered when it matches
        `fixable` (default: every rule) and no more specific or equally
        specific `unfixable` prefix."""
        fixable = max((len(p) for p in (self.fixable if self.fixable is not None else ("CL",)) if rule_id.startswith(p)), default=-1)
        unfixable = max((len(p) for p in self.unfixable if rule_id.startswith(p)), default=-1)
        return fixable > unfixable

    def per_file(self) -> PerFileIgnores:
        return PerFileIgnores(self.root, tuple((glob, glob_regex(glob), prefixes) for glob, prefixes in self.per_file_ignores))


MAX_FILE_BYTES = 1024 * 1024


def _is_file(path: Path) -> bool:
    """Path.is_file() raises on EACCES, ENAMETOOLONG...: those are "no"."""
    try:
        return path.is_file()
    except OSError:
        return False


def find_config(start: Path, known: dict[Path, Path | None] | None = None) -> Path | None:
    """The nearest .cudalint.toml, or pyproject.toml with [tool.cudalint], at
    or above `start`. `known`: answers for directories asked before, which
    the directories below them share (a run asks for each of its hundreds
    of package directories)."""
    visited: list[Path] = []
    found: Path | None = None
    for directory in (start, *start.parents):
        if known is not None and directory in known:
            found = known[directory]
            break
        visited.append(directory)
        found = config_in(directory, start)
        if found is not None:
            break
    if known is not None:
        for directory in visited:
            known[directory] = found
    return found


def config_in(directory: Path, start: Path) -> Path | None:
    """The configuration file of this directory itself, if it has one."""
    candidate = directory / CONFIG_FILE
    if _is_file(candidate):
        return candidate
    pyproject = directory / PYPROJECT
    if _is_file(pyproject) and _has_tool_table(pyproject, display_path(pyproject, start)):
        return pyproject
    return None


def _read(path: Path, name: str) -> bytes:
    from cudalint.safeio import InputFileError, read_regular

    try:
        return read_regular(path, MAX_FILE_BYTES)
    except InputFileError as error:
        raise ConfigError(f"{name}: cannot read: {error}") from None
    except OSError as error:
        raise ConfigError(f"{name}: cannot read: {error.strerror or error}") from None


def _has_tool_table(pyproject: Path, shown: str) -> bool:
    try:
        data = _read(pyproject, shown)
    except ConfigError:
        return False
    if b"cudalint" not in data:
        return False
    document = _parse(Path(shown), data)  # a broken pyproject.toml is an error, not "no configuration"
    return isinstance(document.get("tool"), dict) and "cudalint" in document["tool"]


def _parse(path: Path, data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None


def load_config(path: Path, rule_ids: list[str], shown: str | None = None) -> Config:
    """Read and check one configuration file. `shown` is how error messages
    name it (default: the path as given)."""
    name = shown or str(path)
    data = _read(path, name)
    document = _parse(Path(name), data)
    if path.name == PYPROJECT:
        table = document.get("tool", {}).get("cudalint") if isinstance(document.get("tool"), dict) else None
        where = "[tool.cudalint]"
        if table is None:
            raise ConfigError(f"{name}: no [tool.cudalint] table")
    else:
        table, where = document, "top level"
    if not isinstance(table, dict):
        raise ConfigError(f"{name}: {where} must be a table")
    return _check(table, path.resolve().parent, rule_ids, lambda key: f"{name}: {where}: {key}" if key else f"{name}: {where}", path)


def _check(table: dict[str, Any], root: Path, rule_ids: list[str], at, path: Path) -> Config:
    def fail(key: str, message: str):
        raise ConfigError(f"{at(key)}: {message}")

    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            if key == "tool" and path.name == CONFIG_FILE:
                hint = f" ({CONFIG_FILE} takes the keys at its top level; [tool.cudalint] belongs in pyproject.toml)"
            raise ConfigError(f"{at('')}: unknown key {key!r}{hint}; the keys are {', '.join(KEYS)}")

    def strings(key: str, value: Any, example: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            fail(key, f"expected a list of strings, e.g. {key} = {example}, got {_toml(value)}")
        return value

    def mapping(key: str, example: str) -> dict[str, Any]:
        value = table.get(key, {})
        if not isinstance(value, dict):
            fail(key, f"expected a table of {example}, got {_toml(value)}")
        return value

    def prefixes(key: str, value: Any) -> tuple[str, ...]:
        out = []
        for item in strings(key, value, '["CL1", "CL302"]'):
            prefix = item.strip().upper()
            if not RULE_PREFIX.fullmatch(prefix):
                fail(key, f"{item!r} is not a rule ID or prefix such as CL101 or CL3")
            if not any(rule_id.startswith(prefix) for rule_id in rule_ids):
                fail(key, f"{item!r} matches no rule (see cudalint --list-rules)")
            out.append(prefix)
        return tuple(out)

    def globs(key: str, value: Any) -> tuple[str, ...]:
        out = strings(key, value, '["third_party", "**/*_gen.go"]')
        for pattern in out:
            try:
                glob_regex(pattern)
            except ValueError as error:
                fail(key, f"bad glob {pattern!r}: {error}")
        return tuple(out)

    select = prefixes("select", table["select"]) if "select" in table else None
    if select is not None and not select:
        fail("select", "an empty list enables no rule; leave select out to enable all")
    ignore = prefixes("ignore", table["ignore"]) if "ignore" in table else None
    levels: dict[str, Level] = {}
    for rule, level in mapping("level", 'rule -> level, e.g. level = { CL201 = "error" }').items():
        (prefix,) = prefixes("level", [rule])
        if level not in LEVELS:
            fail(f"level.{rule}", f"expected one of {', '.join(repr(l) for l in LEVELS)}, got {_toml(level)}")
        levels[prefix] = Level(level)
    exclude = globs("exclude", table["exclude"]) if "exclude" in table else ()
    if "knowledge" in table and "rules" in table:
        fail("rules", "`rules` is the older spelling of `knowledge`: give one of the two")
    knowledge_key = "rules" if "rules" in table else "knowledge"
    rules: list[Path] = []
    for item in strings(knowledge_key, table.get(knowledge_key, []), '["ci/our-wrappers.toml"]'):
        file = (root / item) if not Path(item).is_absolute() else Path(item)
        if not _is_file(file):
            fail(knowledge_key, f"{item!r}: no such file (paths are relative to {path.name}'s directory, {root})")
        _check_private_rules(file, root, at(knowledge_key))
        rules.append(file)
    preview = table.get("preview", False)
    if not isinstance(preview, bool):
        fail("preview", f"expected true or false, got {_toml(preview)}")
    fixable = prefixes("fixable", table["fixable"]) if "fixable" in table else None
    unfixable = prefixes("unfixable", table["unfixable"]) if "unfixable" in table else ()
    show_fixes = table.get("show-fixes", False)
    if not isinstance(show_fixes, bool):
        fail("show-fixes", f"expected true or false, got {_toml(show_fixes)}")
    unsafe_fixes = table.get("unsafe-fixes", False)
    if not isinstance(unsafe_fixes, bool):
        fail("unsafe-fixes", f"expected true or false, got {_toml(unsafe_fixes)}")
    max_same = table.get("max-same-issues", 0)
    if isinstance(max_same, bool) or not isinstance(max_same, int) or max_same < 0:
        fail("max-same-issues", f"expected a whole number, 0 for no cap, e.g. max-same-issues = 3, got {_toml(max_same)}")
    per_file: list[tuple[str, tuple[str, ...]]] = []
    for pattern, rules_value in mapping("per-file-ignores", 'glob -> rules, e.g. "internal/legacy/**" = ["CL3"]').items():
        (pattern,) = globs("per-file-ignores", [pattern])
        per_file.append((pattern, prefixes(f"per-file-ignores.{pattern!r}", rules_value)))
    c_include: list[Path] = []
    for item in strings("c-include", table.get("c-include", []), '["/opt/nvidia/cuda-13/include"]'):
        directory = (root / item) if not Path(item).is_absolute() else Path(item)
        if not directory.is_dir():
            fail("c-include", f"{item!r}: no such directory (paths are relative to {path.name}'s directory, {root})")
        c_include.append(directory)
    return Config(
        path.resolve(), select, ignore, levels, exclude, tuple(rules), tuple(per_file), preview, tuple(c_include),
        fixable=fixable, unfixable=unfixable, show_fixes=show_fixes, max_same_issues=max_same, unsafe_fixes=unsafe_fixes,
    )


def _check_private_rules(file: Path, root: Path, where: str) -> None:
    """A knowledge file outside the configuration's repository is checked
    here, so that an error about it names it but echoes none of its content
    (a hostile repository's configuration could name any readable file)."""
    from cudalint.knowledge import KnowledgeError, load_file
    from cudalint.source import repository_root

    tree = repository_root(root)
    try:
        Path(os.path.realpath(file)).relative_to(os.path.realpath(tree))
        return
    except ValueError:
        pass
    try:
        load_file(file, private=True)
    except KnowledgeError as error:
        raise ConfigError(f"{where}: {error}") from None


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if not isinstance(value, dict) else "a table"
