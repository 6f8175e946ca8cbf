"""When analyses run: an edit schedules its package after a pause (the
debounce), an open or a save at once; one analysis runs at a time, off the
event loop, so the server keeps answering; an edit of the package in
flight cancels that analysis (its process is killed: a stale answer is
worth nothing) and schedules a fresh one. Other packages wait their turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from cudalint.app.server.analyst import Analyst, Cancelled
from cudalint.app.server.jobs import Job, Outcome

# A package: (workspace folder, package directory).
Key = tuple[Path, Path]


class Scheduler:
    def __init__(
        self,
        analyst: Analyst,
        make_job: Callable[[Key], Job | None],
        publish: Callable[[Job, Outcome, float], None],
        log: Callable[[str], None],
        debounce: float = 0.2,
    ) -> None:
        self.analyst = analyst
        self.make_job = make_job
        self.publish = publish
        self.log = log
        self.debounce = debounce
        self._timers: dict[Key, asyncio.TimerHandle] = {}
        self._queue: list[Key] = []
        self._in_flight: Key | None = None
        self._drain: asyncio.Task | None = None
        self.cancelled = 0  # analyses killed for a newer edit

    def schedule(self, key: Key, delay: float | None = None) -> None:
        """Analyse the package after `delay` seconds (the debounce by
        default; 0: at once). A later call for the same package replaces
        the pending one, and cancels the one in flight."""
        loop = asyncio.get_running_loop()
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if key == self._in_flight and self.analyst.cancel():
            self.cancelled += 1
            self.log(f"cancelled the analysis of {key[1]}: a newer edit made it stale")
        wait = self.debounce if delay is None else delay
        self._timers[key] = loop.call_later(wait, self._ready, key)

    def pending(self, key: Key) -> bool:
        return key in self._timers or key in self._queue

    def _ready(self, key: Key) -> None:
        self._timers.pop(key, None)
        if key not in self._queue:
            self._queue.append(key)
        if self._drain is None or self._drain.done():
            self._drain = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            key = self._queue.pop(0)
            job = self.make_job(key)
            if job is None:
                continue
            self._in_flight = key
            started = time.perf_counter()
            try:
                outcome = await loop.run_in_executor(None, self.analyst.run, job)
            except Cancelled:
                continue
            except Exception as error:  # noqa: BLE001 - the server keeps serving
                outcome = Outcome(error=f"internal error: {type(error).__name__}: {error}")
            finally:
                self._in_flight = None
            if self.pending(key):
                continue  # edited meanwhile: a fresh analysis comes
            self.publish(job, outcome, time.perf_counter() - started)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._queue.clear()
        self.analyst.close()
