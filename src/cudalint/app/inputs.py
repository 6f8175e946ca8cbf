"""The files a run reads: what discovery finds for the patterns, less the
excluded files (`--exclude`, or the configuration's `exclude`), and the
other files of the packages of files named one by one (read, not
reported: a staged file is judged with its whole package, as a full run
judges it). When nothing is left to analyse, the warning names each cause
and the rule or glob behind it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.app.config import Config
from cudalint.app.errors import OptionError, Unmatched
from cudalint.app.request import Request
from cudalint.discover import Discovery, discover, package_files
from cudalint.findings import Notification
from cudalint.globs import PathGlobs
from cudalint.reporters.text import safe_line
from cudalint.source import display_path


@dataclass
class Inputs:
    files: list[Path] = field(default_factory=list)  # reported
    context: list[Path] = field(default_factory=list)  # read for their package's sake
    notifications: list[Notification] = field(default_factory=list)  # what discovery had to say


def read_inputs(request: Request, config: Config, cwd: Path, say: Callable[[str], None]) -> Inputs:
    """The files the request's patterns name. A pattern that matches
    nothing ends the run (Unmatched)."""
    try:
        exclude = PathGlobs.compile(cwd, request.excludes) if request.excludes else PathGlobs.compile(config.root, config.exclude)
    except ValueError as error:
        raise OptionError(str(error), "--exclude") from None
    if request.overlay is not None:
        return _buffers(request, exclude, config, cwd, say)
    discovery = discover(list(request.patterns) or ["./..."], cwd, all_modules=request.all_modules)
    if discovery.unmatched:
        raise Unmatched(discovery)
    # Excluded files are dropped even when named: the pre-commit hook names
    # every staged file, and a pattern whose files are all excluded is fine.
    files = [path for path in discovery.files if exclude.match(path) is None]
    if not files and not request.quiet:
        say(nothing_analysed(discovery, exclude, config, request.excludes, cwd))
    if discovery.nested_modules and not request.all_modules and not request.quiet:
        say(_nested_modules_note(discovery.nested_modules, cwd))
    context = [path for path in discovery.context if exclude.match(path) is None]
    return Inputs(files, context, list(discovery.notifications))


def _buffers(request: Request, exclude: PathGlobs, config: Config, cwd: Path, say: Callable[[str], None]) -> Inputs:
    """Each pattern is the path of an editor's buffer (on disk or not yet):
    that file, with the other files of its package read from the disk and
    from the other buffers. Nothing is walked and git is not asked: a
    buffer is analysed as a file named on its own is, less the excluded."""
    named = list(dict.fromkeys(Path(os.path.normpath(cwd.resolve() / pattern)) for pattern in request.patterns))
    files = [path for path in named if exclude.match(path) is None]
    if not files and not request.quiet:
        shown = ", ".join(display_path(path, cwd) for path in named)
        say(safe_line(f"cudalint: warning: nothing analysed: {shown} is excluded by {_exclude_source(config, request.excludes, cwd)}"))
    overlay = request.overlay or {}
    context: list[Path] = []
    for directory in sorted({path.parent for path in files}):
        buffers = sorted(path for path in overlay if path.parent == directory and path.name.endswith(".go"))
        siblings = dict.fromkeys(package_files(directory) + buffers)
        context += [path for path in siblings if path not in files and exclude.match(path) is None]
    return Inputs(files, context)


def nothing_analysed(
    discovery: Discovery, exclude: PathGlobs, config: Config, excludes: tuple[str, ...], cwd: Path,
) -> str:
    """No file is left to analyse: the warning that says why, naming each
    cause that left files out (git's ignore rules, the exclude list) and
    the rule or glob behind it, or that there was no Go file to begin with."""
    causes: list[tuple[int, str]] = []
    if discovery.ignored:
        rules = Counter(
            f"{display_path(ignored.rule.source, cwd)}:{ignored.rule.line}:{ignored.rule.pattern}"
            for ignored in discovery.ignored
        )
        causes.append((len(discovery.ignored), f"untracked and ignored by git ({_tally(rules)})"))
    if discovery.files:
        globs = Counter(exclude.match(path) or "" for path in discovery.files)
        causes.append((len(discovery.files), f"excluded by {_exclude_source(config, excludes, cwd)} ({_tally(globs)})"))
    found = sum(count for count, _ in causes)
    if not causes:
        why = "no Go files found"
    elif len(causes) == 1:
        why = f"all {found} Go file{'s' if found != 1 else ''} found {_verb(found)} {causes[0][1]}"
    else:
        why = f"of the {found} Go files found, " + " and ".join(f"{_are(count)} {text}" for count, text in causes)
    if discovery.ignored:
        why += "; tracked files, and files named one by one, are always analysed"
    return safe_line(f"cudalint: warning: nothing analysed: {why}")


def unmatched_lines(discovery: Discovery, cwd: Path) -> list[str]:
    """What the command line says before it exits 2 for patterns that match
    no Go file: discovery's notifications, one error per pattern, and where
    nested modules were left out, how to reach them."""
    lines = [safe_line(note.render()) for note in discovery.notifications]
    lines += [f"cudalint: error: pattern {pattern!r} matches no Go files" for pattern in discovery.unmatched]
    if discovery.nested_modules:
        names = ", ".join(display_path(m, cwd) for m in discovery.nested_modules[:5])
        lines.append(
            f"cudalint: note: directories with their own go.mod are separate modules and are not walked "
            f"({names}); run cudalint inside them, name them (cudalint {names.split(', ')[0]}/...), "
            f"or analyse every module of the tree with --all-modules"
        )
    return lines


def _nested_modules_note(modules: list[Path], cwd: Path) -> str:
    """Once per run: the directories ./... left out because they hold their
    own go.mod (the go command's meaning), and how to include them."""
    names = [display_path(module, cwd) for module in modules]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    count = len(names)
    return safe_line(
        f"cudalint: note: {count} director{'ies' if count != 1 else 'y'} with {'their' if count != 1 else 'its'} own go.mod "
        f"{'are' if count != 1 else 'is a'} separate module{'s' if count != 1 else ''}, not analysed ({shown}); "
        f"--all-modules analyses every module of the tree"
    )


def _exclude_source(config: Config, excludes: tuple[str, ...], cwd: Path) -> str:
    if excludes:
        return "--exclude"
    if config.path is not None:
        return f"the exclude list of {display_path(config.path, cwd)}"
    return "the exclude list"  # pragma: no cover - nothing else excludes


def _are(count: int) -> str:
    return f"{count} {_verb(count)}"


def _verb(count: int) -> str:
    return "is" if count == 1 else "are"


def _tally(counts: Counter[str], shown: int = 3) -> str:
    """'2 by A, 1 by B', the most frequent first, with how many more."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    text = ", ".join(f"{count} by {what}" for what, count in ranked[:shown])
    more = len(ranked) - shown
    return text + (f" and {more} more" if more > 0 else "")
