"""Bash brace expansion (`x.{a,b}=1` → two words, `{1..3}` → three) of one word, as the
source ranges each generated word is made of."""

from __future__ import annotations

import re

from generator.reading.shell.scan import WordError, skip_quoted
from generator.base.safe_regex import lazy_pattern

_MAX_BRACE_WORDS = 256


# The characters _brace_group acts on (skip_quoted's openers, and the braces and commas); any
# other character is passed over one at a time, so a search for the next of these is the same.
_OUTER = re.compile(r"[\\'\"$`{]")
_INNER = re.compile(r"[\\'\"$`{},]")
_SEQUENCE = lazy_pattern(r"(-?[0-9]+)\.\.(-?[0-9]+)(?:\.\.(-?[0-9]+))?\Z|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?[0-9]+))?\Z")


def _sequence(body: str) -> list[str] | None:
    """`{1..3}`, `{0..10..2}`, `{a..e}`: the words bash generates, or None."""
    m = _SEQUENCE().match(body)
    if not m:
        return None
    if m.group(1) is not None:
        if any(len(g.lstrip("-")) > 18 for g in (m.group(1), m.group(2), m.group(3) or "")):
            return None  # past bash's 64-bit integers (`{1..99999999999999999999}`: an internal error before)
        first, last = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        if abs(last - first) // step + 1 > _MAX_BRACE_WORDS:
            return None
        width = max(len(m.group(1)), len(m.group(2))) if re.match(r"-?0\d", m.group(1) + " ") or re.match(
            r"-?0\d", m.group(2) + " ") else 0
        values = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
        if len(values) > _MAX_BRACE_WORDS:
            return None
        return [str(v).zfill(width) if width else str(v) for v in values]
    first_c, last_c = ord(m.group(4)), ord(m.group(5))
    step = abs(int(m.group(6) or 1)) or 1
    codes = range(first_c, last_c + 1, step) if first_c <= last_c else range(first_c, last_c - 1, -step)
    return [chr(c) for c in codes]


def _brace_group(s: str, a: int, b: int) -> tuple[int, list[tuple[int, int]] | list[str], int] | None:
    """The first unquoted `{x,y,…}` in s[a:b]: (open index, alternative ranges, close index);
    for a sequence `{1..3}` the alternatives are the generated texts."""
    i = a
    while i < b:
        # Only a quote, an expansion or a brace can start anything: jump to the next one.
        found = _OUTER.search(s, i, b)
        if found is None:
            return None
        i = found.start()
        skipped = skip_quoted(s, i, b)
        if skipped is not None:
            i = skipped
            continue
        if s[i] != "{":
            i += 1
            continue
        depth, j, commas = 1, i + 1, []
        while j < b:
            found = _INNER.search(s, j, b)
            if found is None:
                j = b
                break
            j = found.start()
            skipped = skip_quoted(s, j, b)
            if skipped is not None:
                j = skipped
                continue
            c = s[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            elif c == "," and depth == 1:
                commas.append(j)
            j += 1
        if j < b and commas:
            bounds = [i, *commas, j]
            return i, [(bounds[k] + 1, bounds[k + 1]) for k in range(len(bounds) - 1)], j
        if j < b and (i == a or s[i - 1] != "$"):
            generated = _sequence(s[i + 1 : j])
            if generated is not None:
                return i, generated, j
        i += 1
    return None


def brace_words(s: str, a: int, b: int) -> list[list[tuple[int, int] | str]] | None:
    """Bash brace expansion of the word s[a:b] (`x.{a,b}=1` → two words), each word as the
    source ranges it is made of; None when the word has no brace expansion.
    (Sequences such as `{1..3}` are left literal.)"""
    try:
        group = _brace_group(s, a, b)
    except WordError:
        return None
    if group is None:
        return None
    open_at, alternatives, close_at = group
    suffixes = brace_words(s, close_at + 1, b) or [[(close_at + 1, b)]]
    out: list[list[tuple[int, int] | str]] = []
    for alternative in alternatives:
        if isinstance(alternative, str):
            expanded: list[list[tuple[int, int] | str]] = [[alternative]]
        else:
            expanded = brace_words(s, *alternative) or [[alternative]]
        for alt in expanded:
            for suffix in suffixes:
                out.append([(a, open_at), *alt, *suffix])
                if len(out) > _MAX_BRACE_WORDS:
                    return out
    return out
