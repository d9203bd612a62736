"""Why a key the config lacks is missing, in the user's terms: renamed or removed in an earlier
release, moved for one backend only, added in a later release; or which existing key the user
probably meant ("did you mean").
"""

from __future__ import annotations

import weakref

from generator.config.flat import FlatConfig
from generator.config.types import KeyIssue
from generator.reading.launch_script import Override
from generator.schema import load
from generator.schema.release_schema import project_base
from generator.schema.migrations import added_later, history, _move_for
from generator.verl.versions import parse


# Suggestions already made, per config and its key set (FlatConfig.generation): a call that
# repeats one unknown key thousands of times asks for the same answer each time, and each
# answer compares against every key of the config.
_ASKED: weakref.WeakKeyDictionary[FlatConfig, tuple[int, dict[str, str | None]]] = weakref.WeakKeyDictionary()


def suggest(key: str, flat: FlatConfig) -> str | None:
    """A "did you mean": the closest key under the same parent, else the one existing key with
    a close leaf name (compared on leaf names only: matching whole dotted keys over ~900 keys
    costs tens of ms)."""
    generation, asked = _ASKED.get(flat, (-1, {}))
    if generation != flat.generation:
        asked = {}
        _ASKED[flat] = (flat.generation, asked)
    if key not in asked:
        asked[key] = _closest(key, flat)
    return asked[key]


def _closest(key: str, flat: FlatConfig) -> str | None:
    parent, _, leaf = key.rpartition(".")
    siblings = [k.rpartition(".")[2] for k in flat.values if k.rpartition(".")[0] == parent]
    siblings += [n.rpartition(".")[2] for n in flat.nodes if n.rpartition(".")[0] == parent]
    import difflib  # here: only an unknown key looks for a near name

    match = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.75)
    if match:
        return f"{parent}.{match[0]}" if parent else match[0]
    by_leaf: dict[str, list[str]] = {}
    for existing in flat.values:
        by_leaf.setdefault(existing.rpartition(".")[2], []).append(existing)
    for name in difflib.get_close_matches(leaf, list(by_leaf), n=3, cutoff=0.85):
        holders = by_leaf[name]
        if len(holders) == 1:
            return holders[0]
        same_top = [h for h in holders if h.split(".")[0] == key.split(".")[0]]
        if len(same_top) == 1:
            return same_top[0]
    return None


def migration_issue(override: Override, key: str, version: str) -> KeyIssue | None:
    """Why upstream verl lacks `key` in `version` (renamed, removed, moved, added later), or
    None. A project's own config tree (a fork) is its own history: upstream's does not apply."""
    if project_base(version) is not None:
        return None

    try:
        moved = history(version).get(key)
    except Exception:  # noqa: BLE001 - explanations are best effort, never fatal
        moved = None
    if moved is not None:
        if moved.new_key:
            detail = f"'{key}' is '{moved.new_key}' since verl {moved.since}"
            if moved.note:
                detail += f": {moved.note}"
            return KeyIssue(override, "renamed", detail, moved.new_key)
        detail = f"'{key}' was removed in verl {moved.since}"
        if moved.note and not moved.note.startswith("removed in"):
            detail += f": {moved.note}"
        return KeyIssue(override, "removed", detail, None)
    if moved is None:
        issue = _hand_move_issue(override, key, version)
        if issue is not None:
            return issue
    try:
        newer = added_later(version).get(key)
    except Exception:  # noqa: BLE001
        newer = None
    if newer is not None:
        return KeyIssue(override, "unknown-key", f"'{key}' is not in verl {version} (added in {newer})", None)
    return None


def _hand_move_issue(override: Override, key: str, version: str) -> KeyIssue | None:
    """A key this config lacks that a hand-written move covers, typically a backend-specific
    move whose old key survives in the other backend's config: still an unknown key here, with
    the move explained (and its target suggested when this release has it)."""
    found = _move_for(key)
    if found is None:
        return None
    move, target = found
    if parse(move.since) > parse(version):
        return None
    schema = load(version)
    has_target = target is not None and any(schema.has(target, name) for name in schema.config_names())
    detail = f"'{key}' is not in verl {version} {_backend_hint(move.backend)}"
    detail += f": since {move.since}, " + (move.note or (f"use '{target}'" if has_target else "no replacement"))
    return KeyIssue(override, "unknown-key", detail, target if has_target else None)


def _backend_hint(backend: str | None) -> str:
    return f"for {backend}" if backend else ""
