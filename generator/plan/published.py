"""verl's published layouts (packaged `data/verl_layouts.yaml`) as the planner's first choice
(issue 32): for the model and GPU count a row names, that row's layout; for another GPU count, the
layout of the nearest count scaled by Megatron's rules:
  DP = GPUs / (TP·PP·CP) must be a whole number; the expert grid ETP·EP·PP must divide the GPUs
  (Megatron-core `parallel_state.initialize_model_parallel` builds EP·ETP groups out of each
  pipeline stage's TP·CP·DP ranks), so EP halves until it does; a pipeline wider than the GPUs
  halves until it fits (the stage split then evened out); CP is kept for long sequences only; a
  mixture-of-experts row without EP gets EP carved out of DP·CP (up to 8, a node).
Validity is still judged by `generator.layout.derive.layout_problems`; the sizing adapts the knobs.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from generator.layout.derive import Layout, data_parallel_size
from generator.layout.parallelism import Parallelism
from generator.model import ModelFacts
from generator.layout.pins import LAYOUT_FIELDS, Pins
from generator.plan.enumeration import LONG_SEQUENCE, describe_layout, stage_splits
from generator.plan.practice import layout_violations
from generator.plan.verl_rows import VerlRow, verl_rows
from generator.plan.setting import Setting

NOT_PRACTICE = ("tests/",)  # verl's end-to-end tests exercise features, they are not recommendations


def practice_rows(model: ModelFacts) -> list[VerlRow]:
    """verl's rows for this model that are practice (examples and published runs, not tests)."""
    return [row for row in map(VerlRow, verl_rows()) if row.model.name == model.name
            and not str(row.row.get("script", "")).startswith(NOT_PRACTICE)]


def nearest_rows(model: ModelFacts, gpus: int, algo: str, gpu_name: str = "") -> list[VerlRow]:
    """The rows at this GPU count, else at the nearest one (the smaller on a tie), those run on
    `gpu_name` when there are some; the plan's algorithm's rows first."""
    rows = practice_rows(model)
    if not rows:
        return []
    counts = sorted({int(row.row["gpus"]) for row in rows}, key=lambda c: (abs(c - gpus), c))
    near = [row for row in rows if row.row["gpus"] == counts[0]]
    # A row run on this GPU type speaks for it; a row on another type only when none does.
    same_gpu = [row for row in near if row.gpu.name == gpu_name]
    return sorted(same_gpu or near, key=lambda row: str(row.row["algo"]).lower() != algo.lower())


def scaled_layout(row: VerlRow, model: ModelFacts, s: Setting) -> Layout | None:
    """The row's layout on `s.gpus` GPUs by Megatron's rules, or None when it cannot be carved."""
    shape = row.layout()
    tp, pp, cp = int(shape.get("tp", 1)), int(shape.get("pp", 1)), int(shape.get("cp", 1))
    ep, etp = int(shape.get("ep", 1)), shape.get("etp")
    first, last = shape.get("first_stage_layers"), shape.get("last_stage_layers")
    vpp = shape.get("vpp")
    if cp > 1 and s.seq_len < LONG_SEQUENCE:
        cp = 1
    while pp > 1 and tp * pp * cp > s.gpus:
        pp //= 2
        first = last = None
        vpp = vpp if vpp and pp > 1 else None
    if data_parallel_size(s.gpus, tp, pp, cp) is None:
        return None
    if pp != int(shape.get("pp", 1)) and model.num_layers % pp:
        first, last = stage_splits(model.num_layers, pp)[0]  # the enumeration's first uneven split
    if model.is_moe and ep == 1:
        # verl's MoE rows without EP predate its MoE practice (practice.uses_expert_parallelism):
        # carve EP out of DP·CP as its later rows do, up to a node's worth.
        ep, etp = min(8, model.num_experts or 1), 1
        while ep > 1 and (model.num_experts or 1) % ep:
            ep //= 2
    while ep > 1 and s.gpus % ((etp or tp) * ep * pp):
        ep //= 2
    return Layout(gpus=s.gpus, gpus_per_node=s.gpus_per_node, tp=tp, pp=pp, cp=cp, ep=ep,
                  etp=etp if ep > 1 else None, vpp=vpp, first_stage_layers=first, last_stage_layers=last)


def published_layouts(model: ModelFacts, s: Setting) -> list[Layout]:
    """verl's layouts for this model, scaled to the setting's GPU count, without repeats."""
    return [found[0] for found in _published(model, s).values()]


def published_rollout_tp(model: ModelFacts, layout: Parallelism, s: Setting) -> int | None:
    """The rollout TP verl's row runs beside this (scaled) layout, when it divides the GPUs."""
    found = _published(model, s).get(describe_layout(layout))
    return found[1] if found else None


def published_knobs(model: ModelFacts, layout: Parallelism, s: Setting) -> Pins | None:
    """The knobs (offload, recompute, batching, gmu, rollout TP) verl's row runs beside this layout,
    as pins the sizing evaluates as given; None when the layout is not verl's or the row's token
    budget cannot hold this workload's sequences."""
    found = _published(model, s).get(describe_layout(layout))
    if found is None or found[1] is None:
        return None
    pins = found[2].shipped_pins()
    if pins.token_budget is not None and pins.token_budget * layout.cp < max(s.seq_len, s.least_budget):
        return None
    unpinned: dict[str, Any] = {name: None for name in LAYOUT_FIELDS}
    return replace(pins, **unpinned)


def _published(model: ModelFacts, s: Setting) -> Mapping[str, tuple[Layout, int | None, VerlRow]]:
    """describe_layout(layout) -> (verl's layout scaled to `s`, its rollout TP or None, the row).
    Asked for every layout a search sizes (twice each): worked out once per search."""
    return _published_for(_search_key(s), model)


def _search_key(s: Setting) -> Setting:
    """`s` with only what chooses and scales verl's rows (the cluster, the lengths, the algorithm):
    one cache entry per search."""
    return replace(s, train_batch_size=0, mini=0, n=1, mean_response_len=0, spare=0.0, least_budget=0)


@lru_cache(maxsize=256)
def _published_for(s: Setting, model: ModelFacts) -> Mapping[str, tuple[Layout, int | None, VerlRow]]:
    out: dict[str, tuple[Layout, int | None, VerlRow]] = {}
    for row in nearest_rows(model, s.gpus, s.algo, s.gpu.name):
        layout = scaled_layout(row, model, s)
        if layout is not None and describe_layout(layout) not in out:
            rollout_tp = int(row.row["rollout_tp"])
            out[describe_layout(layout)] = (layout, rollout_tp if s.gpus % rollout_tp == 0 else None, row)
    return MappingProxyType(out)


def published_budget_tokens(model: ModelFacts) -> int | None:
    """The smallest per-GPU token budget (times CP) verl's dynamic-batch examples for this model
    use; None when none of them uses dynamic batches."""
    budgets = [int(row.row["budget"]) * int(row.row.get("cp", 1) or 1)
               for row in practice_rows(model) if row.row.get("dynamic") and row.row.get("budget")]
    return min(budgets) if budgets else None


@lru_cache(maxsize=256)
def _published_names(model: ModelFacts, s: Setting) -> frozenset[str]:
    return frozenset(describe_layout(layout) for layout in published_layouts(model, s))


def practice_marks(model: ModelFacts, layout: Parallelism, s: Setting) -> tuple[int, bool]:
    """(practice rules the layout breaks, whether it is verl's published layout here): the two
    ranking criteria that come before the estimated step time."""
    return (layout_violations(model, layout, s.gpus, s.gpus_per_node),
            describe_layout(layout) in _published_names(model, _search_key(s)))
