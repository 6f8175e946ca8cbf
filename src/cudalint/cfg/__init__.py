"""The control-flow graph of one function, with the semantics of
golang.org/x/tools/go/cfg (the graph `go vet` trusts), plus what the rules need
and go/cfg lacks:

* every conditional edge carries the leaf condition it tested and the value it
  took (`Edge.condition`, `Edge.polarity`), so a rule can tell the `st != C.cudaSuccess`
  branch from the other; `&&`, `||` and `!` are split as go/cfg splits them;
* switch and type-switch case edges carry the case clause and the tag;
* four distinct exits: normal return, goroutine exit (`runtime.Goexit`,
  `t.FailNow`), panic, process exit (`os.Exit`, `log.Fatal`). Deferred calls
  run on the first three only.

Nodes are statements (and conditions, case tests, loop heads); unreachable
code keeps its nodes, with no path from the entry, so "is this reachable" is a
graph question. Conditions are not constant-folded.
"""

from cudalint.cfg.build import ExitOracle, build_cfg
from cudalint.cfg.graph import CFG, DEFERS_RUN_ON, Edge, ExitKind, NodeKind
from cudalint.cfg.package import PackageCFGs, build_package_cfgs

__all__ = [
    "CFG", "DEFERS_RUN_ON", "Edge", "ExitKind", "ExitOracle", "NodeKind", "PackageCFGs", "build_cfg",
    "build_package_cfgs",
]
