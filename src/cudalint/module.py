"""The module a directory belongs to, and the packages of that module it
imports: what a run reads besides what it reports.

Import paths resolve the way the go command resolves them inside a module:
the `module` path of the nearest go.mod plus the directory below it, and the
local `replace` directives of that go.mod (`replace example.com/x => ../x`).
Imports are read from the bytes of the files with a small scanner of import
declarations, before anything is parsed: the driver needs them to decide
what each package's analysis reads and what its cache key covers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.resolve import Resolver, Settings, is_standard

_MODULE = re.compile(rb"^\s*module\s+\"?([^\s\"/][^\s\"]*)\"?", re.MULTILINE)
_REPLACE_LINE = re.compile(rb"^\s*(?:replace\s+)?(\S+)(?:\s+\S+)?\s+=>\s+(\.{1,2}/\S*|/\S+)\s*$", re.MULTILINE)
_REPLACE_BLOCK = re.compile(rb"^\s*replace\s*\((.*?)^\s*\)", re.MULTILINE | re.DOTALL)
_IMPORT_BLOCK = re.compile(rb"^import\s*\((.*?)\)", re.MULTILINE | re.DOTALL)
_IMPORT_LINE = re.compile(rb"^import\s+(?:[\w.]+\s+)?\"([^\"]+)\"", re.MULTILINE)
_QUOTED = re.compile(rb"\"([^\"]+)\"")
_COMMENT = re.compile(rb"//[^\n]*")
_GO_MOD_BYTES = 1 << 20
_GO_DIRECTIVE = re.compile(rb"^\s*go\s+(\d+)\.(\d+)", re.MULTILINE)
_PACKAGE_CLAUSE = re.compile(rb"^package\s+([A-Za-z_]\w*)", re.MULTILINE)
_PACKAGE_CLAUSE_BYTES = 1 << 14


@dataclass(frozen=True)
class Module:
    root: Path
    # The module path; "" for a GOPATH's src/ directory, below which every
    # import path not the standard library's is a directory (`gopath_module`).
    path: str
    # Local replacements: import path prefix -> directory.
    replacements: tuple[tuple[str, Path], ...] = field(default=())
    # The language version of its `go` directive; Go reads a go.mod without
    # one as go 1.16.
    go_version: tuple[int, int] = (1, 16)
    # Import path -> its directory, as found (asked for every import of every file).
    _directories: dict[str, Path | None] = field(default_factory=dict, repr=False, compare=False, hash=False)

    def import_path(self, directory: Path) -> str | None:
        try:
            relative = directory.relative_to(self.root)
        except ValueError:
            return None
        if not self.path:  # a GOPATH's src/: the path below it
            return relative.as_posix() if relative != Path(".") else None
        return self.path if relative == Path(".") else f"{self.path}/{relative.as_posix()}"

    def directory(self, import_path: str) -> Path | None:
        """Where an import path of this module (or a locally replaced one) lives."""
        if import_path not in self._directories:
            self._directories[import_path] = self._directory(import_path)
        return self._directories[import_path]

    def _directory(self, import_path: str) -> Path | None:
        if not self.path:  # GOROOT wins over a GOPATH for the standard library's paths
            target = self.root / import_path
            return target if import_path and not _in_goroot(import_path) and _has_go_files(target) else None
        for prefix, target in ((self.path, self.root), *self.replacements):
            if import_path == prefix:
                return target
            if import_path.startswith(prefix + "/"):
                return target / import_path[len(prefix) + 1:]
        return None


class Modules:
    """The modules of directories, each go.mod read once per run (one
    instance per run and per worker: a go.mod edited between two runs of
    one process is read again)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self._found: dict[Path, Module | None] = {}
        self._resolvers: dict[Path, Resolver | None] = {}
        self._settings = settings
        # Modules imported from outside whose source is not on this machine.
        self.unreadable: set[str] = set()
        self._names: dict[str, str | None] = {}  # import path -> its declared package name
        self._gopath: dict[Path, Module | None] = {}  # directory -> the GOPATH project it is in
        self._inferred: dict[Path, Module | None] = {}  # candidate root -> what its imports say

    def of(self, directory: Path) -> Module | None:
        """The module of the nearest go.mod at or above the directory; for
        a project with none (written for GOPATH), the one its own imports
        imply (`gopath_module`)."""
        found = self._declared(directory)
        if found is None:
            if directory not in self._gopath:
                self._gopath[directory] = gopath_module(directory, self._inferred)
            found = self._gopath[directory]
        return found

    def _declared(self, directory: Path) -> Module | None:
        """The module of the nearest go.mod at or above the directory (each
        directory looked at once per run: its subdirectories share the answer)."""
        if directory not in self._found:
            if (directory / "go.mod").is_file() or directory.parent == directory:
                self._found[directory] = module_of(directory)
            else:
                self._found[directory] = self._declared(directory.parent)
        return self._found[directory]

    def import_path(self, directory: Path) -> str | None:
        """The directory's import path in its module (None outside one); a
        package under the module's vendor/ goes by the path below it."""
        module = self.of(directory)
        if module is None:
            # A project written for GOPATH: its vendor/ lies above the
            # packages it holds, whose own imports say nothing of it.
            above = self._vendoring_root(directory)
            return "/".join(directory.relative_to(above / "vendor").parts) if above is not None else None
        parts = directory.relative_to(module.root).parts if directory.is_relative_to(module.root) else ()
        if len(parts) > 1 and parts[0] == "vendor":
            return "/".join(parts[1:])
        return module.import_path(directory)

    def _vendoring_root(self, directory: Path) -> Path | None:
        """The directory whose vendor/ holds this one, where its project
        (no go.mod) resolves imports through it."""
        parts = directory.parts
        if "vendor" not in parts[:-1]:
            return None
        above = Path(*parts[:len(parts) - 1 - parts[::-1].index("vendor")])
        resolver = self.resolver(above) if self.of(above) is not None else None
        return above if resolver is not None and resolver.main.root == above else None

    def resolver(self, directory: Path) -> Resolver | None:
        """How imports outside the module of this directory resolve (its
        go.mod, go.work, vendor/ and module cache), built once per module."""
        module = self.of(directory)
        if module is None:
            return None
        if not (module.root / "go.mod").is_file():
            return self._gopath_resolver(module, directory)
        if module.root not in self._resolvers:
            self._resolvers[module.root] = Resolver.for_module(module.root / "go.mod", self._settings)
        return self._resolvers[module.root]

    def _gopath_resolver(self, module: Module, directory: Path) -> Resolver | None:
        """For a project written for GOPATH, the vendor/ nearest above the
        directory within the project: the go command of that era looked
        there first (dep, glide and govendor wrote one at the checkout's
        root, which may lie below the root the imports imply)."""
        for candidate in (directory, *directory.parents):
            if not candidate.is_relative_to(module.root):
                return None
            if candidate not in self._resolvers:
                path = module.import_path(candidate) if candidate != module.root else module.path
                self._resolvers[candidate] = Resolver.for_gopath(candidate, path or "", self._settings)
            if self._resolvers[candidate] is not None:
                return self._resolvers[candidate]
        return None

    def outside_imports(self, main: Path, directory: Path, imported: Iterable[str], described: frozenset[str]) -> list[Path]:
        """The directories of the packages outside the module of `main` (the
        package analysed) that these files of `directory` import, where this
        machine has their source (DESIGN.md, *Dependencies outside the
        module*); never the standard library, nor a package the knowledge
        describes (`described`: the knowledge wins, reading it adds nothing)."""
        resolver = self.resolver(main)
        if resolver is None:
            return []
        own = self.of(directory)
        found: dict[Path, None] = {}
        for path in imported:
            if not _outside(path, own) or path in described:
                continue
            located = resolver.locate(path)
            if located is None:
                self.unreadable.add(resolver.module_of_import(path) or path)
            elif located.directory != directory:
                found[located.directory] = None
        return list(found)

    def declared_names(self, directory: Path, import_paths: Iterable[str]) -> dict[str, str]:
        """The package names that packages of the module of `directory`
        declare, for those of these imports whose name is not the last
        element of their path (`import "github.com/kuroko1t/gocuda"` declares
        `package cu`): Go names an import by its package clause. One file's
        head is read per imported package and run."""
        module = self.of(directory)
        if module is None:
            return {}
        found = {}
        for path in import_paths:
            if path not in self._names:
                located = module.directory(path)
                self._names[path] = declared_package_name(located) if located is not None else None
            name = self._names[path]
            if name is not None and name != "main":
                found[path] = name
        return found

    def without_source(self, directory: Path, import_paths: Iterable[str]) -> frozenset[str]:
        """Of these imports of the package in `directory`, those outside its
        module whose source this machine lacks (no vendor/, module cache,
        replace or workspace entry); never the standard library or cgo."""
        resolver = self.resolver(directory)
        own = self.of(directory)
        return frozenset(
            path for path in import_paths
            if _outside(path, own) and (resolver is None or resolver.locate(path) is None)
        )


