"""The verl releases verl-gen knows (one per packaged schema file), the verl installed here and
the version a verl package says it is. Also maps corpus snapshot names to schema ids. (Which one
a script is checked against is generator.schema.resolution.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from generator import boundary
from generator.errors import InputError
from generator.schema.core import _packaged_ids, _sort_key
from generator.versions import parse

# verl at b178a3c (the corpus snapshot "HEAD") sits between 0.7.0 and 0.7.1 and its config
# differs from both, so it is packaged as its own schema id; parse() reads it as 0.7.0, so
# version-gated rules treat it as 0.7.0.
HEAD_SCHEMA = "0.7.0+b178a3c"
# verl main at 1dda039 (corpus snapshot "HEAD-2608", version file 0.10.0.dev): parse() reads 0.10.0,
# so version-gated rules treat it as newer than every release.
HEAD_2608_SCHEMA = "0.10.0.dev+1dda039"
# A package's METADATA holds its README: tens of kilobytes.
METADATA_LIMIT = 1 << 20

SNAPSHOTS: dict[str, str] = {
    "v0.4.1": "0.4.1",
    "v0.5.0": "0.5.0",
    "v0.6.0": "0.6.0",
    "v0.6.1": "0.6.1",
    "v0.7.0": "0.7.0",
    "HEAD": HEAD_SCHEMA,
    # verl-recipe snapshots are checked against the verl HEAD of the corpus (their config
    # trees ship that verl); verl-recipe HEAD targets a newer verl than any packaged release.
    "verl-recipe@21892b9": HEAD_SCHEMA,
    "verl-recipe@48ea0a7": HEAD_SCHEMA,
    "v0.7.1": "0.7.1",
    "v0.8.0": "0.8.0",
    "v0.9.0": "0.9.0",
    # verl main of 2026-08-22 (1dda039, 0.10.0.dev) and the verl-recipe commit it pins (whose
    # config tree is that verl's): packaged as their own schema id, like HEAD above.
    "HEAD-2608": HEAD_2608_SCHEMA,
    "verl-recipe@e7f8895": HEAD_2608_SCHEMA,
}


def snapshot_version(tag: str) -> str:
    """Schema id to check a corpus snapshot (`v0.6.1`, `HEAD`, `verl-recipe@48ea0a7`) against."""
    if tag in SNAPSHOTS:
        return SNAPSHOTS[tag]
    if tag.startswith("verl-recipe@"):
        return HEAD_SCHEMA
    raise InputError(f"unknown corpus snapshot '{tag}'; known: {', '.join(SNAPSHOTS)}")


def packaged_releases() -> list[str]:
    """The releases with a packaged schema (plain ids, no +build), oldest first. The schema
    files under schema/data/ are the one list of releases."""
    return sorted((v for v in _packaged_ids() if "+" not in v), key=_sort_key)


def newest_release() -> str:
    """The newest packaged release (what a plain `pip install verl` installs today)."""
    return packaged_releases()[-1]


def nearest_older(version: str) -> str | None:
    target = parse(version)
    older = [r for r in packaged_releases() if parse(r) <= target]
    return older[-1] if older else None


def installed_verl() -> tuple[str, Path] | None:
    """(version, package dir) of the verl importable here, found without importing it."""
    try:
        spec = importlib.util.find_spec("verl")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if not locations and spec.origin:
        locations = [str(Path(spec.origin).parent)]
    if not locations:
        return None
    package = Path(locations[0])
    version = read_version(package)
    return (version, package) if version else None


def read_version(package: Path) -> str | None:
    """The release a verl package says it is: its `version/version` file (one short line; a
    file that is not a small regular text file is ignored), else a dist-info beside it."""
    from generator.files import read_text_input

    try:
        text = read_text_input(package / "version" / "version", limit=256, what="version file").strip()
        if text and "\n" not in text:
            return text
    except InputError:
        pass
    # A dist-info next to the package: verl-X.dist-info/METADATA
    found = boundary.current()
    allowed = found is None or found.allows(package)
    # Through the bounded reader like every file: a METADATA that is a FIFO or a link to
    # /dev/zero is refused, not waited on or read without end (issue 21).
    for meta in sorted(package.parent.glob("verl-*.dist-info/METADATA"))[:8]:
        try:
            # Beside a package the boundary allows (the installed verl's site-packages, or the project).
            text = read_text_input(meta, limit=METADATA_LIMIT, what="package METADATA", trusted=allowed)
        except InputError:
            continue
        for line in text.splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()[:64]
    return None
