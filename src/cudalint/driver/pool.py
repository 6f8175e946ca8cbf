"""The worker pool: jobs spread over processes, each started as soon as the
jobs it waits for are done, and the run never hangs on a dead worker.

A pool's processes get the run's settings and knowledge once, in the pool's
initialiser, which makes each process's Worker; the jobs it then runs reach
that Worker through the one per-process holder below, set there only.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from cudalint.cache import CacheRefused, ResultCache
from cudalint.driver.keys import salt
from cudalint.driver.package import Context
from cudalint.driver.schedule import Job, Schedule
from cudalint.driver.settings import Settings
from cudalint.driver.worker import STARTED, Worker
from cudalint.findings import Notification, NotificationKind, Result
from cudalint.knowledge import Knowledge
from cudalint.source import display_path

_PARENT_POLL_SECONDS = 0.5
_LEND_POLL_SECONDS = 0.01
_STOP_SECONDS = 5
EXIT_WORKER_ORPHANED = 3


class _ThisProcess:
    """The Worker of a pool process, made by the pool's initialiser."""

    worker: Worker | None = None


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def worker_context(served: bool) -> Any:
    """How worker processes start. `served`: forked from a server process
    started before the run was planned (`prestart`), which holds cudalint's
    modules but none of the run's data: a cold run's parent holds every
    file's bytes when its workers start, and a worker forked from it starts
    with all of them (on the standard library, 2 workers peaked at 311 MiB
    for that). Otherwise (a run that read few files) forked from the parent,
    at once."""
    if not served or "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context()
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["cudalint.driver.pool"])
    return context


def prestart() -> bool:
    """Start the worker server now, while the parent plans the run (it
    imports cudalint in the meantime); it ends with the parent. False where
    the platform has none."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False  # pragma: no cover - not Linux or macOS
    worker_context(True)
    from multiprocessing import forkserver

    try:
        forkserver.ensure_running()
    except (OSError, ValueError):  # no server here: workers fork from the parent
        return False
    return True


def stop_server() -> None:
    """End the worker server with the run and wait for it: its workers'
    time and memory then count among this process's children, as forked
    workers' do (what `time` and the benchmarks read). The wait is bounded:
    a worker still alive keeps the server up (it holds its lifeline), and
    the run must not hang on that; the server ends with its last worker."""
    from multiprocessing import forkserver

    stop = getattr(getattr(forkserver, "_forkserver", None), "_stop", None)
    if stop is None:
        return

    def wait() -> None:
        try:
            stop()
        except (OSError, ChildProcessError):
            pass

    waiting = threading.Thread(target=wait, name="cudalint-stop-server", daemon=True)
    waiting.start()
    waiting.join(_STOP_SECONDS)


def failed(directory: Path, settings: Settings, what: str) -> Result:
    where = display_path(directory, settings.base)
    return Result(internal_errors=1, notifications=[Notification(
        NotificationKind.INTERNAL_ERROR, where, f"internal error: {what}; not analysed, results are incomplete", level="error",
    )])


def _die_with_parent(parent: int) -> None:
    """A worker must not outlive the run: killed with SIGKILL when its parent
    dies (Linux), and everywhere a watchdog thread exits when the parent is
    gone (the worker is then re-parented). `parent` 0: forked by the worker
    server, which outlives the run while its workers live (they hold its
    lifeline): the watchdog waits on the run's own process instead."""
    run = multiprocessing.parent_process() if not parent else None
    if run is not None:
        def watch_run() -> None:
            run.join()  # returns when the run's process is gone
            os._exit(EXIT_WORKER_ORPHANED)

        threading.Thread(target=watch_run, name="cudalint-parent-watch", daemon=True).start()
    parent = parent or os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:  # noqa: BLE001 - the watchdog below still works
            pass
    if os.getppid() != parent:  # died before prctl took effect
        os._exit(EXIT_WORKER_ORPHANED)

    def watch() -> None:
        while True:
            time.sleep(_PARENT_POLL_SECONDS)
            if os.getppid() != parent:
                os._exit(EXIT_WORKER_ORPHANED)

    threading.Thread(target=watch, name="cudalint-parent-watch", daemon=True).start()


def _init_worker(
    settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...], states: Any, parent: int, lending: Any = None,
) -> None:
    _die_with_parent(parent)
    # Ctrl-C reaches the whole process group: the parent handles it and stops
    # the workers; SIGTERM kills a worker outright.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    cache = None
    if settings.cache_dir is not None:
        try:
            cache = ResultCache(settings.cache_dir, salt(settings, knowledge, needles))
        except CacheRefused:  # the parent checked it; changed since: no cache
            cache = None
    _ThisProcess.worker = Worker(Context.of(settings, knowledge, needles), cache, states, lending)


def _work(job: Job) -> Result:
    worker = _ThisProcess.worker
    assert worker is not None, "a pool's initialiser makes its process's worker"
    return worker.work(job)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop a pool at once (interrupted run): cancel what waits, kill what runs."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        try:
            process.kill()
        except Exception:  # noqa: BLE001
            pass