def _outside(import_path: str, own: Module | None) -> bool:
    """An import of a package outside the module `own`: not cgo's, not the
    standard library's, not one of the module's own packages."""
    return import_path != "C" and not is_standard(import_path) and (own is None or own.directory(import_path) is None)


def declared_package_name(directory: Path) -> str | None:
    """The name the package clause of a directory's first Go file (not a
    test's) declares; None where there is none to read."""
    try:
        entries = sorted(
            (entry for entry in os.scandir(directory) if entry.name.endswith(".go") and not entry.name.endswith("_test.go")),
            key=lambda entry: entry.name,
        )
    except OSError:
        return None
    for entry in entries:
        try:
            with open(entry.path, "rb") as file:
                head = file.read(_PACKAGE_CLAUSE_BYTES)
        except OSError:
            continue
        found = _PACKAGE_CLAUSE.search(head)
        if found is not None:
            return found.group(1).decode()
    return None


# How far above a package directory, and how many files per candidate root,
# the import path of a project without go.mod is looked for.
_GOPATH_LEVELS = 4
_GOPATH_FILES = 256
_IMPORT_HEAD_BYTES = 1 << 16
# How deep below a candidate root imports are read: a command in cmd/server,
# packages a few directories below a GOPATH's src/ (src/app/gpu).
_DEPTH = 3


