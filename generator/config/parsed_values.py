"""Equality of config values as verl sees them once parsed (bools are not numbers, 1 == 1.0,
lists and dicts compared deep), and the marker for a key one side does not have at all."""

from __future__ import annotations

import math


class _Missing:
    """A key one side does not have at all (not the same as a null value)."""

    def __repr__(self) -> str:
        return "(unset)"


MISSING = _Missing()


def same_value(a: object, b: object) -> bool:
    """Equality as verl sees parsed values: bools are not numbers, 1 == 1.0, lists/dicts deep."""
    if a is MISSING or b is MISSING:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
