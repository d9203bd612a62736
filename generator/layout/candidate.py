"""The planner's sized layout: a `Parallelism` with the knobs sized for it (offload, micro
batches, gpu_memory_utilization), its memory per phase and its estimated step time.

The planner, the script reader, the renderer, the reports and the recipe library speak it; a
check does not (only `gen check --gpu` asks the planner), so it is apart from generator.layout.parallelism,
which every check imports.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.layout.parallelism import Offload, Parallelism


@dataclass(frozen=True, slots=True)
class MemoryTerm:
    name: str  # e.g. "weights", "grads", "optimizer", "activations", "logits", "kv-cache", "overhead"
    gib: float
    note: str = ""


@dataclass(frozen=True, slots=True)
class PhaseMemory:
    phase: str  # "update" | "log_prob" | "ref_log_prob" | "rollout"
    gib: float
    terms: tuple[MemoryTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class StepTime:
    """Estimated seconds of one training step, by part (generator.plan.step_time computes it)."""

    rollout_s: float  # prefill + decode of every response
    log_prob_s: float  # old (and ref, critic-value) forward passes, bubble excluded
    update_s: float  # forward+backward+optimizer of actor (and critic), bubble excluded
    offload_s: float  # host transfers of offloaded params/grads/optimizer state, CPU optimizer step
    bubble_s: float  # pipeline idle time of the log-prob and update passes
    weight_sync_s: float  # actor weights handed to the rollout engine
    comm_s: float = 0.0  # TP/CP/EP communication of the log-prob and update passes


    @property
    def total_s(self) -> float:
        return (self.rollout_s + self.log_prob_s + self.update_s + self.offload_s + self.bubble_s + self.weight_sync_s
                + self.comm_s)


@dataclass(frozen=True, slots=True)
class Candidate(Parallelism):
    """A layout (the Parallelism fields) with the knobs sized for it and its memory."""

    # Parallelism's fields, in its order (a plain class, so the dataclass does not see them):
    # declared here for the generated __init__, equality, hash and `replace`.
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None
    vpp: int | None = None
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    rollout_tp: int = 1
    micro_batch_per_gpu: int = 1
    use_dynamic_bsz: bool = False
    token_budget: int | None = None  # actor ppo_max_token_len_per_gpu when dynamic
    log_prob_token_budget: int | None = None
    log_prob_micro_batch_per_gpu: int | None = None
    offload: Offload = Offload()
    recompute: bool = False  # full/uniform/1
    gpu_memory_utilization: float = 0.5
    memory: tuple[PhaseMemory, ...] = ()
    limit_gib: float = 0.0
    fits: bool = True
    why: tuple[str, ...] = ()
    # Added by the planner (additive):
    use_fused_kernels: bool = False  # actor_rollout_ref.model.use_fused_kernels (no [T, V] logits)
    warnings: tuple[str, ...] = ()  # throughput notes (e.g. KV cache holds part of the rollout batch)
    ppo_mini_batch_size: int | None = None  # prompts; the Plan's value, or this layout's when DPs differ
    enforce_eager: bool = False  # rollout.enforce_eager; False (verl's default) keeps vLLM's CUDA graphs
    score: StepTime | None = None  # the estimated step time the ranking uses (set for sized layouts)

    def phase(self, name: str) -> PhaseMemory | None:
        return next((p for p in self.memory if p.phase == name), None)

    @property
    def peak_gib(self) -> float:
        return max((p.gib for p in self.memory), default=0.0)

    def relief(self, *, short: bool = False) -> list[str]:
        """The memory knobs this layout turns on, cheapest first: long names for the script's `why`
        lines, short ones for the plan table."""
        off = self.offload
        names = [name for name, on in (("param" if short else "param+grad", off.param),
                                       ("opt" if short else "optimizer", off.optimizer)) if on]
        if off.cpu_optimizer:
            names.append(f"cpu-opt {off.cpu_optimizer_fraction:g}" if short
                         else f"CPU optimizer {off.cpu_optimizer_fraction:.0%}")
        if self.recompute:
            names.append("recompute" if short else "full recompute")
        return names
