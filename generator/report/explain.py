"""`gen explain`: the numbers verl derives from one trainer call, with the equations in the
user's own numbers (docs/batch-chain.md). Pure: Config in, lines out."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from generator.layout import derive
from generator.config.derived import ActorBatch, actor_batch, reads_global_micro
from generator.config.types import Config
from generator.config.reader import ConfigReader, is_trainer
from generator.config.forks import fork_batch_settings
from generator.verl.constants import ACTOR, CRITIC, REF, ROLLOUT, SFT_ENTRIES


def _why_unknown(view: ConfigReader, *keys: str) -> str:
    for key in keys:
        if key in view.config.unknown:
            return f"unknown ({key.rsplit('.', 1)[-1]}: {view.config.unknown[key]})"
    return "unknown"


def _is_sft(config: Config) -> bool:
    entry = config.entry or ""
    return entry.rsplit(".", 1)[-1] in SFT_ENTRIES or "sft" in (config.schema or "")


def explain_config(config: Config) -> list[tuple[str, str]]:
    """(label, equation) rows, in the order of the chain. An SFT call gets the SFT trainer's own
    arithmetic, any other entry that is not verl's PPO trainer none: never PPO's chain."""
    if _is_sft(config):
        if (config.entry or "").endswith("fsdp_sft_trainer"):
            return sft_rows(config)
        return [("trainer", f"{config.entry}: supervised fine-tuning on verl's engine workers; its DP comes "
                            "from the engine's layout, which verl-gen does not model, so no arithmetic is shown")]
    if not is_trainer(_Call(config)):
        return [("batch chain", f"{config.entry or 'this entry'} is not verl's PPO trainer; verl-gen does not "
                                f"know its batch arithmetic, so none is shown")]
    view = ConfigReader(config)
    rows: list[tuple[str, str]] = []
    add = rows.append
    per_node, nodes, gpus = view.int("trainer.n_gpus_per_node"), view.int("trainer.nnodes"), view.gpus
    add(("GPUs W", f"n_gpus_per_node·nnodes = {per_node}·{nodes} = {gpus}" if gpus else
         _why_unknown(view, "trainer.n_gpus_per_node", "trainer.nnodes")))
    dp = view.dp()
    rows.extend(_parallel_rows(view, gpus, dp))
    forked = fork_batch_settings(config)
    if forked:
        add(("batch chain", "changed by this fork: " + "; ".join(
            f"{f.key}={'<unknown>' if f.value is None else f.value} ({f.entry.effect})" for f in forked)
             + "; verl's chain does not describe the run (VB118)"))
        return rows + _rollout_rows(view, gpus)
    batch = actor_batch(view)
    if batch.prompts_and_n is None:
        add(("responses/step G", _why_unknown(view, "data.train_batch_size", ROLLOUT + "n")))
        return rows + _rollout_rows(view, gpus)
    prompts, n = batch.prompts_and_n
    responses = prompts * n
    add(("responses/step G", f"train_batch_size·n = {prompts}·{n} = {responses}"))
    rows.extend(_chain_rows(view, batch, n, responses, dp))
    rows.extend(_token_rows(view))
    return rows + _rollout_rows(view, gpus, responses)


def _parallel_rows(view: ConfigReader, gpus: int | None, dp: int | None) -> list[tuple[str, str]]:
    """DP (and EDP, VPP) from the layout: Megatron's W / (TP·PP·CP), FSDP's W / ulysses SP."""
    rows: list[tuple[str, str]] = []
    add = rows.append
    layout = view.actor_layout() if view.backend == "megatron" else None
    if view.backend == "megatron":
        if layout is not None:
            assert gpus is not None  # a layout is read only with the GPU count
            add(("DP", derive.dp_equation(gpus, layout.tp, layout.pp, layout.cp, named=False)))
            if layout.ep > 1 or layout.etp is not None:
                etp = layout.tp if layout.etp is None else layout.etp
                edp = derive.expert_data_parallel_size(gpus, layout.tp, layout.pp, layout.ep, layout.etp)
                add(("EDP", f"W / (ETP·EP·PP) = {gpus} / ({etp}·{layout.ep}·{layout.pp}) = "
                            + (str(edp) if edp else "not divisible")))
            if layout.vpp:
                add(("VPP", f"{layout.vpp} virtual stages per pipeline rank"))
        else:
            add(("DP", _why_unknown(view, *(f"{ACTOR}megatron.{k}" for k in (
                "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")),
                "trainer.n_gpus_per_node", "trainer.nnodes")))
    else:
        sp = view.ulysses() or 1
        add(("DP", derive.sp_dp_equation(gpus, sp, dp, named=False) if gpus is not None and dp
                   else _why_unknown(view, "trainer.n_gpus_per_node")))
    return rows


def _chain_rows(view: ConfigReader, batch: ActorBatch, n: int, responses: int,
                dp: int | None) -> list[tuple[str, str]]:
    """The actor's chain below the step: per-rank mini batch, local batch, updates, micro batches."""
    rows: list[tuple[str, str]] = []
    add = rows.append
    mini, micro, epochs, chain = batch.mini, batch.micro, batch.epochs, batch.chain
    if chain is not None and mini is not None:
        assert dp is not None  # the chain is derived from DP
        exact = mini * n / dp
        add(("per-rank mini m", f"ppo_mini_batch_size·n / DP = {mini}·{n} / {dp} = "
                                + (f"{exact:.2f} → floored to {chain.per_rank_mini_batch}" if chain.floored
                                   else str(chain.per_rank_mini_batch))))
        add(("local batch B", f"G / DP = {responses} / {dp} = "
                              + (str(chain.local_batch) if chain.local_batch is not None else
                                 f"{responses / dp:g} (not divisible: dispatch fails)")))
        if chain.mini_batches_per_epoch is not None:
            how = "ceil(B / m)" if chain.path == "fsdp" and chain.mini_batch_remainder else "B / m"
            add(("mini-batches/epoch K", f"{how} = {chain.local_batch} / {chain.per_rank_mini_batch} = "
                                         f"{chain.mini_batches_per_epoch}"))
            add(("optimizer updates/step U", f"K·E = {chain.mini_batches_per_epoch}·{epochs} = "
                                             f"{chain.optimizer_updates_per_step}"))
        elif chain.local_batch is not None and chain.per_rank_mini_batch:
            add(("mini-batches/epoch K", f"B / m = {chain.local_batch} / {chain.per_rank_mini_batch}: "
                                         f"remainder {chain.mini_batch_remainder} (Megatron asserts)"))
        add(("responses per update", f"m·DP = {chain.per_rank_mini_batch}·{dp} = {chain.effective_responses_per_update}"))
        if batch.dynamic:
            add(("grad accumulation A", "dynamic: ceil(local tokens / token cap), at most m"))
        elif chain.grad_accum_steps is not None:
            if batch.micro_scale != 1:
                assert micro is not None  # grad accumulation is derived from the micro batch
                add(("micro batch μ", f"ppo_micro_batch_size / DP = {micro * batch.micro_scale} / {batch.micro_scale} "
                                      f"= {micro} (the deprecated global key, divided by the worker)"))
            tail = f" (last micro-batch {chain.micro_remainder})" if chain.micro_remainder else ""
            add(("grad accumulation A", f"ceil(m / μ) = ceil({chain.per_rank_mini_batch} / {micro}) = "
                                        f"{chain.grad_accum_steps}{tail}"))
        else:
            add(("grad accumulation A", "unknown (ppo_micro_batch_size_per_gpu not set)"))
    else:
        add(("per-rank mini m", _why_unknown(view, ACTOR + "ppo_mini_batch_size")))
    return rows