def gopath_module(directory: Path, inferred: dict[Path, Module | None]) -> Module | None:
    """The project a directory outside any module belongs to, for a project
    written for GOPATH (no go.mod): its packages import each other by the
    path the project lives at (`github.com/decred/gominer/nvml`), which the
    go command took from `$GOPATH/src`. The nearest directory at or above
    this one (a few levels) whose files and subdirectories' files import
    one of its own directories by such a path is the root, and that path's
    prefix the project's path. `inferred` memoises the answer per candidate
    root; a directory whose project says nothing of itself has none."""
    found: Module | None = None
    candidate = directory
    for _ in range(_GOPATH_LEVELS):
        if candidate not in inferred:
            inferred[candidate] = _implied_module(candidate)
        above = inferred[candidate]
        if found is not None and not _covers(above, found):
            break
        found = above or found
        if candidate.parent == candidate:
            break
        candidate = candidate.parent
    return found


def _covers(above: Module | None, below: Module) -> bool:
    """Whether a project found higher up is the same project as one found
    below it (`xtra` read as github.com/o/gocudnn/xtra, its parent as
    github.com/o/gocudnn): the higher root then holds every package the
    imports name, its siblings among them."""
    if above is None or not above.path or not below.path:
        return False
    relative = below.root.relative_to(above.root).as_posix()
    return below.path == f"{above.path}/{relative}" if relative != "." else below.path == above.path


