"""Guessing the verl release of a script when no verl is found and no option names one.

The guess is the NEWEST packaged release whose config has every key the script sets with plain
`key=` (Hydra refuses a missing key there, so the script cannot have run on a release without
it). Newest, because a key usually survives for many releases after it appears: the oldest
release with every key judged verl's own 0.7.0 DAPO recipe as 0.4.1, with 0.4.1's meaning of
its recompute and token settings. A fork built on an old verl still lands on its release, because
the newer releases removed some of its keys.

A key counts as present when the release's config has it with the script's group selections or
any other option of its config groups (`actor_rollout_ref.actor.megatron.*` exists in 0.9.1's
ppo_trainer under `model_engine=megatron`); a group selection (`model_engine=megatron`) counts
when the release has that group option. When no release has every key, the one with the most
wins (newest on a tie). Either way the report says it is a guess.
"""

from __future__ import annotations

from typing import Any, Sequence

from generator.base.errors import InputError
from generator.schema.release_schema import inner_nodes, load, release_cache
from generator.schema.releases import packaged_releases
from generator.verl.constants import PPO_CONFIGS

KeyUses = Sequence[tuple[str, str]]


@release_cache(64, 0)
def _keys_of(release: str, name: str) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """(every leaf and inner node the config has under any group selection, group override key
    -> its options)."""
    schema = load(release)
    config = name if name in schema.configs else PPO_CONFIGS[0]
    found: set[str] = set(schema.configs[config])
    groups = schema.groups_of(config)
    options: dict[str, frozenset[str]] = {}

    def walk(choices: dict[str, Any]) -> None:
        for key, entry in choices.items():
            names = {str(entry.get("default"))} if entry.get("default") is not None else set()
            for option, delta in entry.get("options", {}).items():
                if "error" in delta:
                    continue
                names.add(option)
                found.update(delta.get("set", {}))
                walk(delta.get("choices", {}))
            options[key] = frozenset(names) | options.get(key, frozenset())

    walk(groups.get("choices", {}))
    for group, by_option in groups.get("appends", {}).items():
        for option, delta in by_option.items():
            if "error" not in delta:
                found.update(delta.get("set", {}))
                options[f"+{group}"] = options.get(f"+{group}", frozenset()) | {option}
    return frozenset(found) | inner_nodes(found), options


def release_has(release: str, key: str, name: str) -> bool:
    """Whether `key` (or a group selection written `group=option`) exists in the release's
    config `name` under some group selection."""
    return _has(_keys_of(release, name), key)


def _has(table: tuple[frozenset[str], dict[str, frozenset[str]]], key: str) -> bool:
    """release_has, given the release's _keys_of."""
    keys, options = table
    group, sep, option = key.partition("=")
    if sep:
        return option in options.get(group, frozenset())
    return key in keys


def _by_config_name(keys: KeyUses) -> dict[str, tuple[list[str], list[tuple[str, str]]]]:
    """The keys by the config they are set on: (plain keys, (group, option) selections)."""
    by_name: dict[str, tuple[list[str], list[tuple[str, str]]]] = {}
    for key, name in keys:
        plain, selections = by_name.setdefault(name, ([], []))
        group, sep, option = key.partition("=")
        if sep:
            selections.append((group, option))
        else:
            plain.append(key)
    return by_name


def newest_release_with(keys: KeyUses) -> tuple[str, str] | None:
    """(release, how) for the newest packaged release that has every key; None when none has."""
    if not keys:
        return None
    # release_has for every key, asked as one subset test per config name (releases x ~50 keys)
    by_name = _by_config_name(keys)
    for release in reversed(packaged_releases()):
        try:
            if all(_has_all(release, name, plain, selections) for name, (plain, selections) in by_name.items()):
                return release, (f"guessed from the script's keys: the newest release with all {len(keys)} "
                                 "(no verl found and no --verl-version)")
        except InputError:
            continue
    return None


