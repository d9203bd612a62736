"""The verl releases verl-gen knows (one per packaged schema file); also maps corpus snapshot
names to schema ids. (Which one a script is checked against is generator.schema.resolution;
where verl is installed and the version a verl package says it is, generator.verl.places.)"""

from __future__ import annotations

from generator.base.errors import InputError
from generator.schema.release_schema import _packaged_ids, _sort_key
from generator.verl.versions import parse

# verl at b178a3c (the corpus snapshot "HEAD") sits between 0.7.0 and 0.7.1 and its config
# differs from both, so it is packaged as its own schema id; parse() reads it as 0.7.0, so
# version-gated rules treat it as 0.7.0.
HEAD_SCHEMA = "0.7.0+b178a3c"
# verl main at 1dda039 (corpus snapshot "HEAD-2608", version file 0.10.0.dev): parse() reads 0.10.0,
# so version-gated rules treat it as newer than every release.
HEAD_2608_SCHEMA = "0.10.0.dev+1dda039"

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
