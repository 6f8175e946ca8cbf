"""The prefilter: a byte search that keeps the parser away from code no pass
can say anything about (in a large repository, most of it).

The needles come from the loaded API knowledge through the rules that use it,
never from a hard-coded list, so a user's rules file for an in-house wrapper
widens the filter by itself. The decision is per directory: a package is
analysed whole or not at all, because facts such as "this function never
returns" may live in a file that mentions no CUDA at all.
"""

from __future__ import annotations

from collections.abc import Iterable

from cudalint.catalog import Rule
from cudalint.knowledge import Knowledge


def needles_for(rules: Iterable[Rule], knowledge: Knowledge, enabled: frozenset[str]) -> tuple[bytes, ...]:
    found: set[bytes] = set()
    for rule in rules:
        if rule.id in enabled and rule.needles is not None:
            found |= rule.needles(knowledge)
    return tuple(sorted(found))


def may_match(contents: Iterable[bytes], needles: tuple[bytes, ...]) -> bool:
    return any(needle in data for data in contents for needle in needles)
