"""VB2xx — the other batch chains: rollout log-prob, reference policy and critic
(docs/batch-chain.md#log-prob-reference-and-critic; A10, A11, A14, A16, C3, C12, D4, D5, D6)."""

from __future__ import annotations

import math
from typing import Iterator

from generator.layout import derive
from generator.config.derived import trained_prompts_and_n
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, Rule, ctx_finding, rule
from generator.rules.fixes import mini_fix
from generator.config.reader import ConfigReader
from generator.verl.constants import ACTOR, CRITIC, REF, ROLLOUT
from generator.verl.versions import VersionRange

LP_MICRO = ROLLOUT + "log_prob_micro_batch_size_per_gpu"
LP_MICRO_GLOBAL = ROLLOUT + "log_prob_micro_batch_size"
REF_MICRO = REF + "log_prob_micro_batch_size_per_gpu"
REF_MICRO_GLOBAL = REF + "log_prob_micro_batch_size"
C_MINI = CRITIC + "ppo_mini_batch_size"
C_MICRO = CRITIC + "ppo_micro_batch_size_per_gpu"
C_MICRO_GLOBAL = CRITIC + "ppo_micro_batch_size"


def _pair_findings(the_rule: Rule, view: ConfigReader, per_gpu: str, global_key: str, role: str,
                   suggestion: int | None) -> Iterator[Finding]:
    """Exactly one of a (deprecated global, per-GPU) micro pair must be set."""
    if not view.known(per_gpu) or not view.known(global_key):
        return
    a, b = view.raw(per_gpu), view.raw(global_key)
    short_pg, short_g = per_gpu.rsplit(".", 1)[-1], global_key.rsplit(".", 1)[-1]
    if a is not None and b is not None:
        yield ctx_finding(the_rule, view, (global_key, per_gpu),
                          f"[{role}] both {short_g}={b} and {short_pg}={a} are set; keep only {short_pg}",
                          key=global_key,
                          fix=Fix(f"remove the deprecated {short_g}", (KeyEdit(global_key, b, None),)))
    elif a is None and b is None:
        fix = None
        if suggestion:
            fix = Fix(f"set {short_pg}={suggestion} (the actor's micro batch: equal micro batches keep "
                      f"log-probs numerically identical)", (KeyEdit(per_gpu, None, suggestion),))
        yield ctx_finding(the_rule, view, (per_gpu,),
                          f"[{role}] neither {short_pg} nor {short_g} is set", key=per_gpu, fix=fix)


@rule("VB201", "rollout-logprob-micro-pair", severity="error", stage="load", verl_ref="A11, D5",
      reads_defaults=True)
