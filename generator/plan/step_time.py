"""Estimated time of one training step for a sized layout: the planner's ranking score.

A roofline estimate, meant to order layouts of the same run, not to predict wall-clock time:
  rollout    decode is bound by reading the weights (and the KV cache) once per generated token,
             batched over the sequences a replica holds at once; prefill and a compute floor are
             counted at DECODE_MFU;
  log-prob   2·N_active FLOPs per token per forward pass (old log-prob, ref, critic values);
  update     6·N_active FLOPs per token (forward + backward), 8·N_active with full recompute;
             both at TRAIN_MFU of the GPUs' dense bf16 peak;
  offload    bytes moved over the host link per step for each offloaded state, plus the CPU
             optimizer's step;
  bubble     the 1F1B pipeline idles (PP−1)/(VPP·M) of the compute time (M micro-batches per
             pass), i.e. a fraction (PP−1)/(VPP·M + PP−1) of the pipelined time;
  weight sync  each rollout rank receives its shard of the bf16 weights over the in-node links.
Not modelled: attention FLOPs (the same for every layout of a run), TP/CP/EP communication,
response-length variance. GPU speeds live in generator.hardware.
"""

from __future__ import annotations

import math

from generator.hardware import GpuSpec
from generator.model import ModelFacts, total_params
from generator.model.params import kv_cache_bytes_per_token
from generator.plan.candidate import Candidate, StepTime
from generator.plan.stages import stage_layer_counts, stage_params
from generator.plan.workload import Workload

# Model FLOPs utilisation assumed for Megatron training passes. Megatron-LM reports 40-47 % on
# H100 for GPT pretraining at scale (Narayanan et al. 2021; NVIDIA's Megatron-Core performance
# table); RL micro-batches are shorter and vary in length, so we assume less.
TRAIN_MFU = 0.35
# Share of peak a decoding engine reaches when compute-bound (large batches), and for prefill.
DECODE_MFU = 0.4
# Share of the nominal host-link bandwidth pinned-memory copies reach (PCIe: ~80 % of nominal).
HOST_LINK_EFFICIENCY = 0.8
# Parameters per second one GPU's share of the host updates with a CPU Adam: the ZeRO-Offload
# paper (Ren et al. 2021) measures its CPU-Adam at roughly 1e9-2e9 params/s on a whole
# multi-core host; eight GPU processes share that host.
CPU_ADAM_PARAMS_PER_S = 0.2e9
BF16, FP32, ADAM_STATE = 2, 4, 12  # bytes per parameter: weights, main grads, fp32 master + two moments


def micro_batches(per_rank_responses: int, seq_len: int, cand: Candidate, *, log_prob: bool) -> int:
    """Micro-batches one DP rank runs for `per_rank_responses` responses (M in the bubble term)."""
    if cand.use_dynamic_bsz:
        budget = (cand.log_prob_token_budget if log_prob else None) or cand.token_budget or seq_len
        return max(1, math.ceil(per_rank_responses * seq_len / (budget * cand.cp)))
    micro = (cand.log_prob_micro_batch_per_gpu if log_prob else None) or cand.micro_batch_per_gpu
    return max(1, math.ceil(per_rank_responses / max(1, micro)))


def bubble_fraction(pp: int, vpp: int | None, micro: int) -> float:
    """Share of the pipelined time a 1F1B (interleaved with VPP) schedule idles: (PP−1)/(VPP·M + PP−1)."""
    if pp <= 1:
        return 0.0
    return (pp - 1) / ((vpp or 1) * micro + pp - 1)


