"""Estimated time of one training step for a sized layout: the planner's ranking score.

A roofline estimate from the hardware table's figures (generator.layout.hardware), with a few free
constants fitted to published verl step times (generator/data/step_time_calibration.yaml, fitted
by generator.plan.step_fit on bench/data/published_step_times.yaml; docs/step-time-model.md):
  lengths    responses are counted at their EXPECTED length (Workload.mean_response_len, or
             MEAN_RESPONSE_SHARE of the maximum, the median share of the published means), prompts
             at MEAN_PROMPT_SHARE of theirs; the rollout's tail runs to the maximum;
  rollout    continuous batching: each engine step decodes one token for every sequence in flight
             (as many as the KV cache holds at the mean context, at most vLLM's max_num_seqs) and
             costs max(weights + KV read at HBM speed, 2·N_active FLOPs per token at decode_mfu),
             plus a rollout-TP synchronisation per layer and a per-step overhead (both fitted; a
             replica spanning nodes waits cross_node_sync_s more per all-reduce, fitted);
             after the last wave the longest responses run on alone, one token per step;
  log-prob   2·N_active FLOPs per token per forward pass (old log-prob, ref, critic values);
  static     fixed micro-batches compute static_pad_share of the padding to the maximum length
             (fitted: the published fixed-micro runs take 2-3× the dynamic ones' update time);
  update     6·N_active FLOPs per token (forward + backward), 8·N_active with full recompute (the
             forward runs again); dense GEMMs at train_mfu of the dense bf16 peak, routed experts
             at moe_efficiency of that;
  GEMM shape each phase's GEMMs at gemm_efficiency(rows, columns): rows = tokens per micro-batch
             per GPU (the budget, or the fixed micro-batch, after the CP split), columns = hidden/TP
             for the dense layers; for the routed experts rows = tokens per local expert
             (rows/TP·ETP·EP·top_k/E: EP raises it) and columns = expert FFN/ETP;
  comm       TP: 2 all-reduces of the tokens' hidden states per layer per forward (4 per
             forward+backward, 6 with recompute), ring cost 2(t−1)/t·bytes over the in-node link
             (the network once TP spans nodes); CP: each rank's K and V pass around the ring,
             (c−1)/c of the group's KV bytes per layer per forward (twice in backward), over the
             network once TP·CP spans nodes; EP: dispatch + combine all-to-all of top_k copies of
             each token's hidden state per MoE layer, spread evenly over the EP ranks: those for the
             other ranks of the GPU's node over NVLink, those for other nodes' ranks over the
             network, at once (the slower sets the time); its backward is one all-to-all of the
             gradient, so an update moves 2 forwards' worth (3 with recompute); DP: per optimizer
             step a reduce-scatter of fp32 gradients and an all-gather of bf16 weights over DP·CP
             (dense) and EDP (experts) ranks, over the network once W/PP spans nodes;
  bubble     the 1F1B pipeline idles (PP−1)/(VPP·M) of the compute time (M micro-batches per pass,
             counted at the expected lengths);
  offload    bytes moved over the host link per step for each offloaded state, plus the CPU
             optimizer's step;
  weight sync  each rollout rank receives its shard of the bf16 weights over the in-node links.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Any

from generator.layout.derive import layout_dp, layout_edp
from generator.layout.hardware import GpuSpec
from generator.model import ModelFacts, total_params
from generator.model.params import (dense_layer_params, is_moe_layer, kv_cache_bytes_per_token,
                                    moe_layer_params)
from generator.base import session
from generator.layout.candidate import Candidate, StepTime
from generator.plan.stages import stage_layer_counts, stage_params
from generator.plan.workload import Workload
from generator.base.resources import data_dir, load_cached_data_yaml

# Share of the nominal host-link bandwidth pinned-memory copies reach (PCIe: ~80 % of nominal).
HOST_LINK_EFFICIENCY = 0.8
# Share of the nominal NVLink / network bandwidth NCCL's ring collectives reach for large messages
# (NVIDIA's nccl-tests report bus bandwidths of ~75-85 % of the link figure on DGX H100).
COLLECTIVE_EFFICIENCY = 0.8
# Parameters per second one GPU's share of the host updates with a CPU Adam: the ZeRO-Offload
# paper (Ren et al. 2021) measures its CPU-Adam at roughly 1e9-2e9 params/s on a whole
# multi-core host; eight GPU processes share that host.
CPU_ADAM_PARAMS_PER_S = 0.2e9
# vLLM's default max_num_seqs (sequences decoded at once per engine), as verl leaves it.
MAX_NUM_SEQS = 1024
BF16, FP32, ADAM_STATE = 2, 4, 12  # bytes per parameter: weights, main grads, fp32 master + two moments


@dataclass(frozen=True, slots=True)
class StepConstants:
    """The model's free constants (fitted) and its length assumptions (sourced)."""

    train_mfu: float = 0.35  # dense Megatron GEMMs, share of the dense bf16 peak
    moe_efficiency: float = 0.5  # routed-expert (grouped) GEMMs relative to dense ones
    decode_mfu: float = 0.4  # decode and prefill when compute-bound
    decode_tp_sync_s: float = 30e-6  # per layer per engine step, rollout TP > 1
    decode_step_overhead_s: float = 5e-3  # scheduler + sampling per engine step
    static_pad_share: float = 0.0  # static micro-batches: share of the padding to the maximum length computed
    gemm_half_dim: float = 256.0  # a GEMM dimension (rows or columns per GPU) at which it loses half its speed
    expert_half_rows: float = 512.0  # tokens per local expert at which a grouped GEMM loses half its speed
    cross_node_sync_s: float = 1e-4  # per rollout-TP all-reduce when the replica spans nodes (network latency)
    mean_response_share: float = 0.15  # expected response / maximum, when the workload does not say
    mean_prompt_share: float = 0.5  # expected prompt / maximum
    # A stored calibration (generator.base.session.Calibration, docs/calibrate.md): factors on the parts
    # a cluster measured, and the share of the maximum its runs' responses averaged, per model.
    # None when no calibration is in force: the model's own figures, unchanged.
    calibration: session.Calibration | None = None

    def corrections(self, model: str) -> session.Corrections:
        return self.calibration.for_model(model) if self.calibration is not None else NO_CORRECTIONS


