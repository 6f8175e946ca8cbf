"""The rules, one module each: its ID, name, level, documentation, message
and check on one screen. Adding a rule is one module and one line below.

The registry is checked when it is imported: IDs are well-formed and unique,
every rule is documented in the four sections, every check declares the
analyses it reads and their requirements form no cycle.
"""

from __future__ import annotations

from cudalint.catalog import DOC_SECTIONS, RULE_ID, Rule
from cudalint.checks import (
    context_call_unlocked,
    defer_before_acquire,
    defer_in_loop,
    double_release,
    finalizer_double_release,
    finalizer_no_context,
    finalizer_only_release,
    go_c_width,
    go_memory_async,
    leak_on_path,
    lock_without_unlock,
    mismatched_release,
    overwrite_while_held,
    raw_device_pointer_escape,
    release_status_discarded,
    slice_header,
    status_blank,
    status_discarded,
    status_unchecked,
    uintptr_roundtrip,
    unlock_without_lock,
    unreachable_defer,
    use_after_release,
)
from cudalint.analyses.embeds import EMBEDS
from cudalint.analyses.procs import BOUND_FUNCTIONS
from cudalint.analyses.type_facts import ERROR_TYPES, FIELD_TYPES, NAMED_TYPES, VARIABLE_TYPES
from cudalint.analyses.noreturn import NORETURN
from cudalint.framework import Analysis, requirements
from cudalint.toolrules import TOOL_RULES

CHECKS: tuple[Rule, ...] = (
    leak_on_path.RULE,
    double_release.RULE,
    overwrite_while_held.RULE,
    use_after_release.RULE,
    mismatched_release.RULE,
    defer_in_loop.RULE,
    defer_before_acquire.RULE,
    unreachable_defer.RULE,
    status_discarded.RULE,
    status_blank.RULE,
    status_unchecked.RULE,
    release_status_discarded.RULE,
    context_call_unlocked.RULE,
    lock_without_unlock.RULE,
    unlock_without_lock.RULE,
    uintptr_roundtrip.RULE,
    raw_device_pointer_escape.RULE,
    slice_header.RULE,
    go_memory_async.RULE,
    finalizer_no_context.RULE,
    go_c_width.RULE,
    finalizer_double_release.RULE,
    finalizer_only_release.RULE,
)


# The analyses whose facts a package exports for its importers: every one
# with a `facts` hook that a rule requires, and the no-return verdicts the
# CFG builder reads. They are exported whatever rules a run enables, so that
# what a package tells its importers never depends on the run's selection.
FACT_ANALYSES: tuple[Analysis, ...] = tuple(sorted(
    (analysis for analysis in requirements((*(a for rule in CHECKS for a in rule.requires), NORETURN, EMBEDS, NAMED_TYPES, FIELD_TYPES, VARIABLE_TYPES, ERROR_TYPES, BOUND_FUNCTIONS)) if analysis.facts is not None),
    key=lambda analysis: analysis.name,
))


class RegistryError(Exception):
    pass


def _acyclic(analysis: Analysis, path: tuple[Analysis, ...] = ()) -> None:
    if analysis in path:
        names = " -> ".join(a.name for a in (*path, analysis))
        raise RegistryError(f"analysis requirements form a cycle: {names}")
    for required in analysis.requires:
        _acyclic(required, (*path, analysis))


def validate(rules: tuple[Rule, ...]) -> None:
    """Reject what would make a rule unusable or a result unreachable."""
    seen: set[str] = set()
    for rule in rules:
        if not RULE_ID.fullmatch(rule.id):
            raise RegistryError(f"{rule.id!r} is not a rule ID (CL and three digits)")
        if rule.id in seen:
            raise RegistryError(f"{rule.id} is registered twice")
        seen.add(rule.id)
        missing = [title for title in DOC_SECTIONS if not rule.section(title)]
        if missing and not rule.retired:
            raise RegistryError(f"{rule.id} lacks documentation sections: {', '.join(missing)}")
        if not rule.summary or not rule.name:
            raise RegistryError(f"{rule.id} lacks a name or summary")
        if rule.check is not None and rule.needles is None:
            raise RegistryError(f"{rule.id} has a check but declares no prefilter needles")
        for analysis in rule.requires:
            _acyclic(analysis)


def all_rules() -> list[Rule]:
    return sorted((*CHECKS, *TOOL_RULES), key=lambda r: r.id)


def rule_by_id(rule_id: str) -> Rule | None:
    return next((rule for rule in all_rules() if rule.id == rule_id.upper()), None)


validate((*CHECKS, *TOOL_RULES))
