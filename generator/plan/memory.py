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

What each offload flag frees (verl v0.7.0, memory-model.md §0 and verl-rules.md §4):
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

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from collections.abc import Callable

from generator.model.facts import ModelFacts
from generator.model.params import (dense_layer_params, is_moe_layer, kv_cache_bytes_per_token, moe_layer_params,
                                    total_params)
from generator.plan.candidate import Candidate, MemoryTerm, PhaseMemory

GIB = float(2**30)
MOE_ACTIVATION_FACTOR = 0.5
DYNAMIC_FILL = 1.0
OVERHEAD_GIB = 4.0
EXPERT_PARALLEL_OVERHEAD_GIB = 2.0
FIT_FRACTION = 0.97
VLLM_MAX_NUM_SEQS = 1024

PHASES = ("update", "log_prob", "ref_log_prob", "rollout")
ENGINE_TERMS = ("rollout-weights", "rollout-activations", "kv-cache")  # together: gmu × GPU memory


def algo_roles(algo: str) -> tuple[bool, bool]:
    """(has_ref, has_critic) as `gen recipe` configures each algorithm: verl builds the reference
    model only for a KL term (GRPO and REINFORCE++ use a KL loss, RLOO a KL reward; PPO, DAPO
    and GSPO none), and only PPO trains a critic. Unknown names keep a reference (conservative)."""
    algo = algo.lower()
    if algo in ("ppo", "gae"):
        return False, True
    if algo in ("dapo", "gspo"):
        return False, False
    return True, False


@dataclass(frozen=True, slots=True)
class Workload:
    """What the step runs, besides the layout and knobs a Candidate holds."""

    gpus: int
    gpu_memory_gib: float
    prompt_len: int
    response_len: int
    per_rank_mini_batch: int = 1  # responses per DP rank per optimizer step (sets M in 1F1B)
    has_ref: bool = True
    has_critic: bool = False
    entropy_in_update: bool = False  # entropy_coeff != 0
    max_num_batched_tokens: int = 8192

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.response_len


# ---------------------------------------------------------------------------------------------
# Pipeline stages


def stage_layer_counts(layers: int, pp: int, first: int | None = None, last: int | None = None) -> list[int]:
    """Layers on each pipeline stage (even split, or given first/last with the rest shared).
    Callers validate with derive.layout_problems; a remainder lands on the last stages here."""
    if pp <= 1:
        return [layers]
    counts = [0] * pp
    middle = list(range(pp))
    rest = layers
    if first is not None:
        counts[0] = first
        middle.remove(0)
        rest -= first
    if last is not None:
        counts[-1] = last
        middle.remove(pp - 1)
        rest -= last
    if middle:
        base, extra = divmod(max(rest, 0), len(middle))
        for i, stage in enumerate(middle):
            counts[stage] = base + (1 if i >= len(middle) - extra else 0)
    return counts


@dataclass(frozen=True, slots=True)
class StageParams:
    """Parameters one GPU of a pipeline stage holds, split by how they are sharded/optimised."""

    dense: float  # TP-sharded + replicated parameters on this rank (optimizer sharded over DP·CP)
    experts: float  # routed-expert parameters on this rank (optimizer sharded over EDP)
    dense_layers: int
    moe_layers: int

    @property
    def total(self) -> float:
        return self.dense + self.experts


def stage_params(model: ModelFacts, cand: Candidate, stage: int, counts: list[int]) -> StageParams:
    etp = cand.tp if cand.etp is None else cand.etp
    return _stage_params(model, cand.tp, cand.ep, etp, stage, tuple(counts))


@lru_cache(maxsize=4096)
def _stage_params(model: ModelFacts, t: int, ep: int, etp: int, stage: int, counts: tuple[int, ...]) -> StageParams:
    pp = len(counts)
    start = sum(counts[:stage])
    dense_layer = dense_layer_params(model)
    moe_layer = moe_layer_params(model) if model.is_moe else None
    dense = experts = 0.0
    n_dense = n_moe = 0
    for index in range(start, start + counts[stage]):
        if moe_layer is not None and is_moe_layer(model, index):
            layer, n_moe = moe_layer, n_moe + 1
        else:
            layer, n_dense = dense_layer, n_dense + 1
        dense += layer.tp_sharded / t + layer.replicated
        experts += layer.experts / (ep * etp)
    embedding = model.vocab_size * model.hidden_size / t
    if stage == 0:
        dense += embedding + model.vision_params / t
    if stage == pp - 1:
        # The output layer; with PP > 1 Megatron keeps a copy of tied embeddings on the last stage too.
        if not model.tie_word_embeddings or pp > 1:
            dense += embedding
        dense += model.hidden_size  # final norm
    return StageParams(dense, experts, n_dense, n_moe)


# ---------------------------------------------------------------------------------------------
# Activations


