"""Ranking sized layouts (lexicographic, RANK_CRITERIA names each position): fits; keeps verl's
practice rules on the layout (generator.plan.practice); is verl's published layout for the model
(generator.plan.published: our estimate alone never overrides what ran); shorter estimated step
time (generator.plan.step_time; times within STEP_TIME_ERROR_BAND tie); then, to break ties: a
shallower pipeline (depth only when memory needs it); no CPU optimizer; no recompute; fewer offload
flags (each layout's own relief is only what it needs: sizing._trim_relief); micro batches of at
least ~4k tokens; expert groups inside a node; smaller TP·PP·CP (more data parallelism); smaller
pipeline bubble; more rollout memory; bigger micro batch; smaller rollout TP. `optimistic_key` is the best key a layout could reach before it is sized (its
step-time floor: no offload, dynamic batches, the best rollout TP), which lets the search stop early.
"""

from __future__ import annotations

import math
from functools import lru_cache

from generator.verl.constants import VLLM_MAX_NUM_BATCHED_TOKENS
from generator.layout.derive import Layout, layout_dp, per_rank_mini_batch
from generator.layout.parallelism import Parallelism
from generator.layout.candidate import Candidate
from generator.model import ModelFacts
from generator.plan.enumeration import powers_of_two
from generator.plan.error_band import STEP_TIME_ERROR_BAND
from generator.plan.practice import within_step_band
from generator.plan.rollout_engine import engine_memory
from generator.plan.setting import Setting
from generator.plan.sizing import GMU_STEPS
from generator.plan.step_time import RolloutTimes, StepConstants, calibrated, rollout_times, trainer_times, with_rollout
from generator.plan.workload import Workload, algo_roles

EFFICIENT_MICRO_TOKENS = 4096


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
RankKey = tuple[bool, int, bool, int, int, float, bool, int, bool, bool, int, float, int, int, float, float, int]
STEP_BUCKET = 1 + STEP_TIME_ERROR_BAND  # step times within the model's error band tie; later criteria decide
STEP_POSITION = 3  # where rank_key holds the step bucket


def step_bucket(seconds: float) -> int:
    """The estimated step time on a log scale of STEP_BUCKET steps (ties within ~3 %)."""
    return int(math.floor(math.log(max(seconds, 1e-6)) / math.log(STEP_BUCKET)))


def _floor_work(model: ModelFacts, layout: Layout, s: Setting) -> Workload:
    return _floor_workload(s, layout_dp(layout.gpus, layout))


@lru_cache(maxsize=256)
def _floor_workload(s: Setting, dp: int) -> Workload:
    has_ref, has_critic = algo_roles(s.algo)
    per_rank_mini = max(1, per_rank_mini_batch(s.mini or s.train_batch_size, s.n, dp))
    return Workload(gpus=s.gpus, gpu_memory_gib=s.gpu.memory_gib, prompt_len=s.prompt_len,
                    response_len=s.response_len, per_rank_mini_batch=per_rank_mini, has_ref=has_ref,
                    has_critic=has_critic, max_num_batched_tokens=max(VLLM_MAX_NUM_BATCHED_TOKENS, s.seq_len),
                    responses_per_step=s.train_batch_size * s.n, gpus_per_node=s.gpus_per_node,
                    mean_response_len=s.mean_response_len)


def step_floor_s(model: ModelFacts, layout: Layout, s: Setting) -> float:
    """The shortest step any sizing of `layout` could reach: no offload or recompute, dynamic
    batches, every rollout replica's batch in flight, the best rollout TP, no pipeline bubble."""
    work = _floor_work(model, layout, s)
    k = calibrated()
    probe = Candidate(**layout.sizes(), use_dynamic_bsz=True, token_budget=3 * s.seq_len,
                      gpu_memory_utilization=max(GMU_STEPS))
    trainer = trainer_times(probe, model, s.gpu, work, k)  # the same for every rollout TP: computed once
    best = math.inf
    for rollout in _floor_rollouts(model, s, work, trainer.responses, k):
        step = with_rollout(trainer, rollout)
        best = min(best, step.total_s - step.bubble_s)
    return best if best < math.inf else 0.0