def _implied_module(root: Path) -> Module | None:
    """The module path the imports read in `root` and its subdirectories
    imply for `root`: each import `host/x/.../d1/d2` naming a directory
    `root/d1/d2` of Go files (or `root` itself) other than the importer's
    votes for the prefix `host/x/...`; the prefix most imports name wins."""
    votes: dict[str, set[tuple[Path, str]]] = {}  # prefix -> (importer, import) pairs naming it
    around = _imports_around(root, _DEPTH)
    known: dict[Path, bool] = {}  # many imports name one directory: look at it once

    def importable(directory: Path) -> bool:
        if directory not in known:
            known[directory] = _importable(directory)
        return known[directory]

    if root.name == "src":
        # A GOPATH kept with the project (`src/cuda/driver` imported as
        # "cuda/driver"): import paths that are not the standard library's
        # name directories below src/.
        below = {
            imported for importer, imported in around
            if not _in_goroot(imported) and root / imported != importer and importable(root / imported)
        }
        if below:
            return Module(root, "")
    root_names: set[str] | None = None  # what an import naming root itself must end with
    for importer, imported in around:
        segments = imported.split("/")
        if len(segments) < 2 or "." not in segments[0]:
            continue  # the standard library, or a path no project is published at
        for kept in range(len(segments), 1, -1):
            target = root.joinpath(*segments[kept:])
            if target == root:
                # `xtra/kerns` importing github.com/o/cutil names no directory
                # by its path: root is that package only if it is named so.
                if root_names is None:
                    root_names = {root.name, declared_package_name(root) or root.name}
                if segments[-1] not in root_names:
                    continue
            if target != importer and importable(target):
                votes.setdefault("/".join(segments[:kept]), set()).add((importer, imported))

    root_package = declared_package_name(root) if votes else None

    def support(prefix: str) -> tuple[int, int]:
        # A checkout is usually named after its repository; a project's path
        # is usually host/owner/repo, shorter than the path of a package deep
        # in another project that happens to share a directory name.
        # (Or, for a checkout named otherwise, `izumo-master`, after the
        # package its root declares.)
        named = prefix.rsplit("/", 1)[-1] in (root.name, root_package)
        return len(votes[prefix]) + named, -prefix.count("/")

    # One import naming one directory may be another project's package that
    # shares a directory's name: it takes two, or the checkout's own name.
    supported = [prefix for prefix in sorted(votes) if support(prefix)[0] >= 2]
    return Module(root, max(supported, key=support)) if supported else None


def _imports_around(root: Path, depth: int = 1) -> list[tuple[Path, str]]:
    """(directory, import path) of the Go files in root and the directories
    up to `depth` levels below it, up to a bound on the files read."""
    found: list[tuple[Path, str]] = []
    directories, level = [root], [root]
    for _ in range(depth):
        below: list[Path] = []
        for directory in level:
            try:
                below += sorted(
                    Path(entry.path) for entry in os.scandir(directory)
                    if entry.is_dir(follow_symlinks=False) and not entry.name.startswith((".", "_")) and entry.name not in ("vendor", "testdata")
                    and not os.path.exists(os.path.join(entry.path, "go.mod"))  # a module of its own
                )
            except OSError:
                continue
        directories += below
        level = below
    read = 0
    for directory in directories:
        try:
            names = sorted(entry.name for entry in os.scandir(directory) if entry.name.endswith(".go") and entry.is_file())
        except OSError:
            continue
        for name in names:
            if read >= _GOPATH_FILES:
                return found
            read += 1
            try:
                with open(directory / name, "rb") as stream:
                    head = stream.read(_IMPORT_HEAD_BYTES)
            except OSError:
                continue
            found.extend((directory, imported) for imported in imports(head))
    return found


def _has_go_files(directory: Path) -> bool:
    try:
        return any(entry.name.endswith(".go") for entry in os.scandir(directory))
    except OSError:
        return False


