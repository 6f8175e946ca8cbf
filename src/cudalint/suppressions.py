"""Inline suppressions: `//cudalint:ignore CL101 <reason>` and
`//cudalint:file-ignore CL3 <reason>`, and CL001 for the directives that are
malformed or suppress nothing.

A directive is a `//` line comment (found in the syntax tree, so text inside a
string literal or a block comment never is one). On a line of its own,
`ignore` applies to the next line that holds code; at the end of a line of
code, to that line. `file-ignore` applies to its whole file. Rules are named
by ID or prefix, comma-separated; a reason is required.

What users of other linters type instead gets a CL001 that names the right
form, rather than silence: a `/* cudalint:ignore ... */` block comment,
golangci-lint's `//nolint:cudalint` and staticcheck's `//lint:ignore CL301
reason` (neither tool knows cudalint's rules, and cudalint reads neither).

A directive naming a retired rule (CL505) is accepted: it suppresses nothing
and gets a CL001 *note* saying the rule is retired. The note is returned
with the suppressed findings (it is about the directive, not the code), so
it never counts as a finding and never changes the exit status; the command
line prints it to stderr.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from cudalint.catalog import RULE_ID, RULE_PREFIX
from cudalint.findings import Finding, Span, Suppression, SuppressionKind
from cudalint.parse import ParsedFile
from cudalint.source import SourceFile

TOOL_RULE = "CL001"
# How a retired-rule note starts: the command line finds the notes by it.
RETIRED_NOTE = "note: "
VERBS = ("ignore", "file-ignore")
_START = re.compile(rb"//[ \t]*cudalint:")
# Directives of other tools that users of those tools type for cudalint.
_BLOCK = re.compile(rb"/\*\s*cudalint:(\S*)")
_NOLINT = re.compile(rb"//[ \t]*nolint:([\w,-]+)")
_LINT = re.compile(rb"//[ \t]*lint:(ignore|file-ignore)[ \t]+(\S+)")
_VERB_AND_REST = re.compile(r"cudalint:(\S*)(.*)", re.DOTALL)
def is_code(word: str) -> bool:
    """A rule ID or a prefix narrower than "CL" (a directive may not blanket
    every rule), in any case."""
    return RULE_PREFIX.fullmatch(word.upper()) is not None and len(word) > 2


_is_code = is_code


_CODES_AND_REASON = re.compile(r"(\S*)\s*(.*)", re.DOTALL)
_SEPARATOR = re.compile(r"^(?://|--|:)\s*")
_EXAMPLE = "//cudalint:ignore CL101 <why the finding does not apply>"


@dataclass
class Directive:
    verb: str  # "ignore" or "file-ignore"
    codes: tuple[str, ...]
    code_spans: tuple[Span, ...]
    reason: str
    span: Span  # the whole comment
    target_line: int | None  # None: the whole file
    used: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Problem:
    span: Span
    message: str


def _span(source: SourceFile, start: int, end: int) -> Span:
    return Span(source.offset_position(start), source.offset_position(end))


def _target_line(source: SourceFile, line: int) -> int:
    """The line a directive standing on its own line applies to: the next
    line that is not a comment-only line."""
    total = len(source.line_starts)
    target = line + 1
    while target <= total and source.line_text(target).lstrip().startswith("//"):
        target += 1
    return target


def _codes(
    source: SourceFile, text: str, offset: int, rule_ids: tuple[str, ...],
) -> tuple[list[str], list[Span]] | Problem:
    """The comma-separated rule IDs or prefixes of a directive starting at
    byte `offset`, with their spans, or the problem with the first bad one."""
    codes: list[str] = []
    spans: list[Span] = []
    position = 0
    for code in text.split(","):
        start = offset + len(text[:position].encode())
        span = _span(source, start, start + len(code.encode()))
        position += len(code) + 1
        if not _is_code(code):
            return Problem(span, f"malformed suppression: {code!r} is not a rule ID or prefix, such as CL101 or CL3 (separate rules with commas, no spaces)")
        code = code.upper()
        matched = [rule_id for rule_id in rule_ids if rule_id.startswith(code)]
        if not matched:
            return Problem(span, f"malformed suppression: {code} matches no rule (see cudalint --list-rules)")
        if all(rule_id.startswith("CL0") for rule_id in matched):
            return Problem(span, (
                f"malformed suppression: {code} names tool rules, which a directive cannot suppress; "
                "use ignore or per-file-ignores in the configuration"
            ))
        codes.append(code)
        spans.append(span)
    return codes, spans


def retired_note(code: str) -> str | None:
    """The note for a directive, selection or configuration that names a
    retired rule by its full ID (a prefix selects live rules too, and says
    nothing about the retired ones); None for any other code."""
    from cudalint.checks import rule_by_id  # the registry imports the rules, which import the framework

    rule = rule_by_id(code) if RULE_ID.fullmatch(code.upper()) else None
    if rule is None or not rule.retired:
        return None
    return (
        f"{RETIRED_NOTE}{rule.id} ({rule.name}) reports nothing any more. {rule.summary} "
        f"Naming it is harmless; remove it at leisure (cudalint --explain {rule.id})"
    )


def is_retired_note(finding: Finding) -> bool:
    return finding.rule_id == TOOL_RULE and finding.message.startswith(RETIRED_NOTE)


def _comment_at(root, start: int):
    """The comment node that starts at byte `start`, or None."""
    node = root.descendant_for_byte_range(start, start + 2)
    return node if node is not None and node.type == "comment" and node.start_byte == start else None


def _foreign(source: SourceFile, root) -> list[Problem]:
    """CL001 hints for what looks meant for cudalint but is not read: a
    block comment, golangci-lint's //nolint, staticcheck's //lint:ignore."""
    data = source.data
    problems: list[Problem] = []

    def say(start: int, end: int, message: str) -> None:
        problems.append(Problem(_span(source, start, end), message))

    for match in _BLOCK.finditer(data):
        node = _comment_at(root, match.start())
        if node is None:
            continue
        verb = match.group(1).decode("utf-8", "replace").lower()
        verb = verb if verb in VERBS else "ignore"
        say(node.start_byte, node.end_byte, (
            f"not a suppression: a directive is a // line comment, never /* ... */; "
            f"write //cudalint:{verb} RULES <reason>"
        ))
    for match in _NOLINT.finditer(data):
        linters = [name.strip().lower() for name in match.group(1).decode("utf-8", "replace").split(",")]
        if "cudalint" not in linters or _comment_at(root, match.start()) is None:
            continue
        say(match.start(), match.end(), (
            "not a suppression: //nolint is golangci-lint's, and cudalint does not read it; write "
            "//cudalint:ignore RULES <reason> (RULES: the IDs the findings show, e.g. CL301; this line or the next)"
        ))
    for match in _LINT.finditer(data):
        verb = match.group(1).decode()
        checks = match.group(2).decode("utf-8", "replace").split(",")
        if not any(_is_code(check) for check in checks) or _comment_at(root, match.start()) is None:
            continue
        codes = ",".join(check.upper() for check in checks if _is_code(check))
        say(match.start(), match.end(), (
            f"not a suppression: //lint:{verb} is staticcheck's, and cudalint does not read it; "
            f"write //cudalint:{verb} {codes} <reason>"
        ))
    return problems


