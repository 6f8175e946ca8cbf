"""Configuration: `[tool.cudalint]` in pyproject.toml, or a `.cudalint.toml`
(same keys, at its top level), the nearest one found walking up from the
working directory. In one directory `.cudalint.toml` wins over pyproject.toml;
a pyproject.toml without a `[tool.cudalint]` table is passed over.

    select = ["CL1", "CL3"]             # rule-ID prefixes to enable (default: all)
    ignore = ["CL302"]                  # rule-ID prefixes to disable
    exclude = ["third_party", "**/*_gen.go"]
    rules = ["ci/our-wrappers.toml"]    # extra API knowledge files
    [tool.cudalint.level]               # per-rule level: error, warning or note
    CL201 = "error"
    [tool.cudalint.per-file-ignores]    # glob -> rule-ID prefixes
    "internal/legacy/**" = ["CL3"]

Paths and globs are relative to the directory of the configuration file.
Unknown keys and bad values are errors (the command line exits with 2), never
silently ignored. Command-line flags override the file: --select, --ignore
and --exclude replace its lists; --rules files are loaded in addition.
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudalint.catalog import Level
from cudalint.source import display_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

CONFIG_FILE = ".cudalint.toml"
PYPROJECT = "pyproject.toml"
KEYS = ("exclude", "ignore", "level", "per-file-ignores", "rules", "select")
LEVELS = tuple(level.value for level in Level)
_PREFIX = re.compile(r"^CL\d{0,3}$")


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the file and the key."""


