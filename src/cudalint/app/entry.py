"""The process entry point: `cudalint` (console script) and `python -m cudalint`.

It runs the click command and keeps the exit-status contract whatever
happens around the analysis: 0 no findings, 1 findings, 2 anything else,
always. A failure of cudalint itself (a crash, Ctrl-C or SIGTERM, standard
output on a full disk, running out of memory or stack, a working directory
that was deleted) exits 2 with one line on stderr, and the traceback only
with --debug. Exit status 1 is never the result of a failure, so that CI
recipes that accept 1 as "findings" (`|| test $? -eq 1`) cannot turn a crash
into a green job.

A reader that closes standard output early (`cudalint ./... | head -1`) is
not a failure: the analysis is complete and its status is known, so the run
stops writing, says nothing, and exits with the status the whole report would
have had (1 with findings, 0 without). Not 141 (killed by SIGPIPE, what Go
linters and coreutils give), which would break the 0/1/2 contract, and not
0 (ruff's and ripgrep's choice), which under `set -o pipefail` would turn a
run with findings into a green job. The command line announces that status
(`pipestatus.announce`) before it writes anything to standard output.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import traceback
from typing import Any, NoReturn

from cudalint.app import pipestatus, replay

EXIT_CLEAN, EXIT_ERROR = 0, 2


class Terminated(BaseException):
    """SIGTERM (or SIGHUP) arrived: stop, as for Ctrl-C. A BaseException, so
    that no per-file isolation (`except Exception`) swallows it."""


class OutputError(Exception):
    """Writing standard output failed (full disk, closed pipe, I/O error).

    Not an OSError: click turns an EPIPE OSError into exit status 1, the
    status of findings."""

    def __init__(self, error: OSError):
        super().__init__(error.strerror or str(error))
        self.error = error


class _GuardedStream:
    """A proxy of sys.stdout (or of its binary buffer) whose write and flush
    raise OutputError instead of OSError."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, data):
        try:
            return self._stream.write(data)
        except OSError as error:
            raise OutputError(error) from None

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            return self._stream.flush()
        except OSError as error:
            raise OutputError(error) from None

    @property
    def buffer(self):
        buffer = getattr(self._stream, "buffer", None)
        return None if buffer is None else _GuardedStream(buffer)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _say(line: str) -> None:
    """One line on stderr; a broken stderr must not turn exit 2 into a crash."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass


def _silence_stdout() -> None:
    """After stdout failed, make the interpreter's final flush harmless."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until exit


def _wants_debug(args: list[str]) -> bool:
    options = args[: args.index("--")] if "--" in args else args
    return "--debug" in options


def _on_terminate(signum: int, frame: object) -> None:
    raise Terminated(signal.Signals(signum).name)


def _fail(message: str, error: BaseException | None, debug: bool) -> NoReturn:
    if debug and error is not None:
        _say("".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip())
    _say(f"cudalint: error: {message}")
    raise SystemExit(EXIT_ERROR)


def _describe(error: BaseException, debug: bool) -> str:
    if isinstance(error, OutputError):
        what = error.error.strerror or str(error.error)
        if error.error.errno == errno.EPIPE:
            what = "the reader closed the pipe"
        return f"cannot write the report to standard output: {what}"
    if isinstance(error, (KeyboardInterrupt, Terminated)):
        name = "SIGINT" if isinstance(error, KeyboardInterrupt) else str(error) or "SIGTERM"
        return f"interrupted ({name}); no report"
    if isinstance(error, MemoryError):
        return "out of memory; no report"
    if isinstance(error, RecursionError):
        return "an input is nested too deeply to process (maximum recursion depth exceeded); no report"
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename is not None else ""
        return f"{error.strerror or error}{where}; no report"
    hint = "" if debug else " (run with --debug for the traceback)"
    return f"internal error: {type(error).__name__}: {error}; no report{hint}"


def run(args: list[str] | None = None) -> int:
    """Run the command line and return its exit status (0, 1 or 2): the
    recorded report of the same run where nothing it read changed
    (`replay`), else the run, recorded where it could be replayed."""
    args = list(sys.argv[1:] if args is None else args)
    debug = _wants_debug(args)
    options = args[: args.index("--")] if "--" in args else args
    # --help and --version answer a question: a closed pipe is a clean end.
    pipestatus.announce(EXIT_CLEAN if {"--help", "-h", "--version"} & set(options) else None)
    try:
        os.getcwd()
    except OSError as error:
        _say(f"cudalint: error: cannot use the current directory (deleted, or not accessible): {error.strerror or error}")
        return EXIT_ERROR
    again = replay.recorded(args)
    if again is not None:
        pipestatus.announce(again.status)
        try:
            again.write()
        except BaseException as error:  # noqa: BLE001
            return _report(error, debug)
        return again.status
    recording = replay.start(args)
    status = EXIT_ERROR
    try:
        status = _command(args, debug)
    finally:
        replay.finish(recording, status)
    return status


def _command(args: list[str], debug: bool) -> int:
    import click

    code: Any
    try:
        from cudalint.app.cli import main as command

        code = command.main(args=args, prog_name="cudalint", standalone_mode=False)
    except SystemExit as exit_:
        code = exit_.code
    except click.exceptions.Abort as abort:
        cause = abort.__cause__ or abort.__context__ or KeyboardInterrupt()
        return _report(cause, debug)
    except click.ClickException as error:
        try:
            error.show()
        except Exception:  # noqa: BLE001
            _say(f"cudalint: error: {error.format_message()}")
        return EXIT_ERROR
    except BaseException as error:  # noqa: BLE001 - the contract: anything else is 2
        return _report(error, debug)
    try:
        sys.stdout.flush()
    except (OSError, OutputError) as error:
        return _report(error if isinstance(error, OutputError) else OutputError(error), debug)
    if code is None:
        return 0
    if isinstance(code, int) and code in (0, 1, 2):
        return code
    if not isinstance(code, int):
        _say(f"cudalint: error: {code}")
    return EXIT_ERROR


def _closed_pipe(error: BaseException) -> bool:
    inner = error.error if isinstance(error, OutputError) else error
    return isinstance(inner, OSError) and inner.errno == errno.EPIPE


def _report(error: BaseException, debug: bool) -> int:
    if isinstance(error, OutputError) or _closed_pipe(error):
        _silence_stdout()
    if _closed_pipe(error) and pipestatus.announced() is not None:
        return pipestatus.announced()  # the reader went away: quietly, with the run's own status
    try:
        _fail(_describe(error, debug), error, debug)
    except SystemExit:
        pass
    return EXIT_ERROR


def main() -> NoReturn:
    signal.signal(signal.SIGTERM, _on_terminate)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _on_terminate)
    sys.stdout = _GuardedStream(sys.stdout)  # type: ignore[assignment]
    try:
        status = run()
    except BaseException:  # noqa: BLE001 - even a failure while reporting a failure is 2
        status = EXIT_ERROR
    try:
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001
        _silence_stdout()
        status = EXIT_ERROR
    # The interpreter's own final flush must not change the status.
    sys.exit(status)
