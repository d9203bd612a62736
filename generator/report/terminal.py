"""Text that reaches a terminal: user-written values made inert (generator.safe_text), and
whether colour is honest."""

from __future__ import annotations

import os
from typing import TextIO

from generator.safe_text import one_line, printable


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, never with NO_COLOR set to a non-empty value (no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


__all__ = ["one_line", "printable", "use_color"]
