"""A call's memory verdict for the rules (`gen check --gpu`, VM811) and the smallest change that
fits, in the order of cost docs/memory-model.md#knobs-in-order-of-cost gives: param offload,
optimizer offload, the CPU optimizer with a fraction, full recompute, a smaller token budget or
micro batch, a lower gpu_memory_utilization. Each rung is tried alone first, then on top of the
rungs before it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from generator.config.types import Config
from generator.model.facts import ModelFacts
from generator.layout.candidate import Candidate
from generator.plan.gmu_ladder import lowered_gmu
from generator.plan.memory import MemorySetup, evaluate_memory
from generator.plan.relief import CHECK_CPU_FRACTIONS, MEGATRON_RELIEF, KnobChange, Rung, cheapest_change
from generator.plan.script_setup import MemoryOptions, memory_setup_from_config
from generator.rules.core import MemoryVerdict
from generator.verl.constants import ACTOR, MEGATRON, OPTIMIZER_OVERRIDES, ROLLOUT, TRANSFORMER

_Relief = KnobChange[Candidate]  # one rung of this actor's memory relief


def _param(c: Candidate) -> _Relief | None:
    if c.offload.param:
        return None
    return _Relief("turn on param_offload and grad_offload", replace(c, offload=c.offload._replace(param=True, grad=True)),
                   ((MEGATRON + "param_offload", True), (MEGATRON + "grad_offload", True)))


def _optimizer(c: Candidate) -> _Relief | None:
    if c.offload.optimizer:
        return None
    return _Relief("turn on optimizer_offload", replace(c, offload=c.offload._replace(optimizer=True)),
                   ((MEGATRON + "optimizer_offload", True),))


def _cpu_optimizer(c: Candidate) -> Iterator[_Relief]:
    current = c.offload.cpu_optimizer_fraction if c.offload.cpu_optimizer else 0.0
    for fraction in CHECK_CPU_FRACTIONS:
        if fraction > current:
            yield _Relief(f"set optimizer_cpu_offload with optimizer_offload_fraction={fraction:g}",
                          replace(c, offload=c.offload._replace(cpu_optimizer=True, cpu_optimizer_fraction=fraction)),
                          ((OPTIMIZER_OVERRIDES + "optimizer_cpu_offload", True),
                           (OPTIMIZER_OVERRIDES + "optimizer_offload_fraction", fraction)))


def _recompute(c: Candidate) -> _Relief | None:
    if c.recompute:
        return None
    return _Relief("turn on full recompute (uniform, 1 layer)", replace(c, recompute=True),
                   ((TRANSFORMER + "recompute_granularity", "full"), (TRANSFORMER + "recompute_method", "uniform"),
                    (TRANSFORMER + "recompute_num_layers", 1)))


def _smaller_batches(c: Candidate, seq_len: int) -> Iterator[_Relief]:
    if c.use_dynamic_bsz and c.token_budget:
        budget = c.token_budget // 2
        while budget >= seq_len:  # verl refuses a budget below one sequence
            yield _Relief(f"lower ppo_max_token_len_per_gpu to {budget}", replace(c, token_budget=budget),
                          ((ACTOR + "ppo_max_token_len_per_gpu", budget),))
            budget //= 2
    elif not c.use_dynamic_bsz:
        micro = c.micro_batch_per_gpu // 2
        while micro >= 1:
            yield _Relief(f"lower ppo_micro_batch_size_per_gpu to {micro}", replace(c, micro_batch_per_gpu=micro),
                          ((ACTOR + "ppo_micro_batch_size_per_gpu", micro),))
            micro //= 2


def _lower_gmu(c: Candidate) -> Iterator[_Relief]:
    for gmu in lowered_gmu(c.gpu_memory_utilization):
        yield _Relief(f"lower gpu_memory_utilization to {gmu:g}", replace(c, gpu_memory_utilization=gmu),
                      ((ROLLOUT + "gpu_memory_utilization", gmu),))


def _rungs(c: Candidate, seq_len: int) -> list[Rung[Candidate]]:
    def one(make: Callable[[Candidate], _Relief | None]) -> Rung[Candidate]:
        return lambda cand: iter([change] if (change := make(cand)) is not None else [])
    relief: dict[str, Rung[Candidate]] = {"param_offload": one(_param), "optimizer_offload": one(_optimizer),
                                          "cpu_optimizer": _cpu_optimizer, "recompute": one(_recompute)}
    return [*(relief[step] for step in MEGATRON_RELIEF), lambda cand: _smaller_batches(cand, seq_len), _lower_gmu]


def smallest_fix(setup: MemorySetup) -> _Relief | None:
    """The cheapest change that makes every phase on every stage fit, or None."""
    def fits(cand: Candidate) -> tuple[bool, float]:
        report = evaluate_memory(replace(setup, candidate=cand), detail=False)
        return report.fits, report.peak_gib

    return cheapest_change(setup.candidate, _rungs(setup.candidate, setup.workload.seq_len), fits)


def memory_verdict(config: Config, model: ModelFacts | None, options: MemoryOptions) -> MemoryVerdict:
    """The call's verdict on the named GPU, with the smallest fix when it does not fit; with
    `problems` (the unknown model or values) when it cannot be predicted."""
    from generator.config.reader import ConfigReader

    if ConfigReader(config).backend == "fsdp":  # the FSDP actor has its own model (plan/fsdp_memory.py)
        from generator.plan.fsdp_setup import fsdp_memory_verdict

        return fsdp_memory_verdict(config, options.model or model, options.gpu, options.headroom_gib)
    found = memory_setup_from_config(config, gpu=options.gpu, model=options.model or model,
                                     headroom_gib=options.headroom_gib)
    if found.setup is None:
        return MemoryVerdict(gpu=options.gpu.name, fits=True, peak_gib=0.0, usable_gib=0.0, peak_phase="",
                             peak_stage=0, problems=found.problems or ("the call could not be read",))
    report = evaluate_memory(found.setup, detail=False)
    verdict = MemoryVerdict(gpu=options.gpu.name, fits=report.fits, peak_gib=round(report.peak_gib, 2),
                            usable_gib=report.usable_gib, peak_phase=report.peak_phase, peak_stage=report.peak_stage)
    if report.fits:
        return verdict
    change = smallest_fix(found.setup)
    if change is None:
        return verdict
    return verdict._replace(fix=change.words, fix_edits=change.edits)


MemoryFor = Callable[[Config, ModelFacts | None], MemoryVerdict]


def memory_checker(options: MemoryOptions | None, project_gpu: str | None = None) -> MemoryFor | None:
    """What the rules call to predict a call's memory: on the GPU the command line named, else on
    the project's `gpu` setting; None when neither names one (the memory rules stay silent)."""
    if options is None and project_gpu:
        from generator.plan.script_setup import memory_options

        options = memory_options(project_gpu, None, None, 0.0)
    if options is None:
        return None
    chosen = options

    def check(config: Config, model: ModelFacts | None) -> MemoryVerdict:
        return memory_verdict(config, model, chosen)

    return check
