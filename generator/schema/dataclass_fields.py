"""Dataclass fields verl's YAML does not list (so a '+' is needed to set them, and it is
accepted), by release and class name: generator/data/dataclass_fields.json, read from verl's
source at each release tag by tools/dataclass_fields.py. A release without its own list is
judged with the nearest older one.

Packaged data, the same for every run and every user: read once per process, on first use (a
call that adds no key never needs the 110 KB), and kept at module level (tests/test_caches.py
lists it as a pure cache). The rules ask it (VK6xx); nothing here reads a user's file.
"""

from __future__ import annotations

from functools import lru_cache

from generator.base.resources import data_dir
from generator.verl.versions import parse


@lru_cache(maxsize=1)
def dataclass_fields() -> dict[str, dict[str, frozenset[str]]]:
    """release -> class name -> the fields verl's dataclass has there."""
    import json

    raw = json.loads((data_dir() / "dataclass_fields.json").read_text(encoding="utf-8"))
    return {release: {name: frozenset(fields) for name, fields in classes.items()} for release, classes in raw.items()}


@lru_cache(maxsize=64)  # pure on the packaged data; asked for every call
def fields_release(version: str) -> str | None:
    """The measured release whose fields judge `version`: itself, else the nearest older one."""
    measured = sorted(dataclass_fields(), key=parse)
    try:
        wanted = parse(version)
    except Exception:
        return measured[-1] if measured else None
    older = [r for r in measured if parse(r) <= wanted]
    return older[-1] if older else None


__all__ = ["dataclass_fields", "fields_release"]