def attention_activation_bytes(model: ModelFacts) -> float:
    """Bytes per token kept by one attention block (pre-TP), layer norm included."""
    h = model.hidden_size
    if model.is_mla:
        heads = model.num_attention_heads
        qk = heads * ((model.qk_nope_head_dim or 0) + (model.qk_rope_head_dim or 0))
        v = heads * (model.v_head_dim or 0)
        latent = (model.q_lora_rank or 0) + (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
        return 4 * h + 2 * (2 * qk + 2 * v) + 4 * latent
    q = model.num_attention_heads * model.head_dim
    kv = model.num_kv_heads * model.head_dim
    total = 4 * h + 4 * q + 4 * kv
    if model.qk_norm:
        total += 2 * q + 2 * kv
    return total


def dense_layer_activation_bytes(model: ModelFacts) -> float:
    """Per token, dense layer: attention + pre-MLP norm (4h) + SwiGLU (6f)."""
    return attention_activation_bytes(model) + 4 * model.hidden_size + 6 * model.ffn_hidden_size


def moe_layer_activation_bytes(model: ModelFacts, moe_factor: float = MOE_ACTIVATION_FACTOR) -> tuple[float, float]:
    """Per token, MoE layer: (non-expert part, routed-expert part at `moe_factor`)."""
    h, k = model.hidden_size, model.experts_per_token or 0
    non_expert = (attention_activation_bytes(model) + 4 * h + 6 * model.shared_expert_ffn_hidden_size
                  + 8 * (model.num_experts or 0))
    routed = moe_factor * k * (4 * h + 6 * (model.expert_ffn_hidden_size or 0))
    return non_expert, routed


def _in_flight(cand: Candidate, stage: int, micro_batches: int) -> float:
    """Micro-batches whose activations a stage holds at its peak (1F1B warm-up, VPP factor)."""
    pp = cand.pp
    count = max(1, min(pp - stage, micro_batches))
    if cand.vpp and cand.vpp > 1 and pp > 1:
        count *= 1 + (pp - 1) / (pp * cand.vpp)
    return count


def _tokens_per_micro(cand: Candidate, work: Workload, *, log_prob: bool) -> float:
    """Tokens of one micro-batch on one GPU (after the CP split)."""
    if cand.use_dynamic_bsz:
        budget = (cand.log_prob_token_budget if log_prob else cand.token_budget) or cand.token_budget or work.seq_len
        # The cap is budget·CP over the CP group: each rank gets `budget` tokens.
        return max(budget, math.ceil(work.seq_len / cand.cp)) * DYNAMIC_FILL
    micro = (cand.log_prob_micro_batch_per_gpu or cand.micro_batch_per_gpu) if log_prob else cand.micro_batch_per_gpu
    return micro * work.seq_len / cand.cp


def _micro_batches_per_step(cand: Candidate, work: Workload) -> int:
    if cand.use_dynamic_bsz:
        budget = (cand.token_budget or work.seq_len) * cand.cp
        return max(1, math.ceil(work.per_rank_mini_batch * work.seq_len / budget))
    return max(1, math.ceil(work.per_rank_mini_batch / max(1, cand.micro_batch_per_gpu)))


# ---------------------------------------------------------------------------------------------
# Phases


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
    tokens = _tokens_per_micro(cand, work, log_prob=False)
    micro_batches = _micro_batches_per_step(cand, work)
    in_flight = _in_flight(cand, stage, micro_batches)
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
    lp_tokens = _tokens_per_micro(cand, work, log_prob=True)
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
    engine_weights, engine_activations = _engine_fixed_bytes(model, cand, work)
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


# ---------------------------------------------------------------------------------------------
# The rollout engine's own budget


@dataclass(frozen=True, slots=True)
class EngineMemory:
    """How the rollout engine spends its gmu·total budget on one GPU."""

    budget_gib: float
    weights_gib: float
    activation_gib: float
    kv_cache_gib: float
    kv_tokens: int  # tokens of KV cache on one replica
    batch_tokens: int  # tokens the rollout batch needs on one replica
    resident_fraction: float  # share of the rollout batch that fits in KV at once

    @property
    def fits(self) -> bool:
        return self.kv_cache_gib > 0


@lru_cache(maxsize=256)
def _total_params(model: ModelFacts) -> int:
    return total_params(model)


def _engine_fixed_bytes(model: ModelFacts, cand: Candidate, work: Workload) -> tuple[float, float]:
    """(weights, profiling-run activation peak) of the rollout engine on one GPU."""
    rtp = cand.rollout_tp
    weights = 2 * _total_params(model) / rtp  # experts are split by the rollout TP too
    width = max(model.ffn_hidden_size if not model.is_moe else
                (model.experts_per_token or 1) * (model.expert_ffn_hidden_size or 0), model.hidden_size)
    tokens = max(work.max_num_batched_tokens, work.seq_len)
    activation = tokens * (8 * model.hidden_size + 6 * width) / rtp + VLLM_MAX_NUM_SEQS * model.vocab_size * 4 / rtp
    return weights, activation


def engine_memory(model: ModelFacts, cand: Candidate, work: Workload, *, responses_per_step: int,
                  total_params: int | None = None) -> EngineMemory:
    """vLLM: weights 2·N/rollout_tp, a profiling-run activation peak, and the KV cache in the rest."""
    rtp = cand.rollout_tp
    budget = cand.gpu_memory_utilization * work.gpu_memory_gib * GIB
    weights, activation = _engine_fixed_bytes(model, cand, work)
    kv = budget - weights - activation
    per_token = kv_cache_bytes_per_token(model, rtp)
    kv_tokens = int(max(kv, 0) / per_token)
    replicas = max(1, work.gpus // rtp)
    batch_tokens = math.ceil(responses_per_step / replicas) * work.seq_len
    return EngineMemory(
        budget_gib=round(_gib(budget), 2), weights_gib=round(_gib(weights), 2),
        activation_gib=round(_gib(activation), 2), kv_cache_gib=round(_gib(kv), 2),
        kv_tokens=kv_tokens, batch_tokens=batch_tokens,
        resident_fraction=min(1.0, kv_tokens / batch_tokens) if batch_tokens else 1.0,
    )


def usable_gib(gpu_memory_gib: float) -> float:
    return round(gpu_memory_gib * FIT_FRACTION, 2)