NO_CORRECTIONS = session.Corrections()

FREE_CONSTANTS = ("train_mfu", "moe_efficiency", "decode_mfu", "decode_tp_sync_s", "decode_step_overhead_s",
                  "static_pad_share", "gemm_half_dim", "expert_half_rows", "cross_node_sync_s")


def calibrated() -> StepConstants:
    """The constants generator/data/step_time_calibration.yaml holds (the fit on every published
    point), with the stored calibration the command applies (generator.base.session), if any."""
    in_force = session.current().calibration
    return _fitted() if in_force is None else _with_calibration(in_force)


def _looks_like_constants(data: Any) -> bool:
    constants = data.get("constants") if isinstance(data, dict) else None
    return isinstance(constants, dict) and all(isinstance(v, (int, float)) for v in constants.values())


@lru_cache(maxsize=1)
def _fitted() -> StepConstants:
    raw = load_cached_data_yaml(data_dir() / "step_time_calibration.yaml", _looks_like_constants)
    known = {f.name for f in fields(StepConstants) if f.type in ("float", float)}
    fitted: dict[str, Any] = {k: float(v) for k, v in raw["constants"].items() if k in known}
    return StepConstants(**fitted)


@lru_cache(maxsize=8)
def _with_calibration(c: session.Calibration) -> StepConstants:
    return replace(_fitted(), calibration=c)


def response_share(k: StepConstants, model: str | None) -> tuple[float, bool]:
    """(expected response / maximum, whether a calibration measured it for this model)."""
    shares = k.calibration.response_shares if k.calibration is not None else ()
    measured = dict(shares).get(model) if model else None
    return (measured, True) if measured is not None else (k.mean_response_share, False)


def expected_lengths(work: Workload, k: StepConstants, model: str | None = None) -> tuple[float, float]:
    """(expected prompt, expected response) tokens of one sequence; `model` (its name) reads the
    share a stored calibration measured for it, when the workload gives no mean length."""
    response = work.mean_response_len or response_share(k, model)[0] * work.response_len
    return k.mean_prompt_share * work.prompt_len, min(float(work.response_len), float(response))


