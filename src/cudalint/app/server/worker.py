"""The analysis process: reads jobs on standard input and answers each with
its outcome on standard output (length-prefixed pickles between this
process and the server that started it, nobody else).

The server kills this process to cancel an analysis in flight (a newer
edit made it stale), and starts another; a crash here (a rule, the parser,
memory) costs one analysis, never the server. Nothing is imported from the
workspace: the current directory is dropped from the module search path
before the first job moves into a workspace folder.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import time
from pathlib import Path
from typing import BinaryIO

from cudalint.app.errors import OptionError, RunError
from cudalint.app.request import Request
from cudalint.app.server.jobs import FileSettings, Job, Outcome
from cudalint.app.session import Session
from cudalint.source import display_path

_HEADER = struct.Struct(">Q")


def send(stream: BinaryIO, value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: BinaryIO) -> object | None:
    """The next value, or None at the end of the stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)  # noqa: S301 - written by the server that started this process


def analyse(job: Job) -> Outcome:
    """One job, as `cudalint FILES` in the job's cwd analyses them: the
    configuration found there (and the nested ones), its rules, preview,
    exclusions, per-file ignores, knowledge and fixable rules, inline
    suppressions, the cache (where CUDALINT_CACHE_DIR puts it, none with
    CUDALINT_NO_CACHE, as for the command line); the buffers read from the
    overlay."""
    outcome = Outcome()
    try:
        os.chdir(job.cwd)
        request = Request(
            patterns=tuple(str(path) for path in job.files), overlay=job.overlay, jobs=1,
            no_cache=os.environ.get("CUDALINT_NO_CACHE", "") not in ("", "0", "false"),
            cache_dir=Path(os.environ["CUDALINT_CACHE_DIR"]) if os.environ.get("CUDALINT_CACHE_DIR") else None,
        )
        session = Session(request, job.cwd, outcome.notes.append)
        session.read_inputs()
        session.group()
        session.open_gate()
        result = session.complete(session.analyse())
        session.gate_result(result)
        session.cap_same_issues(result)
    except (RunError, OptionError) as error:
        outcome.error = str(error)
        return outcome
    outcome.result = result
    for group in session.groups:
        config = group.config
        levels = {rule.id: config.level_for(rule.id, rule.level).value for rule in session.rules}
        for path in group.files:
            outcome.settings[display_path(path, job.cwd)] = FileSettings(levels, config.unsafe_fixes)
    return outcome


def serve(reader: BinaryIO, writer: BinaryIO) -> None:
    """Jobs until the server closes the pipe. Any failure of one job is
    its outcome's error: the process lives on for the next."""
    while True:
        job = receive(reader)
        if job is None:
            return
        started = time.process_time()
        try:
            outcome = analyse(job)  # type: ignore[arg-type]
        except Exception as error:  # noqa: BLE001 - one job's crash is that job's error
            outcome = Outcome(error=f"internal error: {type(error).__name__}: {error}")
        outcome.cpu_seconds = time.process_time() - started
        send(writer, outcome)


def main() -> None:
    # Only what was installed is imported: never a module of the workspace.
    sys.path[:] = [entry for entry in sys.path if entry not in ("", ".", os.getcwd())]
    # The protocol owns the real standard output; a stray print goes to stderr.
    writer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, writer)


if __name__ == "__main__":
    main()
