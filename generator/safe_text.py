"""Text that reaches a terminal (bottom layer: imports nothing): user-written text made inert,
and whether colour is honest (NO_COLOR, FORCE_COLOR, a terminal or not).

A launch script, a recipe description or a file name may hold ESC sequences or other control
characters; printed raw they could move the cursor, recolour or retitle the terminal, or hide
text, and bidirectional overrides reorder what a person reads. `printable` shows them as
`\\x1b`-style escapes instead. Used by every text report and by InputError's one-line message.
"""

from __future__ import annotations

import os
from typing import TextIO

_KEEP = {"\n", "\t"}
# Bidirectional embeddings/overrides/isolates: they reorder the text a person reads.
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _is_control(ch: str) -> bool:
    code = ord(ch)
    return (code < 0x20 and ch not in _KEEP) or 0x7F <= code <= 0x9F or ch in _BIDI


def printable(text: str) -> str:
    """`text` with control characters (except newline and tab), DEL, C1 controls and bidi
    overrides written as escapes; everything else unchanged."""
    if not any(_is_control(ch) for ch in text):
        return text
    return "".join(_escape(ch) if _is_control(ch) else ch for ch in text)


def one_line(text: str) -> str:
    """`printable` for a value shown inside one line: newlines and tabs escaped too."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def no_color() -> bool:
    """NO_COLOR set to a non-empty value (no-color.org): no escape codes at all, bold included."""
    return bool(os.environ.get("NO_COLOR"))


def use_color(stream: TextIO) -> bool:
    """Colour on a terminal (or with FORCE_COLOR, as rich and many tools honour it), never with
    NO_COLOR."""
    isatty = getattr(stream, "isatty", None)
    return (bool(isatty and isatty()) or bool(os.environ.get("FORCE_COLOR"))) and not no_color()


__all__ = ["no_color", "one_line", "printable", "use_color"]
