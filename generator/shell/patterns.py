"""Bash glob patterns (for `${v#pat}`, `${v//pat/rep}`, `[[ x == pat ]]`, `case`) as regexes,
and the ASCII-only case changes bash applies in the C locale."""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> str:
    """Regex source for a bash glob; `\\x` and quoted parts should already be escaped by the
    caller as `\\x`."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == "*":
            out.append(".*")
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
    return "".join(out)


def glob_match(pattern: str, text: str) -> bool:
    return re.fullmatch(glob_regex(pattern), text, re.DOTALL) is not None


def remove_prefix(text: str, pattern: str, longest: bool) -> str:
    rx = re.compile(glob_regex(pattern), re.DOTALL)
    order = range(len(text), -1, -1) if longest else range(len(text) + 1)
    for cut in order:
        if rx.fullmatch(text, 0, cut):
            return text[cut:]
    return text


def remove_suffix(text: str, pattern: str, longest: bool) -> str:
    rx = re.compile(glob_regex(pattern), re.DOTALL)
    order = range(len(text) + 1) if longest else range(len(text), -1, -1)
    for cut in order:
        if rx.fullmatch(text, cut):
            return text[:cut]
    return text


def replace(text: str, pattern: str, replacement: str, mode: str) -> str:
    """mode: "/" first, "//" all, "/#" at start, "/%" at end (longest match, like bash)."""
    if pattern == "":
        return text
    rx_src = glob_regex(pattern)
    if mode == "/#":
        rx = re.compile(rx_src, re.DOTALL)
        for cut in range(len(text), -1, -1):
            if rx.fullmatch(text, 0, cut):
                return replacement + text[cut:]
        return text
    if mode == "/%":
        rx = re.compile(rx_src, re.DOTALL)
        for cut in range(len(text) + 1):
            if rx.fullmatch(text, cut):
                return text[:cut] + replacement
        return text
    rx = re.compile(rx_src, re.DOTALL)  # greedy regex = bash's longest match at the first position
    return rx.sub(lambda _m: replacement, text, count=0 if mode == "//" else 1)


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