def find_directives(parsed: ParsedFile, rule_ids: Iterable[str]) -> tuple[list[Directive], list[Problem]]:
    source = parsed.source
    data = source.data
    if b"lint:" not in data:  # cudalint:, nolint:, lint:
        return [], []
    rule_ids = tuple(rule_ids)
    directives: list[Directive] = []
    root = parsed.root
    problems: list[Problem] = _foreign(source, root)
    for match in _START.finditer(data):
        start = match.start()
        node = root.descendant_for_byte_range(start, start + 2)
        if node is None or node.type != "comment" or node.start_byte != start:
            continue
        raw = data[start:node.end_byte].rstrip(b"\r\n")
        end = start + len(raw)
        text = raw.decode("utf-8", "replace")
        whole = _span(source, start, end)
        position = source.offset_position(start)
        line_start = source.line_starts[position.line - 1]
        standalone = not data[line_start:start].strip()
        verb_and_rest = _VERB_AND_REST.search(text)
        assert verb_and_rest is not None  # _START matched
        verb, rest = verb_and_rest.group(1), verb_and_rest.group(2)
        rest_offset = start + len(text[: verb_and_rest.start(2)].encode())

        def problem(message: str, at: Span = whole) -> None:
            problems.append(Problem(at, f"malformed suppression: {message}"))

        if verb.lower() not in VERBS:
            glued = next((known for known in ("file-ignore", "ignore") if verb.lower().startswith(known)), None)
            if glued:
                problem(f"expected a space after 'cudalint:{glued}', then the rules: {_EXAMPLE}")
            else:
                problem(
                    f"unknown directive 'cudalint:{verb}'; write //cudalint:ignore RULES <reason> "
                    "(this line or the next) or //cudalint:file-ignore RULES <reason> (the whole file)"
                )
            continue
        verb = verb.lower()
        stripped = rest.lstrip()
        codes_text, reason = _CODES_AND_REASON.match(stripped).groups()
        if not codes_text:
            problem(f"name the rules to suppress (blanket suppressions are not allowed): {_EXAMPLE}")
            continue
        codes_offset = rest_offset + len(rest[: len(rest) - len(stripped)].encode())
        if codes_text.endswith(",") and _is_code(codes_text.rstrip(",").rsplit(",", 1)[-1]):
            # `CL301, CL302 reason`: the space after the comma ends the rules.
            following = reason.split(None, 1)[0].rstrip(",") if reason.split() else ""
            if _is_code(following):
                problem(f"no space after a comma between rules: write {codes_text}{following.upper()}, then the reason")
            else:
                problem(f"a comma after the last rule: write {codes_text.rstrip(',')} <reason>, or name the next rule after the comma with no space")
            continue
        parsed_codes = _codes(source, codes_text, codes_offset, rule_ids)
        if isinstance(parsed_codes, Problem):
            problems.append(parsed_codes)
            continue
        codes, spans = parsed_codes
        reason = _SEPARATOR.sub("", reason).strip()
        first_word = reason.split(" ", 1)[0].rstrip(",")
        if _is_code(first_word):
            problem(f"separate the rules with commas and no spaces ({codes_text},{first_word}), then give the reason")
            continue
        if not any(character.isalnum() for character in reason):
            problem(f"a reason is required after the rules: //cudalint:{verb} {codes_text} <why this is fine>")
            continue
        target = None if verb == "file-ignore" else (_target_line(source, position.line) if standalone else position.line)
        directives.append(Directive(verb, tuple(codes), tuple(spans), reason, whole, target))
    return directives, problems


