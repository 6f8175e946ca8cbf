"""`cudalint --server`: the Language Server Protocol over standard input and
output, so that editors show findings while the user types.

Cut by job:

* `protocol`: the server (pygls) and its handlers, each guarded so that
  no message can kill it;
* `documents`: the open buffers (the overlay of unsaved text the analysis
  reads instead of the disk) and the workspace folders (where a command
  line run would start, and so which configuration applies);
* `scheduler`: when analyses run (debounce, one at a time, a newer edit
  cancelling the analysis in flight);
* `analyst` and `worker`: the analysis process the server drives, and
  what runs in it (the command line's `Session`, on the buffers);
* `jobs`: what travels between the two;
* `diagnostics`: findings as LSP diagnostics;
* `actions`: code actions (fixes, fix-all, suppressing with a reason).

Trust: the server executes nothing from the workspace (no git, no
module of the workspace is imported, no build runs) and writes nothing
there but the result cache: every change to a source file is an edit the
client applies.
"""

from __future__ import annotations

import logging
import os
import sys


def serve() -> int:
    """Serve one client on standard input and output until it says exit."""
    # Only what was installed is imported: never a module of the workspace.
    sys.path[:] = [entry for entry in sys.path if entry not in ("", ".", os.getcwd())]
    # The protocol owns the real standard output: anything else printed
    # (a stray print, a library's warning) goes to standard error.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="cudalint server: %(levelname)s: %(message)s")
    from cudalint.app.server.protocol import build

    server = build()
    try:
        server.start_io(sys.stdin.buffer, protocol_out)
    finally:
        server.close()
    return 0
