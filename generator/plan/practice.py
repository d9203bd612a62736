"""verl's practice as rules every planned recipe keeps (issue 32): one home for each, each a small
pure predicate that the planner uses to order and filter and `bench/practice.py` uses to count.

Where the rules come from (docs/plan-practice.md cites each):
- mixture-of-experts models train with expert parallelism: every MoE layout verl ships carves EP
  out of DP·CP (Qwen3-30B-A3B TP1 PP1 EP8, Qwen3-235B TP4 PP8 EP4, DeepSeek-V3 EP8 to EP32);
- TP and rollout TP stay inside one node (NVLink) unless the weights cannot fit there: verl's
  Qwen3-235B rollout uses TP8 on 8-GPU nodes, only the 671B DeepSeek goes to TP32;
- a dynamic-batch token budget holds at least two whole sequences of prompt+response, unless one of
  verl's examples for the model holds fewer (its 235B and 671B scripts hold one);
- pipeline depth grows only when memory needs it: the shallowest PP that fits wins over deeper ones
  whose estimated step is not faster by more than the step-time model's error band;
- every phase leaves at least max(5 % of usable memory, the memory model's error band) spare;
- offload and recompute only when the layout does not fit without them (the sizing ladder).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.layout.parallelism import Parallelism
from generator.model import ModelFacts
from generator.plan.error_band import MEMORY_ERROR_BAND, STEP_TIME_ERROR_BAND
from generator.plan.workload import GIB

SPARE_FLOOR = 0.05  # the least share of usable memory every phase leaves, whatever the band
TWO_SEQUENCES = 2.0  # sequences of prompt+response a dynamic token budget holds at least
# A rollout replica inside a node is possible when its bf16 weights take at most this share of the
# engine's largest budget (gpu_memory_utilization 0.85 of the GPU): the rest is KV cache.
IN_NODE_ROLLOUT_WEIGHT_SHARE = 0.9
LARGEST_GMU = 0.85


def spare_share() -> float:
    """The share of usable memory every planned phase leaves free."""
    return max(SPARE_FLOOR, MEMORY_ERROR_BAND)


def leaves_spare(peaks_gib: list[float], usable_gib: float) -> bool:
    """Every phase's peak leaves spare_share() of usable memory free."""
    return all(peak <= usable_gib * (1 - spare_share()) + 1e-9 for peak in peaks_gib)


def uses_expert_parallelism(model: ModelFacts, layout: Parallelism, gpus: int) -> bool:
    """A mixture-of-experts model trains with EP > 1 (one GPU has nothing to carve it from)."""
    return not model.is_moe or layout.ep > 1 or gpus < 2


def rollout_weights_fit_in_node(params: int, gpus_per_node: int, gpu_memory_gib: float) -> bool:
    """Whether one rollout replica of TP = a whole node holds the model's bf16 weights with room for
    KV cache; when it does not, only then may rollout TP span nodes."""
    return 2 * params / max(gpus_per_node, 1) / GIB <= IN_NODE_ROLLOUT_WEIGHT_SHARE * LARGEST_GMU * gpu_memory_gib


def tp_within_node(layout: Parallelism, rollout_tp: int, gpus_per_node: int, weights_fit_in_node: bool) -> bool:
    """Training TP inside a node always; rollout TP too unless the weights cannot fit there."""
    if gpus_per_node < 1:
        return True
    return layout.tp <= gpus_per_node and (rollout_tp <= gpus_per_node or not weights_fit_in_node)


def least_budget_tokens(seq_len: int, published_tokens: int | None) -> int:
    """The smallest per-GPU token budget (times CP) the rule allows: two sequences, or the budget
    verl's own example for this model uses when that is fewer (never less than one sequence)."""
    two = int(seq_len * TWO_SEQUENCES)
    return two if published_tokens is None else max(seq_len, min(two, published_tokens))


def budget_holds_sequences(dynamic: bool, token_budget: int | None, cp: int, seq_len: int,
                           published_tokens: int | None = None) -> bool:
    """A dynamic batch's token budget (over the CP group) holds the sequences the rule asks for."""
    if not dynamic or token_budget is None:
        return True
    return token_budget * cp >= least_budget_tokens(seq_len, published_tokens)


def within_step_band(faster_s: float, slower_s: float) -> bool:
    """Two estimated step times tie: the slower is within STEP_TIME_ERROR_BAND of the faster."""
    return slower_s <= faster_s * (1 + STEP_TIME_ERROR_BAND)


def pp_is_shallowest(chosen_pp: int, fastest_s: float, shallower: list[tuple[int, float]],
                     published: bool = False) -> bool:
    """No shallower pipeline that fits (`shallower`: (PP, estimated step) of layouts that fit) is
    within the step-time band of the fastest layout that fits (`fastest_s`), where the planner's
    ties are (ranking.banded). verl's published layout for the model is its practice, pipeline
    included (`published`)."""
    return published or not any(pp < chosen_pp and within_step_band(fastest_s, step_s) for pp, step_s in shallower)


def relief_is_needed(uses_relief: bool, fits_with_less: bool) -> bool:
    """Offload or recompute only when the same layout does not fit (with the spare) without it."""
    return not uses_relief or not fits_with_less


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    message: str


RULES = ("moe-uses-ep", "tp-in-node", "budget-two-sequences", "shallowest-pp", "memory-spare", "relief-when-needed")


def layout_violations(model: ModelFacts, layout: Parallelism, gpus: int, gpus_per_node: int) -> int:
    """The layout-only rules a layout breaks (known before sizing): the ranking's practice criterion."""
    return int(not uses_expert_parallelism(model, layout, gpus)) + int(gpus_per_node > 0 and
                                                                       layout.tp > gpus_per_node)
