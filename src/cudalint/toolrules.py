"""Rules about cudalint's own input rather than the analysed code (CL0xx),
such as malformed or unused suppression directives. They are reported by
the findings stage, not by a pass."""

from __future__ import annotations

from cudalint.catalog import Rule

TOOL_RULES: tuple[Rule, ...] = ()
