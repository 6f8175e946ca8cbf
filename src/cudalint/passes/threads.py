"""OS-thread binding (CL4xx): CUDA keeps the current device and the driver's
context stack per OS thread, while the Go scheduler moves goroutines between
threads at will. Code that sets a device or pushes a context must pin its
goroutine with runtime.LockOSThread first, and undo the pin consistently."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from tree_sitter import Node

from cudalint import syntax
from cudalint.analyzer import Analyzer, Pass
from cudalint.catalog import Level, Rule
from cudalint.cfg import CFG, ExitKind, NodeKind
from cudalint.facts import CalleeKind
from cudalint.functions import LiteralUse, Unit, UnitKind
from cudalint.knowledge import Knowledge
from cudalint.lazy import networkx as nx
from cudalint.scope import SymbolKind

CL401 = Rule(
    "CL401", "context-call-unlocked", Level.ERROR,
    "A thread-bound CUDA call in a goroutine that has not locked its OS thread.",
    """
    ## What it does
    Reports a call that binds CUDA state to the calling OS thread
    (`cudaSetDevice`, `cuCtxSetCurrent`, `cuCtxPushCurrent`, `cuCtxCreate`,
    ... as `rules/*.toml` lists them under `[threads]`) in a function or `go`
    literal that has not called `runtime.LockOSThread` on every path before
    it, directly or through a function of the package that locks, and whose
    callers in the package have not either. A function nothing in the package
    calls (or only itself) counts as unlocked; a `go` literal starts unlocked,
    and so does a literal kept in a variable and started with `go v()`. A
    func literal passed as an argument runs in a context cudalint cannot see
    (often a locked worker goroutine fed through a channel) and is not
    reported, nor is a function or method used as a value (a callback). Lock
    wrappers count as locks: a function that returns with the thread locked,
    or locked exactly where its error result is nil (`lockDevice` unlocking
    on failure); the unlock half of an exported lock/unlock pair runs locked.
    A deferred call runs after the defers registered after it, so
    `defer restore(); defer runtime.UnlockOSThread()` runs `restore` unlocked.

    ## Why is this bad?
    The Go scheduler may move the goroutine to another OS thread between any
    two statements. The next CUDA call then runs with another thread's
    current device or context: allocations land on the wrong GPU, or the
    driver reports `CUDA_ERROR_INVALID_CONTEXT`, intermittently and under load.

    ## Example
    ```go
    go func(dev int) {
        C.cudaSetDevice(C.int(dev))
        run(dev)
    }(i)
    ```

    ## Use instead
    ```go
    go func(dev int) {
        runtime.LockOSThread()
        defer runtime.UnlockOSThread()
        if st := C.cudaSetDevice(C.int(dev)); st != C.cudaSuccess {
            return
        }
        run(dev)
    }(i)
    ```
    """,
    tags=("correctness", "concurrency"),
)

CL402 = Rule(
    "CL402", "lock-without-unlock", Level.WARNING,
    "runtime.LockOSThread undone on some paths to a return but not on others.",
    """
    ## What it does
    Reports a `runtime.LockOSThread` call that is undone by
    `runtime.UnlockOSThread` (called, deferred, or in a deferred closure) on
    some paths to a normal return but not on others; paths that end the
    goroutine (`t.Fatal`, `runtime.Goexit`) or panic do not count. A function
    that never unlocks is taken to lock on purpose (a process-lifetime lock in
    `init`, a worker goroutine that owns its thread, a lock wrapper) and is
    not reported, nor is a lock wrapper that returns locked exactly where its
    error result is nil. Conditions on a flag the function never assigns are
    followed: `if pin { Lock }` ... `if pin { Unlock }` is balanced.

    The body of a goroutine (a `go` literal, or a function only ever started
    with `go`) is not reported either: returning from it still locked is the
    documented way to have Go terminate a thread whose state is spoiled.

    ## Why is this bad?
    On the paths that skip the unlock the calling goroutine stays wired to
    its thread, so work the caller does next, and whatever goroutine the
    thread serves later, runs with the CUDA context left behind.

    ## Example
    ```go
    runtime.LockOSThread()
    if err := setup(); err != nil {
        return err // still locked
    }
    runtime.UnlockOSThread()
    ```

    ## Use instead
    ```go
    runtime.LockOSThread()
    defer runtime.UnlockOSThread()
    ```
    """,
    tags=("correctness", "concurrency"),
)

CL403 = Rule(
    "CL403", "unlock-without-lock", Level.WARNING,
    "runtime.UnlockOSThread with no lock before it on some path.",
    """
    ## What it does
    Reports a `runtime.UnlockOSThread` (called or deferred) that some path
    reaches without a `runtime.LockOSThread` before it, in a function whose
    callers in the package have not locked either. The unlock half of a
    lock/unlock wrapper pair (`func lockGPU()` / `func unlockGPU()`) is fine.

    ## Why is this bad?
    Locks nest: an unmatched unlock can undo a lock taken by someone else
    (a caller, or a library that pinned the thread on purpose), releasing a
    thread that CUDA state was bound to.

    ## Example
    ```go
    func work() error {
        defer runtime.UnlockOSThread()
        return check(C.cudaSetDevice(0))
    }
    ```

    ## Use instead
    ```go
    func work() error {
        runtime.LockOSThread()
        defer runtime.UnlockOSThread()
        return check(C.cudaSetDevice(0))
    }
    ```
    """,
    tags=("correctness", "concurrency"),
)


class Event(str, Enum):
    LOCK = "lock"
    UNLOCK = "unlock"
    DEFER_UNLOCK = "defer-unlock"
    BOUND = "bound"  # a thread-bound CUDA call
    CALL = "call"  # a call of a function of this package (its entry state matters)


@dataclass(frozen=True)
class Happening:
    event: Event
    call: Node
    target: Unit | None = None  # CALL: the callee
    spawned: bool = False  # CALL through `go`
    deferred: bool = False  # CALL through `defer`: its effect happens at return


_RUNTIME = "runtime"
# Locks nest (Go counts them); counts above this are all "locked enough".
_CAP = 4


@dataclass
class _Threads:
    """Lock facts of one package, computed once for the three rules."""

    p: Pass
    events: dict[Unit, dict[int, list[Happening]]] = field(default_factory=dict)
    wrappers: dict[Unit, Event | None] = field(default_factory=dict)
    entry: dict[Unit, int | None] = field(default_factory=dict)  # lock count; None: a context we cannot see
    locked: dict[Unit, dict[int, int]] = field(default_factory=dict)

    # -- events -------------------------------------------------------------------

    def happenings(self, unit: Unit) -> dict[int, list[Happening]]:
        found = self.events.get(unit)
        if found is None:
            found = self.events[unit] = self._scan(unit)
        return found

    def _scan(self, unit: Unit) -> dict[int, list[Happening]]:
        graph = self.p.cfgs.graphs[unit]
        found: dict[int, list[Happening]] = {}
        for n in graph.statement_nodes():
            for root in graph.evaluated(n):
                for call in _calls(root):
                    happening = self._classify(call)
                    if happening is not None:
                        found.setdefault(n, []).append(happening)
            if graph.kind(n) is NodeKind.DEFER:
                found.setdefault(n, []).extend(self._deferred_closure_unlocks(graph.ast(n)))
        return {n: items for n, items in found.items() if items}

    def _deferred_closure_unlocks(self, statement: Node | None) -> list[Happening]:
        """`defer func() { ...; runtime.UnlockOSThread() }()` unlocks when the
        function returns, like a deferred unlock."""
        inner = syntax.children(statement) if statement is not None else []
        call = syntax.unparen(inner[0]) if inner else None
        function = syntax.unparen(call.child_by_field_name("function")) if call is not None and call.type == "call_expression" else None
        if function is None or function.type != "func_literal":
            return []
        body = function.child_by_field_name("body")
        for nested in _calls(body) if body is not None else ():
            happening = self._classify(nested)
            if happening is not None and (happening.event is Event.UNLOCK or (
                happening.event is Event.CALL and happening.target is not None and self.wrapper(happening.target) is Event.UNLOCK
            )):
                return [Happening(Event.DEFER_UNLOCK, call)]
        return []

    def _classify(self, call: Node) -> Happening | None:
        fact = self.p.facts.calls.get(call)
        statement = _statement_of(call)
        if fact is not None and fact.import_path == _RUNTIME:
            if fact.name == "LockOSThread" and statement != "defer_statement":
                return Happening(Event.LOCK, call)
            if fact.name == "UnlockOSThread":
                return Happening(Event.DEFER_UNLOCK if statement == "defer_statement" else Event.UNLOCK, call)
            return None
        if fact is not None and fact.api is not None and fact.api.thread_bound:
            return Happening(Event.BOUND, call)
        callee = self.p.facts.callee(call)
        if callee.kind is CalleeKind.LOCAL and callee.target is not None and callee.target.kind is not UnitKind.LITERAL:
            return Happening(
                Event.CALL, call, callee.target,
                spawned=statement == "go_statement", deferred=statement == "defer_statement",
            )
        return None

    # -- per-function dataflow ----------------------------------------------------

    def wrapper(self, unit: Unit, stack: frozenset[Unit] = frozenset()) -> Event | None:
        """LOCK for a function that leaves its caller's thread locked on every
        return, UNLOCK for one that only unlocks it; None for anything else.
        (Locks nest, so a function that locks and defers the unlock is neither.)"""
        if unit in self.wrappers:
            return self.wrappers[unit]
        if unit in stack or unit not in self.p.cfgs.graphs:
            return None
        stack = stack | {unit}
        events = {h.event for hs in self.happenings(unit).values() for h in hs}
        effect = None
        on_return = self._locked_on_return(unit, 0, stack)
        if (on_return is not None and on_return >= 1) or self.locks_on_success(unit, stack):
            effect = Event.LOCK
        elif Event.LOCK not in events and self._locked_on_return(unit, 1, stack) == 0:
            effect = Event.UNLOCK
        self.wrappers[unit] = effect
        return effect

    def locks_on_success(self, unit: Unit, stack: frozenset[Unit] = frozenset()) -> bool:
        """A lock wrapper that reports failure: it returns with the thread
        locked exactly where its error result is nil, and unlocked where it
        reports an error (`if err := lockDevice(d); err != nil { return err }`)."""
        if not _returns_error(unit):
            return False
        outcomes = _return_outcomes(self, self.p.cfgs.graphs[unit], stack)
        if not outcomes:
            return False
        success = [locked for statement, locked in outcomes if _returns_nil_error(statement)]
        failure = [locked for statement, locked in outcomes if not _returns_nil_error(statement)]
        return bool(success) and all(success) and not any(failure)

    def _locked_on_return(self, unit: Unit, entry: int, stack: frozenset[Unit]) -> int | None:
        graph = self.p.cfgs.graphs[unit]
        exit_node = graph.exits[ExitKind.RETURN]
        if exit_node not in graph.live:
            return None
        deferred = sum(1 for hs in self.happenings(unit).values() for h in hs if self.defers_unlock(h, stack))
        return max(self.flow(unit, entry, stack).get(exit_node, entry) - deferred, 0)

    def defers_unlock(self, happening: Happening, stack: frozenset[Unit] = frozenset()) -> bool:
        """`defer runtime.UnlockOSThread()`, or `defer unlockGPU()` of an unlock wrapper."""
        if happening.event is Event.DEFER_UNLOCK:
            return True
        return (
            happening.event is Event.CALL and happening.deferred and happening.target is not None
            and self.wrapper(happening.target, stack) is Event.UNLOCK
        )

    def unlocks(self, happening: Happening) -> bool:
        if happening.event is Event.UNLOCK:
            return True
        return (
            happening.event is Event.CALL and not happening.deferred and not happening.spawned
            and happening.target is not None and self.wrapper(happening.target) is Event.UNLOCK
        )

    def locks(self, happening: Happening) -> bool:
        if happening.event is Event.LOCK:
            return True
        return (
            happening.event is Event.CALL and not happening.deferred and not happening.spawned
            and happening.target is not None and self.wrapper(happening.target) is Event.LOCK
        )

    def flow(self, unit: Unit, entry: int, stack: frozenset[Unit] = frozenset()) -> dict[int, int]:
        """The lock count held on every path before each node (a greatest
        fixpoint: unreachable nodes keep the cap and are never reported)."""
        graph = self.p.cfgs.graphs[unit]
        happenings = self.happenings(unit)
        before = {n: _CAP for n in graph.graph.nodes}
        before[graph.entry] = entry
        visited = {graph.entry}
        queue = deque([graph.entry])
        while queue:
            n = queue.popleft()
            after = self._apply(before[n], happenings.get(n, ()), stack)
            for successor in graph.graph.successors(n):
                value = min(before[successor], after)
                if successor == graph.entry:
                    value = min(value, entry)
                if value != before[successor] or successor not in visited:
                    before[successor] = value
                    visited.add(successor)
                    queue.append(successor)
        return before

    def _apply(self, count: int, happenings, stack: frozenset[Unit]) -> int:
        for happening in happenings:
            effect = happening.event
            if effect is Event.CALL and not (happening.spawned or happening.deferred) and happening.target is not None:
                effect = self.wrapper(happening.target, stack)
            if effect is Event.LOCK:
                count = min(count + 1, _CAP)
            elif effect is Event.UNLOCK:
                count = max(count - 1, 0)
        return count

    # -- contexts -----------------------------------------------------------------

    def solve(self) -> None:
        """Entry states: a function is locked on entry when every call of it in
        the package is made from a locked point; iterate to a fixpoint."""
        units = self._relevant()
        sites: dict[Unit, list[tuple[Unit, int, Happening]]] = {}
        for unit in units:
            for n, happenings in self.happenings(unit).items():
                for happening in happenings:
                    if happening.event is Event.CALL and happening.target is not None:
                        sites.setdefault(happening.target, []).append((unit, n, happening))
        as_values = self._used_as_values(units)
        init_locks = self._main_locked_by_init(units)
        for unit in units:
            if unit.kind is UnitKind.LITERAL:
                continue
            if unit in as_values:
                self.entry[unit] = None
            elif unit.name == "main" and self.p.package.name == "main" and init_locks:
                self.entry[unit] = 1
            else:
                self.entry[unit] = _CAP if sites.get(unit) else 0
        exported_lock = any(self.wrapper(u) is Event.LOCK and _exported(u) for u in units)
        for unit in units:
            # The unlock half of an exported lock/unlock pair runs where the
            # lock half left the thread: locked.
            if exported_lock and self.entry.get(unit) == 0 and _exported(unit) and self.wrapper(unit) is Event.UNLOCK:
                self.entry[unit] = 1
        for unit in list(sites):
            # A function calling itself is no caller that could have locked for it.
            sites[unit] = [site for site in sites[unit] if site[0] is not unit]
            if not sites[unit] and self.entry.get(unit) is not None and unit.kind is not UnitKind.LITERAL:
                self.entry[unit] = 0
        for _ in range(len(units) + 2):
            changed = False
            for unit in units:
                entry = self._entry_of(unit)
                self.locked[unit] = self.flow(unit, entry) if entry is not None else {}
            for unit in units:
                if unit.kind is UnitKind.LITERAL or self.entry.get(unit) is None or not sites.get(unit):
                    continue
                value = min(
                    0 if happening.spawned else self._locked_at(caller, n, happening)
                    for caller, n, happening in sites[unit]
                )
                if unit.name == "main" and self.p.package.name == "main" and init_locks:
                    value = max(value, 1)
                if value != self.entry[unit]:
                    self.entry[unit] = value
                    changed = True
            if not changed:
                break

    def _entry_of(self, unit: Unit) -> int | None:
        if unit.kind is not UnitKind.LITERAL:
            return self.entry.get(unit)
        use = unit.use
        if use is LiteralUse.GO:
            return 0
        if use in (LiteralUse.CALLED, LiteralUse.DEFERRED) and unit.parent is not None:
            parent_entry = self._entry_of(unit.parent)
            if parent_entry is None:
                return None
            graph = self.p.cfgs.graphs.get(unit.parent)
            holder = _node_of(graph, unit.node) if graph is not None else None
            if holder is None:
                return None
            states = self.locked.get(unit.parent) or self.flow(unit.parent, parent_entry)
            return states.get(holder, _CAP)
        if use is LiteralUse.STORED and unit.stored_in is not None and unit.stored_in.is_local and unit.parent is not None:
            return self._stored_literal_entry(unit)
        return None  # passed, stored elsewhere or returned: it runs somewhere we cannot see

    def _stored_literal_entry(self, unit: Unit) -> int | None:
        """`run := func() {...}` then `go run()` or `run()`: the literal runs
        where the variable is called; any other use hands it on."""
        parent = unit.parent
        graph = self.p.cfgs.graphs.get(parent)
        parent_entry = self._entry_of(parent)
        if graph is None or parent_entry is None:
            return None
        states = self.locked.get(parent) or self.flow(parent, parent_entry)
        counts = []
        for node in self.p.facts.references(unit.stored_in):
            if self.p.package.resolution.declarations.get(node) is unit.stored_in:
                continue
            call = node.parent
            if call is None or call.type != "call_expression" or call.child_by_field_name("function") != node:
                return None  # used as a value
            if _statement_of(call) == "go_statement":
                counts.append(0)
                continue
            holder = _node_of(graph, call)
            if holder is None:
                return None
            counts.append(states.get(holder, _CAP))
        return min(counts) if counts else None

    def _locked_at(self, unit: Unit, n: int, happening: Happening) -> int:
        """The lock count when the call `happening` at node n runs: just
        before it, or, for a deferred call, at the return after the defers
        registered later (they run first) have run."""
        states = self.locked.get(unit)
        if not states:
            entry = self._entry_of(unit)
            return _CAP if entry is None else entry
        if happening.deferred:
            graph = self.p.cfgs.graphs[unit]
            at_return = states.get(graph.exits[ExitKind.RETURN], _CAP)
            later_unlocks = sum(
                1 for m, items in self.happenings(unit).items() if m != n and nx.has_path(graph.graph, n, m)
                for h in items if self.defers_unlock(h)
            )
            return max(min(at_return, states.get(n, _CAP)) - later_unlocks, 0)
        locked = states.get(n, _CAP)
        for earlier in self.happenings(unit).get(n, ()):
            if earlier is happening:
                break
            locked = self._apply(locked, (earlier,), frozenset())
        return locked

    def stable(self, symbol) -> bool:
        """A local flag the function never assigns after declaring it."""
        if symbol.kind is not SymbolKind.VAR or not symbol.is_local:
            return False
        declarations = self.p.package.resolution.declarations
        for node in self.p.facts.references(symbol):
            if declarations.get(node) is symbol:
                continue
            parent = node.parent
            if parent is not None and parent.type in ("inc_statement", "dec_statement"):
                return False
            if parent is not None and parent.type == "expression_list" and parent.parent is not None and (
                parent.parent.type in ("assignment_statement", "short_var_declaration")
                and parent.parent.child_by_field_name("left") == parent
            ):
                return False
            if parent is not None and parent.type == "unary_expression" and syntax.text(parent.child_by_field_name("operator")) == "&":
                return False
        return True

    def goroutine_body(self, unit: Unit) -> bool:
        """A function that only ever runs as a goroutine: returning from it
        locked is how Go disposes of a thread (it terminates it)."""
        if unit.kind is UnitKind.LITERAL:
            if unit.use is LiteralUse.GO:
                return True
            variable = unit.stored_in
            if unit.use is not LiteralUse.STORED or variable is None or not variable.is_local:
                return False
            calls = self._calls_of_variable(unit, variable)
            return bool(calls) and all(spawned for spawned in calls)
        calls = self.p.facts.calls_of(unit)
        return bool(calls) and all(_statement_of(call) == "go_statement" for call in calls)

    def _calls_of_variable(self, literal: Unit, variable) -> list[bool]:
        """For each call through a local variable bound to a literal: is it `go v(...)`?"""
        spawned = []
        scope = literal.parent.node if literal.parent is not None else literal.node
        resolution = self.p.package.resolution
        for node in syntax.walk(scope):
            if node.type == "call_expression":
                function = syntax.unparen(node.child_by_field_name("function"))
                if function is not None and function.type == "identifier" and resolution.symbol(function) is variable:
                    spawned.append(_statement_of(node) == "go_statement")
        return spawned

    def _relevant(self) -> list[Unit]:
        """The units whose lock state matters: those with a lock, an unlock or
        a thread-bound call, the functions calling them (their lock state at
        the call is the callee's entry state), transitively, and the
        functions enclosing relevant literals."""
        graphs = self.p.cfgs.graphs
        by_node = {u.node: u for u in self.p.package.units}
        pending = []
        for call, fact in self.p.facts.calls.items():
            threads = (fact.import_path == _RUNTIME and fact.name in ("LockOSThread", "UnlockOSThread")) or (
                fact.api is not None and fact.api.thread_bound
            )
            function = syntax.enclosing_function(call) if threads else None
            if function is not None and function in by_node:
                pending.append(by_node[function])
        relevant: set[Unit] = set()
        while pending:
            unit = pending.pop()
            if unit in relevant or not self.p.cfgs.analysable(unit):
                continue
            relevant.add(unit)
            if unit.parent is not None and unit.parent in graphs:
                pending.append(unit.parent)
            if unit.kind is not UnitKind.LITERAL:
                for call in self.p.facts.calls_of(unit):
                    function = syntax.enclosing_function(call)
                    if function in by_node:
                        pending.append(by_node[function])
            elif unit.stored_in is not None:
                for node in self.p.facts.references(unit.stored_in):
                    function = syntax.enclosing_function(node)
                    if function in by_node:
                        pending.append(by_node[function])
        return [u for u in self.p.package.units if u in relevant and u in graphs]

    def _used_as_values(self, units: list[Unit]) -> set[Unit]:
        """Functions and methods referred to other than by calling them
        (callbacks, method values)."""
        found: set[Unit] = set()
        resolution = self.p.package.resolution
        for unit in units:
            if unit.kind is UnitKind.METHOD and self.p.facts.method_values(unit):
                found.add(unit)
            if unit.symbol is None:
                continue
            for node in self.p.facts.references(unit.symbol):
                if resolution.declarations.get(node) is unit.symbol:
                    continue
                parent = node.parent
                if parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == node:
                    continue
                found.add(unit)
        return found

    def _main_locked_by_init(self, units: list[Unit]) -> bool:
        """A process-lifetime lock: `func init() { runtime.LockOSThread() }`
        pins the main goroutine, in which main then runs."""
        for unit in units:
            if unit.name == "init" and unit.kind is UnitKind.FUNCTION:
                states = self.flow(unit, 0)
                graph = self.p.cfgs.graphs[unit]
                if graph.exits[ExitKind.RETURN] in graph.live and states.get(graph.exits[ExitKind.RETURN], 0) >= 1:
                    return True
        return False


def _returns_error(unit: Unit) -> bool:
    result = unit.node.child_by_field_name("result")
    if result is None:
        return False
    if result.type != "parameter_list":
        return syntax.text(result) == "error"
    declarations = syntax.children(result)
    return bool(declarations) and syntax.text(declarations[-1].child_by_field_name("type")) == "error"


def _returns_nil_error(statement: Node | None) -> bool:
    values = next((c for c in statement.named_children if c.type == "expression_list"), None) if statement is not None else None
    expressions = syntax.expressions(values) if values is not None else []
    return bool(expressions) and syntax.text(expressions[-1]) == "nil"


def _return_outcomes(threads: "_Threads", graph: CFG, stack: frozenset[Unit]) -> list[tuple[Node | None, bool]]:
    """(return statement, locked when it returns) on each path from the entry,
    with the thread unlocked at entry (deferred unlocks applied)."""
    found: list[tuple[Node | None, bool]] = []
    seen = set()
    queue = deque([(graph.entry, 0, 0)])
    while queue:
        n, count, deferred = queue.popleft()
        for happening in threads.happenings(graph.unit).get(n, ()):
            if threads.defers_unlock(happening, stack):
                deferred = min(deferred + 1, _CAP)
            else:
                count = threads._apply(count, (happening,), stack)
        for successor in graph.graph.successors(n):
            if graph.kind(successor) is NodeKind.EXIT:
                if graph.graph.nodes[successor]["exit"] is ExitKind.RETURN:
                    statement = graph.ast(n) if graph.kind(n) is NodeKind.RETURN else None
                    found.append((statement, count - deferred > 0))
                continue
            state = (successor, count, deferred)
            if state not in seen:
                seen.add(state)
                queue.append(state)
    return found


def _calls(root: Node):
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "call_expression":
            yield node
        if node.type == "func_literal":
            continue
        stack.extend(reversed(node.children))


def _statement_of(call: Node) -> str:
    parent = call.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return parent.type if parent is not None else ""


def _node_of(graph: CFG, node: Node) -> int | None:
    current: Node | None = node
    while current is not None:
        found = graph.node_of.get(current)
        if found is not None:
            return found
        current = current.parent
    return None


def _unlocks_somewhere(threads: _Threads, unit: Unit) -> bool:
    return any(
        threads.unlocks(h) or threads.defers_unlock(h) for hs in threads.happenings(unit).values() for h in hs
    )


def _lock_follows(threads: _Threads, graph: CFG, start: int) -> bool:
    """Whether every path from start to a return passes a lock: then a
    deferred unlock registered at start runs on a locked thread."""
    seen = {start}
    queue = deque([start])
    while queue:
        n = queue.popleft()
        for successor in graph.graph.successors(n):
            if graph.kind(successor) is NodeKind.EXIT:
                if graph.graph.nodes[successor]["exit"] is ExitKind.RETURN:
                    return False
                continue
            if any(threads.locks(h) for h in threads.happenings(graph.unit).get(successor, ())):
                continue
            if successor not in seen:
                seen.add(successor)
                queue.append(successor)
    return True


def _check_balance(p: Pass, threads: _Threads, unit: Unit, graph: CFG) -> None:
    """CL402: from each lock, do the paths to a return agree on unlocking?"""
    if not _unlocks_somewhere(threads, unit) or threads.goroutine_body(unit) or threads.locks_on_success(unit):
        return
    happenings = threads.happenings(unit)
    for n, items in happenings.items():
        for happening in items:
            if happening.event is not Event.LOCK or not graph.reachable(n):
                continue
            outcomes = _lock_outcomes(threads, graph, n, happening)
            if outcomes["unlocked"] and outcomes["locked"]:
                p.report(
                    "CL402", unit, happening.call,
                    f"runtime.LockOSThread is undone on some paths but not on the return at line "
                    f"{outcomes['locked'][0]}; add `defer runtime.UnlockOSThread()` right after it",
                )


def _branch(threads: _Threads, graph: CFG, attrs: dict, known: frozenset) -> frozenset | None:
    """Follow a branch, remembering the value of a flag it tests: a boolean
    that the function never assigns (`if pin { Lock }` ... `if pin { Unlock }`
    takes the same side twice). None: the branch contradicts what is known."""
    condition = syntax.unparen(attrs.get("cond")) if attrs else None
    if condition is None or condition.type != "identifier":
        return known
    symbol = threads.p.package.resolution.symbol(condition)
    if symbol is None or not threads.stable(symbol):
        return known
    value = attrs.get("polarity")
    if (symbol, not value) in known:
        return None
    return known | {(symbol, value)}


def _lock_outcomes(threads: _Threads, graph: CFG, lock_node: int, lock: Happening) -> dict[str, list[int]]:
    """From the entry, along feasible paths through the lock: is it undone
    (or a deferred unlock registered) by each return?"""
    outcomes: dict[str, list[int]] = {"locked": [], "unlocked": []}
    seen = set()
    queue = deque([(graph.entry, 0, 0, False, frozenset())])
    while queue:
        n, locked, deferred, active, known = queue.popleft()
        for happening in threads.happenings(graph.unit).get(n, ()):
            if happening is lock and n == lock_node:
                active, locked, deferred = True, 1, 0
                continue
            if not active:
                continue
            if threads.unlocks(happening):
                locked = max(locked - 1, 0)
            elif threads.defers_unlock(happening):
                deferred = min(deferred + 1, _CAP)
            elif threads.locks(happening):
                locked = min(locked + 1, _CAP)
        for successor in graph.graph.successors(n):
            if graph.kind(successor) is NodeKind.EXIT:
                if active and graph.graph.nodes[successor]["exit"] is ExitKind.RETURN:
                    key = "unlocked" if locked - deferred <= 0 else "locked"
                    outcomes[key].append(graph.line(n))
                continue
            facts = _branch(threads, graph, graph.graph.edges[n, successor], known)
            if facts is None:
                continue
            state = (successor, locked, deferred, active, facts)
            if state not in seen:
                seen.add(state)
                queue.append(state)
    return outcomes


def _unlocked_before(threads: _Threads, graph: CFG, entry: int, target: int, target_happening: Happening) -> bool:
    """Whether some feasible path reaches the unlock at target with nothing locked."""
    seen = set()
    queue = deque([(graph.entry, entry, frozenset())])
    while queue:
        n, count, known = queue.popleft()
        for happening in threads.happenings(graph.unit).get(n, ()):
            if n == target and happening is target_happening:
                if count == 0:
                    return True
                break
            count = threads._apply(count, (happening,), frozenset())
        if n == target:
            continue
        for successor in graph.graph.successors(n):
            if graph.kind(successor) is NodeKind.EXIT:
                continue
            facts = _branch(threads, graph, graph.graph.edges[n, successor], known)
            if facts is None:
                continue
            state = (successor, count, facts)
            if state not in seen:
                seen.add(state)
                queue.append(state)
    return False


def _concerns_threads(p: Pass) -> bool:
    return any(
        (fact.import_path == _RUNTIME and fact.name in ("LockOSThread", "UnlockOSThread"))
        or (fact.api is not None and fact.api.thread_bound)
        for fact in p.facts.calls.values()
    )


def run(p: Pass) -> None:
    if not _concerns_threads(p):
        return
    threads: _Threads = p.fact("threads", lambda: _solved(p))
    relevant = set(threads.locked)
    # An exported lock/unlock pair is an API for callers outside the package.
    exported_lock = any(threads.wrapper(u) is Event.LOCK and _exported(u) for u in threads.locked)
    for unit, graph in p.graphs_of(relevant):
        with p.isolating(unit):
            happenings = threads.happenings(unit)
            if not happenings or not graph.created:
                continue
            entry = threads._entry_of(unit)
            states = threads.locked.get(unit, {})
            for n, items in sorted(happenings.items()):
                if not graph.reachable(n):
                    continue
                locked = states.get(n, _CAP) if entry is not None else _CAP
                for happening in items:
                    exempt = threads.wrapper(unit) is Event.UNLOCK and _exported(unit) and exported_lock
                    if happening.event is Event.BOUND and entry is not None and locked == 0:
                        p.report("CL401", unit, happening.call, _unlocked_message(unit, happening))
                    elif happening.event is Event.UNLOCK and entry is not None and locked == 0:
                        if not exempt and _unlocked_before(threads, graph, entry, n, happening):
                            p.report("CL403", unit, happening.call, _unlock_message(unit))
                    elif happening.event is Event.DEFER_UNLOCK and entry is not None and locked == 0:
                        if not exempt and not _lock_follows(threads, graph, n):
                            p.report("CL403", unit, happening.call, _unlock_message(unit))
                    locked = threads._apply(locked, (happening,), frozenset())
            _check_balance(p, threads, unit, graph)


def _solved(p: Pass) -> _Threads:
    threads = _Threads(p)
    threads.solve()
    return threads


def _exported(unit: Unit) -> bool:
    name = unit.name.rsplit(".", 1)[-1]
    return unit.kind is not UnitKind.LITERAL and name[:1].isupper()


def _unlocked_message(unit: Unit, happening: Happening) -> str:
    callee = syntax.text(happening.call.child_by_field_name("function"))
    where = "this goroutine" if unit.use is LiteralUse.GO else unit.name
    return (
        f"{callee} binds CUDA state to the current OS thread, but {where} has not called "
        f"runtime.LockOSThread on every path before it (nor have all its callers in this package): "
        f"the goroutine may move to another thread; call runtime.LockOSThread() first"
    )


def _unlock_message(unit: Unit) -> str:
    return (
        f"runtime.UnlockOSThread can run in {unit.name} without a runtime.LockOSThread before it "
        f"(neither here nor in every caller in this package); lock first, or remove the unlock"
    )


def _needles(knowledge: Knowledge) -> frozenset[bytes]:
    return frozenset({b"LockOSThread", b"UnlockOSThread"}) | frozenset(
        f'"{family.import_path}"'.encode() for family in knowledge.families if family.thread_bound
    )


ANALYZER = Analyzer(
    name="threads",
    doc=__doc__ or "",
    rules=(CL401, CL402, CL403),
    run=run,
    needles=_needles,
)
