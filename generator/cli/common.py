"""Argument handling shared by the commands: `--env`/`--arg` pairs and rule-code lists. One
place, so every command refuses a bad option with the same one-line message. (What the
commands accept as input is generator/inputs.py.)"""

from __future__ import annotations

from generator.errors import InputError


def parse_pairs(items: list[str], option: str = "--env") -> dict[str, str]:
    """NAME=VALUE options as a dict; NAME must be a valid shell variable name."""
    pairs: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise InputError(f"{option} expects NAME=VALUE, got '{item}'")
        pairs[name] = value
    return pairs


def parse_codes(values: list[str]) -> tuple[str, ...]:
    """`--select VB1,VK601 --select VS` → ("VB1", "VK601", "VS") (ruff-style prefixes)."""
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())
