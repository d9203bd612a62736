"""Layout search: enumerate Megatron layouts, keep the valid ones, size each, rank them.

Validity comes from `generator.derive` (the same predicates the rules use); memory from
`generator.plan.memory`. For every valid layout the knobs are chosen by a fixed ladder — the order
docs/memory-model.md#knobs-in-order-of-cost gives — stopping at the first rung where every phase fits:
  1. nothing offloaded; 2. param (+grad, +ref) offload; 3. + optimizer offload;
  4. + Megatron CPU optimizer at 50 %, then 100 %; 5. + full recompute;
and on each rung the largest micro batch / token budget that fits, then the largest
`gpu_memory_utilization` that fits next to what stays resident.

Ranking (lexicographic): fits; shorter estimated step time (generator.plan.step_time, calibrated
on published verl runs; times within ~3 % tie); then, to break ties: no CPU optimizer; no
recompute; fewer offload flags (no offload where the layout fits without); micro batches of at
least ~4k tokens; expert groups inside a node; smaller TP·PP·CP (more data parallelism); smaller
pipeline bubble; more rollout memory;
bigger micro batch; smaller rollout TP. The search visits layouts by the best key they could
reach (their step-time floor: no offload, dynamic batches, the best rollout TP) and stops once
the top candidates beat the next layout's floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from generator.derive import Layout, Parallelism, layout_problems, rollout_problems, vpp_micro_batch_problem
from generator.errors import InputError
from generator.hardware import GpuSpec
from generator.model import ModelFacts, total_params
from generator.plan.activations import MOE_ACTIVATION_FACTOR
from generator.plan.batch import batch_hint, batch_sizes, mini_for
from generator.plan.candidate import Candidate, Offload, Plan
from generator.plan.engine import ENGINE_TERMS, engine_memory
from generator.plan.memory import MIN_GMU, phase_memory, usable_gib
from generator.plan.release_defaults import BASELINE, RolloutDefaults, rollout_defaults
from generator.plan.stages import stage_layer_counts, stage_params
from generator.plan.step_time import calibrated, estimate_step_time, expected_lengths
from generator.plan.workload import GIB, Workload, algo_roles
from generator.verl import ALGORITHMS

GMU_STEPS = (0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3)
TARGET_GMU = 0.5  # below this the KV cache is small; prefer offloading Megatron state first
DYNAMIC_FROM_SEQ = 4096  # verl's long-response scripts all use dynamic batching
DYNAMIC_FROM_PARAMS = 14e9  # ... and its scripts for models of 14B and more
MAX_PP = 16
EFFICIENT_MICRO_TOKENS = 4096
ROLLOUT_WEIGHT_SHARE = 0.6
MOE_THIN_MARGIN = 0.1  # an MoE update with less than this share of the GPU to spare gets a recompute note
IN_NODE_WEIGHT_SHARE = 0.8  # a replica inside a node may give its weights this much of the engine budget
MAX_EP = 32  # verl's largest shipped EP (DeepSeek-V3 on 512 GPUs); all-to-all beyond is slow

# (param, optimizer, cpu-optimizer fraction, recompute)
_LADDER: tuple[tuple[bool, bool, float, bool], ...] = (
    (False, False, 0.0, False),
    (True, False, 0.0, False),
    (True, True, 0.0, False),
    (True, True, 0.5, False),
    (True, True, 1.0, False),
    (True, True, 1.0, True),
)


# Memory relief a user may pin one by one (gen plan/recipe --param-offload ...): the ladder
# keeps only the rungs that agree, or the one rung the pins describe.
LADDER_PINS = ("param_offload", "optimizer_offload", "cpu_optimizer_fraction", "recompute")


def _ladder(pins: dict) -> tuple[tuple[bool, bool, float, bool], ...]:
    if not pins:
        return _LADDER
    fields = dict(zip(LADDER_PINS, range(4)))
    kept = tuple(rung for rung in _LADDER if all(rung[fields[k]] == v for k, v in pins.items()))
    if kept:
        return kept
    return ((bool(pins.get("param_offload", False)), bool(pins.get("optimizer_offload", False)),
             float(pins.get("cpu_optimizer_fraction", 0.0)), bool(pins.get("recompute", False))),)


# ---------------------------------------------------------------------------------------------
# Enumeration


def _powers_of_two(limit: int) -> list[int]:
    out, value = [], 1
    while value <= limit:
        out.append(value)
        value *= 2
    return out


def _stage_splits(layers: int, pp: int) -> list[tuple[int | None, int | None]]:
    """Even split when it divides, else uneven first/last stage layer counts."""
    if pp == 1:
        return [(None, None)]
    if layers % pp == 0:
        return [(None, None)]
    splits: list[tuple[int | None, int | None]] = []
    for per_stage in (layers // pp, -(-layers // pp)):
        rest = layers - (pp - 1) * per_stage
        # Keep the odd stage short or nearly even: a 16-layer last stage behind fifteen
        # 3-layer stages (DeepSeek-V3 on PP16) would hold the whole pipeline back.
        if 1 <= rest <= per_stage + 1:
            splits.append((None, rest))  # a short (or long) last stage
            splits.append((rest, None))  # a short first stage: it also holds the most activations
        both = layers - (pp - 2) * per_stage
        if pp > 2 and both >= 2 and both % 2 == 0:
            splits.append((both // 2, both // 2))
    return list(dict.fromkeys(splits))


@dataclass(frozen=True)
class _Setting:
    gpus: int
    gpus_per_node: int
    gpu: GpuSpec
    prompt_len: int
    response_len: int
    n: int
    algo: str
    train_batch_size: int
    mini: int
    mean_response_len: int = 0  # expected response tokens for the step-time score (0: a share of the max)
    rollout: RolloutDefaults = BASELINE

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.response_len


def _layouts(model: ModelFacts, s: _Setting) -> list[Layout]:
    # A TP group must sit inside one node: TP divides the GPUs of a node.
    tps = [t for t in _powers_of_two(s.gpus_per_node) if s.gpus % t == 0 and s.gpus_per_node % t == 0]
    cps = [1] + ([2] if s.seq_len >= 4096 else []) + ([4] if s.seq_len >= 16384 else [])
    out: list[Layout] = []
    for tp in tps:
        for cp in cps:
            for pp in range(1, min(MAX_PP, model.num_layers) + 1):
                if s.gpus % (tp * pp * cp):
                    continue
                eps: list[tuple[int, int | None]] = [(1, None)]
                if model.is_moe:
                    eps = [(ep, 1 if ep > 1 else None) for ep in _powers_of_two(min(model.num_experts or 1, MAX_EP))
                           if (model.num_experts or 1) % ep == 0 and ep <= s.gpus // pp]
                # Interleaving pays off on short pipelines; deeper ones are already bubble-bound by M.
                vpps = [None] + ([2] if 1 < pp <= 4 else [])
                for first, last in _stage_splits(model.num_layers, pp):
                    for ep, etp in eps:
                        for vpp in vpps:
                            out.append(Layout(gpus=s.gpus, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp, vpp=vpp,
                                              first_stage_layers=first, last_stage_layers=last,
                                              gpus_per_node=s.gpus_per_node))
    return out


def describe_layout(layout: Parallelism) -> str:
    parts = [f"TP{layout.tp}", f"PP{layout.pp}"]
    if layout.vpp and layout.vpp > 1:
        parts.append(f"VPP{layout.vpp}")
    if layout.cp > 1:
        parts.append(f"CP{layout.cp}")
    if layout.ep > 1:
        parts.append(f"EP{layout.ep}")
    if layout.etp is not None:
        parts.append(f"ETP{layout.etp}")
    if layout.first_stage_layers or layout.last_stage_layers:
        parts.append(f"first/last {layout.first_stage_layers or '-'}/{layout.last_stage_layers or '-'}")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------
# Sizing one layout


def _rollout_tp(model: ModelFacts, s: _Setting, params: int, gmu: float) -> int | None:
    """Smallest rollout TP whose weights take ≤ ROLLOUT_WEIGHT_SHARE of the engine budget, so
    the KV cache keeps the rest (verl's rule of thumb is GPU_mem·gmu·TP > 2·N_params)."""
    budget = gmu * s.gpu.memory_gib * 2**30
    options = [r for r in _powers_of_two(max(s.gpus, 1)) if s.gpus % r == 0
               and (s.gpus_per_node % r == 0 or r % s.gpus_per_node == 0)  # no replica straddles a node
               and not rollout_problems(s.gpus, r, gpus_per_node=s.gpus_per_node, model=model)]
    in_node = [r for r in options if r <= s.gpus_per_node]
    for r in in_node:
        if 2 * params / r <= ROLLOUT_WEIGHT_SHARE * budget:
            return r
    # verl keeps a replica inside one node (Qwen3-235B: TP8, not 16): a decode step's all-reduces
    # over the network cost more than a smaller KV cache, as long as the weights leave some room.
    roomy = [r for r in in_node if 2 * params / r <= IN_NODE_WEIGHT_SHARE * budget]
    if roomy:
        return roomy[0]
    for r in options:
        if 2 * params / r <= ROLLOUT_WEIGHT_SHARE * budget:
            return r
    return options[-1] if options else None


def _micro_options(per_rank_mini: int, seq_len: int, pp: int, vpp: int | None) -> list[int]:
    """Static micro batches, largest first: divisors of the per-rank mini batch, ≤ ~16k tokens."""
    cap = max(1, 16384 // seq_len)
    out = []
    for micro in range(min(per_rank_mini, cap), 0, -1):
        if per_rank_mini % micro:
            continue
        if vpp and vpp > 1 and vpp_micro_batch_problem(per_rank_mini // micro, pp):
            continue
        out.append(micro)
    return out


def _budget_options(seq_len: int, cp: int) -> list[int]:
    """Dynamic token budgets per GPU, largest first; budget·CP must hold one whole sequence."""
    floor = -(-seq_len // cp)
    out = []
    for multiple in (3, 2, 1.5, 1):
        value = int(math.ceil(seq_len * multiple / cp / 1024) * 1024)
        out.append(max(value, floor))
    return sorted(set(out), reverse=True)


def _evaluate(model: ModelFacts, cand: Candidate, work: Workload, s: _Setting) -> Candidate:
    memory = phase_memory(model, cand, work, detail=False)
    limit = usable_gib(s.gpu.memory_gib)
    fits = all(p.gib <= limit for p in memory)
    return replace(cand, memory=memory, limit_gib=limit, fits=fits)


def _best_gmu(model: ModelFacts, cand: Candidate, work: Workload, s: _Setting, params: int,
              min_gmu: float, pick_rollout_tp: bool) -> Candidate | None:
    """The largest gmu step (≥ min_gmu) at which the rollout phase fits, with the smallest
    rollout TP that leaves vLLM room for KV cache. The rollout phase is linear in gmu, so one
    evaluation at gmu 0 gives the headroom."""
    at_zero = _evaluate(model, replace(cand, gpu_memory_utilization=0.0), work, s)
    rollout = at_zero.phase("rollout")
    # Everything but the engine's claim (whose parts are floored at gmu 0) stays as it is.
    resident = sum(t.gib for t in rollout.terms if t.name not in ENGINE_TERMS) if rollout else 0.0
    headroom = at_zero.limit_gib - resident
    steps = [g for g in GMU_STEPS if g >= min_gmu and g * s.gpu.memory_gib <= headroom + 1e-9]
    if not steps:
        return None
    trial = replace(cand, gpu_memory_utilization=steps[0])
    if pick_rollout_tp:
        trial = replace(trial, rollout_tp=_rollout_tp(model, s, params, steps[0]) or cand.rollout_tp)
    trial = _evaluate(model, trial, work, s)
    engine = engine_memory(model, trial, work, responses_per_step=s.train_batch_size * s.n, total_params=params)
    return trial if engine.fits else None


def size_layout(model: ModelFacts, layout: Layout, s: _Setting, *, params: int,
                overrides: dict | None = None, prune: bool = True) -> tuple[Candidate | None, str]:
    """Choose the knobs for one valid layout; (candidate, "") or (closest miss, reason)."""
    overrides = dict(overrides or {})
    dp = layout.gpus // (layout.tp * layout.pp * layout.cp)
    if (s.train_batch_size * s.n) % dp:
        return None, (f"responses per step P·n = {s.train_batch_size}·{s.n} = {s.train_batch_size * s.n} "
                      f"not divisible by DP {dp}")
    mini = mini_for(s.train_batch_size, s.n, dp, s.mini)
    if mini is None:
        return None, f"no ppo_mini_batch_size divides train_batch_size {s.train_batch_size} for DP {dp}"
    if (mini * s.n) % dp:  # the batch is kept as given: this DP cannot split it
        return None, f"ppo_mini_batch_size·n = {mini}·{s.n} = {mini * s.n} not divisible by DP {dp}"
    per_rank_mini = mini * s.n // dp
    has_ref, has_critic = algo_roles(s.algo)
    work = Workload(gpus=s.gpus, gpu_memory_gib=s.gpu.memory_gib, prompt_len=s.prompt_len,
                    response_len=s.response_len, per_rank_mini_batch=per_rank_mini,
                    has_ref=has_ref, has_critic=has_critic,
                    max_num_batched_tokens=max(8192, s.seq_len), responses_per_step=s.train_batch_size * s.n,
                    mean_response_len=s.mean_response_len, gpus_per_node=s.gpus_per_node,
                    sync_bucket_mib=s.rollout.sync_bucket_mib, max_num_seqs=s.rollout.max_num_seqs)
    floor = _static_floor_gib(model, layout, work)
    if prune and floor > usable_gib(s.gpu.memory_gib):
        return None, (f"does not fit: weights+grads alone need {floor:.1f} GiB per GPU during the update "
                      f"(> {usable_gib(s.gpu.memory_gib):.1f})")
    fixed_rollout_tp = overrides.pop("rollout_tp", None)
    rollout_tp = fixed_rollout_tp or _rollout_tp(model, s, params, max(GMU_STEPS))
    if rollout_tp is None:
        return None, "no rollout TP divides the attention heads and the GPUs"
    base = Candidate(**layout.sizes(), rollout_tp=rollout_tp, ppo_mini_batch_size=mini)
    # Dynamic batches where verl's scripts use them, and wherever the calibrated step time says
    # fixed micro-batches cost more (they compute part of the padding: static_pad_share > 0).
    dynamic = overrides.pop("use_dynamic_bsz", s.seq_len >= DYNAMIC_FROM_SEQ or params >= DYNAMIC_FROM_PARAMS
                            or calibrated().static_pad_share > 0)
    fixed_knobs = {k: overrides[k] for k in ("micro_batch_per_gpu", "log_prob_micro_batch_per_gpu", "token_budget",
                                              "log_prob_token_budget", "offload", "recompute",
                                              "gpu_memory_utilization", "use_fused_kernels", "enforce_eager")
                  if k in overrides}
    ladder_pins = {k: overrides[k] for k in LADDER_PINS if k in overrides}
    if "offload" in fixed_knobs and isinstance(fixed_knobs["offload"], dict):
        fixed_knobs["offload"] = Offload(**fixed_knobs["offload"])
    if {"offload", "gpu_memory_utilization"} <= fixed_knobs.keys() and (
            "micro_batch_per_gpu" in fixed_knobs or "token_budget" in fixed_knobs):
        # Everything given (a shipped script): evaluate exactly that.
        cand = replace(base, use_dynamic_bsz=dynamic, **fixed_knobs)
        if dynamic and cand.log_prob_token_budget is None:
            cand = replace(cand, log_prob_token_budget=cand.token_budget)
        cand = _evaluate(model, cand, work, s)
        return _annotate(model, cand, work, s, params, per_rank_mini, dp), ""

    closest: Candidate | None = None
    ladder = _ladder(ladder_pins)
    if "offload" in fixed_knobs:
        off = fixed_knobs["offload"]
        ladder = ((off.param, off.optimizer, off.cpu_optimizer_fraction if off.cpu_optimizer else 0.0,
                   bool(fixed_knobs.get("recompute", False))),)
    if dynamic:
        sizes = [("token_budget", b) for b in ([fixed_knobs["token_budget"]] if "token_budget" in fixed_knobs
                                                else _budget_options(s.seq_len, layout.cp))]
    else:
        micros = ([fixed_knobs["micro_batch_per_gpu"]] if "micro_batch_per_gpu" in fixed_knobs
                  else _micro_options(per_rank_mini, s.seq_len, layout.pp, layout.vpp))
        if not micros:
            return None, f"no micro batch fits the interleaved schedule (per-rank mini {per_rank_mini}, PP {layout.pp})"
        sizes = [("micro_batch_per_gpu", m) for m in micros]

    def with_size(rung: Candidate, key: str, value: int) -> Candidate:
        if key == "token_budget":
            return replace(rung, token_budget=value, log_prob_token_budget=value,
                           micro_batch_per_gpu=1, log_prob_micro_batch_per_gpu=1)
        return replace(rung, micro_batch_per_gpu=value, log_prob_micro_batch_per_gpu=value)

    def training_fits(cand: Candidate) -> tuple[bool, Candidate]:
        probe = _evaluate(model, replace(cand, gpu_memory_utilization=fixed_knobs.get("gpu_memory_utilization",
                                                                                          MIN_GMU)), work, s)
        if "gpu_memory_utilization" in fixed_knobs:
            return probe.fits, probe
        return all(p.gib <= probe.limit_gib for p in probe.memory if p.phase != "rollout"), probe

    rungs = []
    for param_off, opt_off, cpu_fraction, recompute in ladder:
        offload = Offload(param=param_off, grad=param_off, optimizer=opt_off,
                          cpu_optimizer=cpu_fraction > 0, cpu_optimizer_fraction=cpu_fraction)
        rungs.append(replace(base, offload=offload, recompute=recompute, use_dynamic_bsz=dynamic,
                             use_fused_kernels=bool(fixed_knobs.get("use_fused_kernels", False))))
    # The strongest rung at the smallest size is the cheapest proof that nothing fits.
    ok, probe = training_fits(with_size(rungs[-1], *sizes[-1]))
    if not ok:
        closest = probe
        rungs = []
    fallback: Candidate | None = None  # fits, but only at a gmu below TARGET_GMU
    for rung in rungs:
        ok, probe = training_fits(with_size(rung, *sizes[-1]))
        if not ok:
            closest = _closer(closest, probe)
            continue
        for key, value in sizes:
            cand = with_size(rung, key, value)
            ok, probe = (True, probe) if (key, value) == sizes[-1] else training_fits(cand)
            if not ok:
                continue
            if "gpu_memory_utilization" in fixed_knobs:
                sized = probe
            else:
                sized = _best_gmu(model, cand, work, s, params, MIN_GMU, fixed_rollout_tp is None)
                if sized is None:
                    closest = _closer(closest, probe)
                    break  # a smaller size does not change the rollout phase
            if key == "token_budget":
                sized = _widen_log_prob_budget(model, sized, work, s)
            if sized.gpu_memory_utilization >= TARGET_GMU or "gpu_memory_utilization" in fixed_knobs:
                return _annotate(model, sized, work, s, params, per_rank_mini, dp), ""
            fallback = fallback or sized
            break
    if fallback is not None:
        return _annotate(model, fallback, work, s, params, per_rank_mini, dp), ""
    if closest is None:
        return None, "no setting fits"
    worst = max(closest.memory, key=lambda p: p.gib)
    return (_annotate(model, closest, work, s, params, per_rank_mini, dp),
            f"does not fit even with every offload and recompute: {worst.phase} needs {worst.gib:.1f} GiB "
            f"> {closest.limit_gib:.1f} GiB usable")


def _static_floor_gib(model: ModelFacts, layout: Layout, work: Workload) -> float:
    """bf16 weights + fp32 grads of the heaviest stage: no knob lowers these in the update."""
    probe = Candidate(tp=layout.tp, pp=layout.pp, cp=layout.cp, ep=layout.ep, etp=layout.etp)
    counts = stage_layer_counts(model.num_layers, layout.pp, layout.first_stage_layers, layout.last_stage_layers)
    heaviest = max(stage_params(model, probe, stage, counts).total for stage in {0, layout.pp - 1})
    return 6 * heaviest / GIB


def _closer(current: Candidate | None, new: Candidate) -> Candidate:
    if current is None or new.peak_gib < current.peak_gib:
        return new
    return current


def _widen_log_prob_budget(model: ModelFacts, cand: Candidate, work: Workload, s: _Setting) -> Candidate:
    """Forward-only passes keep no activations: give them 2× the token budget when that fits."""
    wider = _evaluate(model, replace(cand, log_prob_token_budget=(cand.token_budget or 0) * 2), work, s)
    return wider if wider.fits else cand


def _annotate(model: ModelFacts, cand: Candidate, work: Workload, s: _Setting, params: int,
              per_rank_mini: int, dp: int) -> Candidate:
    cand = replace(cand, memory=phase_memory(model, cand, work))  # with notes, rounded
    engine = engine_memory(model, cand, work, responses_per_step=s.train_batch_size * s.n, total_params=params)
    why = [f"DP {dp} (= {s.gpus} GPUs / TP·PP·CP {cand.tp}·{cand.pp}·{cand.cp}); "
           f"per-rank mini batch {cand.ppo_mini_batch_size}·{s.n}/{dp} = {per_rank_mini}"]
    flags = cand.relief()
    why.append("memory relief: " + (", ".join(flags) if flags else "none needed"))
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
    score = estimate_step_time(cand, model, s.gpu, work, kv_tokens=engine.kv_tokens)
    update = cand.phase("update")
    if model.is_moe and not cand.recompute and update is not None and \
            cand.limit_gib - update.gib < MOE_THIN_MARGIN * cand.limit_gib:
        # The routed-expert activations are a calibration (0.5x) where Megatron-core's code reads
        # 1.0x (docs/memory-model.md): a thin update margin may not hold on the real run.
        warnings.append(f"MoE update fits with {cand.limit_gib - update.gib:.1f} GiB to spare and no recompute; "
                        f"expert activations are counted at {MOE_ACTIVATION_FACTOR}x (calibrated, the source reads "
                        f"1.0x): --recompute buys room for ~{score.update_s / 3:.0f} s more per step")
    _, response = expected_lengths(work, calibrated())
    source = "" if work.mean_response_len else (f" ({calibrated().mean_response_share:.0%} of the maximum, the "
                                                "published median; --mean-response-len to change)")
    why.append(f"step ~{score.total_s:.0f} s estimated, responses counted at {response:.0f} of {work.response_len} "
               f"tokens expected{source}")
    return replace(cand, why=tuple(why), warnings=tuple(warnings), score=score)


# ---------------------------------------------------------------------------------------------
# Ranking and the entry point


def _bubble(c: Parallelism) -> float:
    """Pipeline-bubble fraction proxy: (PP−1)/(PP·VPP)."""
    return (c.pp - 1) / (c.pp * (c.vpp or 1))


def micro_tokens(c: Candidate, seq_len: int) -> int:
    """Tokens in one training micro-batch on one GPU (before the CP split)."""
    return (c.token_budget or seq_len) * c.cp if c.use_dynamic_bsz else c.micro_batch_per_gpu * seq_len


def _expert_tp(layout: Parallelism, moe: bool) -> int:
    return (layout.tp if layout.etp is None else layout.etp) if moe else 0  # expert GEMMs split over TP are small


def experts_cross_nodes(layout: Parallelism, gpus_per_node: int, moe: bool) -> bool:
    """An expert-parallel group (EP·ETP ranks) wider than a node: every MoE layer's all-to-all
    then crosses the network. verl's MoE scripts keep EP inside a node (Qwen3-30B: EP8 on
    8-GPU nodes), so the ranking prefers that when the rest is close."""
    return moe and gpus_per_node > 0 and layout.ep * _expert_tp(layout, moe) > gpus_per_node


# rank_key's tuple, compared in order (RANK_CRITERIA names each position); smaller ranks first.
RankKey = tuple[bool, int, float, bool, int, bool, bool, int, float, int, int, float, float, int]
STEP_BUCKET = 1.03  # estimated step times within ~3 % of each other tie; the later criteria decide


def step_bucket(seconds: float) -> int:
    """The estimated step time on a log scale of STEP_BUCKET steps (ties within ~3 %)."""
    return int(math.floor(math.log(max(seconds, 1e-6)) / math.log(STEP_BUCKET)))


def _floor_work(model: ModelFacts, layout: Layout, s: _Setting) -> Workload:
    dp = max(1, layout.gpus // (layout.tp * layout.pp * layout.cp))
    has_ref, has_critic = algo_roles(s.algo)
    per_rank_mini = max(1, (s.mini or s.train_batch_size) * s.n // dp)
    return Workload(gpus=s.gpus, gpu_memory_gib=s.gpu.memory_gib, prompt_len=s.prompt_len,
                    response_len=s.response_len, per_rank_mini_batch=per_rank_mini, has_ref=has_ref,
                    has_critic=has_critic, max_num_batched_tokens=max(8192, s.seq_len),
                    responses_per_step=s.train_batch_size * s.n, gpus_per_node=s.gpus_per_node,
                    mean_response_len=s.mean_response_len)


def step_floor_s(model: ModelFacts, layout: Layout, s: _Setting) -> float:
    """The shortest step any sizing of `layout` could reach: no offload or recompute, dynamic
    batches, every rollout replica's batch in flight, the best rollout TP, no pipeline bubble."""
    work = _floor_work(model, layout, s)
    options = [r for r in _powers_of_two(max(s.gpus, 1)) if s.gpus % r == 0
               and (s.gpus_per_node % r == 0 or r % s.gpus_per_node == 0)] or [1]
    best = math.inf
    for rtp in options:
        probe = Candidate(**layout.sizes(), rollout_tp=rtp, use_dynamic_bsz=True, token_budget=3 * s.seq_len,
                          gpu_memory_utilization=max(GMU_STEPS))
        # The KV cache can be no larger than at the largest gmu with nothing else resident.
        kv = engine_memory(model, probe, work, responses_per_step=s.train_batch_size * s.n).kv_tokens
        if kv <= 0:
            continue
        step = estimate_step_time(probe, model, s.gpu, work, kv_tokens=kv)
        best = min(best, step.total_s - step.bubble_s)
    return best if best < math.inf else 0.0


def optimistic_key(layout: Layout, moe: bool, floor_s: float = 0.0) -> RankKey:
    """The best rank_key any sizing of this layout could reach (`floor_s`: step_floor_s)."""
    crosses = experts_cross_nodes(layout, layout.gpus_per_node or 0, moe)
    return (False, step_bucket(floor_s) if floor_s > 0 else -(10**9), 0.0, False, 0, False, crosses,
            layout.tp * layout.pp * layout.cp, _bubble(layout), _expert_tp(layout, moe), layout.ep,
            -max(GMU_STEPS), -math.inf, 0)


def rank_key(c: Candidate, seq_len: int = 0, moe: bool = False, gpus_per_node: int = 0) -> RankKey:
    off = c.offload
    # Micro-batches under ~4k tokens leave the GPU's matmuls small: count them as a cost
    # comparable to recompute, unless the whole per-rank mini batch is that small.
    small_micro = seq_len > 0 and micro_tokens(c, seq_len) < min(EFFICIENT_MICRO_TOKENS, seq_len * 4)
    return (not c.fits, step_bucket(c.score.total_s) if c.score else 0,
            off.cpu_optimizer_fraction if off.cpu_optimizer else 0.0, c.recompute,
            int(off.param) + int(off.optimizer), small_micro, experts_cross_nodes(c, gpus_per_node, moe),
            c.model_parallel_size, _bubble(c), _expert_tp(c, moe), c.ep,
            -c.gpu_memory_utilization, -micro_tokens(c, max(seq_len, 1)), c.rollout_tp)


# What each position of rank_key prefers, in the user's words (kept beside rank_key: one order).
RANK_CRITERIA = ("it fits", "shorter estimated step time", "less of the CPU optimizer", "no recompute",
                 "no offload (fewer offload flags)", "micro-batches of at least ~4k tokens",
                 "expert groups inside a node", "smaller TP·PP·CP (more data parallelism)", "smaller pipeline bubble",
                 "smaller expert TP", "smaller EP", "more rollout memory (gmu)", "bigger micro batch",
                 "smaller rollout TP")


def deciding_criterion(better: tuple[object, ...], worse: tuple[object, ...]) -> str | None:
    """The first ranking criterion on which `better` (a rank_key) beats `worse`; None when they tie."""
    for name, a, b in zip(RANK_CRITERIA, better, worse):
        if a != b:
            return name
    return None


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
    if algo in ("grpo", "rloo", "dapo", "gspo") and n < 2:
        raise InputError(f"{algo} compares responses within a group: --n must be ≥ 2, got {n}")
    if prompt_len + response_len > model.max_position_embeddings:
        raise InputError(f"prompt+response = {prompt_len + response_len} tokens exceeds {model.name}'s "
                         f"max_position_embeddings {model.max_position_embeddings}")
    return gpus // nodes


def plan_layout(model: ModelFacts, gpus: int, *, nodes: int = 1, gpu: GpuSpec, prompt_len: int = 1024,
                response_len: int = 1024, n: int = 5, algo: str = "grpo", train_batch_size: int | None = None,
                ppo_mini_batch_size: int | None = None, fixed: dict | None = None, pins: dict | None = None,
                top: int = 5, mean_response_len: int | None = None, verl_version: str | None = None) -> Plan:
    """Search (or, with `fixed`, evaluate) Megatron layouts for `model` on `gpus` GPUs in total.

    `fixed` holds tp/pp/cp/ep/etp/vpp (+ first_stage_layers/last_stage_layers) to evaluate one
    layout; it may also pin knobs (micro_batch_per_gpu, token_budget, log_prob_token_budget,
    use_dynamic_bsz, offload {param, grad, optimizer, cpu_optimizer, cpu_optimizer_fraction},
    recompute, gpu_memory_utilization, rollout_tp, use_fused_kernels).
    `pins` searches instead: its layout fields keep only the layouts that agree (or evaluate
    the one they describe when the search does not produce it), its knobs are pinned as in
    `fixed`, and param_offload/optimizer_offload/cpu_optimizer_fraction/recompute pin single
    rungs of the memory relief.
    `verl_version`: the release whose defaults (weight-sync bucket, max_num_seqs) the memory
    model uses (generator.plan.release_defaults; None: 0.7.0's).
    """
    algo = algo.lower()
    gpus_per_node = _validate(model, gpus, nodes, prompt_len, response_len, n, algo, mean_response_len)
    prompts, mini = batch_sizes(gpus, n, prompt_len, response_len, algo, train_batch_size, ppo_mini_batch_size)
    s = _Setting(gpus=gpus, gpus_per_node=min(gpus_per_node, gpu.gpus_per_node) if nodes > 1 else gpus_per_node,
                 gpu=gpu, prompt_len=prompt_len, response_len=response_len, n=n, algo=algo,
                 train_batch_size=prompts, mini=mini, mean_response_len=mean_response_len or 0,
                 rollout=rollout_defaults(verl_version))
    params = total_params(model)
    plan = Plan(model=model.name, gpus=gpus, nodes=nodes, gpu=gpu.name, algo=algo, n=n, prompt_len=prompt_len,
                response_len=response_len, train_batch_size=prompts, ppo_mini_batch_size=mini,
                gpu_memory_gib=gpu.memory_gib)
    layout_keys = ("tp", "pp", "cp", "ep", "etp", "vpp", "first_stage_layers", "last_stage_layers")
    if fixed:
        layout = Layout(gpus=gpus, gpus_per_node=s.gpus_per_node,
                        **{k: fixed[k] for k in layout_keys if fixed.get(k) is not None})
        if model.is_moe and layout.ep > 1 and "etp" not in fixed:
            layout = replace(layout, etp=None)
        layouts = [layout]
        overrides = {k: v for k, v in fixed.items() if k not in layout_keys}
    else:
        pinned = {k: v for k, v in (pins or {}).items() if k in layout_keys}
        layouts = [lay for lay in _layouts(model, s) if all(getattr(lay, k) == v for k, v in pinned.items())]
        if pinned and not layouts:  # outside what the search enumerates: evaluate the pinned one
            layouts = [Layout(gpus=gpus, gpus_per_node=s.gpus_per_node, **pinned)]
        overrides = {k: v for k, v in (pins or {}).items() if k not in layout_keys}
    sized: list[Candidate] = []
    misses: list[Candidate] = []
    seq_len = prompt_len + response_len
    # Branch and bound: the ranking is lexicographic, and a layout's best conceivable key (no
    # relief, the largest gmu and micro batch) is known before sizing it. Visit layouts by
    # that key and stop once the top candidates beat the next layout's best conceivable key.
    floors = {id(lay): step_floor_s(model, lay, s) for lay in layouts} if not fixed else {}
    layouts.sort(key=lambda lay: optimistic_key(lay, model.is_moe, floors.get(id(lay), 0.0)))
    skipped = 0
    keys: list[RankKey] = []
    for index, layout in enumerate(layouts):
        if not fixed and len(keys) >= max(1, top) and keys[max(1, top) - 1] <= optimistic_key(
                layout, model.is_moe, floors[id(layout)]):
            skipped = len(layouts) - index
            break
        problems = layout_problems(layout, model)
        if problems:
            plan.rejected.append((describe_layout(layout), "; ".join(p.message for p in problems)))
            continue
        cand, reason = size_layout(model, layout, s, params=params, overrides=overrides, prune=not fixed)
        if cand is not None and cand.fits:
            sized.append(cand)
            keys.append(rank_key(cand, seq_len, model.is_moe, s.gpus_per_node))
            keys.sort()
        else:
            plan.rejected.append((describe_layout(layout), reason))
            if cand is not None:
                misses.append(cand)
    if skipped:
        plan.rejected.append((f"{skipped} more layouts",
                              f"not evaluated: even with no offload, the largest gpu_memory_utilization and "
                              f"micro batch, and their shortest conceivable step time, they would rank below "
                              f"the {max(1, top)} shown"))
    sized.sort(key=lambda c: rank_key(c, seq_len, model.is_moe, s.gpus_per_node))
    if fixed and not sized and misses:
        sized = misses  # show the evaluated layout even though it does not fit
    plan.candidates = sized[: max(1, top)] if sized else []
    if len(plan.candidates) > 1:
        first = rank_key(plan.candidates[0], seq_len, model.is_moe, s.gpus_per_node)
        reasons: list[str | None] = [None]
        reasons += [deciding_criterion(first, rank_key(c, seq_len, model.is_moe, s.gpus_per_node))
                    for c in plan.candidates[1:]]
        plan.rank_reasons = reasons
    if plan.candidates and plan.candidates[0].fits:
        plan.chosen = 0
        best = plan.candidates[0]
        plan.ppo_mini_batch_size = best.ppo_mini_batch_size or plan.ppo_mini_batch_size
    elif any("not divisible by DP" in reason for _, reason in plan.rejected):
        plan.rejected.insert(0, ("batch sizes", f"train_batch_size {prompts} and ppo_mini_batch_size {mini or '?'} "
                                 f"are kept as given, and no layout that fits splits them; "
                                 + batch_hint(gpus, n, prompts)))
    return plan
