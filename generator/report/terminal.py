"""Text that reaches a terminal: user-written values made inert (generator.safe_text), and
whether colour is honest."""

from __future__ import annotations

import os
from typing import TextIO

from generator.safe_text import one_line, printable


def no_color() -> bool:
    """NO_COLOR set to a non-empty value (no-color.org): no escape codes at all, bold included."""
    return bool(os.environ.get("NO_COLOR"))


def use_color(stream: TextIO) -> bool:
    """Colour on a terminal (or with FORCE_COLOR, as rich and many tools honour it), never with
    NO_COLOR."""
    isatty = getattr(stream, "isatty", None)
    return (bool(isatty and isatty()) or bool(os.environ.get("FORCE_COLOR"))) and not no_color()


__all__ = ["no_color", "one_line", "printable", "use_color"]