def micro_batches(per_rank_responses: int, seq_len: int, cand: Candidate, *, log_prob: bool) -> int:
    """Micro-batches one DP rank runs for `per_rank_responses` responses of `seq_len` tokens each
    (M in the bubble term): a dynamic budget packs them by tokens, a fixed micro-batch by count."""
    if cand.use_dynamic_bsz:
        budget = (cand.log_prob_token_budget if log_prob else None) or cand.token_budget or seq_len
        return max(1, math.ceil(per_rank_responses * seq_len / (budget * cand.cp)))
    micro = (cand.log_prob_micro_batch_per_gpu if log_prob else None) or cand.micro_batch_per_gpu
    return max(1, math.ceil(per_rank_responses / max(1, micro)))


def micro_batch_rows(per_rank_responses: int, tokens_per_response: float, cand: Candidate, *,
                     log_prob: bool) -> float:
    """Tokens one GPU's GEMMs take per micro-batch (the rows of its matrices): the rank's tokens
    split evenly over its micro-batches, then over the CP ranks. Sequence parallelism gathers the
    TP group's tokens back before each dense GEMM, so TP does not divide them."""
    seq = max(1, round(tokens_per_response))
    micro = micro_batches(per_rank_responses, seq, cand, log_prob=log_prob)
    return per_rank_responses * tokens_per_response / micro / cand.cp


def gemm_efficiency(rows: float, cols: float, half: float) -> float:
    """Share of a large GEMM's speed one of `rows` × `cols` (per GPU) reaches: a dimension of
    `half` runs at half speed (tiles left idle, launch and memory time not hidden), so small
    micro-batches (rows) and wide TP (columns = hidden/TP) both lose speed."""
    return 1.0 / (1.0 + half / max(rows, 1.0) + half / max(cols, 1.0))


def tokens_per_local_expert(rows: float, model: ModelFacts, cand: Candidate) -> float:
    """Rows of each local expert's GEMM per micro-batch: a GPU holds `rows`/TP tokens after the
    sequence-parallel split (ETP gathers its group's back), routes top_k copies of each, and the
    all-to-all brings each of its E/EP experts its share of the whole EP group's copies:
    rows/TP·ETP·EP·top_k/E. Expert parallelism raises it; an EP1 layout with many experts runs
    each expert's GEMM on a sliver of the batch."""
    if not model.is_moe:
        return 0.0
    etp = cand.tp if cand.etp is None else cand.etp
    return rows / cand.tp * etp * cand.ep * (model.experts_per_token or 1) / (model.num_experts or 1)


def stage_imbalance(model: ModelFacts, cand: Candidate, moe_efficiency: float) -> float:
    """How much longer the slowest pipeline stage computes than the mean one (1.0 = balanced).

    In 1F1B every stage waits for the slowest at each micro-batch, so the pipelined time is the
    slowest stage's, not the mean's. A stage's time per token: its layers' active weights (routed
    experts' at 1/moe_efficiency, as forward_s charges them), and on the last stage the output
    layer (hidden × vocab) that computes the logits. Megatron's account_for_loss_in_pipeline_split
    and num_layers_in_last_pipeline_stage exist to even this out
    (megatron/core/transformer/transformer_config.py @ core_r0.13.0); a small-layer model on a
    deep pipeline leaves the last stage with the head and the others idle."""
    if cand.pp <= 1:
        return 1.0
    return _stage_imbalance(model, cand.pp, cand.first_stage_layers, cand.last_stage_layers, moe_efficiency)


@lru_cache(maxsize=4096)
def _stage_imbalance(model: ModelFacts, pp: int, first: int | None, last: int | None, moe_efficiency: float) -> float:
    """stage_imbalance of a pipeline split: a search asks it of every sizing of a layout (~1,000
    times for DeepSeek-V3 on 256 GPUs, a loop over every layer each), for a few splits."""
    counts = stage_layer_counts(model.num_layers, pp, first, last)
    dense_layer = dense_layer_params(model)
    moe_layer = moe_layer_params(model) if model.is_moe else None
    weights = []
    start = 0
    for stage, count in enumerate(counts):
        weight = 0.0
        for index in range(start, start + count):
            if moe_layer is not None and is_moe_layer(model, index):
                routed = moe_layer.experts / (model.num_experts or 1) * (model.experts_per_token or 0)
                weight += moe_layer.tp_sharded + moe_layer.replicated + routed / max(moe_efficiency, 1e-6)
            else:
                weight += dense_layer.tp_sharded + dense_layer.replicated
        if stage == len(counts) - 1:
            weight += model.hidden_size * model.vocab_size  # the output layer
        weights.append(weight)
        start += count
    mean = sum(weights) / len(weights)
    return max(weights) / mean if mean > 0 else 1.0


