"""Layout search, the entry point: enumerate Megatron layouts, keep the valid ones, size each, rank them.

Validity comes from `generator.layout.derive` (the same predicates the rules use); the layouts visited
from `plan.enumeration`, the knobs and memory of each from `plan.sizing`, the order from
`plan.ranking`. The search visits layouts by the best key they could reach (their step-time
floor) and stops once the top candidates beat the next layout's floor.
"""

from __future__ import annotations

from dataclasses import replace

from generator.layout.derive import Layout, layout_dp, layout_problems, per_rank_mini_batch
from generator.base.errors import InputError
from generator.layout.hardware import GpuSpec
from generator.layout.candidate import Candidate
from generator.model import ModelFacts, total_params
from generator.layout.pins import NO_PINS, Pins
from generator.plan.batch_choice import batch_hint, batch_sizes
from generator.plan.enumeration import describe_layout, enumerate_layouts
from generator.plan.practice import leaves_spare, least_budget_tokens, spare_share, within_step_band
from generator.plan.published import (practice_marks, published_budget_tokens, published_layouts,
                                      published_knobs, published_rollout_tp)
from generator.plan.ranking import (STEP_POSITION, RankKey, banded, deciding_criterion, optimistic_key, rank_key,
                                    step_floor_s)
from generator.plan.release_defaults import rollout_defaults
from generator.plan.result import Plan
from generator.plan.setting import Setting
from generator.plan.sizing import describe_candidate, micro_batch_splits, size_layout
from generator.verl.constants import ALGORITHM_TABLE, ALGORITHMS


def _validate(model: ModelFacts, gpus: int, nodes: int, prompt_len: int, response_len: int, n: int,
              algo: str, mean_response_len: int | None = None) -> int:
    if gpus < 1:
        raise InputError(f"--gpus must be ≥ 1, got {gpus}")
    if nodes < 1 or gpus % nodes:
        raise InputError(f"--gpus {gpus} must be a multiple of --nodes {nodes} (GPUs are the total over all nodes)")
    if prompt_len < 1 or response_len < 1:
        raise InputError(f"prompt and response lengths must be positive, got {prompt_len}/{response_len}")
    if n < 1:
        raise InputError(f"--n must be ≥ 1, got {n}")
    if mean_response_len is not None and not 1 <= mean_response_len <= response_len:
        raise InputError(f"--mean-response-len must be between 1 and --response-len {response_len}, "
                         f"got {mean_response_len}")
    if algo not in ALGORITHMS:
        raise InputError(f"unknown algorithm '{algo}'; known: {', '.join(ALGORITHMS)}")
    min_n = ALGORITHM_TABLE[algo].min_n
    if n < min_n:
        raise InputError(f"{algo} compares responses within a group: --n must be ≥ {min_n}, got {n}")
    if prompt_len + response_len > model.max_position_embeddings:
        raise InputError(f"prompt+response = {prompt_len + response_len} tokens exceeds {model.name}'s "
                         f"max_position_embeddings {model.max_position_embeddings}")
    return gpus // nodes


def plan_layout(model: ModelFacts, gpus: int, *, nodes: int = 1, gpu: GpuSpec, prompt_len: int = 1024,
                response_len: int = 1024, n: int = 5, algo: str = "grpo", train_batch_size: int | None = None,
                ppo_mini_batch_size: int | None = None, pins: Pins = NO_PINS, evaluate: bool = False,
                top: int = 5, mean_response_len: int | None = None, verl_version: str | None = None) -> Plan:
    """Search (or, with `evaluate`, evaluate) Megatron layouts for `model` on `gpus` GPUs in total.

    `pins` (generator.layout.pins): with `evaluate`, its layout fields are the one layout sized (the
    unpinned ones at Megatron's defaults); else they keep only the layouts that agree (or the one
    they describe when the search does not produce it). Its knobs are pinned on every layout
    sized; param_offload/optimizer_offload/cpu_optimizer_fraction/recompute pin single rungs of
    the memory relief, offload the whole record.
    `verl_version`: the release whose defaults (weight-sync bucket, max_num_seqs) the memory
    model uses (generator.plan.release_defaults; None: 0.7.0's).
    """
    algo = algo.lower()
    gpus_per_node = _validate(model, gpus, nodes, prompt_len, response_len, n, algo, mean_response_len)
    prompts, mini = batch_sizes(gpus, n, prompt_len, response_len, algo, train_batch_size, ppo_mini_batch_size)
    s = Setting(gpus=gpus, gpus_per_node=min(gpus_per_node, gpu.gpus_per_node) if nodes > 1 else gpus_per_node,
                 gpu=gpu, prompt_len=prompt_len, response_len=response_len, n=n, algo=algo,
                 train_batch_size=prompts, mini=mini, mean_response_len=mean_response_len or 0,
                 rollout=rollout_defaults(verl_version), spare=spare_share(),
                 least_budget=least_budget_tokens(prompt_len + response_len, published_budget_tokens(model)))
    params = total_params(model)

    def attempt(setting: Setting) -> Plan:
        plan = Plan(model=model.name, gpus=gpus, nodes=nodes, gpu=gpu.name, algo=algo, n=n, prompt_len=prompt_len,
                    response_len=response_len, train_batch_size=prompts, ppo_mini_batch_size=mini,
                    gpu_memory_gib=gpu.memory_gib)
        layouts = _layouts_to_visit(model, setting, pins, evaluate)
        sized, misses = _size_best_first(model, layouts, setting, plan, params=params, pins=pins, top=top,
                                         search=not evaluate)
        _rank_into(plan, sized, misses, setting, model=model, top=top, fixed=evaluate)
        # Described (notes, why, warnings) only once ranked: the search sizes ~100 layouts and shows `top`.
        plan.candidates = [describe_candidate(model, c, setting, params=params) for c in plan.candidates]
        return plan

    plan = attempt(s)
    if plan.chosen is None:
        # Nothing leaves the practice's spare: the closest to the edge that still fits, said so.
        edge = attempt(replace(s, spare=0.0))
        if edge.chosen is not None:
            edge.candidates = [replace(c, warnings=c.warnings + (
                f"no layout leaves {s.spare:.0%} of usable memory spare in every phase (the memory model's "
                "error band): this one fits closer to the edge",)) for c in edge.candidates]
            return edge
    return plan


