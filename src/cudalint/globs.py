"""Globs over the paths of a tree, as `exclude` and `per-file-ignores`
write them: gitignore-like patterns relative to a directory (the
configuration's, or the current one for `--exclude`).

They live below the application because the run itself applies them: the
settings carry each configuration's per-file ignores (`PerFileIgnores`) to
the worker processes, which pickle them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


# Globs are matched by a small matcher of their own rather than translated
# to regular expressions: Python's backtracking `re` takes exponential time on
# `*a*a*a*a*a*a*a*a*b`, while this matcher takes time proportional to
# pattern x path (segments for `**`, characters for `*`).

_STAR = ("*",)
_ONE = ("?",)


def _parse_class(segment: str, i: int) -> tuple[tuple, int] | None:
    """A `[...]` class starting at segment[i] == '[': (token, index of its
    ']'), or None when it is not closed (then '[' is a literal)."""
    j = i + 1
    negate = segment[j:j + 1] in ("!", "^")
    if negate:
        j += 1
    first = j
    if segment[j:j + 1] == "]":
        j += 1
    close = segment.find("]", j)
    if close == -1:
        return None
    body = segment[first:close]
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            low, high = body[k], body[k + 2]
            if low > high:
                raise ValueError(f"bad character range {low}-{high} in {segment!r}")
            ranges.append((low, high))
            k += 3
        else:
            ranges.append((body[k], body[k]))
            k += 1
    if not ranges:
        raise ValueError(f"empty character class in {segment!r}")
    return ("[", negate, tuple(ranges)), close


def _segment_tokens(segment: str) -> tuple:
    tokens: list = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            if not tokens or tokens[-1] is not _STAR:  # `**` inside a segment is one `*`
                tokens.append(_STAR)
        elif char == "?":
            tokens.append(_ONE)
        elif char == "[" and (parsed := _parse_class(segment, i)) is not None:
            token, i = parsed
            tokens.append(token)
        else:
            tokens.append(char)
        i += 1
    return tuple(tokens)


def _token_matches(token, char: str) -> bool:
    if token is _ONE:
        return True
    if isinstance(token, str):
        return token == char
    _, negate, ranges = token
    return any(low <= char <= high for low, high in ranges) != negate


def _segment_matches(tokens: tuple, text: str) -> bool:
    """Wildcard matching with backtracking to the last `*` only: at most
    len(tokens) x len(text) steps."""
    t = i = 0
    star, mark = -1, 0
    while i < len(text):
        if t < len(tokens) and tokens[t] is _STAR:
            star, mark = t, i
            t += 1
        elif t < len(tokens) and _token_matches(tokens[t], text[i]):
            t += 1
            i += 1
        elif star != -1:
            t = star + 1
            mark += 1
            i = mark
        else:
            return False
    while t < len(tokens) and tokens[t] is _STAR:
        t += 1
    return t == len(tokens)


_ANY_SEGMENTS = "**"


class Glob:
    """A gitignore-like glob over a '/'-separated relative path.

    A pattern without '/' (`vendor`, `*_gen.go`) matches a file or directory
    of that name at any depth; a pattern with '/' (`internal/gen`,
    `cmd/*/main.go`, `**/mocks`) is anchored at the configuration's directory.
    `*` and `?` stay within one path segment, `**` spans any number of them,
    `[abc]`, `[a-z]` and `[!abc]` are character classes. A pattern that
    matches a directory matches every file below it.
    """

    __slots__ = ("pattern", "_anywhere", "_segments")

    def __init__(self, pattern: str):
        text = pattern.strip()
        if text.startswith("./"):
            text = text[2:]
        text = text.strip("/")
        if not text:
            raise ValueError("an empty pattern")
        if "\0" in text:
            raise ValueError("a NUL character in a pattern")
        self.pattern = pattern
        parts = text.split("/")
        self._anywhere = len(parts) == 1
        self._segments = tuple(_ANY_SEGMENTS if part == "**" else _segment_tokens(part) for part in parts)

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Glob) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __getstate__(self):
        return self.pattern

    def __setstate__(self, pattern: str) -> None:
        self.__init__(pattern)

    def match(self, path: str) -> bool:
        names = path.split("/")
        if self._anywhere:
            (tokens,) = self._segments
            if tokens == _ANY_SEGMENTS:
                return bool(path)
            return any(_segment_matches(tokens, name) for name in names)
        # The set of path positions reachable after each pattern segment; the
        # pattern must match a prefix of at least one name (a directory
        # matches everything below it).
        count = len(names)
        reachable = {0}
        last = len(self._segments) - 1
        for index, segment in enumerate(self._segments):
            following: set[int] = set()
            if segment == _ANY_SEGMENTS:
                if index == last:  # a trailing `**`: one or more names
                    return any(position < count for position in reachable)
                low = min(reachable)
                following = set(range(low, count + 1))
            else:
                for position in reachable:
                    if position < count and _segment_matches(segment, names[position]):
                        following.add(position + 1)
            if not following:
                return False
            reachable = following
        return any(position >= 1 for position in reachable)


def glob_regex(pattern: str) -> Glob:
    """The matcher of `pattern` (the name is historical: it is no regex)."""
    return Glob(pattern)


@dataclass(frozen=True)
class PathGlobs:
    """Globs relative to `root`; picklable, for worker processes."""

    root: Path
    globs: tuple[tuple[str, Glob], ...] = ()

    @classmethod
    def compile(cls, root: Path, patterns: list[str] | tuple[str, ...]) -> PathGlobs:
        return cls(root, tuple((pattern, glob_regex(pattern)) for pattern in patterns))

    def match(self, path: Path) -> str | None:
        """The first glob that matches `path` (absolute), or None. Paths
        outside `root` never match."""
        relative = _relative(path, self.root) if self.globs else None
        if relative is None:
            return None
        return next((pattern for pattern, regex in self.globs if regex.match(relative)), None)


@dataclass(frozen=True)
class PerFileIgnores:
    root: Path
    entries: tuple[tuple[str, Glob, tuple[str, ...]], ...] = ()

    def enabled_for(self, path: Path, enabled: frozenset[str]) -> frozenset[str]:
        relative = _relative(path, self.root) if self.entries else None
        if relative is None:
            return enabled
        ignored = tuple(p for _, regex, prefixes in self.entries if regex.match(relative) for p in prefixes)
        if not ignored:
            return enabled
        return frozenset(rule for rule in enabled if not rule.startswith(ignored))


def _relative(path: Path, root: Path) -> str | None:
    """`path` relative to `root` in the slash form globs are written in, or
    None for a path outside `root` (which no glob of it matches)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None
