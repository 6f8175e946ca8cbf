"""`cudalint --show-settings [PATH...]`: which configuration applies to a
file (or directory), why, and what it resolves to after the command line
(ruff's `--show-settings`). Read-only: prints and exits 0.

The resolution is the one a run makes: `--isolated` reads no file; `--config`
names one for every file; otherwise the nearest `.cudalint.toml` or
`pyproject.toml` with `[tool.cudalint]` at or above the current directory,
unless a nearer one at or above the file's directory is nested below it (a
module with its own configuration, as pre-commit runs name files of several).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cudalint.catalog import select_rules
from cudalint.app.config import Config, find_config
from cudalint.globs import PathGlobs
from cudalint.source import display_path


def resolve(path: Path, cwd: Path, found: Config, config_file: Path | None, isolated: bool,
            load: Callable[[Path], Config]) -> tuple[Config, str]:
    """The configuration that applies to `path` and why."""
    if isolated:
        return found, "--isolated: no configuration file is read"
    if config_file is not None:
        return found, "named by --config (for every file)"
    if found.path is None:
        return found, f"no .cudalint.toml or pyproject.toml with [tool.cudalint] at or above {display_path(cwd, cwd)}: the defaults"
    directory = path if path.is_dir() else path.parent
    nearest = find_config(directory.resolve())
    if nearest is not None and nearest.resolve() != found.path.resolve() and found.path.resolve().parent in nearest.resolve().parents:
        return load(nearest), (
            f"the nearest configuration at or above {display_path(directory, cwd) or '.'}, nested below "
            f"{display_path(found.path, cwd)} (found from the current directory), so it wins for this file"
        )
    return found, "the nearest .cudalint.toml, or pyproject.toml with [tool.cudalint], at or above the current directory"


def render(
    path: Path, cwd: Path, config: Config, why: str, rules: list, *, select: tuple[str, ...] | None,
    ignore: tuple[str, ...] | None, excludes: tuple[str, ...], preview: bool, max_same_issues: int | None,
) -> str:
    shown = display_path(path, cwd) if path != cwd else "."
    lines = [f"Settings for {shown}"]

    def item(key: str, value: str, origin: str) -> None:
        lines.append(f"  {key + ':':<18}{value}   ({origin})")

    lines.append(f"  {'configuration:':<18}{display_path(config.path, cwd) if config.path else '(none)'}")
    lines.append(f"  {'why:':<18}{why}")
    from_file = "configuration" if config.path else "default"
    chosen_select = select if select is not None else (config.select or ("CL",))
    item("select", ", ".join(chosen_select), "--select" if select is not None else from_file if config.select else "default")
    chosen_ignore = ignore if ignore is not None else (config.ignore or ())
    item("ignore", ", ".join(chosen_ignore) or "(none)", "--ignore" if ignore is not None else from_file if config.ignore else "default")
    item("preview", "true" if preview or config.preview else "false", "--preview" if preview else from_file if config.preview else "default")
    enabled = select_rules(rules, tuple(chosen_select), tuple(chosen_ignore), preview=preview or config.preview)
    per_file = config.per_file()
    if path.is_file():
        enabled = per_file.enabled_for(path.resolve(), enabled)
    item("rules enabled", ", ".join(sorted(enabled)) or "(none)", "after per-file-ignores" if path.is_file() else "select, ignore, preview")
    for glob, prefixes in config.per_file_ignores:
        matches = path.is_file() and PathGlobs.compile(config.root, [glob]).match(path.resolve()) is not None
        item("per-file-ignores", f"{glob!r} = {', '.join(prefixes)}" + (" (applies to this file)" if matches else ""), from_file)
    exclude = PathGlobs.compile(cwd, excludes) if excludes else PathGlobs.compile(config.root, config.exclude)
    item("exclude", ", ".join(excludes or config.exclude) or "(none)", "--exclude" if excludes else from_file if config.exclude else "default")
    if path.is_file():
        matched = exclude.match(path.resolve())
        lines.append(f"  {'excluded:':<18}" + (f"yes, by {matched!r}" if matched else "no"))
    levels = ", ".join(f"{prefix} = {level.value}" for prefix, level in sorted(config.levels.items()))
    item("level", levels or "(rules' defaults)", from_file if config.levels else "default")
    item("knowledge", ", ".join(display_path(p, cwd) for p in config.rules) or "(rules/*.toml only)", from_file if config.rules else "default")
    item("c-include", ", ".join(str(p) for p in config.c_include) or "(none)", from_file if config.c_include else "default")
    item("fixable", ", ".join(config.fixable) if config.fixable is not None else "all rules", from_file if config.fixable is not None else "default")
    item("unfixable", ", ".join(config.unfixable) or "(none)", from_file if config.unfixable else "default")
    item("show-fixes", "true" if config.show_fixes else "false", from_file if config.show_fixes else "default")
    if config.unsafe_fixes:
        item("unsafe-fixes", "true", from_file)
    cap = max_same_issues if max_same_issues is not None else config.max_same_issues
    origin = "--max-same-issues" if max_same_issues is not None else from_file if config.max_same_issues else "default"
    item("max-same-issues", str(cap) + (" (no cap)" if cap == 0 else ""), origin)
    return "\n".join(lines) + "\n"
