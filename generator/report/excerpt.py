"""Where on its line a finding points, and the source excerpt the text report shows under it.

A finding knows its line and, for a config finding, the key it is about. The column is where
the script writes that key on the line (`actor_rollout_ref.actor.ppo_mini_batch_size=24`, or a
shorter spelling ending in the key's last part); the caret spans that whole word up to the
next blank. A finding without a key (or whose key is set elsewhere, say through a variable)
points at the line's first word. Columns are 1-based character counts, as ruff's and SARIF's.
Pure functions of the text.
"""

from __future__ import annotations

from typing import NamedTuple

MAX_EXCERPT = 160  # characters of a source line shown; a longer line is cut with an ellipsis


class Span(NamedTuple):
    column: int  # 1-based
    width: int  # characters the caret covers (at least 1)


def _word_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and not text[end].isspace() and text[end] not in ";|&":
        end += 1
    return max(end, start + 1)


def _key_at(text: str, key: str) -> int:
    """Index where `key` (or its tail from some dot on) is written as an override word (with its
    `+`/`++`/`~` prefix), else -1."""
    parts = key.split(".")
    for cut in range(len(parts)):
        written = ".".join(parts[cut:])
        found = text.find(written)
        while found >= 0:
            start = found
            while start > 0 and text[start - 1] in "+~":
                start -= 1
            before = text[start - 1] if start else " "
            after = text[found + len(written):found + len(written) + 1]
            if (before.isspace() or before in "'\"") and after in ("=", ""):
                return start
            found = text.find(written, found + 1)
    return -1


def span_of(line_text: str, key: str | None) -> Span:
    """The span a finding on `line_text` points at (about `key` when it has one)."""
    start = _key_at(line_text, key) if key else -1
    if start < 0:
        stripped = len(line_text) - len(line_text.lstrip())
        start = stripped if stripped < len(line_text) else 0
    end = _word_end(line_text, start)
    return Span(start + 1, max(1, min(end, len(line_text)) - start))


def source_line(lines: list[str], number: int | None) -> str | None:
    """Line `number` (1-based) of the file, or None when there is none."""
    if number is None or number < 1 or number > len(lines):
        return None
    return lines[number - 1].rstrip("\r\n")


def excerpt(line_number: int, text: str, span: Span) -> list[str]:
    """ruff-style lines: a gutter with the line number, the source, a caret under the span."""
    shown = text.expandtabs(1)  # one column per character, so the caret stays under the word
    column, width = span.column, span.width
    if len(shown) > MAX_EXCERPT:
        if column + width > MAX_EXCERPT:  # keep the pointed word in view
            cut = max(0, column - 1 - MAX_EXCERPT // 2)
            shown = "…" + shown[cut + 1:cut + MAX_EXCERPT]
            column -= cut
        shown = shown[:MAX_EXCERPT] + "…"
    width = max(1, min(width, len(shown) - column + 1))
    gutter = len(str(line_number))
    pad = " " * gutter
    return [f"{pad} |", f"{line_number} | {shown}", f"{pad} | {' ' * (column - 1)}{'^' * width}"]


__all__ = ["MAX_EXCERPT", "Span", "excerpt", "source_line", "span_of"]