def apply(
    findings: list[Finding], parsed: ParsedFile, rule_ids: Iterable[str], enabled: frozenset[str], report_unused: bool,
) -> tuple[list[Finding], list[Finding]]:
    """Split the findings of one file into (reported, suppressed), adding CL001
    findings for bad directives to the reported ones when CL001 is enabled."""
    directives, problems = find_directives(parsed, rule_ids)
    if not directives and not problems:
        return findings, []
    source = parsed.source
    reported: list[Finding] = []
    suppressed: list[Finding] = []
    for finding in findings:
        by: Directive | None = None
        if not finding.rule_id.startswith("CL0"):
            for directive in directives:
                if directive.target_line is not None and directive.target_line != finding.span.start.line:
                    continue
                for code in directive.codes:
                    if finding.rule_id.startswith(code):
                        directive.used.add(code)
                        # A line directive explains this finding better than a file-wide one.
                        if by is None or (by.target_line is None and directive.target_line is not None):
                            by = directive
        if by is None:
            reported.append(finding)
        else:
            suppressed.append(replace(finding, suppression=Suppression(
                SuppressionKind.IN_SOURCE, by.reason, source.display, by.span,
            )))
    if TOOL_RULE not in enabled:
        return reported, suppressed

    def tool_finding(span: Span, message: str) -> Finding:
        return Finding(TOOL_RULE, source.display, span, message, "", source.line_text(span.start.line))

    for directive in directives:
        for code, span in zip(directive.codes, directive.code_spans):
            note = retired_note(code)
            if note is not None:
                suppressed.append(replace(tool_finding(span, note), suppression=Suppression(
                    SuppressionKind.IN_SOURCE, "a retired rule is a note, not a finding", source.display, directive.span,
                )))

    for problem in problems:
        reported.append(tool_finding(problem.span, problem.message))
    if report_unused:
        for directive in directives:
            for code, span in zip(directive.codes, directive.code_spans):
                if code in directive.used or not any(rule_id.startswith(code) for rule_id in enabled):
                    continue
                fix = "remove the directive" if len(directive.codes) == 1 else f"remove {code} from the directive"
                if directive.target_line is None:
                    message = f"unused suppression: no {code} finding in this file; {fix}"
                else:
                    message = (
                        f"unused suppression: no {code} finding on line {directive.target_line}; {fix} "
                        "(a directive applies to the line it ends, or, on a line of its own, to the next line of code)"
                    )
                reported.append(tool_finding(span, message))
    return reported, suppressed