def estimate_step_time(cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload, *,
                       kv_resident_fraction: float = 1.0) -> StepTime:
    """Seconds per step by part for `cand` (a sized layout); pure arithmetic on its knobs.

    `kv_resident_fraction` is the share of a rollout replica's responses its KV cache holds at
    once (generator.plan.engine); below 1 the replica decodes in several waves."""
    gpus = max(1, work.gpus)
    dp = max(1, gpus // (cand.tp * cand.pp * cand.cp))
    responses = work.responses_per_step or work.per_rank_mini_batch * dp
    seq_len = work.seq_len
    tokens = responses * seq_len
    active = total_params(model, active=True)
    everything = total_params(model)
    flops_per_s = gpus * gpu.peak_tflops * 1e12

    # Training passes: forward-only passes at 2·N, the update at 6·N (8·N when recomputing).
    forward_s = 2 * active * tokens / (flops_per_s * TRAIN_MFU)
    passes = 1 + int(work.has_ref) + int(work.has_critic)
    log_prob_s = passes * forward_s
    update_s = (1 + int(work.has_critic)) * 3 * forward_s * (4 / 3 if cand.recompute else 1.0)
    per_rank = math.ceil(responses / dp)
    bubble_s = 0.0
    if cand.pp > 1:
        # idle = compute·(PP−1)/(VPP·M): the fraction b of the pipelined time is idle, b/(1−b) of the compute.
        for compute, micro in ((log_prob_s, micro_batches(per_rank, seq_len, cand, log_prob=True)),
                               (update_s, micro_batches(work.per_rank_mini_batch, seq_len, cand, log_prob=False))):
            share = bubble_fraction(cand.pp, cand.vpp, micro)
            bubble_s += compute * share / (1 - share)

    # Rollout: each replica (rollout_tp GPUs) decodes its responses in waves of what its KV cache holds.
    rtp = max(1, cand.rollout_tp)
    replicas = max(1, gpus // rtp)
    per_replica = math.ceil(responses / replicas)
    waves = max(1, math.ceil(1 / max(kv_resident_fraction, 1e-6)))
    in_flight = math.ceil(per_replica / waves)
    hbm = gpu.hbm_tb_s * 1e12
    weight_read_s = BF16 * everything / rtp / hbm
    mean_context = work.prompt_len + work.response_len / 2
    kv_read_s = in_flight * mean_context * kv_cache_bytes_per_token(model, rtp) / hbm
    decode_compute_s = 2 * active * in_flight / (rtp * gpu.peak_tflops * 1e12 * DECODE_MFU)
    decode_s = waves * work.response_len * max(weight_read_s + kv_read_s, decode_compute_s)
    prefill_s = 2 * active * responses * work.prompt_len / (flops_per_s * DECODE_MFU)
    rollout_s = decode_s + prefill_s

    offload_s = _offload_s(cand, model, gpu, work, dp)
    weight_sync_s = BF16 * everything / rtp / (gpu.peer_gb_s * 1e9)
    return StepTime(rollout_s=rollout_s, log_prob_s=log_prob_s, update_s=update_s, offload_s=offload_s,
                    bubble_s=bubble_s, weight_sync_s=weight_sync_s)


def _offload_s(cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload, dp: int) -> float:
    """Host-link seconds per step on the heaviest pipeline stage (the others wait for it)."""
    off = cand.offload
    if not (off.param or off.grad or off.optimizer or off.cpu_optimizer):
        return 0.0
    counts = stage_layer_counts(model.num_layers, cand.pp, cand.first_stage_layers, cand.last_stage_layers)
    stage = max((stage_params(model, cand, s, counts) for s in {0, cand.pp - 1}), key=lambda p: p.total)
    edp = max(1, work.gpus // (cand.pp * cand.ep * (cand.tp if cand.etp is None else cand.etp)))
    sharded = stage.dense / (dp * cand.cp) + stage.experts / edp  # what one rank's optimizer holds
    moved = 0.0
    if off.param:
        # Weights in and out around each pass that uses them: update, old log-prob (and the ref's own).
        moved += 2 * BF16 * stage.total * (2 + int(work.has_ref))
    if off.grad:
        moved += 2 * FP32 * stage.total
    if off.optimizer:
        moved += 2 * ADAM_STATE * sharded * (1 - (off.cpu_optimizer_fraction if off.cpu_optimizer else 0.0))
    cpu_step_s = 0.0
    if off.cpu_optimizer:
        fraction = off.cpu_optimizer_fraction
        moved += fraction * sharded * (FP32 + BF16)  # grads down, updated bf16 weights up
        cpu_step_s = fraction * sharded / CPU_ADAM_PARAMS_PER_S
    return moved / (gpu.host_gb_s * 1e9 * HOST_LINK_EFFICIENCY) + cpu_step_s