# -- globs -------------------------------------------------------------------


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            j = i + 1
            if segment[j:j + 1] in ("!", "^"):
                j += 1
            if segment[j:j + 1] == "]":
                j += 1
            close = segment.find("]", j)
            if close == -1:
                out.append(re.escape(char))
            else:
                body = segment[i + 1:close]
                if body[:1] in ("!", "^") and body:
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-like glob as a regex over a '/'-separated relative path.

    A pattern without '/' (`vendor`, `*_gen.go`) matches a file or directory
    of that name at any depth; a pattern with '/' (`internal/gen`,
    `cmd/*/main.go`, `**/mocks`) is anchored at the configuration's directory.
    `*` and `?` stay within one path segment, `**` spans any number of them,
    `[abc]` is a character class. A pattern that matches a directory matches
    every file below it.
    """
    text = pattern.strip()
    if text.startswith("./"):
        text = text[2:]
    text = text.strip("/")
    if not text:
        raise ValueError("an empty pattern")
    segments = text.split("/")
    if len(segments) == 1:
        return re.compile(f"^(?:.*/)?{_segment_regex(text)}(?:/.*)?$")
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("^" + "".join(parts) + "(?:/.*)?$")


@dataclass(frozen=True)
class PathGlobs:
    """Globs relative to `root`; picklable, for worker processes."""

    root: Path
    globs: tuple[tuple[str, re.Pattern[str]], ...] = ()

    @classmethod
    def compile(cls, root: Path, patterns: list[str] | tuple[str, ...]) -> PathGlobs:
        return cls(root, tuple((pattern, glob_regex(pattern)) for pattern in patterns))

    def match(self, path: Path) -> str | None:
        """The first glob that matches `path` (absolute), or None. Paths
        outside `root` never match."""
        if not self.globs:
            return None
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return None
        return next((pattern for pattern, regex in self.globs if regex.match(relative)), None)


@dataclass(frozen=True)
class PerFileIgnores:
    root: Path
    entries: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = ()

    def enabled_for(self, path: Path, enabled: frozenset[str]) -> frozenset[str]:
        if not self.entries:
            return enabled
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return enabled
        ignored = tuple(p for _, regex, prefixes in self.entries if regex.match(relative) for p in prefixes)
        if not ignored:
            return enabled
        return frozenset(rule for rule in enabled if not rule.startswith(ignored))


# -- the file ----------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    path: Path | None = None  # None: no configuration file
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    levels: dict[str, Level] = field(default_factory=dict)  # rule-ID prefix -> level
    exclude: tuple[str, ...] = ()
    rules: tuple[Path, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def level_for(self, rule_id: str, default: Level) -> Level:
        """The most specific (longest) matching prefix wins."""
        matching = [prefix for prefix in self.levels if rule_id.startswith(prefix)]
        return self.levels[max(matching, key=len)] if matching else default

    def per_file(self) -> PerFileIgnores:
        return PerFileIgnores(self.root, tuple((glob, glob_regex(glob), prefixes) for glob, prefixes in self.per_file_ignores))


def find_config(start: Path) -> Path | None:
    """The nearest .cudalint.toml, or pyproject.toml with [tool.cudalint], at
    or above `start`."""
    for directory in (start, *start.parents):
        candidate = directory / CONFIG_FILE
        if candidate.is_file():
            return candidate
        pyproject = directory / PYPROJECT
        if pyproject.is_file() and _has_tool_table(pyproject, display_path(pyproject, start)):
            return pyproject
    return None


def _has_tool_table(pyproject: Path, shown: str) -> bool:
    try:
        data = pyproject.read_bytes()
    except OSError:
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


def load_config(path: Path, rule_ids: list[str], shown: str | None = None) -> Config:
    """Read and check one configuration file. `shown` is how error messages
    name it (default: the path as given)."""
    name = shown or str(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{name}: cannot read: {error.strerror or error}") from None
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
            raise ConfigError(f"{at('')}: unknown key {key!r}{hint}; the keys are {', '.join(KEYS)}")

    def strings(key: str, value: Any, example: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            fail(key, f"expected a list of strings, e.g. {key} = {example}, got {_toml(value)}")
        return value

    def prefixes(key: str, value: Any) -> tuple[str, ...]:
        out = []
        for item in strings(key, value, '["CL1", "CL302"]'):
            prefix = item.strip().upper()
            if not _PREFIX.match(prefix):
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
            except (ValueError, re.error) as error:
                fail(key, f"bad glob {pattern!r}: {error}")
        return tuple(out)

    select = prefixes("select", table["select"]) if "select" in table else None
    if select is not None and not select:
        fail("select", "an empty list enables no rule; leave select out to enable all")
    ignore = prefixes("ignore", table["ignore"]) if "ignore" in table else None
    levels: dict[str, Level] = {}
    if "level" in table:
        value = table["level"]
        if not isinstance(value, dict):
            fail("level", f'expected a table of rule -> level, e.g. level = {{ CL201 = "error" }}, got {_toml(value)}')
        for rule, level in value.items():
            (prefix,) = prefixes("level", [rule])
            if level not in LEVELS:
                fail(f"level.{rule}", f"expected one of {', '.join(repr(l) for l in LEVELS)}, got {_toml(level)}")
            levels[prefix] = Level(level)
    exclude = globs("exclude", table["exclude"]) if "exclude" in table else ()
    rules: list[Path] = []
    for item in strings("rules", table.get("rules", []), '["ci/our-wrappers.toml"]'):
        file = (root / item) if not Path(item).is_absolute() else Path(item)
        if not file.is_file():
            fail("rules", f"{item!r}: no such file (paths are relative to {path.name}'s directory, {root})")
        rules.append(file)
    per_file: list[tuple[str, tuple[str, ...]]] = []
    if "per-file-ignores" in table:
        value = table["per-file-ignores"]
        if not isinstance(value, dict):
            fail("per-file-ignores", f'expected a table of glob -> rules, e.g. "internal/legacy/**" = ["CL3"], got {_toml(value)}')
        for pattern, rules_value in value.items():
            (pattern,) = globs("per-file-ignores", [pattern])
            per_file.append((pattern, prefixes(f"per-file-ignores.{pattern!r}", rules_value)))
    return Config(path.resolve(), select, ignore, levels, exclude, tuple(rules), tuple(per_file))


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if not isinstance(value, dict) else "a table"
