"""The resource engine: what happens to every acquired handle on every path.

For each acquisition (an origin) the engine walks the function's CFG from
the acquiring call, carrying a small state: which variables hold the handle,
whether it is held or already released, the variable that carries the
acquire's status (a proxy) and whether a deferred release will run at exit.
The walk is a breadth-first search over (node, state) pairs, so it is exact
along each path up to the state's precision, terminates (states are finite),
and yields the shortest witness path for every finding.

The semantics are the design's (docs/design.md, *Resources*):

* held only on success: a branch on which the status proxy (or the handle
  itself, compared with nil) says the acquire failed holds nothing;
* released by a release call, by a `defer` of one registered after the
  acquisition (its arguments are evaluated then), or by a deferred closure
  that releases the variable at exit on any of its paths;
* transferred (the engine stops following it) when returned, stored in a
  field, index, map, global or through a pointer, sent, captured by an
  escaping closure, or passed to a function that is not known to borrow;
* passed to a function of this package: the callee's per-parameter summary
  decides (releases, retains, borrows), computed by this same walk;
* paths ending in panic or process exit leak nothing; goroutine exits do.

Rules (CL1xx, CL2xx, CL3xx, CL5xx) read the outcomes through the
`lifetimes` analysis; nothing here reports findings.

The package is cut by job: `outcomes` (the data rules read), `states` (what
a walk carries and records), `origins` (acquisitions), `handouts` (what
wrappers give their callers), `walk` (the path walk), `closures` (func
literals and defers), `effects` (callees' summaries), `resources` (what a
variable may hold), `collect` (walks turned into outcomes), `facts` (what
the package's exported functions tell importers) and `engine` (the front
that wires them and answers rules and analyses).
"""

from __future__ import annotations

from cudalint.analyses.calls import CALLS
from cudalint.analyses.lifetimes.engine import UNIT_BUDGET, Engine
from cudalint.analyses.lifetimes.facts import ResourceEffects, exported_effects
from cudalint.analyses.lifetimes.outcomes import (
    DoubleRelease, Effect, Leak, Lost, Mismatch, Origin, Overwrite, Summary, UnitLifetimes, UseAfterRelease,
)
from cudalint.analyses.owners import OWNERS
from cudalint.analyses.status import STATUS
from cudalint.analyses.uses import USES
from cudalint.framework import Analysis

__all__ = [
    "LIFETIMES", "UNIT_BUDGET", "DoubleRelease", "Effect", "Engine", "Leak", "Lost", "Mismatch", "Origin",
    "Overwrite", "Summary", "UnitLifetimes", "UseAfterRelease",
]

LIFETIMES: Analysis[Engine] = Analysis(
    "lifetimes", __doc__ or "",
    lambda p: Engine(
        p.cfgs, p.result_of(CALLS), p.result_of(USES), p.result_of(OWNERS), p.result_of(STATUS), p.imported_facts(LIFETIMES),
    ),
    requires=(CALLS, USES, OWNERS, STATUS),
    facts=lambda p: exported_effects(p.result_of(LIFETIMES)), fact_type=ResourceEffects,
)