def rollout_pair(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.actor_dynamic is not False:
        return
    yield from _pair_findings(rollout_pair, view, LP_MICRO, LP_MICRO_GLOBAL, "actor_rollout_ref.rollout",
                              view.int(ACTOR + "ppo_micro_batch_size_per_gpu"))


@rule("VB202", "ref-logprob-micro-pair", severity="error", stage="load", verl_ref="A10",
      reads_defaults=True)
def ref_pair(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.actor_dynamic is not False or view.ref_used is not True:
        return
    yield from _pair_findings(ref_pair, view, REF_MICRO, REF_MICRO_GLOBAL, "actor_rollout_ref.ref",
                              view.int(ACTOR + "ppo_micro_batch_size_per_gpu"))


@rule("VB203", "megatron-ref-micro-missing", severity="error", stage="init", verl_ref="C3", backends=("megatron",),
      reads_defaults=True)
def megatron_ref_micro(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine or view.ref_used is not True or view.actor_dynamic is not True:
        return  # static batching: VB202 already reports it at load
    if view.is_null(REF_MICRO) and view.is_null(REF_MICRO_GLOBAL):
        value = view.int(LP_MICRO) or 1
        yield ctx_finding(megatron_ref_micro, view, (REF_MICRO, ACTOR + "use_kl_loss"),
                          "the Megatron ref worker needs ref.log_prob_micro_batch_size_per_gpu even with "
                          "use_dynamic_bsz=True, and both ref micro keys are null", key=REF_MICRO,
                          fix=Fix(f"set ref.log_prob_micro_batch_size_per_gpu={value}",
                                  (KeyEdit(REF_MICRO, None, value),)))


def _critic_static(view: ConfigReader) -> bool | None:
    dynamic = view.bool(CRITIC + "use_dynamic_bsz")
    return None if dynamic is None else not dynamic


@rule("VB204", "critic-micro-pair", severity="error", stage="load", verl_ref="A14",
      reads_defaults=True)
def critic_pair(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.critic_used is not True or _critic_static(view) is not True:
        return
    if not view.known(C_MICRO) or not view.known(C_MICRO_GLOBAL):
        return
    per_gpu, global_ = view.raw(C_MICRO), view.raw(C_MICRO_GLOBAL)
    if per_gpu is None and global_ is None:
        yield ctx_finding(critic_pair, view, (C_MINI,), "[critic] neither ppo_micro_batch_size_per_gpu nor "
                          "ppo_micro_batch_size is set", key=C_MICRO)
        return
    if per_gpu is None or global_ is None:
        return
    dp = view.dp(CRITIC)
    trap = not view.explicit(C_MICRO)
    fix = None
    if isinstance(global_, int) and dp:
        new = max(1, global_ // dp)
        fix = Fix(f"use critic.ppo_micro_batch_size_per_gpu={new} (= {global_} // DP {dp}) and drop the "
                  f"deprecated global key", (KeyEdit(C_MICRO_GLOBAL, global_, None), KeyEdit(C_MICRO, per_gpu, new)))
    if trap:
        message = (f"[critic] only critic.ppo_micro_batch_size={global_} is set, but "
                   f"critic.ppo_micro_batch_size_per_gpu defaults to ${{oc.select:.ppo_micro_batch_size}} = "
                   f"{per_gpu}, so both are set and verl refuses the config")
    else:
        message = f"[critic] both ppo_micro_batch_size={global_} and ppo_micro_batch_size_per_gpu={per_gpu} are set"
    yield ctx_finding(critic_pair, view, (C_MICRO_GLOBAL,), message, fix=fix)


@rule("VB205", "megatron-critic-micro-missing", severity="error", stage="runtime", verl_ref="D6",
      backends=("megatron",),
      reads_defaults=True)
def megatron_critic_micro(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine or view.critic_used is not True or _critic_static(view) is not False:
        return
    if view.is_null(C_MICRO):
        value = view.int(ACTOR + "ppo_micro_batch_size_per_gpu") or 1
        yield ctx_finding(megatron_critic_micro, view, (CRITIC + "use_dynamic_bsz", "algorithm.adv_estimator"),
                          "critic.ppo_micro_batch_size_per_gpu is null; the Megatron critic's compute_values "
                          "needs it even with use_dynamic_bsz=True", key=C_MICRO,
                          fix=Fix(f"set critic.ppo_micro_batch_size_per_gpu={value}", (KeyEdit(C_MICRO, None, value),)))


def _critic_chain(view: ConfigReader) -> tuple[derive.BatchChain, tuple[int, int], int, int] | None:
    """The critic's chain: the batch the actor trains on (config/derived), the critic's own mini
    and micro batch; under the critic's dynamic bsz the micro batch is ignored, as for the actor."""
    pn, dp = trained_prompts_and_n(view), view.dp(CRITIC)
    mini = view.int(C_MINI)
    if pn is None or dp is None or not mini or mini <= 0:
        return None
    n = view.int(CRITIC + "rollout_n") or pn[1]
    micro = view.int(C_MICRO)
    chain = derive.batch_chain(prompts=pn[0], n=n, mini=mini, dp=dp, micro=micro if micro and micro > 0 else None,
                               epochs=view.int(CRITIC + "ppo_epochs") or 1, path=view.path(),
                               dynamic_bsz=view.bool(CRITIC + "use_dynamic_bsz") is True)
    return chain, pn, dp, mini


@rule("VB206", "critic-mini-batch-chain", severity="error", stage="runtime", verl_ref="D4, C1", backends=("megatron",),
      reads_defaults=True, chain_arithmetic=True)
def critic_chain(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine or view.critic_used is not True:
        return
    found = _critic_chain(view)
    if found is None:
        return
    chain, pn, dp, mini = found
    if chain.local_batch is None:
        return  # VB103 reports G % DP
    if not view.explicit(C_MINI) and chain.responses_per_prompt == pn[1]:
        return  # critic.ppo_mini_batch_size follows the actor's: VB104/VB106 report (and fix) it once
    eq = (f"critic per-rank mini batch = critic.ppo_mini_batch_size·n / DP = {mini}·{chain.responses_per_prompt} / "
          f"{dp} = {chain.per_rank_mini_batch}")
    fix = mini_fix(view, prompts=pn[0], n=chain.responses_per_prompt, dp=dp, mini=mini, micro=view.int(C_MICRO),
                   key=C_MINI, micro_key=C_MICRO)
    if chain.per_rank_mini_batch == 0:
        yield ctx_finding(critic_chain, view, (C_MINI,), eq + ": no sample per rank", fix=fix)
    elif chain.mini_batch_remainder:
        yield ctx_finding(critic_chain, view, (C_MINI,),
                          f"local batch = G/DP = {chain.responses_per_step}/{dp} = {chain.local_batch}, not divisible "
                          f"by {eq} ({chain.local_batch} % {chain.per_rank_mini_batch} = "
                          f"{chain.mini_batch_remainder})", fix=fix)


@rule("VB207", "critic-mini-larger-than-train-batch", severity="error", stage="load", verl_ref="A16",
      reads_defaults=True, chain_arithmetic=True)
def critic_mini_larger(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.critic_used is not True or _critic_static(view) is not True:
        return
    pn, mini = trained_prompts_and_n(view), view.int(C_MINI)
    if pn is None or mini is None or mini <= pn[0] or not view.explicit(C_MINI):
        return  # an inherited critic mini batch is reported once, on the actor (VB102)
    dp = view.dp(CRITIC)
    fix = mini_fix(view, prompts=pn[0], n=pn[1], dp=dp, mini=mini, micro=view.int(C_MICRO), key=C_MINI,
                   micro_key=C_MICRO) if dp else None
    yield ctx_finding(critic_mini_larger, view, (C_MINI,),
                      f"critic.ppo_mini_batch_size {mini} > train_batch_size {pn[0]} (both count prompts)", fix=fix)


@rule("VB208", "fsdp-critic-micro-does-not-divide", severity="error", stage="init", verl_ref="C12", backends=("fsdp",),
      reads_defaults=True, chain_arithmetic=True)
def fsdp_critic_micro(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.critic_used is not True or _critic_static(view) is not True:
        return
    found = _critic_chain(view)
    micro = view.int(C_MICRO)
    if found is None or not micro or micro <= 0:
        return
    chain, _pn, dp, mini = found
    m = chain.per_rank_mini_batch
    if m and m % micro == 0:
        return
    new = derive.nearest_micro(m, micro)
    fix = Fix(f"set critic.ppo_micro_batch_size_per_gpu {micro} → {new}", (KeyEdit(C_MICRO, micro, new),)) \
        if new and new != micro else None
    yield ctx_finding(fsdp_critic_micro, view, (C_MICRO, C_MINI),
                      f"critic per-rank mini batch = {mini}·{chain.responses_per_prompt} / {dp} = {m}, not divisible "
                      f"by critic.ppo_micro_batch_size_per_gpu {micro}", key=C_MICRO, fix=fix)


C_MICRO_GLOBAL = CRITIC + "ppo_micro_batch_size"


@rule("VB210", "critic-mini-not-divisible-by-global-micro", severity="error", stage="load", verl_ref="A15")
def critic_mini_vs_global_micro(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.critic_used is not True or _critic_static(view) is not True:
        return
    if not view.is_null(C_MICRO):
        return  # both keys set: VB204 reports the pair (verl checks that first)
    mini, micro = view.int(C_MINI), view.int(C_MICRO_GLOBAL)
    if not mini or not micro or micro <= 0 or mini % micro == 0:
        return
    new = derive.nearest_micro(mini, micro)
    fix = Fix(f"set critic.ppo_micro_batch_size {micro} → {new}", (KeyEdit(C_MICRO_GLOBAL, micro, new),)) \
        if new and new != micro else None
    yield ctx_finding(critic_mini_vs_global_micro, view, (C_MICRO_GLOBAL, C_MINI),
                      f"critic.ppo_mini_batch_size {mini} is not divisible by critic.ppo_micro_batch_size {micro} "
                      f"({mini} % {micro} = {mini % micro})", key=C_MICRO_GLOBAL, fix=fix)


@rule("VB209", "logprob-micro-larger-than-local-batch", severity="info", stage="silent", verl_ref="§1.5",
      chain_arithmetic=True)
def logprob_micro_large(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.bool(ROLLOUT + "log_prob_use_dynamic_bsz") is not False:
        return
    # The old log-probs are computed on the batch the actor trains (DAPO: after the group filter).
    pn, dp, micro = trained_prompts_and_n(view), view.dp(), view.int(LP_MICRO)
    if pn is None or not dp or not micro:
        return
    responses = pn[0] * pn[1]
    if responses % dp:
        return
    local = responses // dp
    if micro > local:
        yield ctx_finding(logprob_micro_large, view, (LP_MICRO,),
                          f"log_prob_micro_batch_size_per_gpu {micro} > local batch G/DP = {responses}/{dp} = {local}: "
                          f"one forward pass of {local} ({math.ceil(local / micro)} micro-batch)",
                          fix=Fix(f"set log_prob_micro_batch_size_per_gpu={local}", (KeyEdit(LP_MICRO, micro, local),)))


@rule("VB211", "logprob-global-micro-floors-to-zero", severity="error", stage="runtime",
      versions=VersionRange(None, "0.7.1"), verl_ref="D16", chain_arithmetic=True)
def logprob_micro_zero(ctx: Context) -> Iterator[Finding]:
    # The legacy workers turn the deprecated global log-prob micro batch into a per-GPU one by floor
    # division by the data-parallel ranks (verl/workers/fsdp_workers.py:267-274 @ v0.7.0, W/SP;
    # megatron_workers.py:338-348 @ v0.7.0, DP; the same lines from v0.1), with no check that the
    # result is positive; the log-prob pass then splits its batch into micro batches of 0 rows.
    view = ConfigReader.of(ctx)
    if view.new_engine:
        return
    dp = view.dp()
    if not dp or dp <= 1:
        return
    roles = [("rollout", LP_MICRO_GLOBAL, ROLLOUT + "log_prob_use_dynamic_bsz")]
    if view.ref_used:
        roles.append(("ref", REF_MICRO_GLOBAL, REF + "log_prob_use_dynamic_bsz"))
    for role, key, dynamic in roles:
        micro = view.int(key)
        if not micro or micro <= 0 or micro >= dp or view.bool(dynamic) is True or not view.explicit(key):
            continue
        short = key.rsplit(".", 1)[-1]
        yield ctx_finding(logprob_micro_zero, view, (key,),
                          f"[{role}] {short} {micro} is split among the data-parallel ranks ({view.dp_equation()}): "
                          f"{micro} // {dp} = 0 sequences per GPU, and the {role} log-prob pass splits its batch "
                          "into micro batches of 0 at the first step",
                          key=key, fix=Fix(f"set {short}={dp} (one sequence per GPU)", (KeyEdit(key, micro, dp),)))
