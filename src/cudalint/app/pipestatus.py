"""The exit status a closed standard output ends the run with.

The command announces the status its report will have before it writes
anything to standard output; the entry point, when the reader goes away
(`cudalint ./... | head -1`), ends the run quietly with it. A module of its
own, below both, so that the command need not import the entry point that
starts it.
"""

from __future__ import annotations

_status: int | None = None


def announce(status: int | None) -> None:
    """From now on, a closed pipe ends the run with this status (None: it is
    an error, said as one)."""
    global _status
    _status = status


def announced() -> int | None:
    return _status
