"""Where the source of an imported package lives, as the go command finds it.

Most Go GPU code reaches the GPU through a binding that no knowledge file
describes; its source is on the machine whenever the code builds. This module
answers "which directory holds import path P, for the main module M", the
way `go build` answers it (DESIGN.md, *Dependencies outside the module*):

- the modules a `go.work` uses are main modules (unless `GOWORK=off`);
- a `replace` applies first: to a local directory, or to another
  module@version, and the replaced module is never read;
- with `-mod=vendor` (the default when `vendor/modules.txt` exists and the
  go.mod says go >= 1.14, unless `GOFLAGS` says `-mod=mod` or `-mod=readonly`)
  every package comes from `vendor/<import path>`;
- otherwise from the module cache, `$GOMODCACHE/<module>@<version>/<subdir>`
  (default `$GOPATH/pkg/mod`, `GOPATH` default `~/go`), path and version
  case-encoded (`!x` for `X`), the version the one go.mod's `require` list
  selects (never go.sum's);
- an import maps to the module with the longest path prefix;
- where not vendoring (a go.mod older than go 1.14, often built with
  `-mod=vendor` all the same, or `-mod=mod`) and the module cache lacks a
  module that `vendor/modules.txt` lists at the version go.mod requires,
  its vendored copy is read: the same source, where otherwise there is none.

Nothing is executed: the settings come from the environment, as the go
command's defaults would be without a `go env -w` file. Everything here is
pure reading of go.mod, go.work and vendor/modules.txt, so the driver can
resolve every import of a run before anything is parsed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

_GO_MOD_BYTES = 1 << 20
_COMMENT = re.compile(r"//[^\n]*")
_DIRECTIVE = re.compile(r"^\s*(module|go|require|replace|use|exclude|retract|toolchain|godebug)\b\s*(.*)$")


@dataclass(frozen=True)
class Replacement:
    """`replace old [v] => new [v]`: a local directory, or a module version."""

    old: str
    old_version: str  # "" for every version
    directory: Path | None  # a local replacement
    new: str = ""  # a module replacement: its path and version
    new_version: str = ""


@dataclass(frozen=True)
class ModFile:
    """What one go.mod (or go.work) says, as far as resolution needs it."""

    root: Path
    module: str
    go_version: tuple[int, int] = (1, 16)
    requires: tuple[tuple[str, str], ...] = ()
    replacements: tuple[Replacement, ...] = ()
    uses: tuple[Path, ...] = ()  # go.work only


@dataclass(frozen=True)
class Settings:
    """The go command's settings that change resolution."""

    modcache: Path
    gowork: str = ""  # "off", a path, or "" (search upwards)
    mod_flag: str = ""  # from GOFLAGS: "vendor", "mod", "readonly" or ""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Settings:
        environ = os.environ if environ is None else environ
        modcache = environ.get("GOMODCACHE", "")
        if not modcache:
            gopath = environ.get("GOPATH", "").split(os.pathsep)[0] or str(Path(environ.get("HOME", "~")).expanduser() / "go")
            modcache = str(Path(gopath) / "pkg" / "mod")
        flag = ""
        for word in environ.get("GOFLAGS", "").split():
            if word.startswith("-mod="):
                flag = word[len("-mod="):]
        return cls(Path(modcache), environ.get("GOWORK", ""), flag)


@dataclass(frozen=True)
class Located:
    """Where an imported package's source is, and which module it is of."""

    directory: Path
    module: str  # the module path the package belongs to
    version: str  # "" for a main module, a workspace module or a local replacement
    how: str  # "workspace", "replace", "vendor" or "modcache"

    @property
    def immutable(self) -> bool:
        """A module-cache version never changes: its summaries can be kept
        by module@version across projects."""
        return self.how == "modcache"


def escape(path_or_version: str) -> str:
    """The module cache's case encoding: every upper-case letter becomes
    `!` and its lower case (`github.com/Azure/x` -> `github.com/!azure/x`)."""
    return "".join(f"!{c.lower()}" if "A" <= c <= "Z" else c for c in path_or_version)


