"""Why a run stops before its report, as the session says it: the command
line turns each into its message and exit status 2 (a usage error for
`OptionError`), the library raises it (a ValueError, as `cudalint.check`
always raised for a pattern that names nothing)."""

from __future__ import annotations

from cudalint.discover import Discovery


class RunError(ValueError):
    """The run cannot go on: a configuration, knowledge file, baseline or
    revision that cannot be used, a file that cannot be written. The
    command line says `cudalint: error: MESSAGE` and exits 2."""


class OptionError(RunError):
    """An option's value is wrong (`option` names it; None for a wrong
    combination): the command line's usage error."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


class Unmatched(RunError):
    """Patterns that match no Go file; the discovery says which, and what
    it found on the way (nested modules it did not walk into)."""

    def __init__(self, discovery: Discovery):
        super().__init__(f"no Go files match {', '.join(discovery.unmatched)}")
        self.discovery = discovery
