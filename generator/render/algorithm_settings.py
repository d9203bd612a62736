"""Each algorithm's own keys in a generated script (the actor's loss, the KL term, DAPO's
extras), for the releases that have them."""

from __future__ import annotations

from dataclasses import dataclass

from generator.base.errors import InputError
from generator.render.spec import (
    RecipeSpec,
    ScriptSettings,
    Setting,
    SettingGroup,
    at_least,
    fill_knob_values,
    schema_has,
)
from generator.schema.ignored_keys import ignored_key
from generator.verl.constants import ALGORITHM_TABLE, PPO_ENTRY

@dataclass(frozen=True, slots=True)
class AlgorithmKeys:
    adv_estimator: str
    uses_critic: bool
    actor: tuple[Setting, ...]
    algorithm: tuple[Setting, ...]
    blurb: str


def algorithm_keys(algo: str, version: str) -> AlgorithmKeys:
    """The keys a script writes for `algo`; its estimator, critic and summary are the table's
    (generator.verl.constants.ALGORITHM_TABLE), its KL keys follow the table's KL term."""
    facts = ALGORITHM_TABLE.get(algo)
    if facts is None:
        raise InputError(f"unknown algorithm '{algo}'")
    a = "actor_rollout_ref.actor."
    kl_loss = (Setting(a + "use_kl_loss", True), Setting(a + "kl_loss_coef", 0.001),
               Setting(a + "kl_loss_type", "mse" if algo == "reinforce_plus_plus" else "low_var_kl"))
    entropy = (Setting(a + "entropy_coeff", 0),)
    actor: tuple[Setting, ...] = kl_loss + entropy if facts.kl == "loss" else (Setting(a + "use_kl_loss", False),) + entropy
    algorithm: tuple[Setting, ...] = (Setting("algorithm.use_kl_in_reward", False),)
    if facts.kl == "reward":
        algorithm = (Setting("algorithm.use_kl_in_reward", True), Setting("algorithm.kl_penalty", "kl"),
                     Setting("algorithm.kl_ctrl.kl_coef", 0.001))
    actor += _LOSS_KEYS.get(algo, ())
    return AlgorithmKeys(facts.estimator, facts.critic, actor, algorithm, facts.blurb)


# The actor's loss keys an algorithm sets beyond the KL term and the entropy coefficient.
_A = "actor_rollout_ref.actor."
_LOSS_KEYS: dict[str, tuple[Setting, ...]] = {
    "dapo": (Setting(_A + "clip_ratio_low", 0.2), Setting(_A + "clip_ratio_high", 0.28),
             Setting(_A + "clip_ratio_c", 10.0), Setting(_A + "loss_agg_mode", "token-mean")),
    "gspo": (Setting(_A + "policy_loss.loss_mode", "gspo"), Setting(_A + "clip_ratio_low", 3e-4),
             Setting(_A + "clip_ratio_high", 4e-4), Setting(_A + "loss_agg_mode", "seq-mean-token-mean")),
}


# Where a release reads the DAPO reward manager and its kwargs (the overlong buffer, max_resp_len)
# on main_ppo. Up to 0.7.x: `reward_model.reward_manager=dapo` + `+reward_model.reward_kwargs.*`, as
# verl's own DAPO scripts on main_ppo do (e.g. v0.7.0 recipe/dapo/test_dapo_gptoss_20b_megatron.sh).
# From 0.8.0 (the release that has `reward.reward_manager.name`): `reward.reward_manager.name=dapo` +
# `+reward.reward_kwargs.*`, which the reward loop's DAPO manager reads
# (verl/experimental/reward_loop/reward_manager/dapo.py@v0.9.1: config.reward.reward_kwargs) and
# verl's own examples write (examples/grpo_trainer/run_deepseek_v4_flash_megatron.sh@v0.9.0). 0.9.0's
# main_ppo no longer migrates the legacy keys, so the old form would be silently ignored there.
DAPO_REWARD_KWARGS_SINCE = "0.6.0"
LEGACY_REWARD = ("reward_model.reward_manager", "reward_model.reward_kwargs.")
REWARD_LOOP = ("reward.reward_manager.name", "reward.reward_kwargs.")


def dapo_reward_keys(version: str) -> tuple[str, str] | None:
    """(reward manager key, reward kwargs prefix) of `version`'s main_ppo; None when it has neither."""
    if schema_has(version, REWARD_LOOP[0]):
        return REWARD_LOOP
    if at_least(version, DAPO_REWARD_KWARGS_SINCE) and schema_has(version, LEGACY_REWARD[0]):
        return LEGACY_REWARD
    return None


def dapo_extras(recipe: ScriptSettings, spec: RecipeSpec) -> None:
    """Dynamic sampling and the overlong buffer, only where the release's trainer config has them."""
    version = spec.version
    extras: list[Setting] = []
    missing: list[str] = []
    if schema_has(version, "algorithm.filter_groups.enable"):
        extras += [Setting("algorithm.filter_groups.enable", True), Setting("algorithm.filter_groups.metric", "acc")]
        # The cap on generation rounds, where the release still reads it (schema.ignored_keys).
        if ignored_key(version, "algorithm.filter_groups.max_num_gen_batches") is None:
            extras.append(Setting("algorithm.filter_groups.max_num_gen_batches", 10))
    else:
        missing.append("dynamic sampling (algorithm.filter_groups)")
    overlong = max(1, spec.response_len // 4)
    reward_keys = dapo_reward_keys(version)
    if schema_has(version, "reward_model.overlong_buffer.enable"):
        extras += [Setting("reward_model.overlong_buffer.enable", True),
                   Setting("reward_model.overlong_buffer.len", overlong),
                   Setting("reward_model.overlong_buffer.penalty_factor", 1.0)]
    elif reward_keys is not None:
        manager, kwargs = reward_keys
        extras += [Setting(manager, "dapo"),
                   Setting(kwargs + "overlong_buffer_cfg.enable", True, add=True),
                   Setting(kwargs + "overlong_buffer_cfg.len", overlong, add=True),
                   Setting(kwargs + "overlong_buffer_cfg.penalty_factor", 1.0, add=True),
                   Setting(kwargs + "overlong_buffer_cfg.log", False, add=True),
                   Setting(kwargs + "max_resp_len", spec.response_len, "MAX_RESPONSE_LENGTH", add=True)]
    else:
        missing.append("the overlong buffer (reward_model.overlong_buffer)")
    if extras:
        recipe.groups.append(SettingGroup("dapo", tuple(fill_knob_values(recipe, extras))))
    if missing:
        recipe.notes.append(f"DAPO's {' and '.join(missing)} are not keys of {PPO_ENTRY}'s config in verl "
                            f"{version}; they belong to the DAPO recipe's own trainer, so this script runs "
                            "DAPO's clipping and loss without them.")