@lru_cache(maxsize=256)
def _floor_rollouts(model: ModelFacts, s: Setting, work: Workload, responses: int, k: StepConstants
                    ) -> tuple[RolloutTimes, ...]:
    """The rollout's part of the floor for each rollout TP it tries whose KV cache is not empty,
    with that KV cache (the most a replica holds: the largest gmu, nothing else resident). The
    engine's split reads the rollout knobs only (the probe has no training layout), so every
    layout of the same DP shares these: computed once per workload."""
    out = []
    for rtp in _rollout_tp_options(s.gpus, s.gpus_per_node):
        probe = Candidate(rollout_tp=rtp, gpu_memory_utilization=max(GMU_STEPS))
        kv = engine_memory(model, probe, work, responses_per_step=s.train_batch_size * s.n).kv_tokens
        if kv > 0:
            out.append(rollout_times(rtp, model, s.gpu, work, responses, kv, k))
    return tuple(out)


@lru_cache(maxsize=64)
def _rollout_tp_options(gpus: int, gpus_per_node: int) -> tuple[int, ...]:
    """Rollout TPs the floor tries: powers of two dividing the GPUs whose replicas do not straddle a node."""
    return tuple(r for r in powers_of_two(max(gpus, 1)) if gpus % r == 0
                 and (gpus_per_node % r == 0 or r % gpus_per_node == 0)) or (1,)


def optimistic_key(layout: Layout, moe: bool, floor_s: float = 0.0, *, violations: int = 0,
                   published: bool = False) -> RankKey:
    """The best rank_key any sizing of this layout could reach (`floor_s`: step_floor_s). The
    step bucket is one lower than the floor's: a layout one bucket slower may still tie inside the
    band (`banded`)."""
    crosses = experts_cross_nodes(layout, layout.gpus_per_node or 0, moe)
    return (False, violations, not published, step_bucket(floor_s) - 1 if floor_s > 0 else -(10**9), layout.pp, 0.0,
            False, 0, False, crosses, layout.model_parallel_size, _bubble(layout), _expert_tp(layout, moe), layout.ep,
            -max(GMU_STEPS), -math.inf, 0)


def rank_key(c: Candidate, seq_len: int = 0, moe: bool = False, gpus_per_node: int = 0, *, violations: int = 0,
             published: bool = False) -> RankKey:
    """`violations`: the practice rules the layout breaks (practice.layout_violations); `published`:
    the layout is verl's for this model (published.published_layouts)."""
    off = c.offload
    # Micro-batches under ~4k tokens leave the GPU's matmuls small: count them as a cost
    # comparable to recompute, unless the whole per-rank mini batch is that small.
    small_micro = seq_len > 0 and micro_tokens(c, seq_len) < min(EFFICIENT_MICRO_TOKENS, seq_len * 4)
    return (not c.fits, violations, not published, step_bucket(c.score.total_s) if c.score else 0, c.pp,
            off.cpu_optimizer_fraction if off.cpu_optimizer else 0.0, c.recompute,
            int(off.param) + int(off.optimizer), small_micro, experts_cross_nodes(c, gpus_per_node, moe),
            c.model_parallel_size, _bubble(c), _expert_tp(c, moe), c.ep,
            -c.gpu_memory_utilization, -micro_tokens(c, max(seq_len, 1)), c.rollout_tp)


def banded(key: RankKey, step_s: float, leader: RankKey, leader_step_s: float) -> RankKey:
    """`key` with the leader's step bucket when its step is within the band of the leader's (the
    fastest with the same practice marks): a tie, which the later criteria decide, however the
    two fall on the bucket boundaries."""
    if key[:STEP_POSITION] == leader[:STEP_POSITION] and within_step_band(leader_step_s, step_s):
        return key[:STEP_POSITION] + (leader[STEP_POSITION],) + key[STEP_POSITION + 1:]  # type: ignore[return-value]
    return key


# What each position of rank_key prefers, in the user's words (kept beside rank_key: one order).
RANK_CRITERIA = ("it fits", "keeps verl's practice (expert parallelism for MoE, TP inside a node)",
                 "verl's published layout for this model", "shorter estimated step time",
                 "shallower pipeline (depth only when memory needs it)", "less of the CPU optimizer", "no recompute",
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