@dataclass(frozen=True, slots=True)
class _Call:
    """A trainer call known only by its config (what is_trainer needs)."""

    config: Config
    invocation: None = None
    script: None = None


def _explicit_int(view: ConfigReader, key: str) -> int | None:
    """A value the script sets itself; None for a default (the PPO schema's defaults stand in for
    an SFT config verl-gen does not package, so they say nothing about the SFT run)."""
    return view.int(key) if view.explicit(key) else None


def sft_rows(config: Config) -> list[tuple[str, str]]:
    """verl's SFT trainer (fsdp_sft_trainer, v0.7.0): the global batch is split over DP = W / SP
    and must divide evenly; each rank's share must split into whole micro-batches."""
    view = ConfigReader(config)
    rows: list[tuple[str, str]] = [("trainer", f"{config.entry}: supervised fine-tuning, no rollout; "
                                               "PPO's batch chain does not apply")]
    per_node, nodes = _explicit_int(view, "trainer.n_gpus_per_node"), _explicit_int(view, "trainer.nnodes")
    gpus = per_node * (nodes or 1) if per_node else None
    rows.append(("GPUs W", f"n_gpus_per_node·nnodes = {per_node}·{nodes or 1} = {gpus}" if gpus else
                 "not set in the call (torchrun's --nproc_per_node·--nnodes)"))
    sp = _explicit_int(view, "ulysses_sequence_parallel_size") or 1
    dp = derive.sp_data_parallel_size(gpus, sp) if gpus else None
    if gpus:
        rows.append(("DP", derive.sp_dp_equation(gpus, sp, dp, named=False)))
    batch, micro = _explicit_int(view, "data.train_batch_size"), _explicit_int(view, "data.micro_batch_size_per_gpu")
    if batch is None:
        rows.append(("per-rank batch", "data.train_batch_size not set in the call (the SFT config's default)"))
        return rows
    if dp is None:
        rows.append(("per-rank batch", f"data.train_batch_size {batch} / DP (DP unknown)"))
        return rows
    if batch % dp:
        rows.append(("per-rank batch", f"train_batch_size / DP = {batch} / {dp}: not divisible (the trainer asserts)"))
        return rows
    local = batch // dp
    rows.append(("per-rank batch", f"train_batch_size / DP = {batch} / {dp} = {local}"))
    if micro is None:
        rows.append(("micro-batches/step", "data.micro_batch_size_per_gpu not set in the call (the SFT config's default)"))
    elif micro <= 0 or local % micro:
        rows.append(("micro-batches/step", f"per-rank batch / micro = {local} / {micro}: not divisible (the trainer asserts)"))
    else:
        rows.append(("micro-batches/step", f"per-rank batch / micro_batch_size_per_gpu = {local} / {micro} = "
                                           f"{local // micro} (gradient accumulation)"))
    return rows


