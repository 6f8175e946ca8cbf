"""The progress line: `cudalint: 120/3000 packages analysed (14 s)` on
standard error, rewritten in place, once a run has taken longer than
`after` seconds; cleared at the end. It is redrawn on a timer (every
REDRAW seconds, by a daemon thread) as well as when a package completes, so
that a run stuck in one huge package still shows it is alive: the elapsed
time moves even when the count does not."""

from __future__ import annotations

import os
import sys
import threading
import time

REDRAW = 0.5

# Every write of the line holds this lock, and so does a fork (the worker
# pool forks): a child never starts with standard error's own lock held by
# the timer thread, which does not exist in the child.
_WRITING = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_WRITING.acquire, after_in_parent=_WRITING.release, after_in_child=_WRITING.release)


class Progress:
    def __init__(self, total: int, after: float | None, stream=None, redraw: float = REDRAW):
        self.total, self.after, self.done, self.shown = total, after, 0, False
        self.start = time.monotonic()
        self._stream = stream
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if after is not None and total:
            self._thread = threading.Thread(target=self._run, args=(redraw,), name="cudalint-progress", daemon=True)
            self._thread.start()

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    def _run(self, redraw: float) -> None:
        while not self._stop.wait(redraw):
            self._draw()

    def _draw(self) -> None:
        elapsed = time.monotonic() - self.start
        if self.after is None or elapsed < self.after:
            return
        with _WRITING:
            if self._stop.is_set() and self._thread is not None and threading.current_thread() is self._thread:
                return
            try:
                self.stream.write(f"\rcudalint: {self.done}/{self.total} packages analysed ({elapsed:.0f} s)")
                self.stream.flush()
            except Exception:  # noqa: BLE001 - a progress line never ends a run
                return
            self.shown = True

    def tick(self) -> None:
        self.done += 1
        self._draw()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with _WRITING:
            if self.shown:
                try:
                    self.stream.write("\r\033[K")
                    self.stream.flush()
                except Exception:  # noqa: BLE001
                    pass