def _pump(lending: Any) -> queue.Queue:
    """The facts workers lend, moved by a thread of their own into a queue
    the run reads without waiting: a worker killed in the middle of a
    message can block this thread, never the run. The thread ends with the
    process (no end marker is sent: a worker killed while writing could
    hold the queue's lock)."""
    received: queue.Queue = queue.Queue()

    def pump() -> None:
        while True:
            received.put(lending.get())

    threading.Thread(target=pump, name="cudalint-lent-facts", daemon=True).start()
    return received


class Pool:
    """The jobs of one run, as the schedule releases them, over worker
    processes; each result goes to `done` (index, result) as it comes."""

    def __init__(
        self, settings: Settings, knowledge: Knowledge, needles: tuple[bytes, ...], jobs: int, schedule: Schedule,
        done: Callable[[int, Result], None], served: bool = False,
    ) -> None:
        self.settings = settings
        self.initargs = (settings, knowledge, needles)
        self.served = served  # workers forked from the server `prestart` started
        self.jobs = jobs
        self.schedule = schedule
        self.done = done

    def _finish(self, i: int, result: Result) -> None:
        self.schedule.finish(i, result)
        self.done(i, result)

    def run(self) -> None:
        """Run every job over worker processes. A worker that dies (killed,
        out of memory, a crash in native code) takes the pool down with it:
        the jobs it was running are retried once, each in a worker of its
        own, and a job that kills that worker too is reported as an internal
        error; the jobs that merely waited go to a new pool."""
        schedule = self.schedule
        deaths: dict[int, int] = {}
        while True:
            suspects = [i for i in sorted(deaths) if not schedule.done[i]]
            for i in suspects:
                job = schedule.start(i)
                outcome = self._alone(job)
                self._finish(i, outcome if outcome is not None else failed(
                    job.directory, self.settings,
                    "the worker process analysing this directory died twice (killed by a signal, out of memory, or a "
                    "crash in native code)",
                ))
            killed = self._pool(set(deaths))
            if killed is None:
                return
            for i in killed:
                deaths[i] = deaths.get(i, 0) + 1

    def _pool(self, suspects: set[int]) -> list[int] | None:
        """Run the jobs the schedule releases over a pool, each as soon as
        the jobs it waits for are done, but those that killed a worker
        before (held back, to run alone). Returns None once no job is left
        for a pool, else (the pool broke) the jobs a dead worker was running."""
        schedule = self.schedule
        context = worker_context(self.served)
        states = context.Array("b", len(schedule.nodes), lock=False)
        lending = context.SimpleQueue()
        lent_facts = _pump(lending)
        pool: ProcessPoolExecutor | None = None
        futures: dict[Any, int] = {}
        held: list[int] = []
        returned: list[int] = []
        broken = False
        try:
            while not broken:
                # Every job whose dependencies are done is queued at once. A
                # job that waits is not started early to keep a worker busy:
                # it would analyse its dependencies again, and on real trees
                # (a large generated binding imported by a large package)
                # that cost more CPU than the idle worker saved.
                for i in schedule.ready():
                    if i in suspects:
                        held.append(i)
                        continue
                    if pool is None:
                        pool = ProcessPoolExecutor(
                            max_workers=self.jobs, mp_context=context, initializer=_init_worker,
                            initargs=(*self.initargs, states, self._parent(), lending),
                        )
                    futures[pool.submit(_work, schedule.start(i))] = i
                if not futures:
                    break
                # A running job lends its summary before its rules run: its
                # importers are queued as soon as it arrives.
                finished, _ = wait(futures, timeout=_LEND_POLL_SECONDS, return_when=FIRST_COMPLETED)
                lent = False
                while not lent_facts.empty():
                    index, facts = lent_facts.get_nowait()
                    schedule.lend(index, facts)
                    lent = True
                if not finished and not lent:
                    continue
                for future in finished:
                    i = futures.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        broken = True  # retried below
                        returned.append(i)
                        continue
                    except Exception as error:  # noqa: BLE001 - e.g. a result that could not be sent back
                        result = failed(schedule.nodes[i].directory, self.settings, f"{type(error).__name__}: {error}")
                    self._finish(i, result)
        except BaseException:
            if pool is not None:
                _stop(pool)
            raise
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        returned += futures.values()
        for i in returned + held:
            schedule.give_back(i)
        if not broken:
            return None if not held else []
        running = sorted(i for i in returned if states[i] == STARTED)
        return running or sorted(returned)

    def _parent(self) -> int:
        """The process a worker watches so as not to outlive the run: this
        one; 0 for workers of the server, which find the run themselves
        (`_die_with_parent`)."""
        return 0 if self.served else os.getpid()

    def _alone(self, job: Job) -> Result | None:
        """One job in a worker of its own: None if that worker died too."""
        pool = ProcessPoolExecutor(
            max_workers=1, mp_context=worker_context(self.served),
            initializer=_init_worker, initargs=(*self.initargs, None, self._parent()),
        )
        try:
            return pool.submit(_work, job).result()
        except BrokenProcessPool:
            return None
        except Exception as error:  # noqa: BLE001
            return failed(job.directory, self.settings, f"{type(error).__name__}: {error}")
        except BaseException:
            _stop(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
