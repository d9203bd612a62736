"""VD4xx — dynamic batch size (token caps) and the interleaved-pipeline micro-batch rules
(docs/batch-chain.md#dynamic-batch-size; D7, D8, D9/E13, H9, C16)."""

from __future__ import annotations

import math
from typing import Iterator

from generator import derive
from generator.config.derived import actor_batch
from generator.rules.core import Context, Example, Finding, ctx_finding, rule
from generator.rules.fixes import token_cap_fix
from generator.config.reader import ConfigReader
from generator.verl import ACTOR, CRITIC, REF, ROLLOUT, TRANSFORMER
from generator.versions import VersionRange


# Caps whose default interpolates another cap (rollout.yaml, ref yaml; critic forward -> critic update).
_INHERITS = {
    ROLLOUT + "log_prob_max_token_len_per_gpu": ACTOR + "ppo_max_token_len_per_gpu",
    REF + "log_prob_max_token_len_per_gpu": ACTOR + "ppo_max_token_len_per_gpu",
    CRITIC + "forward_max_token_len_per_gpu": CRITIC + "ppo_max_token_len_per_gpu",
}


def _caps(view: ConfigReader) -> list[tuple[str, str, str, str]]:
    """(role, cap key, dynamic-flag key, SP prefix) of every token cap in use."""
    caps = [("actor update", ACTOR + "ppo_max_token_len_per_gpu", ACTOR + "use_dynamic_bsz", ACTOR)]
    if view.bool("algorithm.rollout_correction.bypass_mode") is not True:
        caps.append(("rollout log-prob", ROLLOUT + "log_prob_max_token_len_per_gpu",
                     ROLLOUT + "log_prob_use_dynamic_bsz", ACTOR))
    if view.ref_used:
        caps.append(("ref log-prob", REF + "log_prob_max_token_len_per_gpu", REF + "log_prob_use_dynamic_bsz", ACTOR))
    if view.critic_used:
        caps.append(("critic update", CRITIC + "ppo_max_token_len_per_gpu", CRITIC + "use_dynamic_bsz", CRITIC))
        caps.append(("critic values", CRITIC + "forward_max_token_len_per_gpu", CRITIC + "use_dynamic_bsz", CRITIC))
    return caps


@rule("VD401", "token-cap-below-sequence", "dynamic-bsz token cap × CP is below prompt + response",
      severity="error", stage="runtime", verl_ref="D7, §1.9",
      why="With use_dynamic_bsz every micro-batch holds at most cap·CP (Megatron) or cap·SP (FSDP) tokens, and "
          "one padded sequence (prompt_length + response_length) must fit: verl raises 'max_token_len must be "
          "greater than the sequence length' at the first step. Each role has its own cap.",
      fix_safety="Raises the cap to the next multiple of 1024 that fits one sequence (safe; more memory per "
                 "micro-batch).",
      failing=Example(("actor_rollout_ref.actor.use_dynamic_bsz=True",
                       "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=2048")),
      passing=Example(("actor_rollout_ref.actor.use_dynamic_bsz=True",
                       "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=4096")))
