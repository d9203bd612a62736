"""Facts a check asks of a lower room once, in one call, instead of once per item (issue 35, the
path of `gen check FILE` through the modules; docs/architecture.md): each asked-once form gives
exactly what the per-item question gave."""

from __future__ import annotations

import itertools

import pytest

from generator.judging import load_rules
from generator.rules import applies, rules_to_run, stands_down_for_fork, stands_down_without_training
from generator.schema.guess import release_has, releases_with
from generator.schema.releases import packaged_releases
from generator.verl.versions import VersionRange, containing

VERSIONS = ("0.1.0", "0.4.1", "0.5.0", "0.7.0", "0.7.0+b178a3c", "v0.9.1", "0.10.0.dev+1dda039", "unknown", "")


def test_containing_says_what_contains_says_for_each_range() -> None:
    ranges = list(dict.fromkeys(rule.versions for rule in load_rules().values())) + [
        VersionRange("0.7.0", "0.7.0"), VersionRange(None, "0.4.1"), VersionRange("nonsense", None)]
    for version in VERSIONS:
        expected: list[bool | None] = []
        for span in ranges:
            try:
                expected.append(span.contains(version))
            except ValueError:
                expected.append(None)
        assert containing(ranges, version) == expected, version


@pytest.mark.parametrize("backend", ["megatron", "fsdp", "unknown"])
def test_rules_to_run_is_each_rule_asked_on_its_own(backend: str) -> None:
    chosen = list(load_rules().values())
    for version, trainer, approximate, forked, trains in itertools.product(
            VERSIONS, (True, False), (True, False), (True, False), (True, False)):
        one_by_one = [rule for rule in chosen
                      if applies(rule, backend, version, trainer) and not (approximate and rule.reads_defaults)
                      and not (forked and stands_down_for_fork(rule))
                      and not (not trains and stands_down_without_training(rule))]
        assert rules_to_run(chosen, backend, version, trainer, approximate, forked, trains) == one_by_one


def _releases_with_one_by_one(keys: list[tuple[str, str]]) -> tuple[str, ...]:
    """releases_with as the question per key and release, each schema asked every time."""
    releases = packaged_releases()

    def has(release: str, key: str, name: str) -> bool:
        try:
            return release_has(release, key, name)
        except Exception:  # a release that cannot be loaded has no key
            return False

    kept = [(key, name) for key, name in keys if any(has(r, key, name) for r in releases)]
    if not kept:
        return tuple(releases)
    return tuple(r for r in releases if all(has(r, key, name) for key, name in kept)) or tuple(releases)


@pytest.mark.parametrize("keys", [
    [],
    [("data.train_batch_size", "ppo_trainer"), ("actor_rollout_ref.rollout.mode", "ppo_trainer")],
    [("actor_rollout_ref.actor.use_dynamic_bsz", "ppo_megatron_trainer"), ("a_fork.own_key", "ppo_megatron_trainer")],
    [("model_engine=megatron", "ppo_trainer"), ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size",
                                               "ppo_trainer")],
    [("actor_rollout_ref.rollout.name", "ppo_trainer"), ("reward_model.enable", "ppo_megatron_trainer"),
     ("critic.ppo_micro_batch_size", "ppo_trainer")],
])
def test_releases_with_asks_each_schema_once_and_says_the_same(keys: list[tuple[str, str]]) -> None:
    assert releases_with(keys) == _releases_with_one_by_one(keys)
