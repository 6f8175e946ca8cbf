"""The server's side of the analysis process: one process that analyses,
and a spare already started, so that cancelling (killing the process in
flight) costs no start-up: the spare takes over and a new spare starts
behind it. A process that dies (a crash, memory) is replaced the same way,
and its job's outcome says so.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import cudalint
from cudalint.app.server.jobs import Job, Outcome
from cudalint.app.server.worker import receive, send

# Started with -c from the directory that holds the installed package: no
# module of a workspace can come first on the search path.
_COMMAND = (sys.executable, "-c", "from cudalint.app.server.worker import main; main()")
_HOME = Path(cudalint.__file__).resolve().parent.parent


class Cancelled(Exception):
    """The job's process was killed for a newer job."""


def _start() -> subprocess.Popen:
    return subprocess.Popen(_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=_HOME)


class Analyst:
    """Runs jobs one at a time in a worker process (`run` blocks; call it
    from a thread), and cancels the one in flight from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: subprocess.Popen | None = None
        self._spare: subprocess.Popen | None = _start()
        self._cancelled: set[int] = set()  # pids killed on purpose

    def run(self, job: Job) -> Outcome:
        """The job's outcome; Cancelled if `cancel` killed it meanwhile."""
        process = self._process()
        try:
            send(process.stdin, job)  # type: ignore[arg-type]
            outcome = receive(process.stdout)  # type: ignore[arg-type]
        except (OSError, EOFError, ValueError):
            outcome = None
        if isinstance(outcome, Outcome):
            return outcome
        with self._lock:
            cancelled = process.pid in self._cancelled
            self._retire(process)
        if cancelled:
            raise Cancelled
        status = process.wait()
        return Outcome(error=f"the analysis process ended unexpectedly (exit status {status}); the next edit starts another")

    def cancel(self) -> bool:
        """Kill the process in flight (True if there was one)."""
        with self._lock:
            process = self._active
            if process is None or process.poll() is not None:
                return False
            self._cancelled.add(process.pid)
            process.kill()
            return True

    def close(self) -> None:
        """End both processes (the server is exiting)."""
        with self._lock:
            for process in (self._active, self._spare):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()
            self._active = self._spare = None

    def _process(self) -> subprocess.Popen:
        with self._lock:
            if self._active is None or self._active.poll() is not None:
                self._active = self._spare if self._spare is not None and self._spare.poll() is None else _start()
                self._spare = _start()
            return self._active

    def _retire(self, process: subprocess.Popen) -> None:
        """Forget a dead process (the lock is held)."""
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._cancelled.discard(process.pid)
        if self._active is process:
            self._active = None
