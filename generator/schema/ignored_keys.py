"""Keys a release's config accepts (they are in its schema) but its trainer does not act on: one
home for the list. `gen recipe` writes none of them for a release that ignores it (the render's
validation refuses one), so every key a recipe writes is read by the target release (issue 32).
Each entry's reason and source, at a release tag: docs/release-semantics.md#keys-a-release-ignores.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.verl.versions import parse


@dataclass(frozen=True, slots=True)
class IgnoredKey:
    key: str
    since: str  # the first release known to ignore it
    why: str  # in the user's words, with the source


IGNORED_KEYS: tuple[IgnoredKey, ...] = (
    IgnoredKey("algorithm.filter_groups.max_num_gen_batches", "0.9.1",
               "verl 0.9.1's trainer (verl/trainer/ppo/v1/trainer_base.py) logs it as ignored by the built-in V1 "
               "replay buffer; data.max_inflight_gen_batches bounds DAPO's generation there"),
)


def ignored_key(version: str, key: str) -> IgnoredKey | None:
    """The entry saying `version` ignores `key` (a `+`-prefixed key counts as the key), or None."""
    bare = key.lstrip("+")
    try:
        release = parse(version)
    except ValueError:
        return None
    return next((entry for entry in IGNORED_KEYS if entry.key == bare and release >= parse(entry.since)), None)
