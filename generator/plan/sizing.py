"""Sizing one valid layout: choose its knobs and evaluate its memory.

For every layout the knobs are chosen by a fixed ladder — the order
docs/memory-model.md#knobs-in-order-of-cost gives — stopping at the first rung where every phase fits:
  1. nothing offloaded; 2. param (+grad, +ref) offload; 3. + optimizer offload;
  4. + Megatron CPU optimizer at 50 %, then 100 %; 5. + full recompute;
and on each rung the largest micro batch / token budget that fits, then the largest
`gpu_memory_utilization` that fits next to what stays resident. Memory comes from
`generator.plan.memory`, the step time each sized layout is scored by from `generator.plan.step_time`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from generator.verl.constants import VLLM_MAX_NUM_BATCHED_TOKENS
from generator.layout.derive import (Layout, dp_equation, layout_dp, per_rank_mini_batch, rollout_problems,
                              vpp_micro_batch_problem)
from generator.layout.parallelism import Offload
from generator.layout.candidate import Candidate
from generator.model import ModelFacts
from generator.layout.pins import NO_PINS, Pins
from generator.plan.batch_choice import mini_for
from generator.plan.rollout_engine import ENGINE_TERMS, engine_memory
from generator.plan.enumeration import powers_of_two
from generator.plan.gmu_ladder import MIN_GMU
from generator.plan.memory import phase_memory, training_phases_fit, usable_gib, worst_rollout_phase
from generator.plan.practice import rollout_weights_fit_in_node, within_step_band
from generator.plan.relief import PLANNER_LADDER
from generator.plan.setting import Setting
from generator.plan.stages import stage_layer_counts, stage_params
from generator.plan.step_time import calibrated, estimate_step_time, expected_lengths, response_share
from generator.plan.workload import GIB, Workload, algo_roles

# The planner's "why" line that names the memory knobs a layout turns on (the re-plan of a recipe
# shows it only where those knobs changed: library/convert.replan).
RELIEF_WHY = "memory relief: "

GMU_STEPS = (0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3)
TARGET_GMU = 0.5  # below this the KV cache may be small; prefer offloading Megatron state first (_keeps_rollout)
DYNAMIC_FROM_SEQ = 4096  # verl's long-response scripts all use dynamic batching
DYNAMIC_FROM_PARAMS = 14e9  # ... and its scripts for models of 14B and more
ROLLOUT_WEIGHT_SHARE = 0.6
MOE_THIN_MARGIN = 0.1  # an MoE update with less than this share of the GPU to spare gets a recompute note
IN_NODE_WEIGHT_SHARE = 0.8  # a replica inside a node may give its weights this much of the engine budget

_LADDER = PLANNER_LADDER  # (param, optimizer, cpu-optimizer fraction, recompute), cheapest first


def _ladder(pins: Pins) -> tuple[tuple[bool, bool, float, bool], ...]:
    """Memory relief a user may pin one by one (gen plan/recipe --param-offload ...): the ladder
    keeps only the rungs that agree, or the one rung the pins describe."""
    wanted = (pins.param_offload, pins.optimizer_offload, pins.cpu_optimizer_fraction, pins.recompute)
    if all(value is None for value in wanted):
        return _LADDER
    kept = tuple(rung for rung in _LADDER if all(v is None or rung[i] == v for i, v in enumerate(wanted)))
    if kept:
        return kept
    return ((bool(pins.param_offload), bool(pins.optimizer_offload), float(pins.cpu_optimizer_fraction or 0.0),
             bool(pins.recompute)),)


def _rollout_tp(model: ModelFacts, s: Setting, params: int, gmu: float) -> int | None:
    """Smallest rollout TP whose weights take ≤ ROLLOUT_WEIGHT_SHARE of the engine budget, so
    the KV cache keeps the rest (verl's rule of thumb is GPU_mem·gmu·TP > 2·N_params). A replica
    stays inside one node whenever the weights can fit there (practice.tp_within_node): a decode
    step's all-reduces over the network cost more than a smaller KV cache (verl's Qwen3-235B: TP8,
    not 16); the sizing then lowers the rest of what stays resident before giving that up."""
    budget = gmu * s.gpu.memory_gib * 2**30
    options = [r for r in powers_of_two(max(s.gpus, 1)) if s.gpus % r == 0
               and (s.gpus_per_node % r == 0 or r % s.gpus_per_node == 0)  # no replica straddles a node
               and not rollout_problems(s.gpus, r, gpus_per_node=s.gpus_per_node, model=model)]
    in_node = [r for r in options if r <= s.gpus_per_node]
    for r in in_node:
        if 2 * params / r <= ROLLOUT_WEIGHT_SHARE * budget:
            return r
    roomy = [r for r in in_node if 2 * params / r <= IN_NODE_WEIGHT_SHARE * budget]
    if roomy:
        return roomy[0]
    if in_node and rollout_weights_fit_in_node(params, s.gpus_per_node, s.gpu.memory_gib):
        return in_node[-1]
    for r in options:
        if 2 * params / r <= ROLLOUT_WEIGHT_SHARE * budget:
            return r
    return options[-1] if options else None


def micro_batch_splits(per_rank_mini: int, micro: int, pp: int, vpp: int | None) -> bool:
    """A static micro batch divides the per-rank mini batch and, with VPP, fills the interleaved
    schedule (VD402)."""
    if per_rank_mini % micro:
        return False
    return not (vpp and vpp > 1 and vpp_micro_batch_problem(per_rank_mini // micro, pp))


def _micro_options(per_rank_mini: int, seq_len: int, pp: int, vpp: int | None) -> list[int]:
    """Static micro batches, largest first: those that split the per-rank mini batch, ≤ ~16k tokens."""
    cap = max(1, 16384 // seq_len)
    return [micro for micro in range(min(per_rank_mini, cap), 0, -1)
            if micro_batch_splits(per_rank_mini, micro, pp, vpp)]


def _budget_options(seq_len: int, cp: int, least: int = 0) -> list[int]:
    """Dynamic token budgets per GPU, largest first; budget·CP must hold one whole sequence, and
    `least` tokens (practice.least_budget_tokens: two sequences, or verl's example's share)."""
    floor = max(-(-seq_len // cp), -(-least // cp))
    out = []
    for multiple in (3, 2, 1.5, 1):
        value = int(math.ceil(seq_len * multiple / cp / 1024) * 1024)
        out.append(max(value, floor))
    return sorted(set(out), reverse=True)


def _evaluate(model: ModelFacts, cand: Candidate, work: Workload, s: Setting) -> Candidate:
    memory = phase_memory(model, cand, work, detail=False)
    limit = usable_gib(s.gpu.memory_gib)
    fits = all(p.gib <= _room(s) for p in memory)
    return replace(cand, memory=memory, limit_gib=limit, fits=fits)


def _keeps_rollout(z: _Sizing, cand: Candidate) -> bool:
    """Whether the rollout keeps what it needs at this candidate's gmu: TARGET_GMU or more, or a
    KV cache that already holds every sequence its replica generates in a step at once (then a
    larger gmu buys the rollout nothing, and offloading Megatron state to reach it is relief the
    layout does not need: verl's Qwen2-7B PPO example runs TP2 PP2 at gmu 0.4, no offload)."""
    if cand.gpu_memory_utilization >= TARGET_GMU:
        return True
    engine = engine_memory(z.model, cand, z.work, responses_per_step=z.s.train_batch_size * z.s.n,
                           total_params=z.params)
    return engine.fits and engine.resident_fraction >= 1.0


def _room(s: Setting) -> float:
    """What a phase may take: usable memory less the spare the sizing keeps (Setting.spare)."""
    return usable_gib(s.gpu.memory_gib) * (1 - s.spare)


def _best_gmu(model: ModelFacts, cand: Candidate, work: Workload, s: Setting, params: int,
              min_gmu: float, pick_rollout_tp: bool) -> Candidate | None:
    """The largest gmu step (≥ min_gmu) at which the rollout phase fits, with the smallest
    rollout TP that leaves vLLM room for KV cache. The rollout phase is linear in gmu, so one
    evaluation at gmu 0 gives the headroom."""
    rollout = worst_rollout_phase(model, replace(cand, gpu_memory_utilization=0.0), work)
    # Everything but the engine's claim (whose parts are floored at gmu 0) stays as it is.
    resident = sum(t.gib for t in rollout.terms if t.name not in ENGINE_TERMS)
    headroom = _room(s) - resident
    steps = [g for g in GMU_STEPS if g >= min_gmu and g * s.gpu.memory_gib <= headroom + 1e-9]
    if not steps:
        return None
    rollout_tp = (_rollout_tp(model, s, params, steps[0]) or cand.rollout_tp) if pick_rollout_tp else cand.rollout_tp
    trial = _evaluate(model, replace(cand, gpu_memory_utilization=steps[0], rollout_tp=rollout_tp), work, s)
    engine = engine_memory(model, trial, work, responses_per_step=s.train_batch_size * s.n, total_params=params)
    return trial if engine.fits else None


Size = tuple[str, int]  # ("token_budget", tokens) or ("micro_batch_per_gpu", responses)


@dataclass(frozen=True, slots=True)
class _Sizing:
    """What sizing one layout reads at every step: the model, the search, the workload the layout's
    DP gives, and what the caller pinned."""

    model: ModelFacts
    s: Setting
    work: Workload
    params: int
    pins: Pins  # what the caller pinned (gen plan/recipe --micro-batch-per-gpu ..., a shipped script)

    def evaluate(self, cand: Candidate) -> Candidate:
        return _evaluate(self.model, cand, self.work, self.s)

    def score(self, cand: Candidate) -> Candidate:
        return _scored(self.model, cand, self.work, self.s, self.params)

    def training_fits(self, cand: Candidate, quick: bool = False) -> tuple[bool, Candidate | None]:
        """Whether the training phases fit (at the pinned gmu: every phase), with the evaluation
        (`quick`: without it, and given up at the first phase over the limit)."""
        pinned_gmu = self.pins.gpu_memory_utilization
        if quick and pinned_gmu is None:
            # At MIN_GMU, as below; no phase the check reads depends on the gmu (only the rollout's
            # claim does), so the candidate's own stands in for it.
            return training_phases_fit(self.model, cand, self.work, _room(self.s)), None
        probe = self.evaluate(replace(cand, gpu_memory_utilization=MIN_GMU if pinned_gmu is None else pinned_gmu))
        if pinned_gmu is not None:
            return probe.fits, probe
        return all(p.gib <= _room(self.s) for p in probe.memory if p.phase != "rollout"), probe


def size_layout(model: ModelFacts, layout: Layout, s: Setting, *, params: int,
                pins: Pins = NO_PINS, prune: bool = True) -> tuple[Candidate | None, str]:
    """Choose the knobs for one valid layout; (candidate, "") or (closest miss, reason).

    The layout's DP must split the batch; the weights and grads alone must fit (`prune`); a
    rollout TP must exist. Everything pinned (a shipped script) is evaluated as given; else the
    relief ladder is climbed, each rung at the largest size and gmu that fit."""
    dp = layout_dp(layout.gpus, layout)
    batch = _batch_split(s, dp)
    if isinstance(batch, str):
        return None, batch
    mini, per_rank_mini = batch
    work = _workload(s, per_rank_mini)
    floor = _static_floor_gib(model, layout, work)
    if prune and floor > usable_gib(s.gpu.memory_gib):
        return None, (f"does not fit: weights+grads alone need {floor:.1f} GiB per GPU during the update "
                      f"(> {usable_gib(s.gpu.memory_gib):.1f})")
    rollout_tp = pins.rollout_tp or _rollout_tp(model, s, params, max(GMU_STEPS))
    if rollout_tp is None:
        return None, "no rollout TP divides the attention heads and the GPUs"
    base = Candidate(**layout.sizes(), rollout_tp=rollout_tp, ppo_mini_batch_size=mini)
    # Dynamic batches where verl's scripts use them, and wherever the calibrated step time says
    # fixed micro-batches cost more (they compute part of the padding: static_pad_share > 0).
    dynamic = s.seq_len >= DYNAMIC_FROM_SEQ or params >= DYNAMIC_FROM_PARAMS or calibrated().static_pad_share > 0 \
        if pins.use_dynamic_bsz is None else pins.use_dynamic_bsz
    sizing = _Sizing(model, s, work, params, pins)
    if pins.offload is not None and pins.gpu_memory_utilization is not None and (
            pins.micro_batch_per_gpu is not None or pins.token_budget is not None):
        # Everything given (a shipped script): evaluate exactly that, against usable memory.
        sizing = _Sizing(model, replace(s, spare=0.0), work, params, pins)
        cand = replace(base, use_dynamic_bsz=dynamic, **pins.knobs())
        if dynamic and cand.log_prob_token_budget is None:
            cand = replace(cand, log_prob_token_budget=cand.token_budget)
        return sizing.score(sizing.evaluate(cand)), ""
    sizes = _sizes(layout, s, pins, dynamic, per_rank_mini)
    if not sizes:
        return None, f"no micro batch fits the interleaved schedule (per-rank mini {per_rank_mini}, PP {layout.pp})"
    climbed, reason = _climb(sizing, _rungs(base, _pinned_ladder(pins), dynamic, pins), sizes)
    if climbed is None or not climbed.fits or _pinned_ladder(pins) != _LADDER:
        return climbed, reason  # relief the user pinned is theirs
    return _trim_relief(sizing, climbed, sizes), ""


def _trim_relief(z: _Sizing, cand: Candidate, sizes: list[Size]) -> Candidate:
    """Offload and recompute only when needed (practice.relief_is_needed): the ladder stacks each
    step on the ones before, so each one the chosen rung holds is dropped again when the layout
    still fits without it, keeps the rollout's memory (_keeps_rollout) and is not estimated
    slower beyond the step-time band. Tried in the ranking's order of cost (ranking.RANK_CRITERIA:
    the CPU optimizer, then recompute, then the offload flags), so a cheap step is not dropped
    first and then needed to drop a dear one: with the whole optimizer on the host, the
    optimizer-offload flag moves nothing and would go first, yet it is what lets the layout drop
    the CPU optimizer (Qwen3-235B on 128 H20: param+opt+recompute, not param+CPU optimizer)."""
    for flag in ("cpu_optimizer", "recompute", "param", "optimizer"):
        off = cand.offload
        if not (getattr(off, flag) if flag != "recompute" else cand.recompute):
            continue
        if flag == "recompute":
            lighter = replace(cand, recompute=False)
        elif flag == "param":
            lighter = replace(cand, offload=off._replace(param=False, grad=False))
        elif flag == "optimizer":
            lighter = replace(cand, offload=off._replace(optimizer=False))
        else:
            lighter = replace(cand, offload=off._replace(cpu_optimizer=False, cpu_optimizer_fraction=0.0))
        trial, _ = _climb(z, [replace(lighter, memory=(), score=None)], sizes)
        if (trial is not None and trial.fits and trial.score is not None and cand.score is not None
                and (trial.gpu_memory_utilization >= cand.gpu_memory_utilization or _keeps_rollout(z, trial))
                and within_step_band(cand.score.total_s, trial.score.total_s)):
            cand = trial
    return cand


def _batch_split(s: Setting, dp: int) -> tuple[int, int] | str:
    """(mini batch, per-rank mini batch) this DP trains with, or why it cannot split the batch."""
    if (s.train_batch_size * s.n) % dp:
        return (f"responses per step P·n = {s.train_batch_size}·{s.n} = {s.train_batch_size * s.n} "
                f"not divisible by DP {dp}")
    mini = mini_for(s.train_batch_size, s.n, dp, s.mini)
    if mini is None:
        return f"no ppo_mini_batch_size divides train_batch_size {s.train_batch_size} for DP {dp}"
    if (mini * s.n) % dp:  # the batch is kept as given: this DP cannot split it
        return f"ppo_mini_batch_size·n = {mini}·{s.n} = {mini * s.n} not divisible by DP {dp}"
    return mini, per_rank_mini_batch(mini, s.n, dp)


def _workload(s: Setting, per_rank_mini: int) -> Workload:
    has_ref, has_critic = algo_roles(s.algo)
    return Workload(gpus=s.gpus, gpu_memory_gib=s.gpu.memory_gib, prompt_len=s.prompt_len,
                    response_len=s.response_len, per_rank_mini_batch=per_rank_mini,
                    has_ref=has_ref, has_critic=has_critic,
                    max_num_batched_tokens=max(VLLM_MAX_NUM_BATCHED_TOKENS, s.seq_len),
                    responses_per_step=s.train_batch_size * s.n,
                    mean_response_len=s.mean_response_len, gpus_per_node=s.gpus_per_node,
                    sync_bucket_mib=s.rollout.sync_bucket_mib, max_num_seqs=s.rollout.max_num_seqs)


def _pinned_ladder(pins: Pins) -> tuple[tuple[bool, bool, float, bool], ...]:
    """The rungs to climb: a pinned offload is the one rung, else the ladder the pins leave."""
    off = pins.offload
    if off is None:
        return _ladder(pins)
    return ((off.param, off.optimizer, off.cpu_optimizer_fraction if off.cpu_optimizer else 0.0,
             bool(pins.recompute)),)


def _sizes(layout: Layout, s: Setting, pins: Pins, dynamic: bool, per_rank_mini: int) -> list[Size]:
    """The token budgets (dynamic) or micro batches to try, largest first; a pinned one alone."""
    if dynamic:
        return [("token_budget", b) for b in ([pins.token_budget] if pins.token_budget is not None
                                              else _budget_options(s.seq_len, layout.cp, s.least_budget))]
    micros = ([pins.micro_batch_per_gpu] if pins.micro_batch_per_gpu is not None
              else _micro_options(per_rank_mini, s.seq_len, layout.pp, layout.vpp))
    return [("micro_batch_per_gpu", m) for m in micros]


def _rungs(base: Candidate, ladder: tuple[tuple[bool, bool, float, bool], ...], dynamic: bool,
           pins: Pins) -> list[Candidate]:
    out = []
    for param_off, opt_off, cpu_fraction, recompute in ladder:
        offload = Offload(param=param_off, grad=param_off, optimizer=opt_off,
                          cpu_optimizer=cpu_fraction > 0, cpu_optimizer_fraction=cpu_fraction)
        out.append(replace(base, offload=offload, recompute=recompute, use_dynamic_bsz=dynamic,
                           use_fused_kernels=bool(pins.use_fused_kernels)))
    return out


def _with_size(rung: Candidate, size: Size) -> Candidate:
    key, value = size
    if key == "token_budget":
        return replace(rung, token_budget=value, log_prob_token_budget=value,
                       micro_batch_per_gpu=1, log_prob_micro_batch_per_gpu=1)
    return replace(rung, micro_batch_per_gpu=value, log_prob_micro_batch_per_gpu=value)


def _climb(z: _Sizing, rungs: list[Candidate], sizes: list[Size], quick: bool = True) -> tuple[Candidate | None, str]:
    """The first rung (cheapest relief) where the training phases fit at some size and the
    rollout keeps what it needs (_keeps_rollout); else the first that fits at a lower gmu; else the
    closest miss.

    `quick`: settings whose training phases do not fit are dropped at the first phase over the
    limit; only a miss needs them in full (the closest one), so then the climb is done again."""
    closest: Candidate | None = None
    every_rung = rungs
    # The strongest rung at the smallest size is the cheapest proof that nothing fits.
    ok, probe = z.training_fits(_with_size(rungs[-1], sizes[-1]), quick)
    if not ok:
        closest = probe
        rungs = []
    fallback: Candidate | None = None  # fits, but only at a gmu that starves the rollout
    for rung in rungs:
        ok, smallest = z.training_fits(_with_size(rung, sizes[-1]), quick)
        if not ok:
            closest = _closer(closest, smallest)
            continue
        for size in sizes:
            cand = _with_size(rung, size)
            # The smallest size was evaluated above; a larger size's failed probe is not its result.
            ok, probe = (True, smallest) if size == sizes[-1] else z.training_fits(cand, quick)
            if not ok:
                continue
            sized: Candidate | None
            if z.pins.gpu_memory_utilization is not None:
                assert probe is not None  # a pinned gmu is evaluated in full (training_fits)
                sized = probe
            else:
                sized = _best_gmu(z.model, cand, z.work, z.s, z.params, MIN_GMU, z.pins.rollout_tp is None)
                if sized is None:
                    closest = _closer(closest, probe)
                    break  # a smaller size does not change the rollout phase
            if size[0] == "token_budget":
                sized = _widen_log_prob_budget(z.model, sized, z.work, z.s)
            if z.pins.gpu_memory_utilization is not None or _keeps_rollout(z, sized):
                return _fastest_budget(z, z.score(sized), rung, sizes[sizes.index(size) + 1:]), ""
            fallback = fallback or sized
            break
    if fallback is not None:
        return z.score(fallback), ""
    if quick:  # a miss: the closest one needs every setting tried in full
        return _climb(z, every_rung, sizes, quick=False)
    if closest is None:
        return None, "no setting fits"
    worst = max(closest.memory, key=lambda p: p.gib)
    return (z.score(closest),
            f"does not fit even with every offload and recompute: {worst.phase} needs {worst.gib:.1f} GiB "
            + (f"> {_room(z.s):.1f} GiB ({closest.limit_gib:.1f} usable less {z.s.spare:.0%} spare)" if z.s.spare
               else f"> {closest.limit_gib:.1f} GiB usable"))


def _fastest_budget(z: _Sizing, first: Candidate, rung: Candidate, smaller: list[Size]) -> Candidate:
    """The largest token budget that fits is not the fastest under a pipeline: its few micro-batches
    leave the 1F1B bubble ((PP - 1) / (M·VPP) of the compute, step_time) unfilled. Through a
    pipeline, the smaller budgets that fit (each still holds the practice's least: two sequences,
    or verl's example's budget) are scored too, and the fastest wins when it is estimated faster
    than the largest beyond the step-time band; inside it, a tie, the largest stays (fewer, fuller
    micro-batches). Each is judged against the largest, not the one before it, so small steps do
    not chain past the band. DeepSeek-V3 on 512 H20: 12,288 tokens (verl's 11,680 to the 1k), not
    35,840, whose few micro-batches left PP16's bubble at ~1,000 s."""
    best = first
    if rung.pp <= 1 or not smaller or smaller[0][0] != "token_budget" or first.score is None:
        return best
    first_s = first.score.total_s
    for size in smaller:
        cand = _with_size(rung, size)
        if not z.training_fits(cand, True)[0]:
            continue
        if z.pins.gpu_memory_utilization is not None:
            sized = z.training_fits(cand)[1]
        else:
            sized = _best_gmu(z.model, cand, z.work, z.s, z.params, TARGET_GMU, z.pins.rollout_tp is None)
        if sized is None:
            continue
        scored = z.score(_widen_log_prob_budget(z.model, sized, z.work, z.s))
        assert best.score is not None
        if scored.score is not None and scored.score.total_s < best.score.total_s \
                and not within_step_band(scored.score.total_s, first_s):
            best = scored
    return best


def _static_floor_gib(model: ModelFacts, layout: Layout, work: Workload) -> float:
    """bf16 weights + fp32 grads of the heaviest stage: no knob lowers these in the update."""
    probe = Candidate(tp=layout.tp, pp=layout.pp, cp=layout.cp, ep=layout.ep, etp=layout.etp)
    counts = stage_layer_counts(model.num_layers, layout.pp, layout.first_stage_layers, layout.last_stage_layers)
    heaviest = max(stage_params(model, probe, stage, counts).total for stage in {0, layout.pp - 1})
    return 6 * heaviest / GIB


def _closer(current: Candidate | None, new: Candidate | None) -> Candidate | None:
    if new is None:
        return current
    if current is None or new.peak_gib < current.peak_gib:
        return new
    return current


def _widen_log_prob_budget(model: ModelFacts, cand: Candidate, work: Workload, s: Setting) -> Candidate:
    """Forward-only passes keep no activations: give them 2× the token budget when that fits."""
    wider = _evaluate(model, replace(cand, log_prob_token_budget=(cand.token_budget or 0) * 2), work, s)
    return wider if wider.fits else cand


def _scored(model: ModelFacts, cand: Candidate, work: Workload, s: Setting, params: int) -> Candidate:
    """The candidate with its estimated step time: all the ranking reads (the search ranks every
    sized layout and describes only the ones it shows, `describe_candidate`)."""
    engine = engine_memory(model, cand, work, responses_per_step=s.train_batch_size * s.n, total_params=params)
    return replace(cand, score=estimate_step_time(cand, model, s.gpu, work, kv_tokens=engine.kv_tokens))


def describe_candidate(model: ModelFacts, cand: Candidate, s: Setting, *, params: int) -> Candidate:
    """A sized candidate as shown: memory with notes and rounded terms, why it was sized so, warnings."""
    dp = layout_dp(s.gpus, cand)
    batch = _batch_split(s, dp)
    assert not isinstance(batch, str), "a sized candidate's DP splits the batch"
    per_rank_mini = batch[1]
    work = _workload(s, per_rank_mini)
    score = cand.score
    assert score is not None, "sized candidates are scored"
    cand = replace(cand, memory=phase_memory(model, cand, work))  # with notes, rounded
    engine = engine_memory(model, cand, work, responses_per_step=s.train_batch_size * s.n, total_params=params)
    why = [f"{dp_equation(s.gpus, cand.tp, cand.pp, cand.cp)}; "
           f"per-rank mini batch {cand.ppo_mini_batch_size}·{s.n}/{dp} = {per_rank_mini}"]
    flags = cand.relief()
    why.append(RELIEF_WHY + (", ".join(flags) if flags else "none needed"))
    peak = max(cand.memory, key=lambda p: p.gib)
    why.append(f"peak {peak.gib:.1f} GiB in {peak.phase} of {cand.limit_gib:.1f} GiB usable")
    why.append(f"rollout TP {cand.rollout_tp}: weights {engine.weights_gib:.1f} GiB, KV cache "
               f"{engine.kv_cache_gib:.1f} GiB per GPU")
    warnings = []
    if engine.kv_cache_gib <= 0:
        warnings.append("the rollout engine has no room for KV cache at this gpu_memory_utilization")
    elif engine.resident_fraction < 1:
        warnings.append(f"KV cache holds {engine.resident_fraction:.0%} of a replica's rollout batch at once "
                        f"(vLLM will queue the rest)")
    update = cand.phase("update")
    if model.is_moe and not cand.recompute and update is not None and \
            cand.limit_gib - update.gib < MOE_THIN_MARGIN * cand.limit_gib:
        # Routed-expert activations are counted at Megatron-core's even routing (1.0x, no discount;
        # docs/memory-model.md): a real step's uneven routing can hold more on one GPU than that.
        warnings.append(f"MoE update fits with {cand.limit_gib - update.gib:.1f} GiB to spare and no recompute; "
                        "expert activations assume even routing (an uneven step holds more): --recompute buys "
                        f"room for ~{score.update_s / 3:.0f} s more per step")
    k = calibrated()
    _, response = expected_lengths(work, k, model.name)
    share, measured = response_share(k, model.name)
    source = "" if work.mean_response_len else (
        f" ({share:.0%} of the maximum, as this cluster's runs measured; --mean-response-len to change)" if measured
        else f" ({share:.0%} of the maximum, the published median; --mean-response-len to change)")
    why.append(f"step ~{score.total_s:.0f} s estimated, responses counted at {response:.0f} of {work.response_len} "
               f"tokens expected{source}")
    return replace(cand, why=tuple(why), warnings=tuple(warnings))