def is_standard(import_path: str) -> bool:
    """The standard library's import paths have no dot in their first element."""
    first = import_path.split("/", 1)[0]
    return "." not in first and import_path != "C"


def parse_mod(root: Path, text: str) -> ModFile:
    """go.mod or go.work text: module, go, require, replace and use
    directives, in single-line or block form."""
    module = ""
    go_version = (1, 16)
    requires: list[tuple[str, str]] = []
    replacements: list[Replacement] = []
    uses: list[Path] = []
    block = ""
    for raw in _COMMENT.sub("", text).splitlines():
        line = raw.strip()
        if not line:
            continue
        if block:
            if line == ")":
                block = ""
                continue
            verb, rest = block, line
        else:
            match = _DIRECTIVE.match(line)
            if match is None:
                continue
            verb, rest = match.group(1), match.group(2).strip()
            if rest == "(":
                block = verb
                continue
        words = [word.strip('"') for word in rest.split()]
        if verb == "module" and words:
            module = words[0]
        elif verb == "go" and words:
            parts = words[0].split(".")
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                go_version = (int(parts[0]), int(parts[1]))
        elif verb == "require" and len(words) >= 2:
            requires.append((words[0], words[1]))
        elif verb == "replace" and "=>" in words:
            replacement = _replacement(root, words)
            if replacement is not None:
                replacements.append(replacement)
        elif verb == "use" and words:
            uses.append(Path(os.path.normpath(root / words[0])))
    return ModFile(root, module, go_version, tuple(requires), tuple(replacements), tuple(uses))


def _replacement(root: Path, words: list[str]) -> Replacement | None:
    arrow = words.index("=>")
    old, new = words[:arrow], words[arrow + 1:]
    if not old or not new:
        return None
    old_version = old[1] if len(old) > 1 else ""
    target = new[0]
    if target.startswith(("./", "../", "/")) or target in (".", ".."):
        return Replacement(old[0], old_version, Path(os.path.normpath(root / target)))
    if len(new) < 2:
        return None
    return Replacement(old[0], old_version, None, target, new[1])


def read_mod(path: Path) -> ModFile | None:
    try:
        with open(path, "rb") as stream:
            data = stream.read(_GO_MOD_BYTES)
    except OSError:
        return None
    return parse_mod(path.parent, data.decode("utf-8", errors="replace"))


def vendored_modules(root: Path) -> dict[str, str] | None:
    """vendor/modules.txt: module path -> version (its `# path version`
    lines); None where there is none."""
    try:
        text = (root / "vendor" / "modules.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# "):
            words = line[2:].split()
            if len(words) >= 2 and words[1] != "=>":
                found[words[0]] = words[1]
            elif words:
                found[words[0]] = ""
    return found


