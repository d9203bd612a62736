"""The legacy reward keys (`reward_model.*`, `custom_reward_function.*`, `sandbox_fusion.*`) and
where verl reads them since the `reward` group (0.7.1). Data + pure functions.

The old keys never left the config: `verl/trainer/config/legacy_reward_impl.yaml@v0.7.1` keeps them
as all-null stubs, so a 0.7-style script still composes everywhere. What changed is who reads them:
`migrate_legacy_reward_impl` (verl/experimental/reward_loop/reward_loop.py@v0.7.1, @v0.9.0) copies
each one into `reward.*`. verl's `main_ppo` calls it in 0.7.1 and 0.8.0; from 0.9.0 only the
fully-async entry does (verl/experimental/fully_async_policy/fully_async_main.py@v0.9.0), so under
`main_ppo` the old keys are silently ignored: a DAPO script loses its reward manager (the run uses
`reward.reward_manager.name=naive`) and its overlong penalty (`reward.reward_kwargs`, read by
verl/experimental/reward_loop/reward_manager/dapo.py@v0.9.0).

One table for `gen migrate` (the renames) and rule VK612 (what is lost).
"""

from __future__ import annotations

from typing import NamedTuple

from generator.verl.versions import parse

REWARD_GROUP_SINCE = "0.7.1"  # the release that added `reward.*` (reward/reward.yaml@v0.7.1)
NOT_MIGRATED_SINCE = "0.9.0"  # main_ppo no longer calls migrate_legacy_reward_impl
# Entries whose trainer still migrates the legacy keys in every release that has them
MIGRATING_ENTRIES = ("verl.experimental.fully_async_policy.fully_async_main",)


class RewardMove(NamedTuple):
    old: str  # a key, or a prefix (every key below it) when `prefix`
    new: str
    prefix: bool = False
    what: str = ""  # what a run loses when the old key is ignored

    def target(self, key: str) -> str | None:
        """The new key for `key`, or None when this move does not cover it."""
        if key == self.old:
            return self.new
        if self.prefix and key.startswith(self.old + "."):
            return self.new + key[len(self.old):]
        return None


# The copies migrate_legacy_reward_impl makes (reward_loop.py@v0.9.0), in its order.
MOVES: tuple[RewardMove, ...] = (
    RewardMove("reward_model.num_workers", "reward.num_workers"),
    RewardMove("reward_model.reward_manager", "reward.reward_manager.name", what="the reward manager"),
    RewardMove("reward_model.reward_loop_source", "reward.reward_manager.source", what="the reward manager"),
    RewardMove("reward_model.reward_loop_module_path", "reward.reward_manager.module.path",
               what="the reward manager"),
    RewardMove("reward_model.reward_loop_class_name", "reward.reward_manager.module.name",
               what="the reward manager"),
    RewardMove("custom_reward_function", "reward.custom_reward_function", prefix=True,
               what="the custom reward function"),
    RewardMove("reward_model.enable", "reward.reward_model.enable", what="the reward model"),
    RewardMove("reward_model.enable_resource_pool", "reward.reward_model.enable_resource_pool"),
    RewardMove("reward_model.n_gpus_per_node", "reward.reward_model.n_gpus_per_node"),
    RewardMove("reward_model.nnodes", "reward.reward_model.nnodes"),
    RewardMove("reward_model.model.path", "reward.reward_model.model_path", what="the reward model"),
    RewardMove("reward_model.reward_kwargs", "reward.reward_kwargs", prefix=True,
               what="the reward manager's kwargs"),
    RewardMove("reward_model.rollout", "reward.reward_model.rollout", prefix=True),
    RewardMove("sandbox_fusion", "reward.sandbox_fusion", prefix=True, what="the sandbox"),
)


# Every key a move covers starts with its `old` (asked of every key each call sets: one C-level test first).
_OLD_KEYS = tuple(move.old for move in MOVES)


def move_for(key: str) -> tuple[RewardMove, str] | None:
    """(move, new key) for a legacy reward key; None for any other key."""
    if not key.startswith(_OLD_KEYS):
        return None
    for move in MOVES:
        target = move.target(key)
        if target is not None:
            return move, target
    return None


def has_reward_group(version: str) -> bool:
    return parse(version) >= parse(REWARD_GROUP_SINCE)


def ignored_by_main_ppo(version: str) -> bool:
    """Whether `main_ppo` of `version` ignores the legacy keys (no migration at start)."""
    return parse(version) >= parse(NOT_MIGRATED_SINCE)


def what_is_lost(key: str, value: str | None) -> str:
    """The user-facing consequence of ignoring `key=value`."""
    if key.startswith("reward_model.reward_kwargs.overlong_buffer_cfg") or key == "reward_model.reward_kwargs.max_resp_len":
        return "the overlong penalty"  # both feed DAPO's overlong buffer (reward_manager/dapo.py@v0.9.0)
    found = move_for(key)
    return (found[0].what if found and found[0].what else "this reward setting")
