"""VD4xx — dynamic batch size (token caps) and the interleaved-pipeline micro-batch rules
(docs/batch-chain.md#dynamic-batch-size; D7, D8, D9/E13, H9, C16)."""

from __future__ import annotations

import math
from typing import Iterator

from generator.layout import derive
from generator.config.derived import actor_batch
from generator.rules.core import Context, Finding, Severity, ctx_finding, rule
from generator.rules.fixes import token_cap_fix
from generator.config.reader import ConfigReader
from generator.verl.constants import ACTOR, CRITIC, REF, ROLLOUT, TRANSFORMER
from generator.verl.versions import VersionRange


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


@rule("VD401", "token-cap-below-sequence", severity="error", stage="runtime", verl_ref="D7, §1.9")
def token_cap(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    # The engine's micro batches are unpadded nested tensors: it asserts the cap against the
    # longest actual sequence of the batch (verl/utils/seqlen_balancing.py@v0.9.0
    # rearrange_micro_batches, called per sequence batch from verl/workers/engine/utils.py@v0.9.0
    # prepare_micro_batches), not the padded prompt + response. A cap at or below the response
    # length fails on the first truncated response (an error); one between that and prompt +
    # response fails on the first long enough pair (a warning).
    engine = bool(view.new_engine)
    response = view.int("data.max_response_length")
    seq = view.sequence_length()
    if seq is None:
        return
    longest, capped = _longest_sequence(view, seq) if engine else (seq, "")
    failed: dict[str, int] = {}
    for role, cap_key, flag_key, sp_prefix in _caps(view):
        if view.bool(flag_key) is not True:
            continue
        cap, split = view.int(cap_key), view.cp_or_sp(sp_prefix)
        if cap is None or split is None:
            continue
        if view.backend != "megatron" and split <= 1:
            # the FSDP engine's own SP key, which the deprecated role-level one only overrides above 1
            # (FSDPActorConfig.__post_init__ of the verl 0.9.1 wheel, verl/workers/config/actor.py)
            split = view.int(sp_prefix + "fsdp_config.ulysses_sequence_parallel_size") or split
        if derive.token_cap(cap, split) >= longest:
            continue
        failed[cap_key] = cap
        inherited_from = _INHERITS.get(cap_key)
        if inherited_from in failed and not view.explicit(cap_key) and failed[inherited_from] == cap:
            continue  # it follows the actor's cap: one finding (and one fix) on the actor's key
        unit = "CP" if view.backend == "megatron" else "SP"
        message = (f"{role}: {cap_key.rsplit('.', 1)[-1]}·{unit} = {cap}·{split} = {cap * split} < "
                   + (f"{capped}" if capped else f"prompt + response = {seq}"))
        severity: Severity | None = None
        if engine:
            # a truncated response makes a sequence of min(prompt + response, max_model_len) tokens
            sure = response is not None and derive.token_cap(cap, split) <= response \
                and derive.token_cap(cap, split) < longest
            message += ("; the engine workers assert it per sequence: the first "
                        + (f"response truncated at max_response_length {response}" if sure
                           else f"prompt + response longer than {cap * split} tokens") + " stops the run")
            severity = None if sure else "warning"
        yield ctx_finding(token_cap, view, (cap_key, "data.max_response_length"), message, key=cap_key,
                          fix=token_cap_fix(cap_key, cap, longest, split), severity=severity)


def _longest_sequence(view: ConfigReader, seq: int) -> tuple[int, str]:
    """The longest sequence the engine workers can see, and how it is reached ("" when it is
    prompt + response): the async rollout servers cap every request at rollout.max_model_len,
    asking for at most max_model_len - prompt new tokens (vllm_async_server.py and
    async_sglang_server.py from v0.6.0, `max_possible_tokens`; verl/workers/rollout/vllm_rollout/
    vllm_async_server.py:474 @ v0.8.0), so a max_model_len below prompt + response is the cap."""
    from generator.rules.batch import _rollout_mode

    model_len = view.int(ROLLOUT + "max_model_len")
    if model_len is None or model_len <= 0 or model_len >= seq or _rollout_mode(view) == "sync" \
            or view.str(ROLLOUT + "name") not in (None, "vllm", "sglang"):
        return seq, ""
    return model_len, f"rollout.max_model_len = {model_len}, the longest sequence (prompt + response = {seq})"


def _vpp(view: ConfigReader) -> tuple[int, int] | None:
    layout = view.actor_layout()
    if layout is None or not layout.vpp or layout.vpp <= 1 or layout.pp <= 1:
        return None
    group = view.int(TRANSFORMER + "microbatch_group_size_per_vp_stage") or layout.pp
    return layout.pp, group


@rule("VD402", "vpp-micro-batch-count", severity="error", stage="runtime", verl_ref="D9, E13", backends=("megatron",),
      chain_arithmetic=True)
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


@rule("VD403", "vpp-dynamic-rows", severity="error", stage="runtime", verl_ref="D8", backends=("megatron",),
      chain_arithmetic=True)
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


@rule("VD404", "critic-token-cap-not-inherited", severity="info", stage="silent", verl_ref="H9",
      reads_defaults=True)
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


@rule("VD405", "engine-dynamic-mismatch", severity="error", stage="init", versions=VersionRange("0.7.0", None),
      verl_ref="C16")
def engine_dynamic(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if not view.new_engine:
        return
    actor, lp = view.actor_dynamic, view.bool(ROLLOUT + "log_prob_use_dynamic_bsz")
    if actor is None or lp is None or actor == lp:
        return
    yield ctx_finding(engine_dynamic, view, (ROLLOUT + "log_prob_use_dynamic_bsz", ACTOR + "use_dynamic_bsz"),
                      f"actor.use_dynamic_bsz={actor} but rollout.log_prob_use_dynamic_bsz={lp}")
