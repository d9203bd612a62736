"""Per-GPU memory of one verl step with the Megatron actor, phase by phase (pure arithmetic).

Phases (verl's hybrid engine, memory-model.md §2.6): `rollout` (vLLM/SGLang generating, with
whatever Megatron state is not offloaded), `log_prob` (old log-probs with entropy), `ref_log_prob`
and `update` (forward/backward over every micro-batch, then the optimizer step). Each phase is
computed for every pipeline stage and the worst stage is reported; every term is named.

Formulas (memory-model.md §2): bf16 weights 2 B/param, fp32 main grads 4 B/param, fp32
master + Adam m, v 12 B/param sharded by the distributed optimizer over DP·CP (experts over the
expert-DP group); activations per token and layer from the Megatron/TE tensors kept for
backward (flash attention, SwiGLU, GQA, qk-norm, MLA), divided by TP (sequence parallel) and CP;
1F1B keeps `min(PP − stage, M)` micro-batches in flight, VPP multiplies by 1 + (PP−1)/(PP·VPP);
full recompute keeps only each layer's input plus one layer's working set; logits cost
8·T·V/TP bytes in the update, 12·T·V/TP in the old-log-prob pass (entropy), 6·T·V/TP for the
reference — nothing with fused kernels.

What each offload flag frees (verl v0.7.0, memory-model.md §0 and docs/rules/cross-checks.md#offload-keys):
`param` frees the bf16 weights *and* the grad buffer outside the update; `grad` frees nothing
by itself; `optimizer` frees the Adam state outside the update; none of them lowers the update
peak. Only Megatron's CPU optimizer (fraction f) moves f of the optimizer state off the GPU
during the update too. The reference model's weights follow the actor's param offload; a PPO
critic (same layout as the actor) is assumed to mirror the actor's param/optimizer offload.

Calibration against the layouts verl ships (memory-model.md §2.9 and §3; the rows live in
data/verl_layouts.yaml, the checks in tests/test_plan_verl.py, the table in bench/plan.py):
- MOE_ACTIVATION_FACTOR = 0.5: the routed-expert activation tensors are counted at half.
  At 1.0, Qwen3-30B-A3B on 8×H20 (dynamic 10240 tokens, no recompute) predicts ~67 GiB of
  activations and ~113 GiB in the update, yet verl's dpsk.md lists it running at MFU 0.40.
  The factor stands for fused permute/unpermute kernels and packed micro-batches that are
  rarely full; with it that row predicts 91 of 92.7 GiB.
- OVERHEAD_GIB = 4 per GPU, + 2 with expert parallelism (CUDA context, NCCL/DeepEP buffers,
  fragmentation). DeepSeek-V3 on 96 H20 (gmu 0.6) then peaks in the rollout phase at
  57.4 + 6 = 63.4 GiB, against the 66 GB (61.5 GiB) dpsk.md measured.
- FIT_FRACTION = 0.97: the usable share of the GPU total. Qwen2-7B GRPO on 8×80 GB (TP2 PP2,
  no offload, gmu 0.6: 76.6 GiB) is the tightest shipped dense row and fits.
- DYNAMIC_FILL = 1.0: a dynamic micro-batch is assumed full (conservative).
Rows that still exceed the GPU as shipped, and why, are listed in tests/test_plan_verl.py
(SHIPPED_OVER_LIMIT): Qwen3-235B at 64/128 GPUs with a lowered CPU-optimizer fraction
(activations), a DeepSeek-V3 DAPO recipe without recompute, and three PPO examples whose
colocated critic verl does not offload (on an assumed 80 GB GPU). Their layouts fit once the
planner picks the knobs. Nothing here was measured on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from generator.model.facts import ModelFacts
from generator.plan.activations import (MOE_ACTIVATION_FACTOR, dense_layer_activation_bytes, in_flight_micro_batches,
                                        micro_batches_per_step, moe_layer_activation_bytes, tokens_per_micro)
from generator.plan.candidate import Candidate, MemoryTerm, PhaseMemory
from generator.plan.engine import engine_fixed_bytes
from generator.plan.stages import stage_layer_counts, stage_params
from generator.plan.workload import GIB, Workload


OVERHEAD_GIB = 4.0
EXPERT_PARALLEL_OVERHEAD_GIB = 2.0
FIT_FRACTION = 0.97

PHASES = ("update", "log_prob", "ref_log_prob", "rollout")


def _gib(value: float) -> float:
    return value / GIB


def _term(name: str, nbytes: float, note: str | Callable[[], str] = "", detail: bool = True) -> MemoryTerm:
    """A named term; notes are formatted (and values rounded) only when they will be shown."""
    if not detail:
        return MemoryTerm(name, nbytes / GIB)
    return MemoryTerm(name, round(nbytes / GIB, 2), note() if callable(note) else note)


def overhead_gib(cand: Candidate) -> float:
    return OVERHEAD_GIB + (EXPERT_PARALLEL_OVERHEAD_GIB if cand.ep > 1 else 0.0)


def _stage_phases(model: ModelFacts, cand: Candidate, work: Workload, stage: int,
                  counts: list[int], detail: bool = True) -> dict[str, PhaseMemory]:
    def _term_here(name: str, nbytes: float, note: str | Callable[[], str] = "") -> MemoryTerm:
        return _term(name, nbytes, note, detail)

    t, pp, cp = cand.tp, cand.pp, cand.cp
    off = cand.offload
    params = stage_params(model, cand, stage, counts)
    dp = max(1, work.gpus // (t * pp * cp))
    etp = t if cand.etp is None else cand.etp
    edp = max(1, work.gpus // (etp * cand.ep * pp))
    cpu_fraction = cand.offload.cpu_optimizer_fraction if cand.offload.cpu_optimizer else 0.0
    weights = 2 * params.total
    grads = 4 * params.total
    # The distributed optimizer shards dense state over DP·CP and expert state over EDP.
    optimizer_full = 12 * (params.dense / (dp * cp) + params.experts / edp)
    optimizer_gpu = optimizer_full * (1 - cpu_fraction)
    ref_weights = weights if work.has_ref else 0.0
    critic_state = (weights + grads + optimizer_gpu) if work.has_critic else 0.0
    overhead = overhead_gib(cand) * GIB
    last = stage == pp - 1
    vocab_shard = model.vocab_size / t

    # Activations of the update on this stage.
    tokens = tokens_per_micro(cand, work, log_prob=False)
    micro_batches = micro_batches_per_step(cand, work)
    in_flight = in_flight_micro_batches(cand, stage, micro_batches)
    dense_act = dense_layer_activation_bytes(model)
    moe_non_expert, moe_routed = moe_layer_activation_bytes(model) if model.is_moe else (0.0, 0.0)
    per_token_stack = (params.dense_layers * dense_act + params.moe_layers * moe_non_expert) / t
    # Routed-expert tensors: tokens are SP-split (÷TP) before dispatch, expert widths split by ETP.
    per_token_stack += params.moe_layers * moe_routed / (t * etp)
    if cand.recompute:
        kept_per_token = (params.dense_layers + params.moe_layers) * 2 * model.hidden_size / t
        one_layer = max(dense_act / t if params.dense_layers else 0.0,
                        (moe_non_expert / t + moe_routed / (t * etp)) if params.moe_layers else 0.0)
        activations = in_flight * tokens * kept_per_token + tokens * one_layer
    else:
        activations = in_flight * tokens * per_token_stack

    def act_note() -> str:
        layers = params.dense_layers + params.moe_layers
        if cand.recompute:
            return (f"full recompute: {in_flight:g} micro-batch(es) in flight × {tokens:,.0f} tokens × "
                    f"{layers} layer inputs + one layer's working set")
        return (f"{in_flight:g} micro-batch(es) in flight × {tokens:,.0f} tokens × {layers} layers"
                + (f" (expert tensors at ×{MOE_ACTIVATION_FACTOR})" if params.moe_layers else ""))
    update_logits = 0.0
    if last and not cand.use_fused_kernels:
        update_logits = (8 + (12 if work.entropy_in_update else 0)) * tokens * vocab_shard

    update_terms = [
        _term_here("weights", weights, lambda: f"bf16, {params.total / 1e9:.2f}B params on this GPU"),
        _term_here("grads", grads, "fp32 main grads (grad_reduce_in_fp32)"),
        _term_here("optimizer", optimizer_gpu,
              lambda: f"fp32 master+Adam over DP·CP={dp * cp}" + (f", experts over EDP={edp}" if params.experts else "")
              + (f"; {cpu_fraction:.0%} on CPU (Megatron CPU optimizer)" if cpu_fraction else "")),
        _term_here("activations", activations, act_note),
        _term_here("logits", update_logits, "fused kernels" if cand.use_fused_kernels else
              ("last stage, 8·T·V/TP" if last else "not on this stage")),
    ]
    if ref_weights and not off.param:
        update_terms.append(_term_here("ref-weights", ref_weights, "reference model stays on GPU (param offload off)"))
    if critic_state and not off.param:
        update_terms.append(_term_here("critic", critic_state, "critic weights+grads+optimizer (not offloaded)"))
    update_terms.append(_term_here("overhead", overhead, "CUDA context, NCCL/DeepEP buffers, fragmentation"))

    # Forward-only passes: the params, one layer's forward working set and the logits.
    lp_tokens = tokens_per_micro(cand, work, log_prob=True)
    forward_set = lp_tokens * max(dense_act, moe_non_expert + moe_routed) / t
    resident_grads = 0.0 if off.param else grads
    resident_opt = 0.0 if off.optimizer else optimizer_gpu
    resident_ref = 0.0 if (off.param or not work.has_ref) else ref_weights
    resident_critic = 0.0
    if work.has_critic:
        resident_critic = (0.0 if off.param else weights + grads) + (0.0 if off.optimizer else optimizer_gpu)

    def forward_phase(name: str, logit_bytes_per: int, note: str, model_weights: float, other: list[MemoryTerm]):
        logits = 0.0 if (cand.use_fused_kernels or not last) else logit_bytes_per * lp_tokens * vocab_shard
        terms = [
            _term_here("weights", model_weights, note),
            *other,
            _term_here("activations", forward_set, lambda: f"one layer's forward working set, {lp_tokens:,.0f} tokens"),
            _term_here("logits", logits, "fused kernels" if cand.use_fused_kernels else
                  (lambda: f"last stage, {logit_bytes_per}·T·V/TP") if last else "not on this stage"),
            _term_here("overhead", overhead),
        ]
        return PhaseMemory(name, round(_gib(sum(x.gib for x in terms) * GIB), 2), tuple(terms))

    lp_other = [
        _term_here("grads", resident_grads, "offloaded with params" if off.param else "grad buffer stays"),
        _term_here("optimizer", resident_opt, "offloaded" if off.optimizer else "stays on GPU"),
    ]
    if work.has_ref:
        lp_other.append(_term_here("ref-weights", resident_ref, "offloaded" if off.param else "stays on GPU"))
    if work.has_critic:
        lp_other.append(_term_here("critic", resident_critic))
    log_prob = forward_phase("log_prob", 12, "actor, loaded for the pass", weights, lp_other)
    phases = {"log_prob": log_prob}
    if work.has_ref:
        ref_other = [
            _term_here("actor-weights", 0.0 if off.param else weights + grads,
                  "offloaded" if off.param else "actor weights+grads stay"),
            _term_here("optimizer", resident_opt, "offloaded" if off.optimizer else "stays on GPU"),
        ]
        if work.has_critic:
            ref_other.append(_term_here("critic", resident_critic))
        phases["ref_log_prob"] = forward_phase("ref_log_prob", 6, "reference model", ref_weights, ref_other)

    # Rollout: Megatron state still resident + the engine's gmu·total claim.
    engine_budget = cand.gpu_memory_utilization * work.gpu_memory_gib * GIB
    rollout_terms = [
        _term_here("actor-weights", 0.0 if off.param else weights, "offloaded" if off.param else "stays on GPU"),
        _term_here("grads", resident_grads, "offloaded with params" if off.param else "grad buffer stays"),
        _term_here("optimizer", resident_opt, "offloaded" if off.optimizer else "stays on GPU"),
    ]
    if work.has_ref:
        rollout_terms.append(_term_here("ref-weights", resident_ref, "offloaded" if off.param else "stays on GPU"))
    if work.has_critic:
        rollout_terms.append(_term_here("critic", resident_critic))
    # The engine claims gmu·total at start-up and splits it into weights, a profiling-run peak
    # and the KV cache; when the first two exceed the claim vLLM refuses to start.
    engine_weights, engine_activations = engine_fixed_bytes(model, cand, work)
    kv_cache = engine_budget - engine_weights - engine_activations
    claim = lambda: f"of gpu_memory_utilization {cand.gpu_memory_utilization:g} × {work.gpu_memory_gib:g} GiB"  # noqa: E731
    rollout_terms.append(_term_here("rollout-weights", engine_weights,
                                    lambda: f"2·N/rollout TP {cand.rollout_tp}, {claim()}"))
    rollout_terms.append(_term_here("rollout-activations", engine_activations,
                                    lambda: f"profiling run at {max(work.max_num_batched_tokens, work.seq_len)} "
                                            "tokens"))
    rollout_terms.append(_term_here("kv-cache", max(kv_cache, 0.0),
                                    "the rest of the claim" if kv_cache > 0 else
                                    "none: weights and activations exceed the claim; vLLM will not start"))
    rollout_terms.append(_term_here("overhead", overhead))
    phases["rollout"] = PhaseMemory("rollout", round(sum(x.gib for x in rollout_terms), 2), tuple(rollout_terms))

    update_total = sum(x.gib for x in update_terms)
    phases["update"] = PhaseMemory("update", round(update_total, 2), tuple(update_terms))
    return phases


def phase_memory(model: ModelFacts, cand: Candidate, work: Workload, *, detail: bool = True
                 ) -> tuple[PhaseMemory, ...]:
    """The worst pipeline stage of each phase, in PHASES order. `detail=False` skips the notes
    and rounding (the search evaluates thousands of settings and shows a handful)."""
    counts = stage_layer_counts(model.num_layers, cand.pp, cand.first_stage_layers, cand.last_stage_layers)
    worst: dict[str, tuple[int, PhaseMemory]] = {}
    stages = sorted({0, cand.pp - 1} | {max(range(cand.pp), key=lambda s: counts[s])})
    for stage in stages:
        for name, phase in _stage_phases(model, cand, work, stage, counts, False).items():
            if name not in worst or phase.gib > worst[name][1].gib:
                worst[name] = (stage, phase)
    if not detail:
        return tuple(worst[name][1] for name in PHASES if name in worst)
    # Totals come from the unrounded terms, as in the search: the worst stage and the total shown
    # are the ones `fits` was decided on (a sum of rounded terms can differ by a rounding step).
    detailed = {stage: _stage_phases(model, cand, work, stage, counts, True) for stage, _ in worst.values()}
    return tuple(replace(detailed[worst[name][0]][name], gib=worst[name][1].gib) for name in PHASES if name in worst)


def usable_gib(gpu_memory_gib: float) -> float:
    return round(gpu_memory_gib * FIT_FRACTION, 2)
