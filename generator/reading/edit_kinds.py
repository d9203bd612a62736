"""The two kinds of edit a fix is made of, shared by the rules that propose fixes and the
readers that know where a value is written. Bottom of the import graph: imports nothing
from the project, so the shell and Python readers can use it without depending on the rules.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class KeyEdit(NamedTuple):
    """Set `key` to `new` (Python value, rendered as Hydra text by the fixer)."""

    key: str
    old: Any
    new: Any


class TextEdit(NamedTuple):
    """Replace bytes [start, end) of the script with `replacement` (structural fixes)."""

    start: int
    end: int
    replacement: str
