"""The prefilter: a byte search that keeps the parser away from code no pass
can say anything about (in a large repository, most of it).

The needles come from the loaded API knowledge through the rules that use it,
never from a hard-coded list, so a user's rules file for an in-house wrapper
widens the filter by itself. The decision is per directory: a package is
analysed whole or not at all, because facts such as "this function never
returns" may live in a file that mentions no CUDA at all.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from collections.abc import Callable, Iterable

from cudalint.catalog import Rule
from cudalint.knowledge import Family, Knowledge
from cudalint.module import imports


def imports_of(knowledge: Knowledge, wanted: Callable[[Family], bool]) -> frozenset[bytes]:
    """A rule's needles: the quoted import paths of the knowledge families
    it has something to say about, how an import of a binding of one of
    them that is known by its name ends (`/nvml"`), and the shared
    libraries that export a C family (`nvml.dll`: its functions may be
    called by name, without cgo), and the packages whose types embed one
    of the family's (go-nvlib's device.Device embeds nvml.Device)."""
    described = frozenset(f'"{family.import_path}"'.encode() for family in knowledge.families if wanted(family))
    libraries = frozenset(library.encode() for family in knowledge.families if wanted(family) for library in family.libraries)
    embedding = frozenset(f'"{e.import_path}"'.encode() for family in knowledge.families if wanted(family) for e in family.embedded_by)
    return described | knowledge.named_bindings.needles(wanted) | libraries | embedding


def needles_for(
    rules: Iterable[Rule], knowledge: Knowledge, enabled: frozenset[str], *, for_importers: bool = False,
) -> tuple[bytes, ...]:
    """The enabled rules' needles; `for_importers`: only those that can
    make a package's summary matter to the packages importing it."""
    found: set[bytes] = set()
    for rule in rules:
        if rule.id in enabled and rule.needles is not None and not (for_importers and rule.local_needles):
            found |= rule.needles(knowledge)
    return tuple(sorted(found))


def all_of(*parts: bytes) -> bytes:
    """A needle that a file holds only if it holds every part (`.Pointer()`
    counts for CL501 only in a file that imports unsafe)."""
    return b"\0".join(parts)


def may_match(contents: Iterable[bytes], needles: tuple[bytes, ...]) -> bool:
    """Whether any of these bytes holds any needle."""
    plan = _plan(needles)
    return any(_holds(data, plan) for data in contents)


def file_matches(data: bytes, needles: tuple[bytes, ...], imported: Iterable[str] | None = None) -> bool:
    """Whether a file's bytes hold any needle; `imported`: its import paths
    where the caller has them already."""
    return _holds(data, _plan(needles), imported)


@dataclass(frozen=True)
class _Plan:
    """The needles as few scans of the bytes as give the same answer. An
    import path needle (`"github.com/NVIDIA/go-nvml/pkg/nvml"`, or how a
    binding's path ends, `/nvml"`) is answered from the file's imports, not
    by a scan: on a large module every file mentions `"github.com/`, and
    fifty import paths were fifty scans of each file. `"C"` stays a scan
    (a cgo preamble may hide the imports from a quick reading)."""

    imports: frozenset[str]
    import_suffixes: tuple[str, ...]
    scans: tuple[bytes | re.Pattern[bytes], ...]
    every: tuple[tuple[bytes, ...], ...]  # the parts of `all_of` needles
    cgo: bool  # `"C"`: an import of C


def _holds(data: bytes, plan: _Plan, imported: Iterable[str] | None = None) -> bool:
    for scan in plan.scans:
        if scan in data if isinstance(scan, bytes) else scan.search(data):
            return True
    if any(all(part in data for part in parts) for parts in plan.every):
        return True
    if plan.cgo and b'"C"' in data and _CGO_IMPORT.search(data):
        return True
    if plan.imports or plan.import_suffixes:
        for path in imports(data) if imported is None else imported:
            if path in plan.imports or path.endswith(plan.import_suffixes):
                return True
    return False


def _import_needle(needle: bytes) -> bool:
    """`"import/path"` or `/word"`; not `"C"`."""
    body = needle[1:-1]
    return needle != b'"C"' and needle[:1] in (b'"', b"/") and needle.endswith(b'"') and bool(body) and b'"' not in body


# `import "C"`, or `"C"` on a line of its own in an import block: a scan
# (a cgo preamble may hide the imports from a quick reading), but of the
# import, not of any `"C"` (a string in a test table, a Dockerfile label).
_CGO_IMPORT = re.compile(rb'(?m)^[ \t]*(?:import[ \t]*)?"C"[ \t]*(?://.*|/\*.*)?\r?$')


@functools.lru_cache(maxsize=16)
def _plan(needles: tuple[bytes, ...]) -> _Plan:
    """A needle that holds another is dropped (`UnlockOSThread` holds
    `LockOSThread`), and needles sharing their first two bytes (the C API's
    `C.cu...`, the libraries' `lib...`) are one regular expression: a scan
    for their common start, then a test of each needle where it occurs,
    was a scan per needle of nearly every file (`li`, `cu` and `C.` are in
    most Go files), 0.6 s of moby's 80 MB where one expression takes 0.1 s.
    Each scan is a needle or the expression of a group."""
    every = tuple(tuple(needle.split(b"\0")) for needle in needles if b"\0" in needle)
    needles = tuple(needle for needle in needles if b"\0" not in needle)
    paths = [needle for needle in needles if _import_needle(needle)]
    exact = frozenset(os.fsdecode(n[1:-1]) for n in paths if n.startswith(b'"'))
    suffixes = tuple(sorted(os.fsdecode(n[:-1]) for n in paths if n.startswith(b"/")))
    scanned = [needle for needle in needles if needle not in paths]
    kept = sorted({n for n in scanned if not any(o != n and o in n for o in scanned)})
    groups: dict[bytes, list[bytes]] = {}
    cgo = b'"C"' in kept
    for needle in kept:
        if needle == b'"C"':
            continue
        groups.setdefault(needle[:2], []).append(needle)
    scans: list[bytes | re.Pattern[bytes]] = []
    for _, group in sorted(groups.items()):
        if len(group) == 1:
            scans.extend(group)
        else:
            scans.append(re.compile(b"|".join(re.escape(needle) for needle in group)))
    return _Plan(exact, suffixes, tuple(scans), every, cgo)