def releases_with(keys: KeyUses) -> tuple[str, ...]:
    """Every packaged release whose config has every key (oldest first): the releases a script
    setting these keys with plain `key=` can have run on (Hydra refuses a missing key). Keys no
    packaged release has are left out; every packaged release when no key is left, or when no
    release has them all (the keys then name none)."""
    releases = packaged_releases()
    # Each (release, config name)'s keys asked of the schemas once here, not once per key.
    tables: dict[tuple[str, str], tuple[frozenset[str], dict[str, frozenset[str]]] | None] = {}

    def table(release: str, name: str) -> tuple[frozenset[str], dict[str, frozenset[str]]] | None:
        if (release, name) not in tables:
            try:
                tables[release, name] = _keys_of(release, name)
            except InputError:
                tables[release, name] = None  # a release that cannot be loaded has no key
        return tables[release, name]

    def known(release: str, key: str, name: str) -> bool:
        found = table(release, name)
        return found is not None and _has(found, key)

    # A key no packaged release has (a fork's own) tells no release apart: it is left out, and
    # without a key that any release has, every release stays possible.
    keys = [(key, name) for key, name in keys if any(known(r, key, name) for r in releases)]
    if not keys:
        return tuple(releases)
    by_name = _by_config_name(keys)
    found = []
    for release in releases:
        tabled = [(table(release, name), plain, selections) for name, (plain, selections) in by_name.items()]
        if all(t is not None and _has_every(t, plain, selections) for t, plain, selections in tabled):
            found.append(release)
    return tuple(found) or tuple(releases)


def _has_all(release: str, name: str, plain: list[str], selections: list[tuple[str, str]]) -> bool:
    """release_has(release, key, name) for each of `plain` keys and `selections` (group, option)."""
    return _has_every(_keys_of(release, name), plain, selections)


def _has_every(table: tuple[frozenset[str], dict[str, frozenset[str]]], plain: list[str],
               selections: list[tuple[str, str]]) -> bool:
    found, options = table
    return found.issuperset(plain) and all(option in options.get(group, frozenset()) for group, option in selections)


def guess_release(keys: KeyUses) -> tuple[str, str]:
    """(release, how): the newest release with every key, else the one with the most."""
    releases = packaged_releases()
    if not keys:
        return releases[-1], "guessed: the script sets no key that tells releases apart (newest packaged)"
    found = newest_release_with(keys)
    if found is not None:
        return found
    counts = [(sum(1 for key, name in keys if release_has(r, key, name)), index, r)
              for index, r in enumerate(releases)]
    best_count, _, best = max(counts)
    return best, (f"guessed from the script's keys ({best_count} of {len(keys)} known in {best}, the most of any "
                  "release)")


@release_cache(1, every_release=True)  # a folder registered under a packaged id answers in the session
def group_keys() -> frozenset[str]:
    """Every config-group override key of any packaged release (`model_engine`, `critic`, ...):
    a plain `key=option` on one of them is a group selection, not a value. Kept in the user
    cache by the schema files' stamps (generator.base.cache): judging one script needs one or two
    releases' schemas, and reading all of them for this set was a tenth of a check's time."""
    from generator.base.cache import cached_value
    from generator.schema.release_schema import DATA_DIR, registered

    releases = packaged_releases()
    if any(release in registered().dirs for release in releases):  # a folder read at run time stands in
        return _group_keys(releases)
    paths = [DATA_DIR / f"{release}.json" for release in releases]
    found = cached_value("config-group keys", paths, lambda: sorted(_group_keys(releases)),
                         lambda value: isinstance(value, list) and all(isinstance(k, str) for k in value))
    return frozenset(found)


def _group_keys(releases: Sequence[str]) -> frozenset[str]:
    out: set[str] = set()
    for release in releases:
        try:
            schema = load(release)
        except InputError:
            continue
        for name in schema.configs:
            out.update(schema.groups_of(name).get("choices", {}))
    return frozenset(out)