@dataclass
class Resolver:
    """Resolution for one main module: built once per run, asked per import."""

    main: ModFile
    settings: Settings
    workspace: tuple[ModFile, ...] = ()
    _vendor: dict[str, str] | None = field(default=None, repr=False)
    _vendoring: bool = field(default=False, repr=False)
    # Answers already given: a run asks about the same imports from many files.
    _located: dict[str, Located | None] = field(default_factory=dict, repr=False)
    _modules_of: dict[str, str] = field(default_factory=dict, repr=False)
    _candidates: dict[str, str] | None = field(default=None, repr=False)

    @classmethod
    def for_module(cls, go_mod: Path, settings: Settings | None = None) -> Resolver | None:
        main = read_mod(go_mod)
        if main is None or not main.module:
            return None
        settings = settings or Settings.from_environment()
        workspace = _workspace(go_mod.parent, settings)
        resolver = cls(main, settings, workspace)
        if not workspace:
            vendor = vendored_modules(main.root)
            default = "vendor" if vendor is not None and main.go_version >= (1, 14) else ""
            resolver._vendoring = (settings.mod_flag or default) == "vendor"
            resolver._vendor = vendor
        return resolver

    @classmethod
    def for_gopath(cls, root: Path, module: str, settings: Settings | None = None) -> Resolver | None:
        """For a project written for GOPATH (no go.mod; `module` the path its
        own imports imply), its vendor/ directory: the go command of that era
        took every import it holds from there (dep, glide and govendor wrote
        it). None where it has none: such a project's dependencies came from a
        GOPATH this machine does not have."""
        if not module or not (root / "vendor").is_dir():
            return None
        resolver = cls(ModFile(root, module), settings or Settings.from_environment())
        resolver._vendoring = True
        return resolver

    def locate(self, import_path: str) -> Located | None:
        """The directory of an imported package outside the main module;
        None for the standard library, cgo, the main module's own packages
        and what cannot be found on this machine (asked once per import
        path and run)."""
        if import_path not in self._located:
            self._located[import_path] = self._locate(import_path)
        return self._located[import_path]

    def _locate(self, import_path: str) -> Located | None:
        if is_standard(import_path) or _within(import_path, self.main.module):
            return None
        for used in self.workspace:
            if used.module and _within(import_path, used.module):
                return Located(_below(used.root, import_path, used.module), used.module, "", "workspace")
        module, version = self._selected(import_path)
        replacement = self._replacement_of(module, version) if module else None
        if replacement is not None and replacement.directory is not None:
            return Located(_below(replacement.directory, import_path, module), module, "", "replace")
        if self._vendoring:
            directory = self.main.root / "vendor" / import_path
            return Located(directory, module or import_path, version, "vendor") if directory.is_dir() else None
        if not module:
            return None
        if replacement is not None:
            module_root = self.settings.modcache / f"{escape(replacement.new)}@{escape(replacement.new_version)}"
        else:
            module_root = self.settings.modcache / f"{escape(module)}@{escape(version)}"
        directory = _below(module_root, import_path, module)
        if directory.is_dir():
            return Located(directory, module, version, "modcache")
        vendored = self.main.root / "vendor" / import_path
        if self._vendor is not None and self._vendor.get(module) == version and vendored.is_dir():
            return Located(vendored, module, version, "vendor")
        return None

    def module_of_import(self, import_path: str) -> str:
        """The required module an import belongs to ("" if none)."""
        if import_path not in self._modules_of:
            self._modules_of[import_path] = self._selected(import_path)[0]
        return self._modules_of[import_path]

    def _selected(self, import_path: str) -> tuple[str, str]:
        """(module, version) of the longest required module path that is a
        prefix of the import path (vendor/modules.txt when vendoring)."""
        if self._candidates is None:
            candidates = {module: version for used in self.workspace for module, version in used.requires}
            candidates.update(self.main.requires)
            if self._vendoring and self._vendor is not None:
                candidates = {**candidates, **self._vendor}
            self._candidates = candidates
        prefix = import_path
        while prefix:  # longest prefix first: the path itself, then up one element at a time
            if prefix in self._candidates:
                return prefix, self._candidates[prefix]
            cut = prefix.rfind("/")
            prefix = prefix[:cut] if cut > 0 else ""
        return "", ""

    def _replacement_of(self, module: str, version: str) -> Replacement | None:
        sources = [*(used.replacements for used in self.workspace), self.main.replacements]
        for replacements in sources:
            for replacement in replacements:
                if replacement.old == module and replacement.old_version in ("", version):
                    return replacement
        return None


def _within(import_path: str, module: str) -> bool:
    return import_path == module or import_path.startswith(module + "/")


def _below(root: Path, import_path: str, module: str) -> Path:
    return root / import_path[len(module) + 1:] if import_path != module else root


def _workspace(start: Path, settings: Settings) -> tuple[ModFile, ...]:
    """The modules of the go.work that applies (GOWORK, or the nearest above)."""
    if settings.gowork == "off":
        return ()
    if settings.gowork:
        work = Path(settings.gowork)
    else:
        work = next((d / "go.work" for d in (start, *start.parents) if (d / "go.work").is_file()), Path())
    parsed = read_mod(work) if work.name == "go.work" else None
    if parsed is None:
        return ()
    modules = [read_mod(directory / "go.mod") for directory in parsed.uses]
    found = tuple(m for m in modules if m is not None and m.module)
    # The go.work's own replace directives apply to every module of it.
    return (ModFile(parsed.root, "", replacements=parsed.replacements), *found) if parsed.replacements else found