def _layouts_to_visit(model: ModelFacts, s: Setting, pins: Pins, evaluate: bool) -> list[Layout]:
    """The layouts to size: the one the pins describe (`evaluate`), or the enumerated layouts that
    agree with the pinned fields (the pinned one itself when none does)."""
    pinned = pins.layout_fields()
    if evaluate:
        return [Layout(gpus=s.gpus, gpus_per_node=s.gpus_per_node, **pinned)]
    # verl's published layouts first (scaled to this GPU count), then the enumeration's.
    every = published_layouts(model, s) + [lay for lay in enumerate_layouts(model, s)]
    layouts = [lay for lay in dict.fromkeys(every) if all(getattr(lay, k) == v for k, v in pinned.items())]
    if pinned and not layouts:  # outside what the search enumerates: evaluate the pinned one
        layouts = [Layout(gpus=s.gpus, gpus_per_node=s.gpus_per_node, **pinned)]
    return layouts


def _size_best_first(model: ModelFacts, layouts: list[Layout], s: Setting, plan: Plan, *, params: int,
                     pins: Pins, top: int, search: bool) -> tuple[list[Candidate], list[Candidate]]:
    """Size the valid layouts, (fitting, missing); the rejected ones go to plan.rejected with why.

    Branch and bound: the ranking is lexicographic, and a layout's best conceivable key (no
    relief, the largest gmu and micro batch) is known before sizing it. Visit layouts by
    that key and stop once the top candidates beat the next layout's best conceivable key."""
    sized: list[Candidate] = []
    misses: list[Candidate] = []
    floors = {id(lay): step_floor_s(model, lay, s) for lay in layouts} if search else {}
    marks = {id(lay): practice_marks(model, lay, s) for lay in layouts}

    def best_key(lay: Layout) -> RankKey:
        violations, published = marks[id(lay)]
        return optimistic_key(lay, model.is_moe, floors.get(id(lay), 0.0), violations=violations,
                              published=published)

    layouts.sort(key=best_key)
    skipped = 0
    keys: list[RankKey] = []
    for index, layout in enumerate(layouts):
        # Stop only once the next layout cannot reach the shown ones' step bucket: inside it, the
        # band (ranking.banded) may still let it win on a later criterion.
        if search and len(keys) >= max(1, top) and \
                keys[max(1, top) - 1][:STEP_POSITION + 1] < best_key(layout)[:STEP_POSITION + 1]:
            skipped = len(layouts) - index
            break
        problems = layout_problems(layout, model)
        if problems:
            plan.rejected.append((describe_layout(layout), "; ".join(p.message for p in problems)))
            continue
        cand, reason = _size(model, layout, s, params=params, pins=pins, prune=search)
        if cand is not None and cand.fits:
            sized.append(cand)
            violations, published = marks[id(layout)]
            keys.append(rank_key(cand, s.seq_len, model.is_moe, s.gpus_per_node, violations=violations,
                                 published=published))
            keys.sort()
        else:
            if not reason and cand is not None and cand.memory:  # sized, but refused: name its peak
                worst = max(cand.memory, key=lambda phase: phase.gib)
                reason = (f"no sizing fits with the spare (peak {worst.phase} {worst.gib:.1f} GiB of "
                          f"{cand.limit_gib:.1f} usable)")
            plan.rejected.append((describe_layout(layout), reason or "does not fit"))
            if cand is not None:
                misses.append(cand)
    if skipped:
        plan.rejected.append((f"{skipped} more layouts",
                              f"not evaluated: even with no offload, the largest gpu_memory_utilization and "
                              f"micro batch, and their shortest conceivable step time, they would rank below "
                              f"the {max(1, top)} shown"))
    return sized, misses


