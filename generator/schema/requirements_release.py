"""The verl release a project's copy of verl's own `requirements.txt` names.

Forks and agent frameworks built on verl often carry verl's `requirements.txt` as it was at the
release they forked, without a `verl==` pin (issue 34: such a project was judged as 0.9.1 from its
keys, and 14 of its findings were false). Its content is evidence of the release: each content the
file had on verl's history maps to the releases it may be (generator/data/verl_requirements.json,
written by tools/verl_requirements.py from verl's git history). The content is compared as the set
of its requirement lines (comments, blank lines, order and case dropped), so a reordered or
re-commented copy still matches; one line added or removed does not, and is no evidence.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from generator.base.errors import InputError
from generator.base.files import read_text_input
from generator.schema.releases import packaged_releases
from generator.verl.versions import parse

_DATA = Path(__file__).resolve().parent.parent / "data" / "verl_requirements.json"
_LIMIT = 1 << 16  # verl's file is about 30 lines


def fingerprint(text: str) -> str:
    """The content of a requirements file as a short hash of its sorted requirement lines."""
    import hashlib  # here, not at the top: only a project with a requirements.txt pays for it

    lines = sorted({line.split("#", 1)[0].strip().lower().replace(" ", "") for line in text.splitlines()} - {""})
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[str | None, str | None]]:
    raw = json.loads(_DATA.read_text(encoding="utf-8"))
    return {key: (first, last) for key, (first, last) in raw["fingerprints"].items()}


class RequirementsRelease(NamedTuple):
    where: Path
    first: str | None  # the oldest release the content may be (None: before the oldest tag)
    last: str | None  # the newest (None: open-ended)
    allowed: tuple[str, ...]  # the packaged releases in that range (the oldest packaged when none is)

    def said(self) -> str:
        if self.first == self.last and self.first is not None:
            span = self.first
        else:
            span = f"{self.first or 'before 0.1'} .. {self.last or 'newer'}"
        return f"{self.where.name} is verl's own requirements file of release {span}"


def requirements_release(folder: Path) -> RequirementsRelease | None:
    """What `folder/requirements.txt` says of the release, when it is one of verl's own."""
    path = folder / "requirements.txt"
    try:
        if not path.is_file():
            return None
        text = read_text_input(path, limit=_LIMIT, what="requirements file")
    except (InputError, OSError, UnicodeDecodeError):
        return None
    found = _table().get(fingerprint(text))
    if found is None:
        return None
    first, last = found
    releases = packaged_releases()
    allowed = tuple(r for r in releases if (first is None or parse(r) >= parse(first))
                    and (last is None or parse(r) <= parse(last)))
    if not allowed:  # older than every packaged release: the oldest stands nearest
        allowed = (releases[0],) if last is not None and parse(last) < parse(releases[0]) else ()
    return RequirementsRelease(path, first, last, allowed) if allowed else None


def nearest_requirements_release(folders: list[Path]) -> RequirementsRelease | None:
    """The first of `folders` (nearest first) whose requirements.txt is one of verl's own."""
    for folder in folders:
        found = requirements_release(folder)
        if found is not None:
            return found
    return None


def narrowed(found: RequirementsRelease, by_keys: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(release judged, releases allowed): the packaged releases the file allows that also have
    every key the script sets (all the file allows when none has), judged by the newest."""
    allowed = tuple(r for r in found.allowed if r in by_keys) or found.allowed
    return allowed[-1], allowed
