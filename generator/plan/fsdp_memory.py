"""Per-GPU memory of one verl step with the FSDP (or FSDP2) actor, phase by phase (pure arithmetic).
The Megatron model's twin (plan/memory.py): the same phases, terms and usable limit, one "stage"
(FSDP has no pipeline). Formulas, the facts they follow and every calibration point are in
docs/memory-model.md#the-fsdp-actor; the points live in data/fsdp_calibration.yaml and each is a test.

What the code of verl's FSDP workers does (verl v0.5.0 verl/workers/fsdp_workers.py and
verl/workers/actor/dp_actor.py; the same at v0.4.1 and v0.7.0):
- the actor is loaded in `fsdp_config.model_dtype` (fp32 unless set) and sharded over the FSDP group:
  every GPU (`fsdp_size` -1), or `fsdp_size` GPUs with the rest replicated (HSDP); compute runs in bf16
  (MixedPrecision param_dtype), gradients are reduced in fp32, Adam keeps m and v in fp32;
- with LoRA (`model.lora_rank` > 0) the base is frozen (no gradients, no optimizer state) and stays
  in the actor's dtype; only the adapters train; the reference is the actor with its adapter off;
- the reference model is bf16 and always wrapped with FSDP's CPU offload (FSDP1 `CPUOffload`,
  FSDP2 `CPUOffloadPolicy`): its shards live on the host, one unit is gathered at a time;
- `param_offload` / `optimizer_offload` move the actor's shards / Adam state to the host between
  phases and back for the update, so they lower every phase but the update and the step;
  FSDP2's `offload_policy` keeps them on the host through the update too (the step runs on the CPU);
- `update_policy` ends with `zero_grad()`: no gradients outside the update;
- the log-prob pass computes the entropy (`calculate_entropy=True`), the update only when
  `entropy_coeff` != 0; `use_fused_kernels` computes both without [tokens, vocab] logits;
- dynamic batches hold `ppo_max_token_len_per_gpu` tokens per GPU (× SP, then split over SP); without
  them a micro batch holds micro × sequence tokens, padded to the maximum lengths unless
  `use_remove_padding` packs the real tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from generator.verl.constants import VLLM_MAX_NUM_BATCHED_TOKENS
from generator.model.facts import ModelFacts
from generator.model.params import dense_layer_params, moe_layer_params, total_params
from generator.plan.activations import dense_layer_activation_bytes, moe_layer_activation_bytes
from generator.layout.candidate import Candidate, MemoryTerm, PhaseMemory
from generator.plan.rollout_engine import engine_fixed_bytes
from generator.plan.memory import (CUDA_GRAPH_GIB, ENGINE_COUNTED_OVERHEAD_GIB, OVERHEAD_GIB,
                                   MemoryReport, StageMemory, usable_gib)
from generator.plan.workload import GIB

# Bytes per token and vocabulary entry of the [tokens, vocab] tensors each pass keeps (dp_actor):
# bf16 logits (2) with flash-attn's cross entropy writing its gradient in place, plus a fp32
# log-softmax working copy (4) in the update; the entropy adds softmax and product (bf16) and
# logsumexp's fp32 temporary (6); the reference needs logits and the log-prob temporaries (4).
UPDATE_LOGIT_BYTES = 6
ENTROPY_LOGIT_BYTES = 6
LOG_PROB_LOGIT_BYTES = 10
REF_LOGIT_BYTES = 4
# torch's foreach AdamW allocates fp32 working copies over the whole trainable shard at the step.
FSDP_STEP_TEMP_BYTES = 4.0
ADAM_BYTES = 8  # m and v, fp32
GRAD_BYTES = 4  # reduce_dtype fp32
UNITS_IN_FLIGHT = 2  # the unit being computed and the one prefetched


@dataclass(frozen=True, slots=True)
class FsdpKnobs:
    """What the memory of one FSDP call depends on, besides the model."""

    gpus: int
    gpu_memory_gib: float
    prompt_len: int
    response_len: int
    strategy: str = "fsdp"  # "fsdp" | "fsdp2"
    fsdp_size: int = -1  # -1: shard over every GPU; else HSDP over groups of this size
    param_offload: bool = False
    optimizer_offload: bool = False
    offload_policy: bool = False  # FSDP2 CPUOffloadPolicy for the actor
    model_dtype_bytes: int = 4  # fsdp_config.model_dtype (fp32 unless set)
    gradient_checkpointing: bool = True
    activation_offload: bool = False  # model.enable_activation_offloading
    ulysses: int = 1
    lora_rank: int = 0
    lora_all_linear: bool = True  # target_modules all-linear (else attention projections only)
    micro_batch: int = 1  # actor, sequences per GPU
    use_dynamic_bsz: bool = False
    token_budget: int | None = None  # ppo_max_token_len_per_gpu
    log_prob_micro_batch: int | None = None
    log_prob_dynamic: bool = False
    log_prob_token_budget: int | None = None
    ref_micro_batch: int | None = None
    ref_token_budget: int | None = None
    remove_padding: bool = True
    fused_kernels: bool = False
    entropy_in_update: bool = False
    has_ref: bool = True
    has_critic: bool = False
    rollout_tp: int = 1
    gpu_memory_utilization: float = 0.5
    enforce_eager: bool = True
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS
    per_rank_mini: int = 0  # sequences of one mini batch on one GPU (0: not bounded)
    per_rank_batch: int = 0  # sequences of the step's batch on one GPU (the log-prob passes; 0: not bounded)
    fill: float = 1.0  # share of the maximum lengths the real sequences fill (remove padding only)

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.response_len

    @property
    def shard_group(self) -> int:
        return self.gpus if self.fsdp_size <= 0 or self.fsdp_size >= self.gpus else self.fsdp_size

    @property
    def length_bound(self) -> bool:
        """The micro batches' tokens follow the data's real lengths (packed, no token budget)."""
        return self.remove_padding


def lora_params(model: ModelFacts, rank: int, all_linear: bool) -> int:
    """Adapter parameters: rank × (in + out) per targeted linear of every layer."""
    h = model.hidden_size
    q, kv = model.num_attention_heads * model.head_dim, model.num_kv_heads * model.head_dim
    attention = (h + q) + 2 * (h + kv) + (q + h)
    mlp = 3 * (h + model.ffn_hidden_size) if all_linear and not model.is_moe else 0
    return rank * (attention + mlp) * model.num_layers


def _largest_unit(model: ModelFacts) -> int:
    """Parameters of the largest FSDP unit (a decoder layer; verl wraps each layer class)."""
    layer = moe_layer_params(model) if model.is_moe else dense_layer_params(model)
    return layer.tp_sharded + layer.replicated + layer.experts


def _root_params(model: ModelFacts) -> int:
    """The root unit (embedding, output layer, final norm): gathered for the whole forward/backward."""
    return model.vocab_size * model.hidden_size * (1 if model.tie_word_embeddings else 2) + model.hidden_size


def _tokens(k: FsdpKnobs, *, micro: int | None, dynamic: bool, budget: int | None, sequences: int) -> float:
    """Tokens of one micro batch on one GPU, after the Ulysses split: a token budget packs at most
    the sequences the GPU has (its share of the mini batch, or of the batch for log-probs)."""
    fill = k.fill if k.length_bound else 1.0
    real = sequences * k.seq_len * fill / k.ulysses if sequences else float("inf")
    if dynamic:
        return float(min(max(budget or k.seq_len, k.seq_len // k.ulysses), real))
    return min((micro or k.micro_batch) * k.seq_len * fill / k.ulysses, real)


def _per_token_layer(model: ModelFacts) -> float:
    if model.is_moe:
        non_expert, routed = moe_layer_activation_bytes(model)
        return non_expert + routed
    return dense_layer_activation_bytes(model)


def _term(name: str, nbytes: float, note: str = "") -> MemoryTerm:
    return MemoryTerm(name, round(nbytes / GIB, 3), note)


def _phase(name: str, terms: Iterable[MemoryTerm]) -> PhaseMemory:
    kept = tuple(terms)
    return PhaseMemory(name, round(sum(t.gib for t in kept), 2), kept)


@dataclass(frozen=True, slots=True)
class _Shards:
    """The per-GPU bytes every FSDP phase is built from."""

    n: int  # parameters
    lora: int  # adapter parameters (0 without LoRA)
    trainable: int
    base_bytes: float  # the model's shard in its dtype
    grads: float
    optimizer: float
    on_host: bool  # FSDP2's offload_policy: the trainer state lives on the host
    gathered_fwd: float
    gathered_bwd: float
    per_layer: float  # one layer's working set per token
    critic_resident: float
    resident_weights: float  # what stays on the GPU between phases
    resident_optimizer: float
    weights_note: str
    graphs: MemoryTerm
    overhead: MemoryTerm


def _shards(model: ModelFacts, k: FsdpKnobs) -> _Shards:
    n = total_params(model)
    shard = k.shard_group
    lora = lora_params(model, k.lora_rank, k.lora_all_linear) if k.lora_rank > 0 else 0
    trainable = lora if lora else n
    base_bytes = n * k.model_dtype_bytes / shard
    grads = trainable * GRAD_BYTES / shard
    optimizer = trainable * ADAM_BYTES / shard + (lora * 4 / shard)  # LoRA adapters: own fp32 weights
    on_host = k.offload_policy and k.strategy == "fsdp2"
    unit = _largest_unit(model)
    gathered_fwd = 2 * (UNITS_IN_FLIGHT * unit + _root_params(model))
    overhead = _term("overhead", OVERHEAD_GIB * GIB, "CUDA context, NCCL buffers, fragmentation")
    graphs = _term("cuda-graphs", 0.0 if k.enforce_eager else CUDA_GRAPH_GIB * GIB,
                   "rollout.enforce_eager=True" if k.enforce_eager else "vLLM CUDA graphs, kept in every phase")
    sharding = (f"over the FSDP group of {shard}" + (f" (HSDP: {k.gpus // shard} replicas)" if shard < k.gpus else ""))
    weights_note = (f"{'fp32' if k.model_dtype_bytes == 4 else 'bf16'} {n / 1e9:.2f}B params {sharding}"
                    + (f"; LoRA rank {k.lora_rank}: base frozen" if lora else ""))
    critic_resident = ((0.0 if k.param_offload else base_bytes) + (0.0 if k.optimizer_offload else optimizer)
                       if k.has_critic else 0.0)
    return _Shards(n=n, lora=lora, trainable=trainable, base_bytes=base_bytes, grads=grads, optimizer=optimizer,
                   on_host=on_host, gathered_fwd=gathered_fwd, gathered_bwd=gathered_fwd + GRAD_BYTES * unit,
                   per_layer=_per_token_layer(model), critic_resident=critic_resident,
                   resident_weights=0.0 if (k.param_offload or on_host) else base_bytes,
                   resident_optimizer=0.0 if (k.optimizer_offload or on_host) else optimizer,
                   weights_note=weights_note, graphs=graphs, overhead=overhead)


def fsdp_phases(model: ModelFacts, k: FsdpKnobs) -> dict[str, PhaseMemory]:
    """Every phase on one GPU (docs/memory-model.md#the-fsdp-actor): the update and the optimizer
    step, the log-prob passes, the rollout next to the engine's claim, the weight sync."""
    z = _shards(model, k)
    phases = _training_phases(model, k, z)
    phases.update(_log_prob_phases(model, k, z))
    phases.update(_rollout_phases(model, k, z))
    return phases


def _training_phases(model: ModelFacts, k: FsdpKnobs, z: _Shards) -> dict[str, PhaseMemory]:
    """The update (the actor's shards, the gathered units, the activations and the logits) and
    the optimizer step."""
    h, v = model.hidden_size, model.vocab_size
    tokens = _tokens(k, micro=k.micro_batch, dynamic=k.use_dynamic_bsz, budget=k.token_budget,
                     sequences=k.per_rank_mini)
    layers = model.num_layers
    if k.activation_offload:
        kept = 2 * 2 * h * tokens + z.per_layer * tokens
        act_note = "activation offload: two layer inputs and one layer's working set"
    elif k.gradient_checkpointing:
        kept = layers * 2 * h * tokens + z.per_layer * tokens
        act_note = f"gradient checkpointing: {layers} layer inputs + one layer's working set"
    else:
        kept = layers * z.per_layer * tokens
        act_note = f"{layers} layers' activations (no gradient checkpointing)"
    act_note += f", {tokens:,.0f} tokens per micro batch"
    logit_bytes = 0.0 if k.fused_kernels else (UPDATE_LOGIT_BYTES + (ENTROPY_LOGIT_BYTES if k.entropy_in_update else 0))
    update_logits = logit_bytes * tokens * v
    trainer_state = [
        _term("weights", 0.0 if z.on_host else z.base_bytes,
              "on the host (FSDP2 offload_policy)" if z.on_host else z.weights_note),
        _term("grads", 0.0 if z.on_host else z.grads,
              f"fp32, {z.trainable / 1e9:.3f}B trainable params" + (" (adapters)" if z.lora else "")),
        _term("optimizer", 0.0 if z.on_host else z.optimizer,
              "Adam m and v (fp32)" + (" + adapter fp32 weights" if z.lora else "")),
    ]
    phases = {"update": _phase("update", [
        *trainer_state,
        _term("gathered-units", z.gathered_bwd, "bf16 root unit + two layers gathered, one layer's fp32 grads"),
        _term("activations", kept, act_note),
        _term("logits", update_logits, "fused kernels" if k.fused_kernels else f"{logit_bytes:g}·T·V"),
        *([_term("critic", z.critic_resident, "critic state not offloaded")] if k.has_critic else []),
        z.graphs, z.overhead])}
    step_temp = 0.0 if z.on_host else z.trainable * FSDP_STEP_TEMP_BYTES / k.shard_group
    phases["optimizer_step"] = _phase("optimizer_step", [
        *trainer_state,
        _term("step-temporaries", step_temp, "the step runs on the CPU" if z.on_host else
              f"foreach AdamW working copies, {FSDP_STEP_TEMP_BYTES:g} B per trainable shard parameter"),
        *([_term("critic", z.critic_resident)] if k.has_critic else []), z.graphs, z.overhead])
    return phases


def _forward_phase(model: ModelFacts, k: FsdpKnobs, z: _Shards, name: str, *, micro: int | None, dynamic: bool,
                   budget: int | None, logit_per: int, model_weights: float, note: str,
                   other: list[MemoryTerm]) -> PhaseMemory:
    """A forward-only pass (log-prob, ref): one layer's working set at a time."""
    h, v = model.hidden_size, model.vocab_size
    t = _tokens(k, micro=micro, dynamic=dynamic, budget=budget, sequences=k.per_rank_batch)
    return _phase(name, [
        _term("weights", model_weights, note), *other,
        _term("gathered-units", z.gathered_fwd, "bf16 root unit + two layers gathered"),
        _term("activations", t * (z.per_layer + 2 * h), f"one layer's forward working set, {t:,.0f} tokens"),
        _term("logits", 0.0 if k.fused_kernels else logit_per * t * v,
              "fused kernels" if k.fused_kernels else f"{logit_per}·T·V"),
        z.graphs, z.overhead])


def _log_prob_phases(model: ModelFacts, k: FsdpKnobs, z: _Shards) -> dict[str, PhaseMemory]:
    lp_micro = k.log_prob_micro_batch or k.micro_batch
    phases = {"log_prob": _forward_phase(
        model, k, z, "log_prob", micro=lp_micro, dynamic=k.log_prob_dynamic, budget=k.log_prob_token_budget,
        logit_per=LOG_PROB_LOGIT_BYTES, model_weights=0.0 if z.on_host else z.base_bytes,
        note="actor, loaded for the pass",
        other=[_term("optimizer", z.resident_optimizer, "offloaded" if k.optimizer_offload else "stays on the GPU"),
               *([_term("critic", z.critic_resident)] if k.has_critic else [])])}
    if k.has_ref:
        ref_note = ("the actor with its adapter off" if z.lora else
                    "bf16, on the host (verl wraps the reference with FSDP CPU offload)")
        phases["ref_log_prob"] = _forward_phase(
            model, k, z, "ref_log_prob", micro=k.ref_micro_batch or lp_micro, dynamic=k.log_prob_dynamic,
            budget=k.ref_token_budget or k.log_prob_token_budget, logit_per=REF_LOGIT_BYTES,
            model_weights=z.base_bytes if z.lora else 0.0, note=ref_note,
            other=[] if z.lora else [_term("actor-weights", z.resident_weights,
                                           "offloaded" if k.param_offload else "stays"),
                                     _term("optimizer", z.resident_optimizer)])
    return phases


def _rollout_phases(model: ModelFacts, k: FsdpKnobs, z: _Shards) -> dict[str, PhaseMemory]:
    """Rollout (what FSDP keeps resident next to the engine's gmu·total claim) and the weight sync."""
    cand = Candidate(tp=1, rollout_tp=k.rollout_tp, gpu_memory_utilization=k.gpu_memory_utilization,
                     enforce_eager=k.enforce_eager)
    from generator.plan.workload import Workload

    work = Workload(gpus=k.gpus, gpu_memory_gib=k.gpu_memory_gib, prompt_len=k.prompt_len,
                    response_len=k.response_len, max_num_batched_tokens=k.max_num_batched_tokens)
    engine_weights, engine_act = engine_fixed_bytes(model, cand, work)
    budget_bytes = k.gpu_memory_utilization * k.gpu_memory_gib * GIB
    kv = budget_bytes - engine_weights - engine_act
    phases = {"rollout": _phase("rollout", [
        _term("actor-weights", z.resident_weights, "offloaded" if k.param_offload else "stays on the GPU"),
        _term("optimizer", z.resident_optimizer, "offloaded" if k.optimizer_offload else "stays on the GPU"),
        *([_term("critic", z.critic_resident)] if k.has_critic else []),
        _term("rollout-weights", engine_weights, f"2·N/rollout TP {k.rollout_tp}"),
        _term("rollout-activations", engine_act, "profiling run"),
        _term("kv-cache", max(kv, 0.0), "the rest of gpu_memory_utilization × GPU memory" if kv > 0 else
              "none: weights and activations exceed the claim; vLLM will not start"),
        z.graphs, _term("overhead", (OVERHEAD_GIB - ENGINE_COUNTED_OVERHEAD_GIB) * GIB,
                      "less the non-torch memory vLLM counts inside its claim")])}
    largest_param = model.vocab_size * model.hidden_size * 2
    phases["weight_sync"] = _phase("weight_sync", [
        _term("actor-weights", 0.0 if z.on_host else z.base_bytes, "the shards, loaded for the sync"),
        _term("optimizer", z.resident_optimizer),
        _term("rollout-weights", engine_weights, f"2·N/rollout TP {k.rollout_tp}"),
        # the bucket is the Workload's (0.7.0's 512 MiB here: FsdpKnobs carry no release)
        _term("sync-bucket", max(work.sync_bucket_mib * 2**20, largest_param),
              "one full parameter (the embedding) gathered"),
        z.graphs, z.overhead])
    return phases


def fsdp_report(model: ModelFacts, k: FsdpKnobs, headroom_gib: float = 0.0) -> MemoryReport:
    """The phases as a one-stage MemoryReport (the Megatron report's shape), host RAM per node."""
    phases = fsdp_phases(model, k)
    n = total_params(model)
    shard = k.shard_group
    per_gpu_host = ((n * k.model_dtype_bytes / shard if k.param_offload or k.offload_policy else 0.0)
                    + (n * 2 / shard if k.has_ref and not k.lora_rank else 0.0))
    per_node = max(1, min(k.gpus, 8))
    host = (_term("offloaded-weights", per_gpu_host * per_node, "actor shards (param offload) and the reference"),)
    stage = StageMemory(0, 0 if model.is_moe else model.num_layers, model.num_layers if model.is_moe else 0,
                        tuple(phases.values()))
    return MemoryReport(k.gpu_memory_gib, usable_gib(k.gpu_memory_gib, headroom_gib), headroom_gib, (stage,),
                        round(sum(t.gib for t in host), 1), host)


@dataclass(frozen=True, slots=True)
class FsdpVerdict:
    """`fits` at the maximum lengths; `fill_limit` the largest share of them that fits when the
    micro batches follow the data's real lengths (None when the lengths do not matter)."""

    report: MemoryReport
    fits: bool
    fill_limit: float | None

    @property
    def length_dependent(self) -> bool:
        return not self.fits and self.fill_limit is not None and self.fill_limit > 0


def fsdp_verdict(model: ModelFacts, k: FsdpKnobs, headroom_gib: float = 0.0) -> FsdpVerdict:
    full = fsdp_report(model, k, headroom_gib)
    if full.fits or not k.length_bound:
        return FsdpVerdict(full, full.fits, None)
    # Memory grows with the fill (tokens are linear in it until a budget caps them): bisect.
    if not fsdp_report(model, replace(k, fill=0.0), headroom_gib).fits:
        return FsdpVerdict(full, False, 0.0)
    low, high = 0.0, 1.0
    for _ in range(20):
        mid = (low + high) / 2
        if fsdp_report(model, replace(k, fill=mid), headroom_gib).fits:
            low = mid
        else:
            high = mid
    return FsdpVerdict(full, False, round(low, 3))
