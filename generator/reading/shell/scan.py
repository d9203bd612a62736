"""Finding where quotes, `$(…)`, `${…}` and backticks close in a script's text, and the
word ranges of a simple command: the lexing the expander and the hazard checks share."""

from __future__ import annotations

import re


# The characters each scan below acts on; any other one it passes over one at a time, so
# searching for the next of these gives the same result in a few calls instead of one per byte.
_IN_DOUBLE = re.compile(r"[\\\"$`]")
_IN_BRACE = re.compile(r"[\\'\"$`{}]")
_IN_PAREN = re.compile(r"[\\'\"$`#()]")


class WordError(ValueError):
    """A word whose quotes or braces do not close (reported as a parse error)."""


def find_close_quote(s: str, i: int, end: int, quote: str) -> int:
    """Index of the closing quote for an opening quote at i-1 (double quotes honour escapes
    and nested `$(…)`/`${…}`)."""
    if quote == "'":
        j = s.find("'", i, end)
        if j < 0:
            raise WordError("unterminated single quote")
        return j
    j = i
    while j < end:
        found = _IN_DOUBLE.search(s, j, end)  # any other character is passed over
        if found is None:
            break
        j = found.start()
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            return j
        if c == "$" and j + 1 < end and s[j + 1] in "({":
            j = find_dollar_close(s, j + 2, end, s[j + 1]) + 1
            continue
        if c == "`":
            k = find_backtick(s, j + 1, end)
            j = k + 1
            continue
        j += 1
    raise WordError("unterminated double quote")


def find_backtick(s: str, i: int, end: int) -> int:
    j = i
    while j < end:
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == "`":
            return j
        j += 1
    raise WordError("unterminated backtick")


def find_dollar_close(s: str, i: int, end: int, opener: str) -> int:
    """Index of the `}` or `)` closing `${`/`$(` whose body starts at i."""
    closer = "}" if opener == "{" else ")"
    depth = 1
    j = i
    acted_on = _IN_BRACE if opener == "{" else _IN_PAREN
    while j < end:
        found = acted_on.search(s, j, end)  # any other character is passed over
        if found is None:
            break
        j = found.start()
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "'":  # bash matches single quotes inside `${…}` too, even within "…"
            j = find_close_quote(s, j + 1, end, "'") + 1
            continue
        if c == '"':
            j = find_close_quote(s, j + 1, end, '"') + 1
            continue
        if c == "$" and j + 1 < end and s[j + 1] in "({":
            j = find_dollar_close(s, j + 2, end, s[j + 1]) + 1
            continue
        if c == "`":
            j = find_backtick(s, j + 1, end) + 1
            continue
        if opener == "(" and c == "#" and (j == i or s[j - 1] in " \t\n;"):
            nl = s.find("\n", j, end)
            j = end if nl < 0 else nl
            continue
        if c == opener or (opener == "{" and c == "{" ):
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise WordError(f"unterminated ${opener}")  # `$(` or `${`


def split_words(s: str, a: int, b: int) -> list[tuple[int, int]] | None:
    """Word ranges of a simple command in s[a:b]; None if it has operators (|, ;, &, <, >)."""
    words: list[tuple[int, int]] = []
    i = a
    start = -1
    try:
        while i < b:
            c = s[i]
            if c in " \t\n":
                if start >= 0:
                    words.append((start, i))
                    start = -1
                i += 1
                continue
            if c in "|;&<>()#" and start < 0 or c in "|;&<>":
                return None
            if start < 0:
                start = i
            if c == "\\":
                i += 2
            elif c in "'\"":
                i = find_close_quote(s, i + 1, b, c) + 1
            elif c == "$" and i + 1 < b and s[i + 1] in "({":
                i = find_dollar_close(s, i + 2, b, s[i + 1]) + 1
            elif c == "`":
                i = find_backtick(s, i + 1, b) + 1
            else:
                i += 1
    except WordError:
        return None
    if start >= 0:
        words.append((start, min(i, b)))
    return words


def skip_quoted(s: str, j: int, end: int) -> int | None:
    """If s[j] opens a quote or an expansion, the index just after it closes; else None."""
    c = s[j]
    if c == "\\":
        return j + 2
    if c in "'\"":
        return find_close_quote(s, j + 1, end, c) + 1
    if c == "$" and j + 1 < end and s[j + 1] in "({":
        return find_dollar_close(s, j + 2, end, s[j + 1]) + 1
    if c == "$" and j + 1 < end and s[j + 1] == "'":
        k = j + 2
        while k < end and s[k] != "'":
            k += 2 if s[k] == "\\" else 1
        return k + 1
    if c == "`":
        return find_backtick(s, j + 1, end) + 1
    return None
