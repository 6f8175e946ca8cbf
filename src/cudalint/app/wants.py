"""`--check-wants`: test API knowledge against annotated Go code, as semgrep's
`--test` tests rules and go/analysis's analysistest tests analyzers. A line
that should get a finding says so in a comment, `// want "CL101"` (one quoted
rule ID per expected finding, optionally followed by a regular expression
the message must match: `// want "CL101 .*cudaFree"`); every other line must
get none. The harness of cudalint's own test suite reads the same comments.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from cudalint.findings import Finding

_WANT = re.compile(r"//\s*want\s+((?:\"[^\"]*\"\s*)+)$")
_QUOTED = re.compile(r"\"([^\"]*)\"")


def wanted(paths: list[Path], display) -> tuple[Counter, dict[tuple[str, int, str], list[str]]]:
    """(path, line, rule) -> how many findings are wanted, and the message
    patterns given for them; `display` names a path as findings name it."""
    counts: Counter = Counter()
    patterns: dict[tuple[str, int, str], list[str]] = {}
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            match = _WANT.search(line)
            if match is None:
                continue
            for item in _QUOTED.findall(match.group(1)):
                rule, _, pattern = item.partition(" ")
                key = (display(path), number, rule)
                counts[key] += 1
                if pattern:
                    patterns.setdefault(key, []).append(pattern)
    return counts, patterns


def compare(findings: list[Finding], counts: Counter, patterns: dict) -> list[str]:
    """One line per difference: missing, unexpected, or a message that does
    not match; empty when the findings are exactly the wanted ones."""
    reported: Counter = Counter((f.path, f.span.start.line, f.rule_id) for f in findings)
    messages: dict[tuple[str, int, str], list[str]] = {}
    for finding in findings:
        messages.setdefault((finding.path, finding.span.start.line, finding.rule_id), []).append(finding.message)
    lines = []
    for key in sorted(set(counts) | set(reported)):
        path, line, rule = key
        if counts[key] > reported[key]:
            lines.append(f"{path}:{line}: missing {rule}" + (f" (wanted {counts[key]}, got {reported[key]})" if reported[key] else ""))
        elif reported[key] > counts[key]:
            lines.append(f"{path}:{line}: unexpected {rule}: {messages[key][0]}")
    for key, wanted_patterns in sorted(patterns.items()):
        for pattern in wanted_patterns:
            if key in messages and not any(re.search(pattern, message) for message in messages[key]):
                lines.append(f"{key[0]}:{key[1]}: {key[2]} message does not match {pattern!r}: {messages[key][0]}")
    return lines
