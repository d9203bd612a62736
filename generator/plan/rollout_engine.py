"""The rollout engine's own budget: gmu × GPU memory split into weights, a profiling-run activation
peak and the KV cache (docs/memory-model.md#terms)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from generator.model.facts import ModelFacts
from generator.model.params import kv_cache_bytes_per_token, total_params
from generator.layout.candidate import Candidate
from generator.plan.workload import GIB, Workload

ENGINE_TERMS = ("rollout-weights", "rollout-activations", "kv-cache")  # together: gmu × GPU memory


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


def engine_fixed_bytes(model: ModelFacts, cand: Candidate, work: Workload) -> tuple[float, float]:
    """(weights, profiling-run activation peak) of the rollout engine on one GPU."""
    rtp = cand.rollout_tp
    weights = 2 * _total_params(model) / rtp  # experts are split by the rollout TP too
    width = max(model.ffn_hidden_size if not model.is_moe else
                (model.experts_per_token or 1) * (model.expert_ffn_hidden_size or 0), model.hidden_size)
    tokens = max(work.max_num_batched_tokens, work.seq_len)
    activation = tokens * (8 * model.hidden_size + 6 * width) / rtp + work.max_num_seqs * model.vocab_size * 4 / rtp
    return weights, activation


def engine_memory(model: ModelFacts, cand: Candidate, work: Workload, *, responses_per_step: int,
                  total_params: int | None = None) -> EngineMemory:
    """vLLM: weights 2·N/rollout_tp, a profiling-run activation peak, and the KV cache in the rest."""
    rtp = cand.rollout_tp
    budget = cand.gpu_memory_utilization * work.gpu_memory_gib * GIB
    weights, activation = engine_fixed_bytes(model, cand, work)
    kv = budget - weights - activation
    per_token = kv_cache_bytes_per_token(model, rtp)
    kv_tokens = int(max(kv, 0) / per_token)
    replicas = max(1, work.gpus // rtp)
    batch_tokens = math.ceil(responses_per_step / replicas) * work.seq_len
    return EngineMemory(
        budget_gib=round(budget / GIB, 2), weights_gib=round(weights / GIB, 2),
        activation_gib=round(activation / GIB, 2), kv_cache_gib=round(kv / GIB, 2),
        kv_tokens=kv_tokens, batch_tokens=batch_tokens,
        resident_fraction=min(1.0, kv_tokens / batch_tokens) if batch_tokens else 1.0,
    )
