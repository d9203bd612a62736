"""VX9xx — data and miscellaneous settings (H8, B1, C7, C8, A22, A23/H5, H6, A5, C4, B6, C18, A28)."""

from __future__ import annotations

from typing import Iterator

from generator.edits import KeyEdit
from generator.rules.core import Context, Example, Finding, Fix, ctx_finding, rule
from generator.config.reader import ConfigReader
from generator.verl import ACTOR, CRITIC, MEGATRON, REF
from generator.versions import VersionRange

_MEG = ("megatron",)


@rule("VX901", "overlong-prompts-not-filtered", "data.filter_overlong_prompts is off",
      severity="info", stage="silent", verl_ref="H8, D12",
      why="The agent loop pads prompts but never truncates them; a prompt longer than max_prompt_length breaks "
          "the sequence-length assumptions (token caps, max_model_len). The default is False.",
      fix_safety="Sets data.filter_overlong_prompts=True (unsafe: drops long prompts from the dataset).",
      failing=Example(("data.filter_overlong_prompts=False",)), passing=Example(()))
def filter_overlong(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = "data.filter_overlong_prompts"
    if view.bool(key) is False:
        yield ctx_finding(filter_overlong, view, (key,), "data.filter_overlong_prompts=False: prompts longer than "
                          f"max_prompt_length {view.int('data.max_prompt_length')} are kept",
                          fix=Fix("set data.filter_overlong_prompts=True", (KeyEdit(key, False, True),), "unsafe"))


@rule("VX902", "hybrid-engine-off", "actor_rollout_ref.hybrid_engine must be True",
      severity="error", stage="init", verl_ref="B1",
      why="verl's PPO trainer only supports the hybrid engine and refuses hybrid_engine=False.",
      fix_safety="Sets it to True (safe).",
      failing=Example(("actor_rollout_ref.hybrid_engine=False",)), passing=Example(()))
def hybrid_engine(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = "actor_rollout_ref.hybrid_engine"
    entry = ctx.config.entry or ""
    if any(word in entry for word in ("off_policy", "async", "one_step")):
        return  # these recipes run their own trainer, built for separate rollout GPUs
    if view.bool(key) is False:
        yield ctx_finding(hybrid_engine, view, (key,), "actor_rollout_ref.hybrid_engine=False is not supported",
                          fix=Fix("set hybrid_engine=True", (KeyEdit(key, False, True),)))


@rule("VX903", "ulysses-on-megatron", "ulysses_sequence_parallel_size ≠ 1 on Megatron",
      severity="error", stage="init", verl_ref="C7", backends=_MEG,
      why="Ulysses sequence parallelism is FSDP-only; the Megatron actor and critic assert it is 1 (use CP).",
      fix_safety="Sets it to 1 (unsafe: use context_parallel_size for long sequences).",
      failing=Example(("+actor_rollout_ref.actor.ulysses_sequence_parallel_size=2",)), passing=Example(()))
def ulysses_megatron(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for prefix in (ACTOR, CRITIC):
        key = prefix + "ulysses_sequence_parallel_size"
        value = view.int(key)
        if value is not None and value != 1 and (prefix == ACTOR or view.critic_used):
            yield ctx_finding(ulysses_megatron, view, (key,), f"{key}={value} on Megatron (must be 1; use CP)",
                              fix=Fix(f"set {key}=1", (KeyEdit(key, value, 1),), "unsafe"))


@rule("VX904", "shuffle-without-seed", "Megatron actor/critic shuffle without data_loader_seed",
      severity="error", stage="init", verl_ref="C8", backends=_MEG,
      why="The Megatron actor and critic assert a data_loader_seed when shuffle is on.",
      fix_safety="Sets data_loader_seed=42 (safe).",
      failing=Example(("actor_rollout_ref.actor.shuffle=True", "actor_rollout_ref.actor.data_loader_seed=null")),
      passing=Example(("actor_rollout_ref.actor.shuffle=True",)))
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


@rule("VX905", "megatron-dtype", "megatron.dtype must be bfloat16 or float16",
      severity="error", stage="load", versions=VersionRange("0.6.1", None), verl_ref="A22", backends=_MEG,
      why="verl's Megatron engine config accepts only bfloat16 and float16.",
      fix_safety="No automatic fix.",
      failing=Example(("actor_rollout_ref.actor.megatron.dtype=float32",)), passing=Example(()))
def megatron_dtype(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for prefix in (MEGATRON, REF + "megatron.", CRITIC + "megatron."):
        key = prefix + "dtype"
        value = view.str(key)
        if value is not None and value not in ("bfloat16", "float16"):
            yield ctx_finding(megatron_dtype, view, (key,), f"{key}={value} (must be bfloat16 or float16)")


@rule("VX906", "sequence-parallel-without-tp", "sequence_parallel=True with TP 1 is ignored",
      severity="info", stage="silent", verl_ref="A23, C9, E11, H5", backends=_MEG,
      why="Megatron sequence parallelism needs TP > 1; verl silently turns it off (and mbridge derives it from TP).",
      fix_safety="Removes the setting (safe: it has no effect).",
      failing=Example(("actor_rollout_ref.actor.megatron.sequence_parallel=True",
                       "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1")),
      passing=Example(("actor_rollout_ref.actor.megatron.sequence_parallel=True",)))
def sequence_parallel(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = MEGATRON + "sequence_parallel"
    layout = view.actor_layout()
    if layout and layout.tp == 1 and view.explicit(key) and view.bool(key) is True:
        yield ctx_finding(sequence_parallel, view, (key,), "sequence_parallel=True has no effect with TP 1")


@rule("VX907", "grad-offload-unused", "megatron.grad_offload does nothing",
      severity="info", stage="silent", verl_ref="H6, §4", backends=_MEG,
      why="The legacy Megatron worker reads grad_offload but never uses it; gradient buffers follow param_offload.",
      fix_safety="No automatic fix; use param_offload to move gradient buffers.",
      failing=Example(("actor_rollout_ref.actor.megatron.grad_offload=True",)), passing=Example(()))
def grad_offload(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    for prefix in (MEGATRON, REF + "megatron.", CRITIC + "megatron."):
        key = prefix + "grad_offload"
        if view.explicit(key) and view.bool(key) is True:
            yield ctx_finding(grad_offload, view, (key,),
                              f"{key}=True has no effect; gradients are offloaded with param_offload")


@rule("VX908", "invalid-loss-agg-mode", "actor.loss_agg_mode is not a known mode",
      severity="error", stage="load", verl_ref="A5",
      why="verl accepts token-mean, seq-mean-token-sum, seq-mean-token-mean and seq-mean-token-sum-norm.",
      fix_safety="No automatic fix.",
      failing=Example(("actor_rollout_ref.actor.loss_agg_mode=mean",)), passing=Example(()))
def loss_agg(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = ACTOR + "loss_agg_mode"
    value = view.str(key)
    allowed = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")
    if value is not None and value not in allowed:
        yield ctx_finding(loss_agg, view, (key,), f"loss_agg_mode={value} is not one of {', '.join(allowed)}")


@rule("VX909", "fp16-needs-mbridge", "megatron.dtype=float16 requires use_mbridge=True",
      severity="error", stage="init", versions=VersionRange("0.6.1", None), verl_ref="C4", backends=_MEG,
      why="The Megatron worker refuses fp16 without mbridge.",
      fix_safety="Sets use_mbridge=True (safe).",
      failing=Example(("actor_rollout_ref.actor.megatron.dtype=float16", "actor_rollout_ref.actor.megatron.use_mbridge=False")),
      passing=Example(("actor_rollout_ref.actor.megatron.dtype=float16",)))
def fp16_mbridge(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.str(MEGATRON + "dtype") == "float16" and view.bool(MEGATRON + "use_mbridge") is False:
        key = MEGATRON + "use_mbridge"
        yield ctx_finding(fp16_mbridge, view, (key, MEGATRON + "dtype"), "megatron.dtype=float16 with use_mbridge=False",
                          key=key, fix=Fix("set use_mbridge=True", (KeyEdit(key, False, True),)))


@rule("VX910", "engine-megatron-critic", "new engine path does not support a Megatron critic",
      severity="error", stage="init", versions=VersionRange("0.7.0", None), verl_ref="B6", backends=_MEG,
      why="With trainer.use_legacy_worker_impl=disable only an FSDP critic is implemented.",
      fix_safety="No automatic fix.",
      failing=Example(("trainer.use_legacy_worker_impl=disable", "algorithm.adv_estimator=gae",
                       "critic.ppo_micro_batch_size_per_gpu=2")),
      passing=Example(("trainer.use_legacy_worker_impl=disable",)))
def engine_critic(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine and view.critic_used and view.str(CRITIC + "strategy") in ("megatron", None):
        yield ctx_finding(engine_critic, view, ("trainer.use_legacy_worker_impl",),
                          "use_legacy_worker_impl=disable with a Megatron critic (GAE) is not implemented")


@rule("VX911", "engine-needs-mbridge", "new engine path requires megatron.use_mbridge=True",
      severity="error", stage="init", versions=VersionRange("0.7.0", None), verl_ref="C18", backends=_MEG,
      why="The new Megatron engine builds models only through mbridge.",
      fix_safety="Sets use_mbridge=True (safe).",
      failing=Example(("trainer.use_legacy_worker_impl=disable", "actor_rollout_ref.actor.megatron.use_mbridge=False")),
      passing=Example(("trainer.use_legacy_worker_impl=disable",)))
def engine_mbridge(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = MEGATRON + "use_mbridge"
    if view.new_engine and view.bool(key) is False:
        yield ctx_finding(engine_mbridge, view, (key,), "use_legacy_worker_impl=disable needs use_mbridge=True",
                          fix=Fix("set use_mbridge=True", (KeyEdit(key, False, True),)))


@rule("VX912", "invalid-router-replay-mode", "actor.router_replay.mode is not disabled, R2 or R3",
      severity="error", stage="load", versions=VersionRange("0.7.0", None), verl_ref="A28",
      why="verl accepts only disabled, R2 and R3.",
      fix_safety="No automatic fix.",
      failing=Example(("actor_rollout_ref.actor.router_replay.mode=R1",)), passing=Example(()))
def router_replay(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = ACTOR + "router_replay.mode"
    value = view.str(key)
    if value is not None and value not in ("disabled", "R2", "R3"):
        yield ctx_finding(router_replay, view, (key,), f"router_replay.mode={value} (allowed: disabled, R2, R3)")


@rule("VX913", "ulysses-needs-remove-padding", "FSDP ulysses sequence parallelism needs use_remove_padding",
      severity="error", stage="load", verl_ref="A9, A18", backends=("fsdp",),
      why="verl refuses ulysses_sequence_parallel_size > 1 unless the model's use_remove_padding is True (for the "
          "actor/ref through actor_rollout_ref.model, for the critic through critic.model).",
      fix_safety="Sets use_remove_padding=True (safe: same math, packed sequences).",
      failing=Example(("actor_rollout_ref.actor.ulysses_sequence_parallel_size=2",
                       "actor_rollout_ref.model.use_remove_padding=False"), config_name="ppo_trainer"),
      passing=Example(("actor_rollout_ref.actor.ulysses_sequence_parallel_size=2",
                       "actor_rollout_ref.model.use_remove_padding=True"), config_name="ppo_trainer"))
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


@rule("VX914", "vllm-lora-rank", "vLLM rollout with a LoRA rank above 512",
      severity="error", stage="load", versions=VersionRange("0.5.0", None), verl_ref="A21",
      why="vLLM supports LoRA ranks up to 512; verl refuses larger ranks when the rollout is vLLM.",
      fix_safety="No automatic fix.",
      failing=Example(("actor_rollout_ref.model.lora_rank=1024",), config_name="ppo_trainer"),
      passing=Example(("actor_rollout_ref.model.lora_rank=64",), config_name="ppo_trainer"))
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


@rule("VX915", "kl-in-reward-and-loss", "KL in the reward and KL loss are both on",
      severity="info", stage="load", verl_ref="A13",
      why="verl only prints a notice when both algorithm.use_kl_in_reward and actor.use_kl_loss are set: the KL "
          "penalty is then applied twice, which is rarely intended.",
      fix_safety="No automatic fix.",
      failing=Example(("algorithm.use_kl_in_reward=True", "actor_rollout_ref.actor.use_kl_loss=True")),
      passing=Example(("actor_rollout_ref.actor.use_kl_loss=True",)))
def kl_twice(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.bool("algorithm.use_kl_in_reward") and view.bool(ACTOR + "use_kl_loss"):
        yield ctx_finding(kl_twice, view, ("algorithm.use_kl_in_reward", ACTOR + "use_kl_loss"),
                          "use_kl_in_reward=True and use_kl_loss=True: the KL penalty is applied twice")


# --- Megatron-core TransformerConfig: full recompute needs a method and a layer count -------------

_OTC = "megatron.override_transformer_config."


@rule("VX916", "full-recompute-incomplete", "recompute_granularity=full without recompute_method or recompute_num_layers",
      severity="error", stage="init", versions=VersionRange("0.5.0", None), backends=_MEG,
      verl_ref="§3 (recompute keys), mcore TransformerConfig",
      why="Megatron-core refuses recompute_granularity=full unless recompute_method (uniform or block) and "
          "recompute_num_layers are set too; the error comes when the workers build the model, after Ray and "
          "the engines have started.",
      fix_safety="Sets recompute_method=uniform and recompute_num_layers=1 (what verl's own scripts use; safe: "
                 "the run could not start without them).",
      failing=Example(("actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full",)),
      passing=Example(("actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full",
                       "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform",
                       "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1")))
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
