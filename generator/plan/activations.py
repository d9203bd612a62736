"""Activation bytes per token of each layer kind, and how many tokens and micro-batches a stage holds
(docs/memory-model.md#terms)."""

from __future__ import annotations

import math

from generator.model.facts import ModelFacts
from generator.layout.candidate import Candidate
from generator.plan.workload import Workload

# Routed-expert tensors are counted as Megatron-core keeps them, with no discount (issue 32): the
# uncertainty of the term is carried as spare memory (plan/error_band.MEMORY_ERROR_BAND), not as a
# factor below 1. Kept as a name for the planner's notes.
MOE_ACTIVATION_FACTOR = 1.0
DYNAMIC_FILL = 1.0  # a dynamic micro-batch is assumed full (conservative)


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


def routed_copy_bytes(model: ModelFacts) -> float:
    """Bytes one routed copy of a token keeps for the backward in Megatron-core's grouped-GEMM
    experts (core_v0.13.0 `moe/experts.py::TEGroupedMLP.forward`): fc1's input (TE GroupedLinear
    saves it, 2h), fc1's gate and up outputs kept by the weighted SwiGLU (4f), the SwiGLU's output
    saved as fc2's input (2f) and the fp32 routing probability the SwiGLU scales by (4). Since
    core 0.13 the probabilities are applied inside the activation, so the unpermute
    (`moe/token_dispatcher.py::unpermute`, called without probs) keeps no copy of fc2's output."""
    return 2 * model.hidden_size + 6 * (model.expert_ffn_hidden_size or 0) + 4


def moe_layer_activation_bytes(model: ModelFacts, moe_factor: float = MOE_ACTIVATION_FACTOR) -> tuple[float, float]:
    """Per token, MoE layer: (non-expert part, routed-expert part: top-k routed copies)."""
    h, k = model.hidden_size, model.experts_per_token or 0
    non_expert = (attention_activation_bytes(model) + 4 * h + 6 * model.shared_expert_ffn_hidden_size
                  + 8 * (model.num_experts or 0))
    routed = moe_factor * k * routed_copy_bytes(model)
    return non_expert, routed


def in_flight_micro_batches(cand: Candidate, stage: int, micro_batches: int) -> float:
    """Micro-batches whose activations a stage holds at its peak (1F1B warm-up, VPP factor)."""
    return in_flight_count(cand.pp, cand.vpp, stage, micro_batches)


def in_flight_count(pp: int, vpp: int | None, stage: int, micro_batches: int) -> float:
    """in_flight_micro_batches from the pipeline's shape alone (PP, VPP)."""
    count = float(max(1, min(pp - stage, micro_batches)))
    if vpp and vpp > 1 and pp > 1:
        count *= 1 + (pp - 1) / (pp * vpp)
    return count


def tokens_per_micro(cand: Candidate, work: Workload, *, log_prob: bool) -> float:
    """Tokens of one micro-batch on one GPU (after the CP split)."""
    if cand.use_dynamic_bsz:
        budget = (cand.log_prob_token_budget if log_prob else cand.token_budget) or cand.token_budget or work.seq_len
        # The cap is budget·CP over the CP group: each rank gets `budget` tokens.
        return max(budget, math.ceil(work.seq_len / cand.cp)) * DYNAMIC_FILL
    micro = (cand.log_prob_micro_batch_per_gpu or cand.micro_batch_per_gpu) if log_prob else cand.micro_batch_per_gpu
    return micro * work.seq_len / cand.cp


def micro_batches_per_step(cand: Candidate, work: Workload) -> int:
    if cand.use_dynamic_bsz:
        budget = (cand.token_budget or work.seq_len) * cand.cp
        return max(1, math.ceil(work.per_rank_mini_batch * work.seq_len / budget))
    return max(1, math.ceil(work.per_rank_mini_batch / max(1, cand.micro_batch_per_gpu)))
