"""VB1xx — the actor's batch chain (docs/batch-chain.md; A2-A8, C1, C2,
C10, C11, C15, D1-D4, G6-G8)."""

from __future__ import annotations

import math
from typing import Iterator

from generator.config.derived import ActorBatch, actor_batch, trained_prompts_and_n
from generator.config.reader import ConfigReader
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, ctx_finding, rule
from generator.rules.fixes import MICRO, MINI, actor_mini_fix, divisor_fix, micro_fix
from generator.verl.constants import ACTOR, ROLLOUT
from generator.verl.versions import VersionRange, parse

MICRO_GLOBAL = ACTOR + "ppo_micro_batch_size"
P_KEY = "data.train_batch_size"
N_KEY = ROLLOUT + "n"


def _static(view: ConfigReader, *, ungated_through: str | None = None, ungated_from: str | None = None
            ) -> bool | None:
    """True when static batching applies. verl ≤ 0.5.0 ran its load checks even with dynamic bsz (G6);
    `ungated_from` is the first release whose check ran whatever use_dynamic_bsz said."""
    dynamic = view.actor_dynamic
    if dynamic is None:
        return None
    if ungated_through and VersionRange(ungated_from, ungated_through).contains(view.version):
        return True
    return not dynamic


# The global micro batch checks (A7, A8) ran ungated only in the FSDP worker's normalisation of
# 0.2.0-0.4.1 (an assert on the per-GPU micro batch whatever use_dynamic_bsz says); the trainer's
# own check sits under `if not use_dynamic_bsz` in every release, and verl 0.1's worker has no
# assert at all (dp_actor.py splits by ppo_micro_batch_size only without dynamic batches): issue 34.
_MICRO_UNGATED = ("0.2.0", "0.4.1")


# --- A2 ---------------------------------------------------------------------------------------

@rule("VB101", "minimal-batch-not-divisible", severity="error", stage="load", verl_ref="A2, G6",
      chain_arithmetic=True)
