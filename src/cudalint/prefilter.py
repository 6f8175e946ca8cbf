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
from collections.abc import Callable, Iterable

from cudalint.catalog import Rule
from cudalint.knowledge import Family, Knowledge


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


def needles_for(rules: Iterable[Rule], knowledge: Knowledge, enabled: frozenset[str]) -> tuple[bytes, ...]:
    found: set[bytes] = set()
    for rule in rules:
        if rule.id in enabled and rule.needles is not None:
            found |= rule.needles(knowledge)
    return tuple(sorted(found))


def may_match(contents: Iterable[bytes], needles: tuple[bytes, ...]) -> bool:
    """Whether any of these bytes holds any needle."""
    plan = _plan(needles)
    return any(_holds(data, plan) for data in contents)


def _holds(data: bytes, plan: tuple[tuple[bytes, tuple[bytes, ...]], ...]) -> bool:
    for guard, group in plan:
        if guard in data and (not group or any(needle in data for needle in group)):
            return True
    return False


@functools.lru_cache(maxsize=16)
def _plan(needles: tuple[bytes, ...]) -> tuple[tuple[bytes, tuple[bytes, ...]], ...]:
    """The needles as few scans of the bytes as give the same answer: a
    needle that holds another is dropped (`UnlockOSThread` holds
    `LockOSThread`), and needles sharing a start (the C API's `C.cu...`,
    `C.nvml...`) are looked for only where that start occurs. Each entry
    is (guard, needles): the guard alone where the group is empty."""
    kept = sorted({n for n in needles if not any(o != n and o in n for o in needles)})
    groups: dict[bytes, list[bytes]] = {}
    for needle in kept:
        groups.setdefault(needle[:2], []).append(needle)
    plan = []
    for start, group in sorted(groups.items()):
        if len(group) > 2 and len(start) == 2:
            plan.append((start, tuple(group)))
        else:
            plan.extend((needle, ()) for needle in group)
    return tuple(plan)
