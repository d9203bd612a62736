"""Hydra text for a value a fix writes, in the style the user already used where it matters."""

from __future__ import annotations

from typing import Any


def hydra_text(value: Any, *, old_text: str | None = None) -> str:
    """Hydra override text for `value`. When the user wrote a boolean in lower case (`true`),
    keep that spelling so the fixed line looks like its neighbours."""
    from generator.reading.overrides import format_value

    text = format_value(value)
    if isinstance(value, bool) and old_text is not None and old_text.strip("'\"").islower():
        return text.lower()
    return text