def minimal_batch(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    c = actor_batch(view)
    failing = _minimal_batch_fails(view, c)
    if failing is None:
        return
    minimal, what = failing
    assert c.pn is not None  # _minimal_batch_fails needs it
    responses = c.pn[0] * c.pn[1]
    fix = None
    if view.backend == "megatron" and c.micro and c.dp:
        local = responses // c.dp if responses % c.dp == 0 else None
        per_rank = c.chain.per_rank_mini_batch if c.chain else 0
        if local:
            target = math.gcd(local, per_rank) if per_rank > 0 else local
            fix = divisor_fix(MICRO, c.micro, target,
                              f"divides the local batch {local}" + (f" and the per-rank mini batch {per_rank}"
                                                                    if per_rank > 0 else ""))
    yield ctx_finding(minimal_batch, view, (MICRO, N_KEY, P_KEY),
                      f"responses per step = train_batch_size·n = {c.pn[0]}·{c.pn[1]} = {responses}, not "
                      f"divisible by {what} ({responses} % {minimal} = {responses % minimal})",
                      key=MICRO if view.backend == "megatron" else P_KEY, fix=fix)


def _minimal_batch_fails(view: ConfigReader, c: ActorBatch) -> tuple[int, str] | None:
    """The minimal batch (and its words) when VB101 reports the responses per step not divisible by it."""
    # validate_config runs A2 whichever workers follow (verl/utils/config.py@v0.8.0 line 110,
    # called from main_ppo on the engine path too), so the engine path is no exception.
    if not _static(view, ungated_through="0.5.0"):
        return None
    # FSDP's minimal batch is the GPU count whatever ulysses SP is, so DP (None when SP does
    # not divide the GPUs) is only needed on Megatron.
    if c.pn is None or (c.dp is None and view.backend == "megatron"):
        return None
    responses = c.pn[0] * c.pn[1]
    if view.backend == "megatron":
        assert c.dp is not None  # returned above when Megatron's DP is unknown
        if not c.micro or c.micro <= 0:
            return None  # VB109 reports the missing micro batch
        minimal = c.dp * c.micro
        what = f"DP·ppo_micro_batch_size_per_gpu = {c.dp}·{c.micro} = {minimal}"
    else:
        minimal = view.gpus or 0
        what = f"the {minimal} GPUs"
    if minimal <= 0 or responses % minimal == 0:
        return None
    return minimal, what


def _implied_by_minimal_batch(view: ConfigReader, c: ActorBatch, responses: int, divisor: int) -> bool:
    """VB101 already reports these responses per step against a minimal batch that `divisor` divides:
    making the step divisible by that minimal batch also makes it divisible by `divisor`, and verl
    refuses the config at load before any later check runs. One cause, one finding (issue 34)."""
    failing = _minimal_batch_fails(view, c)
    if failing is None or c.pn is None or c.pn[0] * c.pn[1] != responses:
        return False
    return divisor > 0 and failing[0] % divisor == 0


# --- A6 ---------------------------------------------------------------------------------------

@rule("VB102", "mini-batch-larger-than-train-batch", severity="error", stage="load", verl_ref="A6",
      chain_arithmetic=True)
def mini_larger_than_step(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if not _static(view):
        return  # verl skips A6 with dynamic bsz; VB106 words what the update then does
    c = actor_batch(view)
    if c.pn is None or c.mini is None or c.mini <= c.pn[0]:
        return
    if _fork_drops_mini_check(ctx, view):
        return  # the project's own trainer does not assert it (commented out): the fork allows it
    fix = actor_mini_fix(view, c)
    shown = f"ppo_mini_batch_size {c.mini} > train_batch_size {c.pn[0]} (both count prompts)"
    if _before_mini_check(view.version):
        if view.backend == "megatron":
            return  # Megatron's make_iterator still asserts: VB106 reports it
        yield ctx_finding(mini_larger_than_step, view, (MINI, P_KEY),
                          f"{shown}: verl {view.version} does not refuse it (the check came in 0.3); each epoch runs "
                          f"one mini-batch of the whole step and the loss is divided by the micro-batch count of "
                          f"the larger mini batch, so the update is scaled down", fix=fix, severity="warning")
        return
    yield ctx_finding(mini_larger_than_step, view, (MINI, P_KEY), shown, fix=fix)


def _fork_drops_mini_check(ctx: Context, view: ConfigReader) -> bool:
    """The project's own verl (of a release that has A6) has trainer code and none of it asserts
    the mini batch within the train batch: the fork took the check out (issue 34; the gatherer
    reads the fork's trainer into `fork_checks`)."""
    return ctx.fork_checks.trainer_asserts_mini is False and not _before_mini_check(view.version)


def _mini_check_reports(ctx: Context, view: ConfigReader, c: ActorBatch) -> bool:
    """Whether VB102 reports this call's mini batch larger than its train batch (its own conditions)."""
    if not _static(view) or c.pn is None or c.mini is None or c.mini <= c.pn[0]:
        return False
    if _fork_drops_mini_check(ctx, view):
        return False
    return not (_before_mini_check(view.version) and view.backend == "megatron")


def _before_mini_check(version: str) -> bool:
    """verl before 0.3 had no train_batch_size >= ppo_mini_batch_size check (A6 came in 0.3.0)."""
    try:
        return parse(version) < parse("0.3.0")
    except ValueError:
        return False


# --- D3 ---------------------------------------------------------------------------------------

@rule("VB103", "step-not-divisible-by-dp", severity="error", stage="runtime", verl_ref="D3, D2",
      chain_arithmetic=True)
def step_not_divisible(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.auto_padding:
        return
    c = actor_batch(view)
    if c.pn is None or c.dp is None:
        return
    responses = c.pn[0] * c.pn[1]
    if responses % c.dp == 0:
        return
    finding = ctx_finding(step_not_divisible, view, (P_KEY, N_KEY),
                          f"responses per step G = train_batch_size·n = {c.pn[0]}·{c.pn[1]} = {responses}, not "
                          f"divisible by {view.dp_equation()} ({responses} % {c.dp} = {responses % c.dp})")
    # VB101 reports the same remainder at load where it runs
    yield finding._replace(implied_by="VB101") if _implied_by_minimal_batch(view, c, responses, c.dp) else finding


# --- C1/C10/D4 --------------------------------------------------------------------------------

@rule("VB104", "per-rank-mini-batch-zero", severity="error", stage="runtime", verl_ref="C1, C10, D4",
      chain_arithmetic=True)
def mini_zero(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine:
        return  # VB116 reports the exact-division assert of the new engine
    c = actor_batch(view)
    if c.chain is None or c.chain.per_rank_mini_batch > 0:
        return
    fix = actor_mini_fix(view, c)
    yield ctx_finding(mini_zero, view, (MINI, N_KEY), f"{c.per_rank_equation()}: no sample per rank", fix=fix)


@rule("VB105", "per-rank-mini-batch-floored", severity="warning", stage="silent", verl_ref="C1, H1",
      chain_arithmetic=True)
def mini_floored(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine:
        return
    c = actor_batch(view)
    if c.chain is None or not c.chain.floored or c.chain.per_rank_mini_batch == 0:
        return
    ch = c.chain
    asked = ch.mini_batch_prompts * ch.responses_per_prompt
    fix = actor_mini_fix(view, c)
    finding = ctx_finding(mini_floored, view, (MINI, N_KEY),
                          f"{c.per_rank_equation()}: each optimizer step sees {ch.effective_responses_per_update} "
                          f"responses, not {asked}", fix=fix)
    # VB107's error already shows the floored per-rank mini batch: one cause, one finding
    yield finding._replace(implied_by="VB107") if _micro_check_fails(view, c) else finding


@rule("VB106", "local-batch-not-divisible-by-mini", severity="error", stage="runtime", verl_ref="D4, H3",
      chain_arithmetic=True)
def local_not_divisible(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine:
        return
    c = actor_batch(view)
    ch = c.chain
    if ch is None or ch.local_batch is None or ch.per_rank_mini_batch == 0 or ch.mini_batch_remainder == 0:
        return
    fix = actor_mini_fix(view, c)
    if ch.per_rank_mini_batch > ch.local_batch:
        if _mini_check_reports(ctx, view, c):
            return  # VB102 reports the mini batch larger than the step: one cause, one finding (issue 34)
        if _fork_drops_mini_check(ctx, view):
            return  # a fork that removed verl's check runs its own chain (evidence or silence)
        # M > P: not a remainder but a mini batch larger than the whole step; say so plainly.
        larger = (f"mini batch larger than the train batch (ppo_mini_batch_size {ch.mini_batch_prompts} > "
                  f"train_batch_size {ch.prompts_per_step})")
        if view.backend == "megatron":
            yield ctx_finding(local_not_divisible, view, (MINI, P_KEY),
                              f"{larger}: the per-rank mini batch {ch.per_rank_mini_batch} exceeds the local batch "
                              f"{ch.local_batch} and make_iterator asserts", fix=fix)
        else:
            updates = "one update per step" if ch.epochs == 1 else f"{ch.epochs} updates per step (one per epoch)"
            if view.explicit(MINI):
                yield ctx_finding(local_not_divisible, view, (MINI, P_KEY), f"{larger}: {updates}", fix=fix,
                                  severity="warning")
            else:
                # The mini batch is the config's default, not a number the user asked for: each step
                # is one update of the whole batch, nothing the script meant fails (evidence or silence).
                yield ctx_finding(local_not_divisible, view, (MINI, P_KEY),
                                  f"{larger}: {updates}; ppo_mini_batch_size is the config's default, which the "
                                  f"script never sets", fix=fix, severity="info")
        return
    local = (f"local batch = G/DP = {ch.responses_per_step}/{ch.dp} = {ch.local_batch}, not divisible by "
             f"{c.per_rank_equation()} ({ch.local_batch} % {ch.per_rank_mini_batch} = {ch.mini_batch_remainder})")
    if view.backend == "megatron":
        yield ctx_finding(local_not_divisible, view, (MINI, P_KEY), local + ": make_iterator asserts", fix=fix)
    else:
        yield ctx_finding(local_not_divisible, view, (MINI, P_KEY),
                          local + f": FSDP runs {ch.mini_batches_per_epoch} mini-batches per epoch (the last "
                          f"has {ch.mini_batch_remainder}) instead of {ch.intended_updates_per_step / ch.epochs:g}",
                          fix=fix, severity="warning")


@rule("VB107", "micro-does-not-divide-mini", severity="error", stage="init", verl_ref="C11, H2, A2",
      chain_arithmetic=True)
def micro_not_dividing(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    c = actor_batch(view)
    ch = c.chain
    if ch is None or not c.micro or c.micro <= 0 or ch.per_rank_mini_batch == 0:
        return
    dynamic = view.actor_dynamic
    if dynamic is None:
        return
    m, mu = ch.per_rank_mini_batch, c.micro
    if m % mu == 0:
        return
    fix = micro_fix(m, mu, c.micro_key, c.micro_scale)
    which = ("ppo_micro_batch_size_per_gpu" if c.micro_scale == 1 else
             f"the micro batch ppo_micro_batch_size / DP = {mu * c.micro_scale} / {c.micro_scale} =")
    base = f"{c.per_rank_equation()}, not divisible by {which} {mu}"
    if dynamic:
        # Token-based micro-batching: μ is unused for the update; only say so when μ > m.
        return
    if view.backend == "megatron" and not view.new_engine:
        if mu > m:
            detail = f": the micro batch {mu} is larger than the mini batch, so it does nothing"
        else:
            detail = (f": {ch.grad_accum_steps} micro-batches per update, the last one with "
                      f"{ch.micro_remainder} responses (Megatron does not check)")
        yield ctx_finding(micro_not_dividing, view, (c.micro_key, MINI), base + detail, key=c.micro_key, fix=fix,
                          severity="warning")
    else:
        yield ctx_finding(micro_not_dividing, view, (c.micro_key, MINI), base, key=c.micro_key, fix=fix)


def _micro_check_fails(view: ConfigReader, c: ActorBatch) -> bool:
    """Whether VB107 reports an error (not its Megatron warning) on this call's per-rank mini batch."""
    ch = c.chain
    if ch is None or not c.micro or c.micro <= 0 or ch.per_rank_mini_batch == 0:
        return False
    if view.actor_dynamic is not False or ch.per_rank_mini_batch % c.micro == 0:
        return False
    return not (view.backend == "megatron" and not view.new_engine)


# --- A3/A4/A2b --------------------------------------------------------------------------------

@rule("VB108", "both-micro-keys-set", severity="error", stage="load", verl_ref="A3")
def both_micro(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if not _static(view, ungated_through="0.4.1"):
        return
    if view.is_set(MICRO_GLOBAL) and view.is_set(MICRO):
        old = view.raw(MICRO_GLOBAL)
        yield ctx_finding(both_micro, view, (MICRO_GLOBAL,),
                          f"ppo_micro_batch_size={old} and ppo_micro_batch_size_per_gpu={view.raw(MICRO)} are both "
                          f"set; keep only the per-GPU key",
                          fix=Fix("remove the deprecated global ppo_micro_batch_size",
                                  (KeyEdit(MICRO_GLOBAL, old, None),)))


@rule("VB109", "missing-micro-batch", severity="error", stage="load", verl_ref="A4, A2b, G6, D5",
      reads_defaults=True)
def missing_micro(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    dynamic = view.actor_dynamic
    if dynamic is None:
        return
    if not view.known(MICRO) or not view.known(MICRO_GLOBAL) or view.is_set(MICRO):
        return
    old_megatron = view.backend == "megatron" and VersionRange(None, "0.5.0").contains(view.version)
    if dynamic and not old_megatron:
        return
    if dynamic:
        yield ctx_finding(missing_micro, view, (ACTOR + "use_dynamic_bsz",),
                          f"verl {view.version} computes DP·ppo_micro_batch_size_per_gpu for Megatron even with "
                          f"use_dynamic_bsz=True, and ppo_micro_batch_size_per_gpu is null (TypeError at load)",
                          key=MICRO)
        return
    if view.is_null(MICRO_GLOBAL):
        yield ctx_finding(missing_micro, view, (MINI,),
                          "use_dynamic_bsz=False but neither ppo_micro_batch_size_per_gpu nor ppo_micro_batch_size "
                          "is set", key=MICRO)
        return
    if view.backend != "megatron" and not view.new_engine:
        return  # FSDP's legacy worker derives the per-GPU micro batch from the global one
    old = view.int(MICRO_GLOBAL)
    dp = view.dp()
    fix = None
    if old and dp:
        per_gpu = max(1, old // dp)
        fix = Fix(f"replace ppo_micro_batch_size {old} by ppo_micro_batch_size_per_gpu {old}//DP {dp} = {per_gpu}",
                  (KeyEdit(MICRO_GLOBAL, old, None), KeyEdit(MICRO, None, per_gpu)))
    yield ctx_finding(missing_micro, view, (MICRO_GLOBAL,),
                      f"only the deprecated ppo_micro_batch_size={view.raw(MICRO_GLOBAL)} is set; Megatron's check "
                      f"computes DP·ppo_micro_batch_size_per_gpu and fails on null", fix=fix)


@rule("VB110", "mini-not-divisible-by-global-micro", severity="error", stage="load", verl_ref="A7")
def mini_vs_global_micro(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if not _static(view, ungated_from=_MICRO_UNGATED[0], ungated_through=_MICRO_UNGATED[1]):
        return
    mini, micro = view.int(MINI), view.int(MICRO_GLOBAL)
    if not mini or not micro or micro <= 0 or mini % micro == 0:
        return
    yield ctx_finding(mini_vs_global_micro, view, (MICRO_GLOBAL, MINI),
                      f"ppo_mini_batch_size {mini} is not divisible by ppo_micro_batch_size {micro} "
                      f"({mini} % {micro} = {mini % micro})", key=MICRO_GLOBAL)


@rule("VB111", "global-micro-below-gpus", severity="error", stage="load", verl_ref="A8")
def global_micro_small(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if not _static(view, ungated_from=_MICRO_UNGATED[0], ungated_through=_MICRO_UNGATED[1]):
        return
    micro, gpus = view.int(MICRO_GLOBAL), view.gpus
    sp = (view.ulysses() or 1) if view.backend != "megatron" else 1
    if not micro or gpus is None or micro * sp >= gpus:
        return
    yield ctx_finding(global_micro_small, view, (MICRO_GLOBAL,),
                      f"ppo_micro_batch_size·SP = {micro}·{sp} = {micro * sp} < {gpus} GPUs")


# --- D1 / G8 / G7 -----------------------------------------------------------------------------

def _rollout_mode(view: ConfigReader) -> str | None:
    mode = view.raw(ROLLOUT + "mode")
    if mode is None and view.known(ROLLOUT + "mode"):
        return "sync" if VersionRange(None, "0.4.1").contains(view.version) else None
    return mode if isinstance(mode, str) else None


@rule("VB112", "agent-loop-chunks", severity="error", stage="runtime", versions=VersionRange("0.5.0", None),
      verl_ref="D1",
      chain_arithmetic=True)
def agent_chunks(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if _rollout_mode(view) != "async" or view.auto_padding:
        return
    if ctx.semantics is not None and ctx.semantics.v1_trainer(view.bool("trainer.use_v1")):
        return  # the V1 trainer's agent loop chunks a TensorDict: no divisibility assert
    pn = view.prompts_and_n()
    workers = view.int(ROLLOUT + "agent.num_workers")
    if pn is None or not workers or workers <= 0:
        return
    responses = pn[0] * pn[1]
    if responses % workers == 0:
        return
    key = ROLLOUT + "agent.num_workers"
    yield ctx_finding(agent_chunks, view, (key, P_KEY, N_KEY),
                      f"responses per step = train_batch_size·n = {pn[0]}·{pn[1]} = {responses}, not divisible by "
                      f"rollout.agent.num_workers {workers}", key=key,
                      fix=divisor_fix(key, workers, responses, f"splits {responses} responses evenly"))


@rule("VB113", "sync-rollout-dispatch", severity="error", stage="runtime", versions=VersionRange(None, "0.6.1"),
      verl_ref="G8, D1, §1.12",
      chain_arithmetic=True)
def sync_dispatch(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if _rollout_mode(view) != "sync":
        return
    pn, gpus = view.prompts_and_n(), view.gpus
    if pn is None or gpus is None:
        return
    version = view.version
    if VersionRange(None, "0.4.1").contains(version):
        size, ranks, what = pn[0], gpus, f"train_batch_size {pn[0]} (prompts, not yet repeated)"
        how = f"{gpus} GPUs"
    elif VersionRange(None, "0.5.0").contains(version):
        size, ranks = pn[0] * pn[1], gpus
        what, how = f"train_batch_size·n = {pn[0]}·{pn[1]} = {size}", f"{gpus} GPUs"
    else:
        tp, dp_r, pp_r = (view.int(ROLLOUT + k) for k in ("tensor_model_parallel_size", "data_parallel_size",
                                                          "pipeline_model_parallel_size"))
        replica = (tp or 1) * (dp_r or 1) * (pp_r or 1)
        if tp is None or gpus % replica:
            return
        size, ranks = pn[0] * pn[1], gpus // replica
        what, how = f"train_batch_size·n = {pn[0]}·{pn[1]} = {size}", f"{ranks} rollout replicas (W/R = {gpus}/{replica})"
    if size % ranks:
        yield ctx_finding(sync_dispatch, view, (P_KEY, N_KEY),
                          f"sync rollout on {version}: {what} is not divisible by {how}")


@rule("VB114", "balance-batch-world", severity="error", stage="runtime", versions=VersionRange(None, "0.6.1"),
      verl_ref="G7, D2",
      chain_arithmetic=True)
def balance_world(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.bool("trainer.balance_batch") is not True:
        return
    # Balanced is the batch the actor trains (DAPO: after the group filter), not the generated one.
    pn, gpus = trained_prompts_and_n(view), view.gpus
    if pn is None or gpus is None:
        return
    responses = pn[0] * pn[1]
    if responses % gpus == 0:
        return
    implied = "VB101" if _implied_by_minimal_batch(view, actor_batch(view), responses, gpus) else None
    yield ctx_finding(balance_world, view, ("trainer.balance_batch", P_KEY, N_KEY),
                      f"balance_batch on {view.version}: train_batch_size·n = {pn[0]}·{pn[1]} = {responses} is not "
                      f"divisible by the {gpus} GPUs", key="trainer.balance_batch",
                      fix=Fix("disable trainer.balance_batch", (KeyEdit("trainer.balance_batch", True, False),),
                              "unsafe"))._replace(implied_by=implied)


@rule("VB115", "global-micro-without-logprob-micro", severity="error", stage="init", verl_ref="C2",
      backends=("megatron",))
def global_micro_logprob(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.new_engine or not view.is_set(MICRO_GLOBAL):
        return
    if view.is_null(ROLLOUT + "log_prob_micro_batch_size"):
        yield ctx_finding(global_micro_logprob, view, (MICRO_GLOBAL,),
                          f"actor ppo_micro_batch_size={view.raw(MICRO_GLOBAL)} is set, so the worker computes "
                          f"rollout.log_prob_micro_batch_size // DP, but rollout.log_prob_micro_batch_size is null")


@rule("VB116", "engine-mini-not-divisible", severity="error", stage="init", verl_ref="C15",
      versions=VersionRange("0.7.0", None),
      chain_arithmetic=True)
def engine_mini(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if not view.new_engine:
        return
    c = actor_batch(view)
    if c.chain is None or not c.chain.floored or c.pn is None or c.mini is None:
        return  # (a chain is only derived from a known P·n and mini batch)
    fix = actor_mini_fix(view, c)
    yield ctx_finding(engine_mini, view, (MINI, N_KEY),
                      f"ppo_mini_batch_size·n = {c.mini}·{c.pn[1]} = {c.mini * c.pn[1]}, not divisible by "
                      f"{view.dp_equation()}", fix=fix)


CHAIN_INPUTS = ("trainer.n_gpus_per_node", "trainer.nnodes", P_KEY, N_KEY, MINI, MICRO,
                 ACTOR + "megatron.tensor_model_parallel_size", ACTOR + "megatron.pipeline_model_parallel_size",
                 ACTOR + "megatron.context_parallel_size")


@rule("VB117", "batch-chain-undecided", severity="info", stage="static", verl_ref="§1",
      chain_arithmetic=True)
def chain_undecided(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    unknown = [(key, ctx.config.unknown[key]) for key in CHAIN_INPUTS if key in ctx.config.unknown]
    if not unknown:
        return
    shown = "; ".join(f"{key.rsplit('.', 1)[-1]}: {why}" for key, why in unknown[:3])
    more = f" (+{len(unknown) - 3} more)" if len(unknown) > 3 else ""
    yield chain_undecided.finding(f"cannot decide the batch chain: {shown}{more}", line=view.line(unknown[0][0]),
                                  key=unknown[0][0])


@rule("VB118", "fork-changes-batch-chain", severity="info", stage="static", verl_ref="§1")
def fork_chain(ctx: Context) -> Iterator[Finding]:
    settings = ctx.fork_settings
    if not settings:
        return
    shown = "; ".join(f"{s.key.rsplit('.', 1)[-1] if s.entry.key.startswith('.') else s.key}="
                      f"{'<unknown>' if s.value is None else s.value} ({s.entry.projects}: {s.entry.effect})"
                      for s in settings)
    line = next((s.line for s in settings if s.line is not None), ConfigReader.of(ctx).line())
    yield fork_chain.finding(f"this fork changes the batch chain: {shown}; verl's batch-chain rules were not run",
                             line=line, key=settings[0].key)