def _token_rows(view: ConfigReader) -> list[tuple[str, str]]:
    rows = []
    seq = view.sequence_length()
    caps = [("actor token cap", ACTOR + "ppo_max_token_len_per_gpu", ACTOR + "use_dynamic_bsz", ACTOR),
            ("log-prob token cap", ROLLOUT + "log_prob_max_token_len_per_gpu", ROLLOUT + "log_prob_use_dynamic_bsz",
             ACTOR)]
    if view.ref_used:
        caps.append(("ref token cap", REF + "log_prob_max_token_len_per_gpu", REF + "log_prob_use_dynamic_bsz", ACTOR))
    if view.critic_used:
        caps.append(("critic token cap", CRITIC + "ppo_max_token_len_per_gpu", CRITIC + "use_dynamic_bsz", CRITIC))
    unit = "CP" if view.backend == "megatron" else "SP"
    for label, key, flag, prefix in caps:
        if view.bool(flag) is not True:
            continue
        cap, split = view.int(key), view.cp_or_sp(prefix)
        if cap is None or split is None:
            rows.append((label, _why_unknown(view, key)))
            continue
        verdict = "" if seq is None else (f" ≥ prompt+response {seq}" if cap * split >= seq
                                          else f" < prompt+response {seq} (fails)")
        rows.append((label + f" × {unit}", f"{cap}·{split} = {cap * split}{verdict}"))
    return rows


def _rollout_rows(view: ConfigReader, gpus: int | None, responses: int | None = None) -> list[tuple[str, str]]:
    rows = []
    tp = view.int(ROLLOUT + "tensor_model_parallel_size")
    dp_r = view.int(ROLLOUT + "data_parallel_size") or 1
    pp_r = view.int(ROLLOUT + "pipeline_model_parallel_size") or 1
    if tp and gpus:
        replica = derive.rollout_replica_size(tp, dp_r, pp_r)
        count = derive.rollout_replicas(gpus, replica)
        rows.append(("rollout replicas", f"W / (TP_r·DP_r·PP_r) = {gpus} / ({tp}·{dp_r}·{pp_r}) = "
                                         + (str(count) if count else "not divisible")))
    workers = view.int(ROLLOUT + "agent.num_workers")
    if responses and workers:
        chunk = derive.agent_loop_chunk(responses, workers)
        rows.append(("agent-loop chunk", f"G / num_workers = {responses} / {workers} = "
                                         + (str(chunk) if chunk else f"{responses / workers:g} (not equal chunks)")))
    lp_micro = view.int(ROLLOUT + "log_prob_micro_batch_size_per_gpu")
    dp = view.dp()
    lp_global = view.int(ROLLOUT + "log_prob_micro_batch_size")
    derived = ""
    if view.is_null(ROLLOUT + "log_prob_micro_batch_size_per_gpu") and lp_global and dp and reads_global_micro(view):
        # The FSDP worker divides the deprecated global key by DP, as for the actor's.
        lp_micro = lp_global // dp
        derived = f" (μ_lp = log_prob_micro_batch_size / DP = {lp_global} / {dp})"
    if responses and dp and lp_micro and responses % dp == 0 and view.bool(ROLLOUT + "log_prob_use_dynamic_bsz") is False:
        local = responses // dp
        rows.append(("log-prob passes/rank", f"ceil(B / μ_lp) = ceil({local} / {lp_micro}) = "
                                             f"{math.ceil(local / lp_micro)}{derived}"))
    return rows


def render_explain(header: str, rows: Sequence[tuple[str, object]]) -> str:
    width = max((len(label) for label, _ in rows), default=0)
    lines = [header] + [f"  {label.ljust(width)}  {value}" for label, value in rows]
    return "\n".join(lines) + "\n"
