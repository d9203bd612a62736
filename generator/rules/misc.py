"""VX9xx — data and miscellaneous settings (H8, B1, C7, C8, A22, A23/H5, H6, A5, C4, B6, C18, A28)."""

from __future__ import annotations

from typing import Iterator

from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, ctx_finding, rule
from generator.config.reader import ConfigReader
from generator.verl.constants import (ACTOR, CRITIC, LOSS_AGG_MODES, MEGATRON, MEGATRON_DTYPES, PPO_ENTRY, REF,
                                      ROLLOUT, ROUTER_REPLAY_MODES)
from generator.verl.versions import VersionRange

_MEG = ("megatron",)


def _refused(ctx: Context, value: str | None, allowed: tuple[str, ...]) -> bool:
    """Whether the call's verl refuses `value` of a closed-list key: outside verl's list, and not
    named by the project's own verl code where it checks and dispatches on the value (a fork that
    added a mode accepts it; a fork whose code was not read conclusively may: evidence or silence)."""
    if value is None or value in allowed:
        return False
    resolution = ctx.config.resolution
    if resolution is None or resolution.package is None:
        return True  # verl's own release: its list
    named = ctx.fork_checks.choices_named
    return named is not None and value not in named


@rule("VX901", "overlong-prompts-not-filtered", severity="info", stage="silent", verl_ref="H8, D12")
def filter_overlong(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = "data.filter_overlong_prompts"
    if view.bool(key) is False:
        yield ctx_finding(filter_overlong, view, (key,), "data.filter_overlong_prompts=False: prompts longer than "
                          f"max_prompt_length {view.int('data.max_prompt_length')} are kept",
                          fix=Fix("set data.filter_overlong_prompts=True", (KeyEdit(key, False, True),), "unsafe"))


@rule("VX902", "hybrid-engine-off", severity="error", stage="init", verl_ref="B1")
def hybrid_engine(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = "actor_rollout_ref.hybrid_engine"
    entry = ctx.config.entry or ""
    if any(word in entry for word in ("off_policy", "async", "one_step")):
        return  # these recipes run their own trainer, built for separate rollout GPUs
    if view.bool(key) is False:
        yield ctx_finding(hybrid_engine, view, (key,), "actor_rollout_ref.hybrid_engine=False is not supported",
                          fix=Fix("set hybrid_engine=True", (KeyEdit(key, False, True),)))


@rule("VX903", "ulysses-on-megatron", severity="error", stage="init", verl_ref="C7", backends=_MEG)
def ulysses_megatron(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for prefix in (ACTOR, CRITIC):
        key = prefix + "ulysses_sequence_parallel_size"
        value = view.int(key)
        if value is not None and value != 1 and (prefix == ACTOR or view.critic_used):
            yield ctx_finding(ulysses_megatron, view, (key,), f"{key}={value} on Megatron (must be 1; use CP)",
                              fix=Fix(f"set {key}=1", (KeyEdit(key, value, 1),), "unsafe"))


@rule("VX904", "shuffle-without-seed", severity="error", stage="init", verl_ref="C8", backends=_MEG)
def shuffle_seed(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for prefix, role in ((ACTOR, "actor"), (CRITIC, "critic")):
        if prefix == CRITIC and not view.critic_used:
            continue
        if view.bool(prefix + "shuffle") is True and view.is_null(prefix + "data_loader_seed") and \
                (prefix + "data_loader_seed") in view.values:
            key = prefix + "data_loader_seed"
            yield ctx_finding(shuffle_seed, view, (prefix + "shuffle", key),
                              f"{role}.shuffle=True with {role}.data_loader_seed=null", key=key,
                              fix=Fix(f"set {key}=42", (KeyEdit(key, None, 42),)))


@rule("VX905", "megatron-dtype", severity="error", stage="load", versions=VersionRange("0.6.1", None),
      verl_ref="A22", backends=_MEG)
def megatron_dtype(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for prefix in (MEGATRON, REF + "megatron.", CRITIC + "megatron."):
        key = prefix + "dtype"
        value = view.str(key)
        if _refused(ctx, value, MEGATRON_DTYPES):
            yield ctx_finding(megatron_dtype, view, (key,), f"{key}={value} (must be bfloat16 or float16)")


@rule("VX906", "sequence-parallel-without-tp", severity="info", stage="silent", verl_ref="A23, C9, E11, H5",
      backends=_MEG)
def sequence_parallel(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = MEGATRON + "sequence_parallel"
    layout = view.actor_layout()
    if layout and layout.tp == 1 and view.explicit(key) and view.bool(key) is True:
        yield ctx_finding(sequence_parallel, view, (key,), "sequence_parallel=True has no effect with TP 1")


@rule("VX907", "grad-offload-unused", severity="info", stage="silent", verl_ref="H6, §4", backends=_MEG)
def grad_offload(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for prefix in (MEGATRON, REF + "megatron.", CRITIC + "megatron."):
        key = prefix + "grad_offload"
        if view.explicit(key) and view.bool(key) is True:
            yield ctx_finding(grad_offload, view, (key,),
                              f"{key}=True has no effect; gradients are offloaded with param_offload")


@rule("VX908", "invalid-loss-agg-mode", severity="error", stage="load", verl_ref="A5")
def loss_agg(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = ACTOR + "loss_agg_mode"
    value = view.str(key)
    if _refused(ctx, value, LOSS_AGG_MODES):
        yield ctx_finding(loss_agg, view, (key,), f"loss_agg_mode={value} is not one of {', '.join(LOSS_AGG_MODES)}")


@rule("VX909", "fp16-needs-mbridge", severity="error", stage="init", versions=VersionRange("0.6.1", None),
      verl_ref="C4", backends=_MEG)
def fp16_mbridge(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.str(MEGATRON + "dtype") == "float16" and view.bool(MEGATRON + "use_mbridge") is False:
        key = MEGATRON + "use_mbridge"
        yield ctx_finding(fp16_mbridge, view, (key, MEGATRON + "dtype"), "megatron.dtype=float16 with use_mbridge=False",
                          key=key, fix=Fix("set use_mbridge=True", (KeyEdit(key, False, True),)))


# From 0.8.0 the engine's TrainingWorker runs every critic backend (verl/trainer/main_ppo.py@v0.8.0
# add_critic_worker), so the refusal is 0.7.x's alone.
@rule("VX910", "engine-megatron-critic", severity="error", stage="init", versions=VersionRange("0.7.0", "0.7.1"),
      verl_ref="B6", backends=_MEG,
      reads_defaults=True)
def engine_critic(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine and view.critic_used and view.str(CRITIC + "strategy") in ("megatron", None):
        yield ctx_finding(engine_critic, view, ("trainer.use_legacy_worker_impl",),
                          "use_legacy_worker_impl=disable with a Megatron critic (GAE) is not implemented")


@rule("VX911", "engine-needs-mbridge", severity="error", stage="init", versions=VersionRange("0.7.0", None),
      verl_ref="C18", backends=_MEG)
def engine_mbridge(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = MEGATRON + "use_mbridge"
    if view.new_engine and view.bool(key) is False:
        engine = ("the engine workers (the only workers from verl 0.8.0)" if ctx.semantics is not None and ctx.semantics.engine_workers_only
                  else "use_legacy_worker_impl=disable")
        yield ctx_finding(engine_mbridge, view, (key,), f"{engine} need use_mbridge=True",
                          fix=Fix("set use_mbridge=True", (KeyEdit(key, False, True),)))


@rule("VX912", "invalid-router-replay-mode", severity="error", stage="load", versions=VersionRange("0.7.0", None),
      verl_ref="A28")
def router_replay(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    # 0.7.0-0.9.0 keep it on the actor; 0.9.1 moved it under the engine blocks (megatron, veomni),
    # whose dataclass makes the same check (verl 0.9.1 wheel, workers/config/engine.py __post_init__).
    for key in (ACTOR + "router_replay.mode", MEGATRON + "router_replay.mode", ACTOR + "veomni.router_replay.mode"):
        value = view.str(key)
        if _refused(ctx, value, ROUTER_REPLAY_MODES):
            yield ctx_finding(router_replay, view, (key,), f"router_replay.mode={value} (allowed: disabled, R2, R3)",
                              key=key)


@rule("VX918", "router-replay-r2-with-bypass", severity="error", stage="load", versions=VersionRange("0.9.1", "0.9.1"),
      verl_ref="A29")
def router_replay_bypass(ctx: Context) -> Iterator[Finding]:
    # validate_config of the verl 0.9.1 wheel (verl/utils/config.py, _validate_router_replay_config)
    # refuses R2 on the actor's engine with bypass mode: R2 records routes in the old-log-prob
    # forward that bypass mode skips. verl main at 1dda039 does not check it.
    view = ConfigReader.of(ctx)
    bypass = "algorithm.rollout_correction.bypass_mode"
    if view.bool(bypass) is not True:
        return
    for key in (MEGATRON + "router_replay.mode", ACTOR + "veomni.router_replay.mode"):
        if view.str(key) == "R2":
            yield ctx_finding(router_replay_bypass, view, (key, bypass),
                              f"{key}=R2 with {bypass}=True: R2 records routes in the old-log-prob forward that "
                              "bypass mode skips, and verl refuses the pair at load", key=key)


@rule("VX913", "ulysses-needs-remove-padding", severity="error", stage="load", verl_ref="A9, A18", backends=("fsdp",))
def ulysses_padding(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    pairs = [("actor", ACTOR + "ulysses_sequence_parallel_size", "actor_rollout_ref.model.use_remove_padding")]
    if view.critic_used:
        pairs.append(("critic", CRITIC + "ulysses_sequence_parallel_size", CRITIC + "model.use_remove_padding"))
    for role, sp_key, pad_key in pairs:
        sp = view.int(sp_key)
        if sp and sp > 1 and view.bool(pad_key) is False:
            yield ctx_finding(ulysses_padding, view, (sp_key, pad_key),
                              f"{role}: ulysses_sequence_parallel_size={sp} needs {pad_key}=True", key=pad_key,
                              fix=Fix(f"set {pad_key}=True", (KeyEdit(pad_key, False, True),)))


@rule("VX914", "vllm-lora-rank", severity="error", stage="load", versions=VersionRange("0.5.0", None), verl_ref="A21")
def lora_rank(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.str("actor_rollout_ref.rollout.name") not in ("vllm", None):
        return
    for key in ("actor_rollout_ref.model.lora_rank", "actor_rollout_ref.model.lora.rank"):
        rank = view.int(key)
        if key.endswith("lora.rank") and view.bool("actor_rollout_ref.model.lora.merge"):
            continue  # merged adapters reach vLLM as plain weights
        if rank and rank > 512:
            yield ctx_finding(lora_rank, view, (key,), f"{key}={rank} > 512, the largest LoRA rank vLLM serves")


@rule("VX915", "kl-in-reward-and-loss", severity="info", stage="load", verl_ref="A13")
def kl_twice(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.bool("algorithm.use_kl_in_reward") and view.bool(ACTOR + "use_kl_loss"):
        yield ctx_finding(kl_twice, view, ("algorithm.use_kl_in_reward", ACTOR + "use_kl_loss"),
                          "use_kl_in_reward=True and use_kl_loss=True: the KL penalty is applied twice")


# --- Megatron-core TransformerConfig: full recompute needs a method and a layer count -------------

_OTC = "megatron.override_transformer_config."


@rule("VX916", "full-recompute-incomplete", severity="error", stage="init", versions=VersionRange("0.5.0", None),
      backends=_MEG, verl_ref="§3 (recompute keys), mcore TransformerConfig")
def full_recompute_incomplete(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for role in (ACTOR, REF, CRITIC):
        granularity_key = role + _OTC + "recompute_granularity"
        # Report where the user wrote it: a ref that follows the actor's config by interpolation
        # is repaired with the actor.
        if not view.explicit(granularity_key) or view.str(granularity_key) != "full":
            continue
        missing = [(role + _OTC + name, default) for name, default in (("recompute_method", "uniform"),
                                                                        ("recompute_num_layers", 1))
                   if view.known(role + _OTC + name) and view.values.get(role + _OTC + name) is None]
        if not missing:
            continue
        names = " and ".join(key.rsplit(".", 1)[-1] for key, _ in missing)
        fix = Fix("set " + ", ".join(f"{key.rsplit('.', 1)[-1]}={value}" for key, value in missing),
                  tuple(KeyEdit(key, None, value) for key, value in missing))
        yield ctx_finding(full_recompute_incomplete, view, (granularity_key,),
                          f"{granularity_key}=full needs {names} too (Megatron-core refuses it at model build)",
                          fix=fix)


@rule("VX919", "critic-warmup-without-critic", severity="warning", stage="silent", verl_ref="§1",
      reads_defaults=True)
def critic_warmup_without_critic(ctx: Context) -> Iterator[Finding]:
    # The trainer updates the actor only once global_steps reaches trainer.critic_warmup, critic or
    # not (verl/trainer/ppo/ray_trainer.py@v0.4.1 line 1126, @v0.7.0 line 1549; the 0.9.1 wheel's
    # ray_trainer.py and ppo/v1/trainer_base.py): without a critic to warm up, those steps generate
    # and score rollouts and train nothing.
    view = ConfigReader.of(ctx)
    key = "trainer.critic_warmup"
    warmup = view.int(key)
    if not warmup or warmup <= 0 or view.critic_used is not False or not view.explicit(key):
        return
    estimator = view.str("algorithm.adv_estimator") or "?"
    message = (f"{key}={warmup} with adv_estimator={estimator}, which trains no critic: the actor is not "
               f"updated before global step {warmup}, so those steps train nothing")
    departure = ctx.fork_checks.critic_warmup_departure
    if departure is not None:
        # The fork's trainer does not use the key as verl does: what those steps do is its code's.
        where = ("never reads it" if departure == "nowhere"
                 else f"reads it other than as verl's gate of the actor update, at {departure}")
        yield ctx_finding(critic_warmup_without_critic, view, (key,),
                          f"{message}, if the project's verl uses it as verl does; its trainer {where}: "
                          "whether anything trains before that step is that code's to say", severity="info")
        return
    yield ctx_finding(critic_warmup_without_critic, view, (key,), message,
                      fix=Fix(f"set {key}=0", (KeyEdit(key, warmup, 0),), "unsafe"))


# The model and data a call cannot start without: an empty value (`MODEL_PATH=` left blank) is
# passed as '' and fails at load. A warning, like a placeholder (VS714): verl's own examples leave
# `HF_MODEL_PATH=""` for the user to fill in (examples/router_replay/*.sh @v0.7.0).
_REQUIRED_PATHS = ("actor_rollout_ref.model.path", "data.train_files")


@rule("VX920", "empty-required-path", severity="warning", stage="init", verl_ref="§1")
def empty_required_path(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    keys = _REQUIRED_PATHS + ((CRITIC + "model.path",) if view.critic_used else ())
    for key in keys:
        if not view.explicit(key) or not view.known(key):
            continue
        value = view.values.get(key)
        if isinstance(value, str) and not value.strip():
            override = ctx.config.set_by[key]
            variable = override.provenance.variable
            source = f" (from ${variable}, which is empty)" if variable else ""
            yield ctx_finding(empty_required_path, view, (key,),
                              f"{key} is empty{source}: verl has no {'model' if 'model' in key else 'data'} to "
                              "load and the run stops at start")


# Keys of the FSDP engine that no Megatron worker or engine of verl reads (no file under a megatron
# path names them at v0.6.1, v0.7.0, v0.8.0, v0.9.0 or in the verl 0.9.1 wheel): on Megatron,
# activation recompute is override_transformer_config.recompute_*, and nothing is torch-compiled.
_UNREAD_ON_MEGATRON = ("actor_rollout_ref.model.enable_gradient_checkpointing", ACTOR + "use_torch_compile",
                       REF + "use_torch_compile", "critic.model.enable_gradient_checkpointing")


@rule("VX921", "key-unread-on-megatron", severity="info", stage="silent", verl_ref="§3", backends=_MEG)
def unread_on_megatron(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for key in _UNREAD_ON_MEGATRON:
        if view.explicit(key) and view.bool(key) is True:
            hint = ("; Megatron recomputes activations with override_transformer_config.recompute_granularity"
                    if "checkpointing" in key else "")
            yield ctx_finding(unread_on_megatron, view, (key,),
                              f"{key}=True has no effect on the Megatron backend: no Megatron worker of verl reads "
                              f"it{hint}")


# Estimators whose baseline is the group of responses to one prompt: with one response per prompt,
# verl sets the group's mean to 0 (and its std to 1) instead (verl/trainer/ppo/core_algos.py:312 grpo,
# :459 reinforce_plus_plus_baseline, :509 rloo, :565 opo, :702 gpg @ v0.7.0; grpo at :142 @ v0.2, as
# the 0.1-based forks that added grpo have it).
_GROUP_BASELINE = ("grpo", "grpo_vectorized", "rloo", "rloo_vectorized", "opo", "gpg",
                   "reinforce_plus_plus_baseline")


@rule("VX922", "group-baseline-with-one-response", severity="warning", stage="silent", verl_ref="H11",
      reads_defaults=True, chain_arithmetic=True)
def group_baseline_one_response(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    estimator, n = view.str("algorithm.adv_estimator"), view.int(ROLLOUT + "n")
    if estimator not in _GROUP_BASELINE or n != 1 or not view.explicit("algorithm.adv_estimator"):
        return  # (an estimator the fork's config picks may serve a stage of its own that uses no advantage)
    if ctx.config.entry != PPO_ENTRY:
        return  # a fork's own entry may sample its groups by another key (`lean.num_samples=32`)
    if view.bool("distillation.enabled") is True:
        return  # on-policy distillation trains on the teacher's loss (verl's own 0.8.0 example runs n=1)
    # The script's own evidence: it sets n=1 (or the fork's own group key, `rollout.n_agent=1`) itself.
    # Left at the default, it is advice (verl's own rollout_correction examples leave n at 1).
    group_keys = (ROLLOUT + "n", *(r.key for r in (ctx.fork_code.repeat_keys if ctx.fork_code else ())))
    chosen = any(view.explicit(key) for key in group_keys)
    yield ctx_finding(group_baseline_one_response, view, ("algorithm.adv_estimator", ROLLOUT + "n"),
                      f"adv_estimator={estimator} with rollout.n=1"
                      + ("" if chosen else " (its default)") + ": each prompt's group holds one response, so "
                      "verl takes its baseline as 0 and the advantage is the raw reward, with no group baseline; "
                      f"{estimator} needs several responses per prompt (rollout.n > 1)", key=ROLLOUT + "n",
                      severity=None if chosen else "info")