def token_cap(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine:
        return  # unpadded nested tensors: the bound is the longest actual sequence
    seq = view.sequence_length()
    if seq is None:
        return
    failed: dict[str, int] = {}
    for role, cap_key, flag_key, sp_prefix in _caps(view):
        if view.bool(flag_key) is not True:
            continue
        cap, split = view.int(cap_key), view.cp_or_sp(sp_prefix)
        if cap is None or split is None:
            continue
        if derive.token_cap(cap, split) >= seq:
            continue
        failed[cap_key] = cap
        inherited_from = _INHERITS.get(cap_key)
        if inherited_from in failed and not view.explicit(cap_key) and failed[inherited_from] == cap:
            continue  # it follows the actor's cap: one finding (and one fix) on the actor's key
        unit = "CP" if view.backend == "megatron" else "SP"
        yield ctx_finding(token_cap, view, (cap_key, "data.max_response_length"),
                          f"{role}: {cap_key.rsplit('.', 1)[-1]}·{unit} = {cap}·{split} = {cap * split} < "
                          f"prompt + response = {seq}", key=cap_key,
                          fix=token_cap_fix(cap_key, cap, seq, split))


def _vpp(view: ConfigReader) -> tuple[int, int] | None:
    layout = view.actor_layout()
    if layout is None or not layout.vpp or layout.vpp <= 1 or layout.pp <= 1:
        return None
    group = view.int(TRANSFORMER + "microbatch_group_size_per_vp_stage") or layout.pp
    return layout.pp, group


@rule("VD402", "vpp-micro-batch-count", "interleaved pipeline: micro-batch count not a valid multiple of PP",
      severity="error", stage="runtime", verl_ref="D9, E13", backends=("megatron",),
      why="With VPP > 1 Megatron's interleaved schedule needs the number of micro-batches per pass to be ≥ "
          "microbatch_group_size_per_vp_stage (default PP) and, with the default, a multiple of PP. This applies to "
          "the update (ceil(m/μ)), the log-prob pass (ceil(B/μ_lp)) and the ref pass (ceil(B/μ_ref)).",
      fix_safety="No automatic fix: change the micro batch so the count is a multiple of PP.",
      failing=Example(("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
                       "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2",
                       "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1",
                       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
                       "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8")),
      passing=Example(("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
                       "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2",
                       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4")))
def vpp_micro(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    pp_group = _vpp(view)
    if pp_group is None:
        return
    pp, group = pp_group
    c = actor_batch(view)
    if c.chain is None or c.chain.local_batch is None:
        return
    local = c.chain.local_batch
    passes = []
    if view.actor_dynamic is False and c.micro and c.chain.per_rank_mini_batch:
        passes.append(("update", ACTOR + "ppo_micro_batch_size_per_gpu", c.chain.per_rank_mini_batch, c.micro,
                       "per-rank mini batch"))
    lp = view.int(ROLLOUT + "log_prob_micro_batch_size_per_gpu")
    if view.bool(ROLLOUT + "log_prob_use_dynamic_bsz") is False and lp:
        passes.append(("log-prob", ROLLOUT + "log_prob_micro_batch_size_per_gpu", local, lp, "local batch"))
    ref = view.int(REF + "log_prob_micro_batch_size_per_gpu")
    if view.ref_used and view.bool(REF + "log_prob_use_dynamic_bsz") is False and ref:
        passes.append(("ref", REF + "log_prob_micro_batch_size_per_gpu", local, ref, "local batch"))
    for role, key, rows, micro, what in passes:
        count = math.ceil(rows / micro)
        problem = derive.vpp_micro_batch_problem(count, pp, group)
        if problem:
            yield ctx_finding(vpp_micro, view, (key,),
                              f"{role}: ceil({what} {rows} / {key.rsplit('.', 1)[-1]} {micro}) = {problem} "
                              f"(VPP on, PP {pp})", key=key)


@rule("VD403", "vpp-dynamic-rows", "interleaved pipeline with dynamic bsz: fewer rows than the micro-batch group",
      severity="error", stage="runtime", verl_ref="D8", backends=("megatron",),
      why="With dynamic bsz and VPP > 1 verl rounds the micro-batch count up to a multiple of the group size "
          "(default PP) and asserts it does not exceed the rows; with fewer rows than PP that always fails.",
      fix_safety="No automatic fix: raise the mini batch or lower PP.",
      failing=Example(("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=4",
                       "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2",
                       "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1",
                       "actor_rollout_ref.actor.use_dynamic_bsz=True", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
                       "actor_rollout_ref.rollout.n=1", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192")),
      passing=Example(("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
                       "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2",
                       "actor_rollout_ref.actor.use_dynamic_bsz=True",
                       "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192")))
def vpp_dynamic(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    pp_group = _vpp(view)
    if pp_group is None or view.actor_dynamic is not True:
        return
    pp, group = pp_group
    c = actor_batch(view)
    if c.chain is None or c.chain.per_rank_mini_batch == 0:
        return
    rows = c.chain.per_rank_mini_batch
    if rows < group:
        yield ctx_finding(vpp_dynamic, view, (ACTOR + "ppo_mini_batch_size",),
                          f"{c.per_rank_equation()} rows < microbatch group {group} (PP {pp}): the rounded "
                          f"micro-batch count exceeds the rows")


@rule("VD404", "critic-token-cap-not-inherited", "critic token cap is not inherited from the actor",
      severity="info", stage="silent", verl_ref="H9",
      why="rollout/ref log-prob caps follow actor.ppo_max_token_len_per_gpu, but critic.ppo_max_token_len_per_gpu "
          "stays at its own default (32768), which may be far from what the actor was tuned to.",
      fix_safety="No automatic fix; set critic.ppo_max_token_len_per_gpu explicitly.",
      failing=Example(("algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=2",
                       "actor_rollout_ref.actor.use_dynamic_bsz=True",
                       "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192")),
      passing=Example(("algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=2",
                       "actor_rollout_ref.actor.use_dynamic_bsz=True",
                       "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192",
                       "critic.ppo_max_token_len_per_gpu=8192")))
def critic_cap(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if not view.critic_used or view.bool(CRITIC + "use_dynamic_bsz") is not True:
        return
    actor_key, critic_key = ACTOR + "ppo_max_token_len_per_gpu", CRITIC + "ppo_max_token_len_per_gpu"
    if not view.explicit(actor_key) or view.explicit(critic_key):
        return
    actor, critic = view.int(actor_key), view.int(critic_key)
    if actor is None or critic is None or actor == critic:
        return
    yield ctx_finding(critic_cap, view, (actor_key,),
                      f"actor.ppo_max_token_len_per_gpu={actor} but critic.ppo_max_token_len_per_gpu keeps its "
                      f"default {critic}", key=critic_key)


@rule("VD405", "engine-dynamic-mismatch", "new engine: actor and log-prob dynamic bsz differ",
      severity="error", stage="init", versions=VersionRange("0.7.0", None), verl_ref="C16",
      why="With trainer.use_legacy_worker_impl=disable the worker asserts actor.use_dynamic_bsz equals "
          "rollout.log_prob_use_dynamic_bsz.",
      fix_safety="No automatic fix: decide which one you want.",
      failing=Example(("trainer.use_legacy_worker_impl=disable", "actor_rollout_ref.actor.use_dynamic_bsz=True",
                       "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=False")),
      passing=Example(("trainer.use_legacy_worker_impl=disable", "actor_rollout_ref.actor.use_dynamic_bsz=True")))
def engine_dynamic(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if not view.new_engine:
        return
    actor, lp = view.actor_dynamic, view.bool(ROLLOUT + "log_prob_use_dynamic_bsz")
    if actor is None or lp is None or actor == lp:
        return
    yield ctx_finding(engine_dynamic, view, (ROLLOUT + "log_prob_use_dynamic_bsz", ACTOR + "use_dynamic_bsz"),
                      f"actor.use_dynamic_bsz={actor} but rollout.log_prob_use_dynamic_bsz={lp}")