# The first elements of the standard library's import paths (Go 1.24): in
# GOPATH mode GOROOT's packages win over a GOPATH's of the same path.
_GOROOT_ROOTS = frozenset({
    "archive", "bufio", "builtin", "bytes", "cmp", "compress", "container", "context", "crypto", "database",
    "debug", "embed", "encoding", "errors", "expvar", "flag", "fmt", "go", "hash", "html", "image", "index",
    "internal", "io", "iter", "log", "maps", "math", "mime", "net", "os", "path", "plugin", "reflect", "regexp",
    "runtime", "slices", "sort", "strconv", "strings", "structs", "sync", "syscall", "testing", "text", "time",
    "unicode", "unique", "unsafe", "weak", "vendor", "C",
})


def _in_goroot(import_path: str) -> bool:
    return import_path.split("/", 1)[0] in _GOROOT_ROOTS


def _importable(directory: Path) -> bool:
    """A directory of Go files other code can import: not a command
    (`package main`), not a module of its own."""
    return _has_go_files(directory) and not (directory / "go.mod").exists() and declared_package_name(directory) != "main"


def module_of(directory: Path) -> Module | None:
    """The module of the nearest go.mod at or above the directory."""
    current = directory
    while True:
        go_mod = current / "go.mod"
        try:
            if go_mod.is_file():
                with open(go_mod, "rb") as stream:
                    return _parse_go_mod(current, stream.read(_GO_MOD_BYTES))
        except OSError:
            return None
        if current.parent == current:
            return None
        current = current.parent


def _parse_go_mod(root: Path, data: bytes) -> Module | None:
    data = _COMMENT.sub(b"", data)
    match = _MODULE.search(data)
    if match is None:
        return None
    replacements: list[tuple[str, Path]] = []
    lines = [m.group(1) for m in _REPLACE_BLOCK.finditer(data)]
    lines += [line for line in data.splitlines() if line.strip().startswith(b"replace") and b"(" not in line]
    for chunk in lines:
        for replaced in _REPLACE_LINE.finditer(chunk):
            target = Path(os.path.normpath(root / os.fsdecode(replaced.group(2))))
            replacements.append((os.fsdecode(replaced.group(1)), target))
    version = _GO_DIRECTIVE.search(data)
    go_version = (int(version.group(1)), int(version.group(2))) if version else (1, 16)
    return Module(root, os.fsdecode(match.group(1)), tuple(replacements), go_version)


_AFTER_IMPORTS = re.compile(rb"^(?:func|type|var|const)[\s(]", re.MULTILINE)
_BLOCK_COMMENT = re.compile(rb"/\*.*?\*/", re.DOTALL)


def imports(data: bytes) -> list[str]:
    """The import paths a Go file's bytes declare (imports come before
    every other declaration: the rest of the file is not scanned; a cgo
    preamble's `const char *x;` is no Go declaration)."""
    text = _BLOCK_COMMENT.sub(b"", data[: _end_of_imports(data)])
    text = _COMMENT.sub(b"", text)
    found = [m.group(1) for m in _IMPORT_LINE.finditer(text)]
    for block in _IMPORT_BLOCK.finditer(text):
        found += _QUOTED.findall(block.group(1))
    return [os.fsdecode(path) for path in found]


def _end_of_imports(data: bytes) -> int:
    """Where the first declaration after the imports starts, one inside a
    block comment skipped."""
    for match in _AFTER_IMPORTS.finditer(data):
        at = match.start()
        if data.rfind(b"/*", 0, at) <= data.rfind(b"*/", 0, at):
            return at
    return len(data)


def in_module_imports(directory: Path, module: Module | None, imported: Iterable[str]) -> list[Path]:
    """The directories of the packages of the same module (or locally
    replaced) that the package in `directory` (of `module`) imports."""
    if module is None:
        return []
    prefixes = (module.path, *(prefix for prefix, _ in module.replacements))
    found: dict[Path, None] = {}
    for path in imported:
        if not path.startswith(prefixes):
            continue  # no package of the module at all
        target = module.directory(path)
        if target is not None and target != directory:
            found[target] = None
    return list(found)
