"""Build constraints, read only to tell whether two files can be built
together.

cudalint analyses every file of a package whatever its constraints (a cgo
file behind `//go:build cuda` is GPU code to check), and a function declared
once per constrained file stands for all of its variants. A file that can
only be built without the tag its callee's variant needs (`cuda_stub_test.go`
behind `//go:build !cuda`, calling the `NewDevice` of `cuda_bridge.go` behind
`//go:build cuda`) never calls that variant: what the variant hands out is
not the caller's.
"""

from __future__ import annotations

import itertools
import re
import weakref

from cudalint.parse import ParsedFile

# Constraints over more tags than this are taken as satisfiable (2^12 evaluations at most).
_MAX_TAGS = 12
_TOKEN = re.compile(r"\s*(\(|\)|!|&&|\|\||[A-Za-z0-9_.]+)")
# Per file, while the file lives (an id may be reused by the next package's files).
_constraints: weakref.WeakKeyDictionary[ParsedFile, str | None] = weakref.WeakKeyDictionary()


def constraint(parsed: ParsedFile) -> str | None:
    """The file's constraint as a `//go:build` expression (`// +build` lines
    turned into one), None where it has none."""
    if parsed not in _constraints:
        _constraints[parsed] = _read(parsed.source.data)
    return _constraints[parsed]


def compatible(first: ParsedFile, second: ParsedFile) -> bool:
    """Whether some set of build tags builds both files."""
    a, b = constraint(first), constraint(second)
    if a is None or b is None or first is second:
        return True
    return _satisfiable(f"({a}) && ({b})")


def _read(data: bytes) -> str | None:
    plus: list[str] = []
    for raw in data[:4096].splitlines():
        line = raw.decode("utf-8", "replace").strip()
        if line.startswith("//go:build "):
            return line[len("//go:build "):].strip()
        if line.startswith("// +build "):
            options = [" && ".join(f"!{t[1:]}" if t.startswith("!") else t for t in option.split(",")) for option in line[9:].split()]
            plus.append(" || ".join(f"({o})" for o in options))
        elif line.startswith("package ") or (line and not line.startswith("//")):
            break
    return " && ".join(f"({p})" for p in plus) if plus else None


def _satisfiable(expression: str) -> bool:
    tokens = _TOKEN.findall(expression)
    if "".join(tokens) != re.sub(r"\s+", "", expression):
        return True  # not an expression this reads: assume it can hold
    tags = sorted({t for t in tokens if t not in ("(", ")", "!", "&&", "||")})
    if len(tags) > _MAX_TAGS:
        return True
    try:
        return any(
            _Evaluator(tokens, dict(zip(tags, values))).value() for values in itertools.product((False, True), repeat=len(tags))
        )
    except (IndexError, ValueError):
        return True


class _Evaluator:
    """`a || b`, `a && b`, `!a`, `(a)`, by precedence, over one assignment of the tags."""

    def __init__(self, tokens: list[str], tags: dict[str, bool]) -> None:
        self.tokens, self.tags, self.at = tokens, tags, 0

    def value(self) -> bool:
        result = self._or()
        if self.at != len(self.tokens):
            raise ValueError("trailing tokens")
        return result

    def _or(self) -> bool:
        return any(self._operands("||", self._and))

    def _and(self) -> bool:
        return all(self._operands("&&", self._not))

    def _operands(self, operator: str, operand) -> list[bool]:
        """Every operand of a run of one operator (all read: none is skipped)."""
        found = [operand()]
        while self.at < len(self.tokens) and self.tokens[self.at] == operator:
            self.at += 1
            found.append(operand())
        return found

    def _not(self) -> bool:
        token = self.tokens[self.at]
        self.at += 1
        if token == "!":
            return not self._not()
        if token == "(":
            result = self._or()
            if self.tokens[self.at] != ")":
                raise ValueError("unbalanced")
            self.at += 1
            return result
        if token in (")", "&&", "||"):
            raise ValueError("unexpected operator")
        return self.tags[token]