def bubble_fraction(pp: int, vpp: int | None, micro: int) -> float:
    """Share of the pipelined time a 1F1B (interleaved with VPP) schedule idles: (PP−1)/(VPP·M + PP−1)."""
    if pp <= 1:
        return 0.0
    return (pp - 1) / ((vpp or 1) * micro + pp - 1)


def ring_all_reduce_s(nbytes: float, ranks: int, link_gb_s: float) -> float:
    """A ring all-reduce of `nbytes` over `ranks` GPUs: each sends 2(r−1)/r of it."""
    if ranks <= 1:
        return 0.0
    return 2 * (ranks - 1) / ranks * nbytes / (link_gb_s * 1e9 * COLLECTIVE_EFFICIENCY)


@lru_cache(maxsize=256)
def _params(model: ModelFacts) -> tuple[int, int]:
    """(all parameters, parameters active per token)."""
    return total_params(model), total_params(model, active=True)


@lru_cache(maxsize=256)
def _moe_split(model: ModelFacts) -> tuple[int, int]:
    """(routed-expert params, routed-expert params active per token) over the whole model."""
    if not model.is_moe:
        return 0, 0
    moe_layers = model.num_layers - model.first_k_dense_layers
    routed = moe_layers * moe_layer_params(model).experts
    active = routed // (model.num_experts or 1) * (model.experts_per_token or 0)
    return routed, active


def training_comm_s(cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload, tokens: float,
                    forwards: float, ep_forwards: float | None = None) -> float:
    """TP, CP and EP communication of `forwards` forward-equivalents over `tokens` tokens, per GPU.

    For TP and CP a backward pass moves twice a forward's bytes (with sequence parallelism the
    input is all-gathered again for the weight gradient), so forward+backward is 3 forwards' worth.
    EP's all-to-all is its own inverse: its backward is one all-to-all of the gradient with the
    splits swapped (megatron/core/tensor_parallel/mappings.py `_AllToAll.backward` @ core_r0.13.0),
    so forward+backward is 2 forwards' worth; `ep_forwards` counts those (default `forwards`)."""
    gpus = max(1, work.gpus)
    dp = layout_dp(gpus, cand)
    layers_per_stage = model.num_layers / cand.pp
    group_tokens = tokens / dp / cand.cp  # one TP group's tokens at each of its stage's layers
    tp_bytes = 2 * group_tokens * model.hidden_size * BF16  # two all-reduces per layer per forward
    per_node = max(1, work.gpus_per_node)
    comm = forwards * layers_per_stage * ring_all_reduce_s(tp_bytes, cand.tp, group_link_gb_s(cand.tp, per_node, gpu))
    if cand.cp > 1:
        kv_per_token = 2 * model.num_kv_heads * model.head_dim * BF16 / cand.tp
        if model.is_mla:
            kv_per_token = ((model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)) * BF16
        sent = (cand.cp - 1) * group_tokens * kv_per_token
        # The CP ring's ranks stride TP: it leaves the node once TP·CP GPUs do not fit in one.
        link = group_link_gb_s(cand.tp * cand.cp, per_node, gpu)
        comm += forwards * layers_per_stage * sent / (link * 1e9 * COLLECTIVE_EFFICIENCY)
    if model.is_moe and cand.ep > 1:
        moe_layers = (model.num_layers - model.first_k_dense_layers) / cand.pp
        per_gpu_tokens = tokens * cand.pp / gpus
        copies = 2 * per_gpu_tokens * (model.experts_per_token or 1) * model.hidden_size * BF16  # dispatch + combine
        per_layer = all_to_all_s(copies, cand.ep, cand.tp if cand.etp is None else cand.etp,
                                 max(1, work.gpus_per_node), gpu)
        comm += (forwards if ep_forwards is None else ep_forwards) * moe_layers * per_layer
    return comm


def group_link_gb_s(span: int, gpus_per_node: int, gpu: GpuSpec) -> float:
    """The link a collective over `span` consecutive ranks runs at: NVLink inside one node, the
    per-GPU network once the group spans nodes (a ring is as slow as its slowest hop)."""
    return gpu.peer_gb_s if span <= max(1, gpus_per_node) else gpu.net_gb_s


