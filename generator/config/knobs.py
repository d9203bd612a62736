"""The memory and batch knobs of one trainer call, read from its Config once: the keys, their
types, and what verl (or Megatron beneath it) runs with when the config leaves a key null.

`gen recipe --from` and `gen import` (generator.script.extract) and the memory model of
`gen explain --memory` / `gen check --gpu` (generator.plan.script_setup) all read a call's knobs
here; each then decides what an unknown value means for it (a recipe keeps a default, the memory
model names the key it cannot evaluate without). `Reads` collects those problems.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.config.reader import ConfigReader, Float
from generator.layout.parallelism import Offload
from generator.verl.constants import ACTOR, MEGATRON, OPTIMIZER_OVERRIDES, REF, ROLLOUT, TRANSFORMER

# override_optimizer_config is empty in verl's config (verl/trainer/config/optim/megatron.yaml@v0.7.0)
# and handed to Megatron's OptimizerConfig key by key (verl/utils/megatron/optimizer.py@v0.7.0), whose
# optimizer_offload_fraction defaults to 0.0 (megatron/core/optimizer/optimizer_config.py@core_v0.14.0).
MEGATRON_OFFLOAD_FRACTION = 0.0


class Reads:
    """Typed reads that collect a problem for every required value that is not known."""

    def __init__(self, reader: ConfigReader) -> None:
        self.reader = reader
        self.problems: list[str] = []

    def _missing(self, key: str, kind: str) -> None:
        why = self.reader.config.unknown.get(key)
        self.problems.append(f"{key} is not a known {kind}" + (f" ({why})" if why else ""))

    def int(self, key: str, default: int | None = None, *, required: bool = True) -> int | None:
        if self.reader.is_null(key):
            return default
        value = self.reader.int(key)
        if value is None and required:
            self._missing(key, "integer")
        return value if value is not None else default

    def float(self, key: str, default: float) -> float:
        if self.reader.is_null(key):
            return default
        value = self.reader.float(key)
        if value is None:
            self._missing(key, "number")
            return default
        return value

    def float_or_none(self, key: str) -> Float | None:
        """None when null, and (with a problem) when not a known number."""
        if self.reader.is_null(key):
            return None
        value = self.reader.float(key)
        if value is None:
            self._missing(key, "number")
        return value

    def bool(self, key: str, default: bool = False) -> bool:
        if self.reader.is_null(key):
            return default
        value = self.reader.bool(key)
        if value is None:
            self._missing(key, "true/false value")
            return default
        return value


@dataclass(frozen=True, slots=True)
class Knobs:
    """A call's knobs as its config holds them. Integers are None when null or not known; the
    offload flags read False and the CPU-optimizer fraction Megatron's default when unset."""

    dynamic: bool
    micro: int | None  # actor ppo_micro_batch_size_per_gpu
    global_micro: int | None  # the deprecated actor ppo_micro_batch_size (over every DP rank)
    token_budget: int | None  # actor ppo_max_token_len_per_gpu
    log_prob_micro: int | None
    global_log_prob_micro: int | None
    log_prob_token_budget: int | None
    ref_log_prob_token_budget: int | None
    offload: Offload
    offload_fraction_set: bool  # optimizer_offload_fraction has a known value in the config
    recompute: bool  # recompute_granularity=full
    use_fused_kernels: bool
    rollout_tp: int | None
    gpu_memory_utilization: float | None  # None when null or not known
    enforce_eager: bool


def read_knobs(reads: Reads) -> Knobs:
    """Every knob, read in one order (the order `reads` records problems in). The per-GPU micro
    batch is required unless the batch is dynamic, and the token budget when it is: verl refuses
    the call otherwise."""
    reader = reads.reader
    dynamic = reads.bool(ACTOR + "use_dynamic_bsz")
    micro = reads.int(ACTOR + "ppo_micro_batch_size_per_gpu", required=not dynamic)
    global_micro = reads.int(ACTOR + "ppo_micro_batch_size", required=False)
    budget = reads.int(ACTOR + "ppo_max_token_len_per_gpu", required=dynamic)
    lp_micro = reads.int(ROLLOUT + "log_prob_micro_batch_size_per_gpu", required=False)
    global_lp_micro = reads.int(ROLLOUT + "log_prob_micro_batch_size", required=False)
    lp_budget = reads.int(ROLLOUT + "log_prob_max_token_len_per_gpu", required=False)
    ref_lp_budget = reads.int(REF + "log_prob_max_token_len_per_gpu", required=False)
    fraction_key = OPTIMIZER_OVERRIDES + "optimizer_offload_fraction"
    offload = Offload(
        param=reads.bool(MEGATRON + "param_offload"),
        grad=reads.bool(MEGATRON + "grad_offload"),
        optimizer=reads.bool(MEGATRON + "optimizer_offload"),
        cpu_optimizer=reads.bool(OPTIMIZER_OVERRIDES + "optimizer_cpu_offload"),
        cpu_optimizer_fraction=reads.float(fraction_key, MEGATRON_OFFLOAD_FRACTION),
    )
    recompute = reader.str(TRANSFORMER + "recompute_granularity") == "full"
    fused = reads.bool("actor_rollout_ref.model.use_fused_kernels")
    rollout_tp = reads.int(ROLLOUT + "tensor_model_parallel_size")
    gmu = reads.float_or_none(ROLLOUT + "gpu_memory_utilization")
    eager = reads.bool(ROLLOUT + "enforce_eager")
    return Knobs(dynamic=dynamic, micro=micro, global_micro=global_micro, token_budget=budget,
                 log_prob_micro=lp_micro, global_log_prob_micro=global_lp_micro, log_prob_token_budget=lp_budget,
                 ref_log_prob_token_budget=ref_lp_budget, offload=offload,
                 offload_fraction_set=reader.float(fraction_key) is not None, recompute=recompute,
                 use_fused_kernels=fused, rollout_tp=rollout_tp, gpu_memory_utilization=gmu, enforce_eager=eager)
