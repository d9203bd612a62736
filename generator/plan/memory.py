"""Per-GPU memory of one verl step with the Megatron actor, phase by phase and stage by stage
(pure arithmetic). The formulas and every calibration point, with its public source, are in
docs/memory-model.md; the points live in data/memory_calibration.yaml and each is a test.

Phases (verl's hybrid engine): `update` (forward/backward over every micro-batch),
`optimizer_step` (the step after the last backward: activations freed, the step's allocations
allocated), `log_prob` (old log-probs with entropy), `ref_log_prob`, `rollout` (the engine's
gmu·total claim next to whatever Megatron state is not offloaded) and `weight_sync` (actor bf16
weights loaded next to the engine's weights while they are pushed). Every phase is computed on
every pipeline stage; a stage's layers (dense or MoE), its embedding and output layer, and its
micro-batches in flight make the difference. The verdict is the maximum over stages and phases.

What each offload flag frees (verl v0.7.0 megatron_workers; docs/rules/cross-checks.md#offload-keys):
`param` frees the bf16 weights and the grad buffer outside the update; `grad` frees nothing by
itself; `optimizer` frees the Adam state outside the update; none of them lowers the update peak.
Only Megatron's CPU optimizer (fraction f) keeps f of the optimizer state, and its step, off the
GPU. The reference model's weights follow the actor's param offload; a PPO critic (same layout
as the actor) is assumed to mirror the actor's param/optimizer offload. With
`rollout.enforce_eager` false (verl's default since 0.6) the engine's CUDA graphs sit outside
gpu_memory_utilization and stay on the GPU in every phase.

Constants (docs/memory-model.md "Constants"): every term follows Megatron-core, vLLM or verl
source except two, fitted on the known outcomes of data/memory_calibration.yaml by
plan/memory_fit.py (the middle of the window the runs and the OOMs leave; each outcome is judged
leave-one-out by tests/test_memory_calibration.py and `python bench/known_outcomes.py`):
- OVERHEAD_GIB = 2.65 per GPU in every phase (CUDA context, the driver's reserve that
  nvidia-smi's total holds, NCCL and DeepEP buffers, allocator slack): between the 1 GiB vLLM's
  own claim already holds (the rollout phase carries the overhead less that part) and Qwen2.5-7B
  TP2 with offload running on 8 H100 (ISEEKYAN/verl_megatron_practice grpo_qwen2.5_7b.csv row 9).
- STEP_TEMP_BYTES = 7.32 per parameter of the GPU's optimizer shard at the optimizer step: not
  derived (Megatron-core's Adam updates in place; docs/memory-model.md), between verl#3124 failing
  inside optimizer.step and verl's DeepSeek-V3 80 GB script running.
- FIT_FRACTION = 1.0: the usable limit is the GPU's memory; what no tensor holds is the overhead
  above, and the uncertainty is the spare the planner keeps (plan/error_band.py), so neither is
  counted twice.
- CUDA_GRAPH_GIB = 1 per GPU: vLLM's own capture logs (0.2 GiB for a 1B model; its warning
  says 1–3 GiB in the older engine).
- Routed-expert activations at 1.0x what Megatron-core keeps (plan/activations.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from generator.base import session
from generator.layout.derive import layout_dp, layout_edp
from generator.model.facts import ModelFacts
from generator.model.params import megatron_lora_share
from generator.plan.activations import (dense_layer_activation_bytes, in_flight_micro_batches,
                                        micro_batches_per_step, moe_layer_activation_bytes, tokens_per_micro)
from generator.layout.candidate import Candidate, MemoryTerm, PhaseMemory
from generator.plan.rollout_engine import engine_fixed_bytes
from generator.plan.stages import StageParams, every_stage_params, stage_layer_counts
from generator.plan.workload import GIB, Workload

OVERHEAD_GIB = 2.65
FIT_FRACTION = 1.0
STEP_TEMP_BYTES = 7.32
CUDA_GRAPH_GIB = 1.0
ENGINE_COUNTED_OVERHEAD_GIB = 1.0  # the part of OVERHEAD_GIB vLLM's own claim already holds

PHASES = ("update", "optimizer_step", "log_prob", "ref_log_prob", "rollout", "weight_sync")
# Every term the phases name, in the order charts colour them: a term has one colour in every
# chart (generator/report/charts.py), whatever the phases it appears in.
TERM_ORDER = ("weights", "grads", "optimizer", "activations", "logits", "kv-cache", "ref-weights", "critic",
              "step-temporaries", "cuda-graphs", "overhead", "actor-weights", "rollout-weights",
              "rollout-activations", "sync-bucket", "offloaded-weights", "offloaded-optimizer", "cpu-optimizer")
# The phases torch's allocator serves in the trainer process (verl's perf/max_memory_allocated_gb
# counts them): a calibration's memory offset applies to these.
TRAINING_PHASES = ("update", "optimizer_step", "log_prob", "ref_log_prob")
UPDATE = ("update",)  # the one phase the micro-batches in flight change


# One term of a phase before it is shown: (name, bytes, note or a function giving the note).
_Part = tuple[str, float, "str | Callable[[], str]"]


def _term(name: str, nbytes: float, note: str | Callable[[], str] = "", detail: bool = True) -> MemoryTerm:
    """A named term; notes are formatted (and values rounded) only when they will be shown."""
    if not detail:
        return MemoryTerm(name, nbytes / GIB)
    return MemoryTerm(name, round(nbytes / GIB, 2), note() if callable(note) else note)


def _phase(name: str, parts: Iterable[_Part], detail: bool = True, terms: bool = True) -> PhaseMemory:
    """The phase's total and terms. Shown (`detail`): each term rounded with its note, the total
    their sum. Searched (not `detail`): the total of the unrounded terms, and the terms
    themselves only when `terms` (the search reads the rollout phase's split, nothing else's;
    not building the others' ~25 objects per stage is most of a large plan's time)."""
    if detail:
        kept = tuple(_term(n, b, note, True) for n, b, note in parts)
        return PhaseMemory(name, round(sum(t.gib for t in kept), 2), kept)
    gibs = [b / GIB for _, b, _ in parts]
    shown = tuple(MemoryTerm(n, g) for (n, _, _), g in zip(parts, gibs)) if terms else ()
    return PhaseMemory(name, round(sum(gibs), 2), shown)


def overhead_gib(cand: Candidate) -> float:
    """The per-GPU memory no tensor term holds (one fitted constant for every layout: the
    known outcomes do not separate DeepEP's buffers from the rest; docs/memory-model.md)."""
    return OVERHEAD_GIB


def cuda_graph_gib(cand: Candidate) -> float:
    return 0.0 if cand.enforce_eager else CUDA_GRAPH_GIB


def usable_gib(gpu_memory_gib: float, headroom_gib: float = 0.0) -> float:
    """What the phases may use: FIT_FRACTION of the GPU, less the headroom the user asks to keep."""
    return round(gpu_memory_gib * FIT_FRACTION - headroom_gib, 2)


@dataclass(frozen=True, slots=True)
class _Sizes:
    """Byte sizes one GPU of a stage holds, shared by the phases."""

    params: StageParams
    dp: int
    edp: int
    cpu_fraction: float
    weights: float
    grads: float
    optimizer_gpu: float
    optimizer_cpu: float
    # The same stage fully trained: what a critic (and, in bf16, a reference) of it holds. Itself
    # without LoRA; with LoRA the actor's own sizes are its adapters' (the base is frozen).
    full: _Sizes | None = None

    @property
    def whole(self) -> _Sizes:
        return self.full or self


def _shards(cand: Candidate, work: Workload) -> tuple[int, int, float]:
    """(DP, EDP, the CPU optimizer's fraction) of a candidate: how its optimizer state is split."""
    cpu_fraction = cand.offload.cpu_optimizer_fraction if cand.offload.cpu_optimizer else 0.0
    return layout_dp(work.gpus, cand), layout_edp(work.gpus, cand), cpu_fraction


def _sizes(cand: Candidate, params: StageParams, shards: tuple[int, int, float],
           lora: tuple[float, float] = (0.0, 0.0)) -> _Sizes:
    dp, edp, cpu_fraction = shards
    # The distributed optimizer shards dense state over DP·CP and expert state over EDP.
    optimizer_full = 12 * (params.dense / (dp * cand.cp) + params.experts / edp)
    total = params.total
    full = _Sizes(params, dp, edp, cpu_fraction, 2 * total, 4 * total,
                  optimizer_full * (1 - cpu_fraction), optimizer_full * cpu_fraction)
    if lora == (0.0, 0.0):
        return full
    # LoRA (model/params.megatron_lora_share): the frozen base keeps its bf16 weights only; Megatron's
    # grad buffer and distributed optimizer hold only parameters that require grad, the adapters.
    dense, experts = params.dense * lora[0], params.experts * lora[1]
    optimizer = 12 * (dense / (dp * cand.cp) + experts / edp)
    return _Sizes(params, dp, edp, cpu_fraction, 2 * (total + dense + experts), 4 * (dense + experts),
                  optimizer * (1 - cpu_fraction), optimizer * cpu_fraction, full)


@dataclass(frozen=True, slots=True)
class _CallFacts:
    """What every stage of one candidate shares: computed once per candidate, not per stage
    (the search evaluates ~10 stages of each of ~1,000 candidates for a large model)."""

    tokens: float  # per training micro-batch
    lp_tokens: float  # per log-prob micro-batch
    micro_batches: int  # per step
    dense_act: float
    moe_non_expert: float
    moe_routed: float
    engine_weights: float
    engine_activations: float
    stages: tuple[StageParams, ...]  # the parameters of each pipeline stage
    shards: tuple[int, int, float]  # _shards
    lora: tuple[float, float]  # model.params.megatron_lora_share (0, 0: no LoRA)


def _call_facts(model: ModelFacts, cand: Candidate, work: Workload, counts: list[int]) -> _CallFacts:
    dense_act, moe_non_expert, moe_routed = _activation_bytes(model)
    engine_weights, engine_activations = engine_fixed_bytes(model, cand, work)
    return _CallFacts(tokens_per_micro(cand, work, log_prob=False), tokens_per_micro(cand, work, log_prob=True),
                      micro_batches_per_step(cand, work), dense_act, moe_non_expert, moe_routed, engine_weights,
                      engine_activations, every_stage_params(model, cand, counts), _shards(cand, work),
                      megatron_lora_share(model, work.lora_rank))


@lru_cache(maxsize=256)
def _activation_bytes(model: ModelFacts) -> tuple[float, float, float]:
    """Per token: a dense layer's activations, an MoE layer's non-expert and routed-expert parts."""
    moe_non_expert, moe_routed = moe_layer_activation_bytes(model) if model.is_moe else (0.0, 0.0)
    return dense_layer_activation_bytes(model), moe_non_expert, moe_routed


def _stage_phases(model: ModelFacts, cand: Candidate, work: Workload, stage: int,
                  counts: list[int], detail: bool = True, facts: _CallFacts | None = None,
                  wanted: Collection[str] = PHASES, rollout_terms: bool = True) -> dict[str, PhaseMemory]:
    """Every phase's memory on one GPU of pipeline stage `stage` (`detail`: with rounded, noted terms;
    `wanted`: only those phases, as the search asks; `rollout_terms`: without `detail`, the
    rollout phase's unrounded terms too)."""
    f = facts if facts is not None else _call_facts(model, cand, work, counts)
    t, pp = cand.tp, cand.pp
    off = cand.offload
    z = _sizes(cand, f.stages[stage], f.shards, f.lora)
    params, weights, grads = z.params, z.weights, z.grads
    ref_weights = z.whole.weights if work.has_ref else 0.0
    critic_state = (z.whole.weights + z.whole.grads + z.whole.optimizer_gpu) if work.has_critic else 0.0
    overhead = ("overhead", overhead_gib(cand) * GIB, "CUDA context, NCCL/DeepEP buffers, fragmentation")
    graphs = ("cuda-graphs", cuda_graph_gib(cand) * GIB,
              "rollout.enforce_eager=True" if cand.enforce_eager else
              "vLLM CUDA graphs: outside gpu_memory_utilization, kept in every phase")
    last = stage == pp - 1
    vocab_shard = model.vocab_size / t

    def optimizer_note() -> str:
        return (f"fp32 master+Adam over DP·CP={z.dp * cand.cp}" + (f", experts over EDP={z.edp}" if params.experts else "")
                + (f"; {z.cpu_fraction:.0%} on CPU (Megatron CPU optimizer)" if z.cpu_fraction else ""))

    trainer_state: list[_Part] = [
        ("weights", weights, lambda: f"bf16, {params.total / 1e9:.2f}B params on this GPU"
         + (f" + LoRA rank {work.lora_rank} adapters" if z.full else "")),
        ("grads", grads, "fp32 main grads (grad_reduce_in_fp32)" + (" of the adapters: the base is frozen"
                                                                     if z.full else "")),
        ("optimizer", z.optimizer_gpu, optimizer_note),
    ]
    beside_update = _beside_update(cand, ref_weights, critic_state)
    phases: dict[str, PhaseMemory] = {}
    if "update" in wanted:
        phases["update"] = _update_phase(model, cand, work, stage, f, params, trainer_state,
                                         [*beside_update, graphs, overhead], last, detail)
    if "optimizer_step" in wanted:
        step_temp = z.optimizer_gpu * STEP_TEMP_BYTES / 12
        phases["optimizer_step"] = _phase("optimizer_step", [
            *trainer_state,
            ("step-temporaries", step_temp,
             lambda: f"optimizer-step allocations, {STEP_TEMP_BYTES} B per parameter of the GPU's optimizer "
                     f"shard (fitted: verl#3124 / DeepSeek-V3 80 GB)"
             if step_temp else "the step runs on the CPU (Megatron CPU optimizer)"),
            *beside_update, graphs, overhead], detail, terms=False)

    # Forward-only passes: the params, one layer's forward working set and the logits.
    lp_tokens = f.lp_tokens
    forward_set = lp_tokens * max(f.dense_act, f.moe_non_expert + f.moe_routed) / t
    resident_grads = ("grads", 0.0 if off.param else grads,
                      "offloaded with params" if off.param else "grad buffer stays")
    resident_opt = ("optimizer", 0.0 if off.optimizer else z.optimizer_gpu,
                    "offloaded" if off.optimizer else "stays on GPU")
    resident_ref = ("ref-weights", 0.0 if (off.param or not work.has_ref) else ref_weights,
                    "offloaded" if off.param else "stays on GPU")
    resident_critic = ("critic", _resident_critic_bytes(cand, work, z), "")
    with_ref = [resident_ref] if work.has_ref else []
    with_critic = [resident_critic] if work.has_critic else []

    def forward_phase(name: str, logit_bytes_per: int, note: str, model_weights: float,
                      other: list[_Part]) -> PhaseMemory:
        logits = 0.0 if (cand.use_fused_kernels or not last) else logit_bytes_per * lp_tokens * vocab_shard
        return _phase(name, [
            ("weights", model_weights, note), *other,
            ("activations", forward_set, lambda: f"one layer's forward working set, {lp_tokens:,.0f} tokens"),
            ("logits", logits, "fused kernels" if cand.use_fused_kernels else
             (lambda: f"last stage, {logit_bytes_per}·T·V/TP") if last else "not on this stage"),
            graphs, overhead], detail, terms=False)

    if "log_prob" in wanted:
        phases["log_prob"] = forward_phase("log_prob", 12, "actor, loaded for the pass", weights,
                                           [resident_grads, resident_opt, *with_ref, *with_critic])
    if work.has_ref and "ref_log_prob" in wanted:
        phases["ref_log_prob"] = forward_phase("ref_log_prob", 6, "reference model", ref_weights, [
            ("actor-weights", 0.0 if off.param else weights + grads,
             "offloaded" if off.param else "actor weights+grads stay"),
            resident_opt, *with_critic])
    resident: list[_Part] = [resident_grads, resident_opt, *with_ref, *with_critic]
    if "rollout" in wanted:
        phases["rollout"] = _rollout_phase(cand, work, f, weights, resident, graphs, detail, rollout_terms)
    if "weight_sync" in wanted:
        # Weight sync: the actor's bf16 weights are loaded (without grads) and pushed, bucket by
        # bucket, into the engine's weights before its KV cache is resumed.
        phases["weight_sync"] = _phase("weight_sync", [
            ("actor-weights", weights, "bf16, loaded for the sync"), *resident,
            ("rollout-weights", f.engine_weights, lambda: f"2·N/rollout TP {cand.rollout_tp}"),
            ("sync-bucket", work.sync_bucket_mib * 2**20,
             lambda: f"update_weights_bucket_megabytes {work.sync_bucket_mib}"),
            graphs, overhead], detail, terms=False)
    return _with_calibration(phases, detail, model.name)


def _update_phase(model: ModelFacts, cand: Candidate, work: Workload, stage: int, f: _CallFacts,
                  params: StageParams, trainer_state: list[_Part], rest: list[_Part], last: bool,
                  detail: bool) -> PhaseMemory:
    """The update on one stage: the trainer's state, the activations of the micro-batches in
    flight, the logits (last stage), and `rest` (other models beside it, CUDA graphs, overhead)."""
    tokens = f.tokens
    in_flight = in_flight_micro_batches(cand, stage, f.micro_batches)
    etp = cand.tp if cand.etp is None else cand.etp
    activations = _update_activations(model, cand, params, f, in_flight, etp)

    def act_note() -> str:
        layers = params.dense_layers + params.moe_layers
        if cand.recompute:
            return (f"full recompute: {in_flight:g} micro-batch(es) in flight × {tokens:,.0f} tokens × "
                    f"{layers} layer inputs + one layer's working set")
        return (f"{in_flight:g} micro-batch(es) in flight × {tokens:,.0f} tokens × {layers} layers"
                + (f" (top-{model.experts_per_token} routed copies each)" if params.moe_layers else ""))
    return _phase("update", [
        *trainer_state,
        ("activations", activations, act_note),
        ("logits", _update_logits_bytes(cand, work, last, tokens, model.vocab_size / cand.tp),
         _update_logits_note(cand, last)),
        *rest], detail, terms=False)


def _rollout_phase(cand: Candidate, work: Workload, f: _CallFacts, weights: float, resident: list[_Part],
                   graphs: _Part, detail: bool, terms: bool) -> PhaseMemory:
    """Rollout: Megatron state still resident + the engine's gmu·total claim, which it splits into
    weights, a profiling-run peak and the KV cache (vLLM refuses to start when the first two
    exceed the claim)."""
    off = cand.offload
    engine_budget = cand.gpu_memory_utilization * work.gpu_memory_gib * GIB
    engine_weights, engine_activations = f.engine_weights, f.engine_activations
    kv_cache = engine_budget - engine_weights - engine_activations

    def claim() -> str:
        return f"of gpu_memory_utilization {cand.gpu_memory_utilization:g} × {work.gpu_memory_gib:g} GiB"
    rollout_weights = ("rollout-weights", engine_weights, lambda: f"2·N/rollout TP {cand.rollout_tp}, {claim()}")
    return _phase("rollout", [
        ("actor-weights", 0.0 if off.param else weights, "offloaded" if off.param else "stays on GPU"),
        *resident, rollout_weights,
        ("rollout-activations", engine_activations,
         lambda: f"profiling run at {max(work.max_num_batched_tokens, work.seq_len)} tokens"),
        ("kv-cache", max(kv_cache, 0.0), "the rest of the claim" if kv_cache > 0 else
         "none: weights and activations exceed the claim; vLLM will not start"),
        graphs, ("overhead", (overhead_gib(cand) - ENGINE_COUNTED_OVERHEAD_GIB) * GIB,
                 "less the non-torch memory vLLM counts inside its claim")], detail, terms=terms)


def _with_calibration(phases: dict[str, PhaseMemory], detail: bool, model: str) -> dict[str, PhaseMemory]:
    """The training phases with a stored calibration's memory offset (generator.base.session): the
    measured peak of torch's allocator less the predicted one, over the runs it was fitted on.
    The logs measure the training peak only, so the rollout and weight-sync phases keep theirs."""
    in_force = session.current().calibration
    corrections = in_force.for_model(model) if in_force is not None else None
    if corrections is None or not corrections.memory_offset_gib:
        return phases
    offset = corrections.memory_offset_gib
    for name in TRAINING_PHASES:
        found = phases.get(name)
        if found is None:
            continue
        runs = corrections.memory_runs
        term = (MemoryTerm("calibration", round(offset, 2), f"measured - predicted, {runs} run{'s' if runs != 1 else ''}")
                if detail else MemoryTerm("calibration", offset))
        phases[name] = PhaseMemory(name, round(found.gib + offset, 2),
                                   found.terms + (term,) if detail or found.terms else ())
    return phases


def _beside_update(cand: Candidate, ref_weights: float, critic_state: float) -> list[_Part]:
    """The other models' state on the GPU next to the actor's update: none under param offload."""
    beside_update: list[_Part] = []
    if ref_weights and not cand.offload.param:
        beside_update.append(("ref-weights", ref_weights, "reference model stays on GPU (param offload off)"))
    if critic_state and not cand.offload.param:
        beside_update.append(("critic", critic_state, "critic weights+grads+optimizer (not offloaded)"))
    return beside_update


def _update_activations(model: ModelFacts, cand: Candidate, params: StageParams, f: _CallFacts,
                        in_flight: float, etp: int) -> float:
    """Activation bytes of the update on one stage: every layer's for the micro-batches in flight,
    or with full recompute only each layer's input and one layer's working set."""
    t = cand.tp
    dense_act, moe_non_expert, moe_routed, tokens = f.dense_act, f.moe_non_expert, f.moe_routed, f.tokens
    # Routed-expert tensors: tokens are SP-split (÷TP) before dispatch, expert widths split by ETP.
    per_token_stack = ((params.dense_layers * dense_act + params.moe_layers * moe_non_expert) / t
                       + params.moe_layers * moe_routed / (t * etp))
    if cand.recompute:
        kept_per_token = (params.dense_layers + params.moe_layers) * 2 * model.hidden_size / t
        one_layer = max(dense_act / t if params.dense_layers else 0.0,
                        (moe_non_expert / t + moe_routed / (t * etp)) if params.moe_layers else 0.0)
        return in_flight * tokens * kept_per_token + tokens * one_layer
    return in_flight * tokens * per_token_stack


def _update_logits_bytes(cand: Candidate, work: Workload, last: bool, tokens: float, vocab_shard: float) -> float:
    """The update's logits, only on the last stage and none with fused kernels: 6·T·V/TP, the
    bf16 logits (2 B) next to the fp32 copy Megatron's vocab-parallel cross entropy makes and keeps
    as the softmax for the backward (4 B; verl v0.7.0 megatron_actor.logits_processor →
    core_v0.13.0 tensor_parallel/cross_entropy.py), and 12 more with entropy (verl clones the
    logits for it; the 12 is the earlier estimate, not re-derived)."""
    if last and not cand.use_fused_kernels:
        return (6 + (12 if work.entropy_in_update else 0)) * tokens * vocab_shard
    return 0.0


def _update_logits_note(cand: Candidate, last: bool) -> str:
    return ("fused kernels" if cand.use_fused_kernels else
            ("last stage, 6·T·V/TP" if last else "not on this stage"))


def _resident_critic_bytes(cand: Candidate, work: Workload, z: _Sizes) -> float:
    """The critic's state left on the GPU outside the update: it mirrors the actor's offload."""
    off = cand.offload
    critic = z.whole
    return (((0.0 if off.param else critic.weights + critic.grads)
             + (0.0 if off.optimizer else critic.optimizer_gpu)) if work.has_critic else 0.0)


# ---------------------------------------------------------------------------------------------
# Every stage, the verdict, host RAM


@dataclass(frozen=True, slots=True)
class StageMemory:
    stage: int
    dense_layers: int
    moe_layers: int
    phases: tuple[PhaseMemory, ...]

    @property
    def layers(self) -> int:
        return self.dense_layers + self.moe_layers

    @property
    def peak(self) -> PhaseMemory:
        return max(self.phases, key=lambda p: p.gib)


@dataclass(frozen=True, slots=True)
class MemoryReport:
    """Every phase on every pipeline stage of one GPU, the usable limit, host RAM per node."""

    gpu_memory_gib: float
    usable_gib: float
    headroom_gib: float
    stages: tuple[StageMemory, ...]
    host_ram_per_node_gib: float
    host_terms: tuple[MemoryTerm, ...]

    @property
    def peak_stage(self) -> int:
        return max(self.stages, key=lambda s: s.peak.gib).stage

    @property
    def peak(self) -> PhaseMemory:
        return self.stages[self.peak_stage].peak

    @property
    def peak_gib(self) -> float:
        return self.peak.gib

    @property
    def peak_phase(self) -> str:
        return self.peak.phase

    @property
    def fits(self) -> bool:
        return self.peak_gib <= self.usable_gib

    def worst_phases(self) -> tuple[PhaseMemory, ...]:
        """Each phase on its worst stage, in PHASES order."""
        out = []
        for name in PHASES:
            found = [p for s in self.stages for p in s.phases if p.phase == name]
            if found:
                out.append(max(found, key=lambda p: p.gib))
        return tuple(out)


def _host_ram_terms(model: ModelFacts, cand: Candidate, work: Workload, counts: list[int],
                    detail: bool) -> tuple[MemoryTerm, ...]:
    """CPU memory the offloads take, averaged per node: each GPU's offloaded bytes times the
    GPUs holding that stage (gpus / PP), over the nodes. Megatron's CPU optimizer keeps fp32
    master, m, v and an fp32 grad copy (16 B) for its fraction of the shard."""
    gpus_per_stage = work.gpus / cand.pp
    nodes = max(1.0, work.gpus / work.gpus_per_node)
    off = cand.offload
    weights = params = optimizer = cpu_optimizer = 0.0
    shards = _shards(cand, work)
    lora = megatron_lora_share(model, work.lora_rank)
    for stage_params_ in every_stage_params(model, cand, counts):
        z = _sizes(cand, stage_params_, shards, lora)
        critic = z.whole if work.has_critic else None
        if off.param:
            weights += (z.weights + (z.whole.weights if work.has_ref else 0.0)
                        + (critic.weights if critic else 0.0)) * gpus_per_stage
        params += z.params.total * gpus_per_stage
        if off.optimizer:
            optimizer += (z.optimizer_gpu + (critic.optimizer_gpu if critic else 0.0)) * gpus_per_stage
        cpu_optimizer += (z.optimizer_cpu + (critic.optimizer_cpu if critic else 0.0)) * 16 / 12 * gpus_per_stage
    return (
        _term("offloaded-weights", weights / nodes, "bf16 actor (+ref, +critic) weights, param_offload", detail),
        _term("offloaded-optimizer", optimizer / nodes, "Adam state, optimizer_offload", detail),
        _term("cpu-optimizer", cpu_optimizer / nodes, "fp32 master, m, v and grads of the CPU fraction", detail),
    )


def stage_counts(model: ModelFacts, cand: Candidate) -> list[int]:
    return stage_layer_counts(model.num_layers, cand.pp, cand.first_stage_layers, cand.last_stage_layers)


@dataclass(frozen=True, slots=True)
class MemorySetup:
    """Everything the memory of one trainer call depends on."""

    model: ModelFacts
    candidate: Candidate  # layout and memory knobs
    workload: Workload  # GPUs, lengths, batch, roles
    headroom_gib: float = 0.0  # memory the user wants kept free below the usable limit


def evaluate_memory(setup: MemorySetup, *, detail: bool = True) -> MemoryReport:
    """Every phase on every pipeline stage; the verdict is the maximum over all of them."""
    model, cand, work, headroom_gib = setup.model, setup.candidate, setup.workload, setup.headroom_gib
    counts = stage_counts(model, cand)
    facts = _call_facts(model, cand, work, counts)
    stages = []
    for stage in range(cand.pp):
        params = facts.stages[stage]
        phases = _stage_phases(model, cand, work, stage, counts, False, facts)
        if detail:  # totals from the unrounded terms, as the search decides fit on them
            shown = _stage_phases(model, cand, work, stage, counts, True, facts)
            phases = {name: replace(shown[name], gib=phase.gib) for name, phase in phases.items()}
        stages.append(StageMemory(stage, params.dense_layers, params.moe_layers, tuple(phases.values())))
    host = _host_ram_terms(model, cand, work, counts, detail)
    return MemoryReport(work.gpu_memory_gib, usable_gib(work.gpu_memory_gib, headroom_gib), headroom_gib,
                        tuple(stages), round(sum(t.gib for t in host), 1), host)


def _distinct_stages(cand: Candidate, facts: _CallFacts) -> tuple[int, ...]:
    """The stages whose memory can be the worst of some phase, in stage order: the first stage
    of each kind (the same parameters, the same place: first, last). Stages of a kind differ in
    the micro-batches in flight alone, which only the update reads, and its bytes grow with them;
    the first stage of a kind has the most in flight (1F1B: PP − stage, at most M; VPP scales all
    alike), so no later stage of its kind exceeds it in any phase, and on a tie the worst-stage
    pick keeps the earlier stage anyway."""
    return _first_of_each_kind(facts.stages, cand.pp)


@lru_cache(maxsize=4096)
def _first_of_each_kind(stages: tuple[StageParams, ...], pp: int) -> tuple[int, ...]:
    seen: dict[tuple[StageParams, bool, bool], int] = {}
    for stage, params in enumerate(stages):
        seen.setdefault((params, stage == 0, stage == pp - 1), stage)
    return tuple(sorted(seen.values()))


def phase_memory(model: ModelFacts, cand: Candidate, work: Workload, *, detail: bool = True
                 ) -> tuple[PhaseMemory, ...]:
    """The worst pipeline stage of each phase, in PHASES order. `detail=False` skips the notes
    and rounding (the search evaluates thousands of settings and shows a handful), and the terms."""
    counts = stage_counts(model, cand)
    facts = _call_facts(model, cand, work, counts)
    worst = _worst_stages(model, cand, work, counts, facts, PHASES, rollout_terms=False)
    if not detail:
        return tuple(worst[name][1] for name in PHASES if name in worst)
    # Totals come from the unrounded terms, as in the search: the worst stage and the total shown
    # are the ones `fits` was decided on (a sum of rounded terms can differ by a rounding step).
    detailed = {stage: _stage_phases(model, cand, work, stage, counts, True, facts) for stage, _ in worst.values()}
    return tuple(replace(detailed[worst[name][0]][name], gib=round(worst[name][1].gib, 2))
                 for name in PHASES if name in worst)


def worst_rollout_phase(model: ModelFacts, cand: Candidate, work: Workload) -> PhaseMemory:
    """The rollout phase of phase_memory(detail=False), with its unrounded terms: the search reads
    its split once per sized layout (at gmu 0) and no other phase of that setting."""
    counts = stage_counts(model, cand)
    facts = _call_facts(model, cand, work, counts)
    return _worst_stages(model, cand, work, counts, facts, ("rollout",), rollout_terms=True)["rollout"][1]


def training_phases_fit(model: ModelFacts, cand: Candidate, work: Workload, limit_gib: float) -> bool:
    """Whether every phase but the rollout of phase_memory(detail=False) is within `limit_gib`,
    given up at the first that is not (each stage's update, the phase that most often exceeds,
    tried first): most of the relief ladder's rungs fail so, and the search reads nothing else."""
    counts = stage_counts(model, cand)
    facts = _call_facts(model, cand, work, counts)
    for stage in _distinct_stages(cand, facts):
        if _stage_phases(model, cand, work, stage, counts, False, facts, UPDATE)["update"].gib > limit_gib:
            return False
        if any(phase.gib > limit_gib for phase in _stage_phases(
                model, cand, work, stage, counts, False, facts, _BESIDE_UPDATE).values()):
            return False
    return True


_BESIDE_UPDATE = tuple(name for name in PHASES if name not in ("update", "rollout"))


def _worst_stages(model: ModelFacts, cand: Candidate, work: Workload, counts: list[int], facts: _CallFacts,
                  wanted: tuple[str, ...], *, rollout_terms: bool) -> dict[str, tuple[int, PhaseMemory]]:
    """(stage, phase) of the worst stage of each `wanted` phase (ties: the first such stage)."""
    worst: dict[str, tuple[int, PhaseMemory]] = {}
    for stage in _distinct_stages(cand, facts):
        for name, phase in _stage_phases(model, cand, work, stage, counts, False, facts, wanted,
                                         rollout_terms).items():
            if name not in worst or phase.gib > worst[name][1].gib:
                worst[name] = (stage, phase)
    return worst