def dp_grad_sync_s(cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload) -> float:
    """One optimizer step's data-parallel traffic on the heaviest pipeline stage: the distributed
    optimizer reduce-scatters the fp32 gradients (verl sets grad_reduce_in_fp32 and leaves
    overlap_grad_reduce off: verl/utils/megatron_utils.py @ v0.7.0) and all-gathers the updated
    bf16 weights, over DP·CP ranks for the dense weights and EDP ranks for the experts. Both
    groups stride the model-parallel ranks, so they leave the node once W/PP GPUs do not fit in one."""
    dp = layout_dp(work.gpus, cand) * cand.cp
    edp = layout_edp(work.gpus, cand)
    counts = stage_layer_counts(model.num_layers, cand.pp, cand.first_stage_layers, cand.last_stage_layers)
    stage = max((stage_params(model, cand, s, counts) for s in {0, cand.pp - 1}), key=lambda p: p.total)
    link = group_link_gb_s(max(1, work.gpus) // cand.pp, max(1, work.gpus_per_node), gpu)
    per_byte = (FP32 + BF16) / 2  # a reduce-scatter then an all-gather: half an all-reduce each
    return (ring_all_reduce_s(per_byte * stage.dense, dp, link)
            + ring_all_reduce_s(per_byte * stage.experts, edp, link))


def all_to_all_s(nbytes: float, ep: int, etp: int, gpus_per_node: int, gpu: GpuSpec) -> float:
    """An expert-parallel all-to-all of `nbytes` per GPU, copies spread evenly over the `ep` ranks.

    (ep−1)/ep of the copies leave the GPU. When the expert group (ep·etp GPUs, consecutive ranks)
    spans nodes, only the copies bound for the ranks of other nodes cross the network; the ones for
    the GPU's own node go over NVLink at the same time, so the slower of the two sets the time."""
    if ep <= 1:
        return 0.0
    local = max(1, min(ep, gpus_per_node // max(1, etp)))  # EP ranks in one node
    in_node = (local - 1) / ep * nbytes
    across = (ep - local) / ep * nbytes
    return max(in_node / (gpu.peer_gb_s * 1e9 * COLLECTIVE_EFFICIENCY),
               across / (gpu.net_gb_s * 1e9 * COLLECTIVE_EFFICIENCY))


def decode_step_s(model: ModelFacts, gpu: GpuSpec, rtp: int, in_flight: float, context: float,
                  k: StepConstants, gpus_per_node: int = 8) -> float:
    """One engine step of a rollout replica (rtp GPUs) decoding `in_flight` sequences at `context`:
    the larger of reading weights + KV cache and the FLOPs, then two TP all-reduces per layer of the
    batch's hidden states (over the network when the replica spans nodes) with their fitted latency."""
    everything, active = _params(model)
    routed, routed_active = _moe_split(model)
    # Small batches touch only the experts their tokens route to.
    weights = everything - routed + min(routed, routed_active * max(1.0, in_flight))
    read = (BF16 * weights / rtp + in_flight * context * kv_cache_bytes_per_token(model, rtp)) / (gpu.hbm_tb_s * 1e12)
    compute = 2 * active * in_flight / (rtp * gpu.peak_tflops * 1e12 * k.decode_mfu)
    sync = 0.0
    if rtp > 1:
        link = group_link_gb_s(rtp, gpus_per_node, gpu)
        reduce = ring_all_reduce_s(in_flight * model.hidden_size * BF16, rtp, link)
        # A replica spanning nodes waits on the network's latency at every all-reduce as well.
        latency = k.decode_tp_sync_s + (k.cross_node_sync_s if rtp > max(1, gpus_per_node) else 0.0)
        sync = 2 * model.num_layers * (latency + reduce)
    return max(read, compute) + sync + k.decode_step_overhead_s


def rollout_s(cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload, responses: int,
              kv_tokens: int | None, k: StepConstants) -> float:
    """Prefill and decode of every response; replicas run in parallel, the slowest sets the time."""
    return _rollout_s(cand.rollout_tp, model, gpu, work, responses, kv_tokens, k) * k.corrections(model.name).rollout


# The rollout reads only the rollout TP of a candidate: the search's step-time floors try every
# rollout TP on each of ~1,000 layouts, most sharing a workload, so the time is kept per input.
@lru_cache(maxsize=4096)
def _rollout_s(rollout_tp: int, model: ModelFacts, gpu: GpuSpec, work: Workload, responses: int,
               kv_tokens: int | None, k: StepConstants) -> float:
    prompt, response = expected_lengths(work, k, model.name)
    rtp = max(1, rollout_tp)
    replicas = max(1, work.gpus // rtp)
    per_replica = math.ceil(responses / replicas)
    context = prompt + response / 2  # mean context over a sequence's life
    capacity = per_replica if kv_tokens is None else max(1.0, kv_tokens / max(context, 1.0))
    in_flight = max(1.0, min(float(per_replica), float(MAX_NUM_SEQS), capacity))
    steps = per_replica * response / in_flight
    decode = steps * decode_step_s(model, gpu, rtp, in_flight, context, k, work.gpus_per_node)
    tail = max(0.0, work.response_len - response) * decode_step_s(model, gpu, rtp, 1.0, prompt + response, k,
                                                                   work.gpus_per_node)
    active = _params(model)[1]
    prefill = 2 * active * per_replica * prompt / (rtp * gpu.peak_tflops * 1e12 * k.decode_mfu)
    return prefill + decode + tail


def estimate_step_time(cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload, *,
                       kv_tokens: int | None = None, constants: StepConstants | None = None) -> StepTime:
    """Seconds per step by part for `cand` (a sized layout); pure arithmetic on its knobs.

    `kv_tokens` is the KV cache one rollout replica holds (generator.plan.rollout_engine); None counts a
    replica's whole batch in flight (up to vLLM's max_num_seqs)."""
    k = constants or calibrated()
    trainer = trainer_times(cand, model, gpu, work, k)
    return with_rollout(trainer, rollout_times(cand.rollout_tp, model, gpu, work, trainer.responses, kv_tokens, k))


def forward_s(tokens: float, rows: float, cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload,
              k: StepConstants) -> float:
    """One forward pass over `tokens` on the whole cluster, micro-batches of `rows` tokens per GPU:
    2·N_active FLOPs per token, the dense GEMMs at train_mfu × their shape's efficiency (rows ×
    hidden/TP), the routed experts' at moe_efficiency × theirs (tokens per local expert ×
    expert FFN/ETP)."""
    _, active = _params(model)
    _, routed_active = _moe_split(model)
    flops_per_s = max(1, work.gpus) * gpu.peak_tflops * 1e12 * k.train_mfu
    dense = gemm_efficiency(rows, model.hidden_size / cand.tp, k.gemm_half_dim)
    seconds = (active - routed_active) / dense
    if routed_active:
        etp = cand.tp if cand.etp is None else cand.etp
        expert_cols = (model.expert_ffn_hidden_size or model.ffn_hidden_size) / etp
        grouped = 1.0 / (1.0 + k.expert_half_rows / max(tokens_per_local_expert(rows, model, cand), 1.0)
                         + k.gemm_half_dim / max(expert_cols, 1.0))
        seconds += routed_active / (k.moe_efficiency * grouped)
    return 2 * tokens * seconds / flops_per_s


@dataclass(frozen=True, slots=True)
class TrainerTimes:
    """The parts of a step the trainer's layout and knobs set; no rollout knob reaches them, so
    the search's floors compute them once per layout and add each rollout TP's part."""

    responses: int  # per step
    log_prob_s: float
    update_s: float
    offload_s: float
    bubble_s: float
    comm_s: float


def trainer_times(cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload, k: StepConstants
                  ) -> TrainerTimes:
    """Log-prob passes, update, their communication and pipeline bubble, and offload traffic."""
    gpus = max(1, work.gpus)
    dp = layout_dp(gpus, cand)
    responses = work.responses_per_step or work.per_rank_mini_batch * dp
    prompt, response = expected_lengths(work, k, model.name)
    per_response = prompt + response
    if not cand.use_dynamic_bsz:
        # Fixed micro-batches are not balanced by tokens: part of the padding to the maximum is computed.
        per_response += k.static_pad_share * max(0.0, work.seq_len - per_response)
    tokens = responses * per_response
    per_rank = math.ceil(responses / dp)
    passes = 1 + int(work.has_ref) + int(work.has_critic)
    trained = 1 + int(work.has_critic)
    # Each phase's GEMMs run at the speed its micro-batches' shapes allow (log-prob passes take
    # their own, usually larger, budget).
    log_prob_rows = micro_batch_rows(per_rank, per_response, cand, log_prob=True)
    update_rows = micro_batch_rows(work.per_rank_mini_batch, per_response, cand, log_prob=False)
    log_prob_s = passes * forward_s(tokens, log_prob_rows, cand, model, gpu, work, k)
    update_forwards = 3 + (1 if cand.recompute else 0)  # forward + backward (2×), + a recomputed forward
    update_s = trained * update_forwards * forward_s(tokens, update_rows, cand, model, gpu, work, k)
    comm_s = training_comm_s(cand, model, gpu, work, tokens, passes + trained * update_forwards,
                             ep_forwards=passes + trained * (update_forwards - 1))
    optimizer_steps = trained * max(1, math.ceil(per_rank / max(1, work.per_rank_mini_batch)))
    comm_s += optimizer_steps * dp_grad_sync_s(cand, model, gpu, work)
    bubble_s = 0.0
    if cand.pp > 1:
        seq = max(1, round(per_response))
        # The stages run at the slowest one's pace: the others idle (imbalance − 1) of the compute.
        # Then the fill and drain: the fraction b of the pipelined time is idle, b/(1−b) of it,
        # b = (PP−1)/(VPP·M + PP−1).
        imbalance = stage_imbalance(model, cand, k.moe_efficiency)
        for compute, micro in ((log_prob_s, micro_batches(per_rank, seq, cand, log_prob=True)),
                               (update_s, micro_batches(work.per_rank_mini_batch, seq, cand, log_prob=False))):
            share = bubble_fraction(cand.pp, cand.vpp, micro)
            bubble_s += compute * (imbalance - 1) + compute * imbalance * share / (1 - share)
    # A calibration's update factor was fitted on the update with its communication, bubble and
    # offload (generator.plan.step_fit.parts): it scales them all.
    c = k.corrections(model.name)
    u = c.update
    return TrainerTimes(responses=responses, log_prob_s=log_prob_s * c.log_prob, update_s=update_s * u,
                        offload_s=_offload_s(cand, model, gpu, work, dp) * u, bubble_s=bubble_s * u, comm_s=comm_s * u)


@dataclass(frozen=True, slots=True)
class RolloutTimes:
    """The parts of a step the rollout engine's TP sets: generating the responses, and the weight
    sync into the engine (the search's floors keep them per workload and rollout TP)."""

    rollout_s: float
    weight_sync_s: float


def rollout_times(rollout_tp: int, model: ModelFacts, gpu: GpuSpec, work: Workload, responses: int,
                  kv_tokens: int | None, k: StepConstants) -> RolloutTimes:
    """The rollout on `rollout_tp` (responses per step: the trainer's) and the weight sync to it."""
    c = k.corrections(model.name)
    return RolloutTimes(_rollout_s(rollout_tp, model, gpu, work, responses, kv_tokens, k) * c.rollout,
                        BF16 * _params(model)[0] / max(1, rollout_tp) / (gpu.peer_gb_s * 1e9) * c.weight_sync)


def with_rollout(t: TrainerTimes, r: RolloutTimes) -> StepTime:
    """The whole step: the trainer's parts and the rollout's."""
    return StepTime(rollout_s=r.rollout_s, log_prob_s=t.log_prob_s, update_s=t.update_s, offload_s=t.offload_s,
                    bubble_s=t.bubble_s, weight_sync_s=r.weight_sync_s, comm_s=t.comm_s)


def _offload_s(cand: Candidate, model: ModelFacts, gpu: GpuSpec, work: Workload, dp: int) -> float:
    """Host-link seconds per step on the heaviest pipeline stage (the others wait for it)."""
    off = cand.offload
    if not (off.param or off.grad or off.optimizer or off.cpu_optimizer):
        return 0.0
    counts = stage_layer_counts(model.num_layers, cand.pp, cand.first_stage_layers, cand.last_stage_layers)
    stage = max((stage_params(model, cand, s, counts) for s in {0, cand.pp - 1}), key=lambda p: p.total)
    edp = layout_edp(work.gpus, cand)
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
