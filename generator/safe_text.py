"""Text that reaches a terminal (bottom layer: imports nothing): user-written text made inert,
and whether colour is honest (NO_COLOR, FORCE_COLOR, a terminal or not).

A launch script, a recipe description or a file name may hold ESC sequences or other control
characters; printed raw they could move the cursor, recolour or retitle the terminal, or hide
text, and bidirectional overrides reorder what a person reads. `printable` shows them as
`\\x1b`-style escapes instead. Used by every text report and by InputError's one-line message.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

# C0 controls but newline and tab, DEL and the C1 controls, and the bidirectional
# embeddings/overrides/isolates (they reorder the text a person reads). One compiled class:
# every line of every report passes through here, so a per-character Python loop shows up in
# the time of a 20,000-override `gen show`.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with control characters (except newline and tab), DEL, C1 controls and bidi
    overrides written as escapes; everything else unchanged."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda match: _escape(match.group()), text)


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