def _size(model: ModelFacts, layout: Layout, s: Setting, *, params: int, pins: Pins,
          prune: bool) -> tuple[Candidate | None, str]:
    """size_layout, with verl's own rollout TP beside its published layout when the user pinned
    none (and the free choice when the layout does not fit with verl's). Where the user pinned no
    knob either, verl's row's own knobs are tried as well: they win when they leave the spare and
    either need no more relief than ours and are estimated no slower beyond the step-time band (a
    tie goes to practice), or are estimated faster beyond it (their relief then pays for itself)."""
    rollout_tp = published_rollout_tp(model, layout, s) if pins.rollout_tp is None else None
    sized: tuple[Candidate | None, str] = (None, "")
    if rollout_tp is not None:
        sized = size_layout(model, layout, s, params=params, pins=replace(pins, rollout_tp=rollout_tp), prune=prune)
    if sized[0] is None or not sized[0].fits:
        sized = size_layout(model, layout, s, params=params, pins=pins, prune=prune)
    row_knobs = published_knobs(model, layout, s) if not pins.given() else None
    if row_knobs is None:
        return sized
    theirs, _ = size_layout(model, layout, s, params=params, pins=row_knobs, prune=prune)
    ours = sized[0]
    if theirs is None or not theirs.fits or theirs.score is None or (
            s.spare and not leaves_spare([p.gib for p in theirs.memory], theirs.limit_gib)):
        return sized
    per_rank = per_rank_mini_batch(theirs.ppo_mini_batch_size or s.train_batch_size, s.n, layout_dp(s.gpus, layout))
    if not theirs.use_dynamic_bsz and not micro_batch_splits(per_rank, theirs.micro_batch_per_gpu, layout.pp,
                                                             layout.vpp):
        return sized  # the row's micro batch does not split this batch at this GPU count
    if ours is None or not ours.fits or ours.score is None:
        return theirs, ""
    # A tie goes to practice, but offload and recompute only where needed: never more relief than ours.
    tie = within_step_band(ours.score.total_s, theirs.score.total_s)
    if len(theirs.relief()) <= len(ours.relief()) and tie:
        return theirs, ""
    if not tie and theirs.score.total_s < ours.score.total_s:
        return theirs, ""  # verl's knobs estimated faster beyond the band: their relief pays for itself
    return sized


def _rank_into(plan: Plan, sized: list[Candidate], misses: list[Candidate], s: Setting, *, model: ModelFacts,
               top: int, fixed: bool) -> None:
    """The top candidates in rank order, why each ranks below the first, and the chosen one; when
    none fits because the kept batch does not split, a first rejection that says so."""
    def plain(c: Candidate) -> RankKey:
        violations, published = practice_marks(model, c, s)
        return rank_key(c, s.seq_len, model.is_moe, s.gpus_per_node, violations=violations, published=published)

    sized.sort(key=plain)
    # Step times inside the band of the fastest with the leader's practice marks tie: the later
    # criteria (relief, pipeline depth, ...) decide, wherever the bucket boundaries fall.
    leader = sized[0] if sized else None
    lead_key = plain(leader) if leader is not None else None
    lead_s = min((c.score.total_s for c in sized if c.score and lead_key is not None
                  and plain(c)[:3] == lead_key[:3]), default=0.0)

    def key(c: Candidate) -> RankKey:
        k = plain(c)
        if lead_key is None or c.score is None:
            return k
        return banded(k, c.score.total_s, lead_key, lead_s)

    sized.sort(key=key)
    plan.band_reference_s = lead_s
    if fixed and not sized and misses:
        sized = misses  # show the evaluated layout even though it does not fit
    plan.candidates = sized[: max(1, top)] if sized else []
    if len(plan.candidates) > 1:
        first = key(plan.candidates[0])
        reasons: list[str | None] = [None]
        reasons += [deciding_criterion(first, key(c)) for c in plan.candidates[1:]]
        plan.rank_reasons = reasons
    if plan.candidates and plan.candidates[0].fits:
        plan.chosen = 0
        best = plan.candidates[0]
        plan.ppo_mini_batch_size = best.ppo_mini_batch_size or plan.ppo_mini_batch_size
    elif any("not divisible by DP" in reason for _, reason in plan.rejected):
        plan.rejected.insert(0, ("batch sizes", f"train_batch_size {s.train_batch_size} and ppo_mini_batch_size "
                                 f"{s.mini or '?'} are kept as given, and no layout that fits splits them; "
                                 + batch_hint(s.gpus, s.n, s.train_batch_size)))
