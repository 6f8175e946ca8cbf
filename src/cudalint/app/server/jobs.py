"""What the server asks its analysis process and what it gets back: plain,
picklable records, so that the analysis can run (and be killed) in a
process of its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cudalint.findings import Result


@dataclass(frozen=True)
class Job:
    """Analyse `files` (open buffers of one package directory) as
    `cudalint FILES` run in `cwd` would, reading `overlay` (every open
    buffer, resolved path -> bytes) instead of the disk."""

    cwd: Path
    files: tuple[Path, ...]
    overlay: dict[Path, bytes]
    # The buffers' versions when the job was made: what its diagnostics are about.
    versions: dict[Path, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class FileSettings:
    """What the configuration that applies to a file says about the
    editor's side of its findings."""

    levels: dict[str, str]  # rule ID -> error, warning or note
    unsafe_fixes: bool


@dataclass
class Outcome:
    """A job's result: the findings and notifications of its files (paths
    relative to the job's cwd, as the command line shows them), the
    settings of each file, the notes the run said, or the error that
    stopped it (a configuration that cannot be used: the command line's
    exit 2)."""

    result: Result = field(default_factory=Result)
    settings: dict[str, FileSettings] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    cpu_seconds: float = 0.0  # what the analysis process spent on it (user + system)
