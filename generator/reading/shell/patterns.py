"""Bash glob patterns (for `${v#pat}`, `${v//pat/rep}`, `[[ x == pat ]]`, `case`) as regexes,
and the ASCII-only case changes bash applies in the C locale."""

from __future__ import annotations

import re
from functools import lru_cache


def _tokens(pattern: str) -> tuple[str | None, ...]:
    """A bash glob as tokens: None for `*`, else a regex matching exactly one character (`?`,
    a bracket expression, or a literal). `\\x` and quoted parts should already be escaped by
    the caller as `\\x`."""
    out: list[str | None] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == "*":
            if not out or out[-1] is not None:  # `**` is `*`
                out.append(None)
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : j]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^' if negate else ''}{body}]")
                i = j + 1
                continue
        else:
            out.append(re.escape(ch))
        i += 1
    return tuple(out)


def glob_regex(pattern: str) -> str:
    """Regex source for a bash glob (see _tokens)."""
    return "".join(".*" if token is None else token for token in _tokens(pattern))


class _Segment:
    """Star-free run of a glob: fixed length, so matching it never backtracks."""

    __slots__ = ("length", "rx")

    def __init__(self, tokens: tuple[str, ...]) -> None:
        self.length = len(tokens)
        self.rx = re.compile("".join(tokens), re.DOTALL)

    def at(self, text: str, pos: int) -> bool:
        return pos + self.length <= len(text) and self.rx.match(text, pos, pos + self.length) is not None

    def find(self, text: str, pos: int, end: int) -> int:
        """The leftmost start >= pos of a match ending by `end`, or -1."""
        found = self.rx.search(text, pos, end)
        return found.start() if found is not None else -1


class _Glob:
    """A glob matched segment by segment, each star-free segment placed leftmost: O(length of
    text x length of pattern). A backtracking regex (`.*a.*a.*a…`) needs time exponential in
    the stars on a long value; a script can hold both."""

    def __init__(self, tokens: tuple[str | None, ...]) -> None:
        parts: list[list[str]] = [[]]
        for token in tokens:
            if token is None:
                parts.append([])
            else:
                parts[-1].append(token)
        self.starred = len(parts) > 1
        self.first = _Segment(tuple(parts[0]))
        self.last = _Segment(tuple(parts[-1]))
        self.middle = [_Segment(tuple(part)) for part in parts[1:-1] if part]

    def _after_middle(self, text: str, pos: int, end: int) -> int:
        """Where the middle segments end when each is placed leftmost from `pos`; -1 if they
        do not fit before `end`."""
        for segment in self.middle:
            start = segment.find(text, pos, end)
            if start < 0:
                return -1
            pos = start + segment.length
        return pos

    def fullmatch(self, text: str, start: int = 0) -> bool:
        n = len(text)
        if not self.starred:
            return n - start == self.first.length and self.first.at(text, start)
        tail = n - self.last.length
        if tail < start + self.first.length or not self.first.at(text, start):
            return False
        pos = self._after_middle(text, start + self.first.length, tail)
        return pos >= 0 and self.last.at(text, tail)

    def prefix_end(self, text: str, start: int, longest: bool) -> int | None:
        """The end of the shortest (or longest) text[start:end] the glob matches, or None."""
        if not self.first.at(text, start):
            return None
        if not self.starred:
            return start + self.first.length
        n = len(text)
        pos = self._after_middle(text, start + self.first.length, n)
        if pos < 0:
            return None
        if not longest:
            found = self.last.find(text, pos, n)
            return None if found < 0 else found + self.last.length
        for begin in range(n - self.last.length, pos - 1, -1):
            if self.last.at(text, begin):
                return begin + self.last.length
        return None


@lru_cache(maxsize=1024)
def _glob(pattern: str, reverse: bool = False) -> _Glob:
    tokens = _tokens(pattern)
    return _Glob(tokens[::-1] if reverse else tokens)


def glob_match(pattern: str, text: str) -> bool:
    return _glob(pattern).fullmatch(text)


def remove_prefix(text: str, pattern: str, longest: bool) -> str:
    end = _glob(pattern).prefix_end(text, 0, longest)
    return text if end is None else text[end:]


def remove_suffix(text: str, pattern: str, longest: bool) -> str:
    # A suffix of the text is a prefix of the reversed text, matched by the reversed glob.
    end = _glob(pattern, reverse=True).prefix_end(text[::-1], 0, longest)
    return text if end is None else text[: len(text) - end]


# Text past which `${v/pattern/…}` with a star is not followed: each start position is tried,
# so the work grows with the square of the text (as it does in bash).
REPLACE_SCAN_LIMIT = 4096


def replace(text: str, pattern: str, replacement: str, mode: str) -> str:
    """mode: "/" first, "//" all, "/#" at start, "/%" at end (longest match, like bash).
    ValueError when the text is too long to scan for a starred pattern."""
    if pattern == "":
        return text
    if mode == "/#":
        end = _glob(pattern).prefix_end(text, 0, longest=True)
        return text if end is None else replacement + text[end:]
    if mode == "/%":
        end = _glob(pattern, reverse=True).prefix_end(text[::-1], 0, longest=True)
        return text if end is None else text[: len(text) - end] + replacement
    glob = _glob(pattern)
    if text == "":  # bash replaces an empty match only in an empty value
        return replacement if glob.fullmatch(text) else text
    if glob.starred and len(text) > REPLACE_SCAN_LIMIT:
        raise ValueError(f"a {len(text)}-character value is too long to search for a starred pattern")
    out: list[str] = []
    done = position = 0
    while position <= len(text):
        end = glob.prefix_end(text, position, longest=True)
        if end is None or end == position:  # no match here (an empty match replaces nothing)
            position += 1
            continue
        out += [text[done:position], replacement]
        done = position = end
        if mode != "//":
            break
    return "".join(out) + text[done:]


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def lower(text: str, first_only: bool = False) -> str:
    if first_only:
        return text[:1].translate(_LOWER) + text[1:]
    return text.translate(_LOWER)


def upper(text: str, first_only: bool = False) -> str:
    if first_only:
        return text[:1].translate(_UPPER) + text[1:]
    return text.translate(_UPPER)
