"""The derived numbers a generated script shows in its header comments.

Every number comes from `generator.layout.derive` (the same arithmetic the rules use), applied to
the recipe's defaults; this module only decides which numbers a reader wants to see and
writes each one as its formula with the numbers filled in.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.layout import derive
from generator.base.errors import InputError
from generator.render.spec import AGENT_LOOP_WORKERS, ScriptSettings


@dataclass(frozen=True, slots=True)
class HeaderNumbers:
    dp: int
    chain: derive.BatchChain
    lines: tuple[str, ...]  # comment lines (without "# ")
    summary: str  # one paragraph for stderr


def _fmt_gib(value: float) -> str:
    return f"{value:.1f}"


def derive_numbers(recipe: ScriptSettings) -> HeaderNumbers:
    spec = recipe.spec
    c = spec.layout
    dp = derive.data_parallel_size(spec.gpus, c.tp, c.pp, c.cp)
    if dp is None:
        raise InputError(f"{spec.gpus} GPUs are not divisible by TP*PP*CP = {c.tp}*{c.pp}*{c.cp}")
    chain = derive.batch_chain(prompts=spec.train_batch_size, n=spec.n, mini=spec.ppo_mini_batch_size,
                               dp=dp, micro=c.micro_batch_per_gpu, epochs=spec.ppo_epochs,
                               dynamic_bsz=c.use_dynamic_bsz)
    lines: list[str] = []
    mp = f"{c.tp}*{c.pp}*{c.cp}"
    lines.append(f"DP = GPUs / (TP*PP*CP) = {spec.gpus} / ({mp}) = {dp}")
    if c.ep != 1 or c.etp is not None:
        etp = c.etp if c.etp is not None else c.tp
        edp = derive.expert_data_parallel_size(spec.gpus, c.tp, c.pp, c.ep, c.etp)
        lines.append(f"expert DP = GPUs / (ETP*EP*PP) = {spec.gpus} / ({etp}*{c.ep}*{c.pp}) = {edp}")
    lines.append(f"responses per step G = train_batch_size * n = {spec.train_batch_size} * {spec.n} "
                 f"= {chain.responses_per_step}")
    lines.append(f"per-rank mini batch = ppo_mini_batch_size * n / DP = {spec.ppo_mini_batch_size} * {spec.n} "
                 f"/ {dp} = {chain.per_rank_mini_batch} responses")
    if chain.optimizer_updates_per_step is not None:
        lines.append(f"optimizer updates per step = train_batch_size / ppo_mini_batch_size * ppo_epochs = "
                     f"{spec.train_batch_size} / {spec.ppo_mini_batch_size} * {spec.ppo_epochs} "
                     f"= {chain.optimizer_updates_per_step}")
    if chain.grad_accum_steps is not None:
        lines.append(f"grad accumulation = per-rank mini / micro = {chain.per_rank_mini_batch} / "
                     f"{c.micro_batch_per_gpu} = {chain.grad_accum_steps} micro-batches per update")
    if c.use_dynamic_bsz:
        seq = derive.sequence_length(spec.prompt_len, spec.response_len)
        lp = c.log_prob_token_budget or c.token_budget
        lines.append(f"dynamic batch: token budget {c.token_budget} (update), {lp} (log-prob, ref); "
                     f"each * CP {c.cp} >= prompt+response = {seq}")
    replicas = derive.rollout_replicas(spec.gpus, c.rollout_tp)
    lines.append(f"rollout: {spec.gpus} GPUs / rollout TP {c.rollout_tp} = {replicas} {spec.rollout} replicas, "
                 f"gpu_memory_utilization {c.gpu_memory_utilization}")
    lines.append(f"agent loop: G / num_workers = {chain.responses_per_step} / {AGENT_LOOP_WORKERS} = "
                 f"{chain.responses_per_step // AGENT_LOOP_WORKERS} responses per worker")
    offload = [name for name, on in (("param+grad", c.offload.param),
                                     ("optimizer", c.offload.optimizer), ("cpu-optimizer", c.offload.cpu_optimizer))
               if on]
    lines.append("offload: " + (", ".join(offload) if offload else "none")
                 + ("; recompute: full/uniform/1" if c.recompute else ""))
    memory = ""
    if c.memory:
        memory = ", ".join(f"{p.phase} {_fmt_gib(p.gib)}" for p in c.memory)
        limit = c.limit_gib or spec.gpu_memory_gib
        lines.append(f"predicted memory per GPU (GiB): {memory}; limit {_fmt_gib(limit)} "
                     f"({spec.gpu_name}, {_fmt_gib(spec.gpu_memory_gib)} GiB)")
    for reason in c.why:
        lines.append(f"why: {reason}")
    fit = "fits" if c.fits else "DOES NOT FIT"
    summary = (f"{spec.model.name} {spec.algo} on {spec.gpus} x {spec.gpu_name}: TP{c.tp} PP{c.pp} CP{c.cp}"
               + (f" EP{c.ep}" if c.ep != 1 else "") + f" -> DP {dp}; rollout TP {c.rollout_tp}; "
               f"batch {spec.train_batch_size} prompts x n {spec.n} = {chain.responses_per_step}, mini "
               f"{spec.ppo_mini_batch_size} -> {chain.per_rank_mini_batch} per rank"
               + (f", {chain.optimizer_updates_per_step} updates/step" if chain.optimizer_updates_per_step else "")
               + (f"; memory {memory} GiB ({fit})" if memory else "")
               + (f"; {spec.nodes} nodes x {spec.gpus_per_node}, launcher {spec.launcher}" if spec.nodes > 1 else "")
               + (f" (--gpus {spec.gpus} is more than one {spec.gpu_name} node holds; --nodes chooses another split)"
                  if spec.nodes_note else ""))
    return HeaderNumbers(dp, chain, tuple(lines), summary)
