"""Measured against predicted, per phase: the step-time model (generator.plan.step_time) and the
memory model (generator.plan.script_setup.call_memory) for the run's configuration, beside the
log's medians; the largest miss (by |log ratio|) named with its likely cause."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from generator.calibrate import metric_keys as k
from generator.calibrate.summary import Measured
from generator.layout.candidate import StepTime
from generator.config.reader import ConfigReader
from generator.config.types import Config
from generator.plan.memory import TRAINING_PHASES
from generator.plan.script_setup import CallMemory, MemoryOptions, call_memory, memory_setup_from_config

# Memory terms outside torch's allocator statistics: the CUDA context and NCCL buffers, and vLLM's
# weights, KV cache and graphs, which its sleep-mode allocator (CuMemAllocator) maps itself.
OUTSIDE_ALLOCATOR = ("overhead", "cuda-graphs", "kv-cache", "rollout-weights", "rollout-activations")
# Responses that average under (over) this share of the length the rollout was predicted for.
LENGTH_MISS = 0.6
# The length is named as the cause when predicting at the measured length leaves at most this
# share of the miss (on a log scale).
LENGTH_EXPLAINS = 0.75


@dataclass(frozen=True, slots=True)
class Row:
    kind: str  # time | memory
    label: str
    measured: float | None
    predicted: float | None = None
    at_measured_length: float | None = None  # time predicted with the run's mean response length
    unit: str = "s"

    @property
    def ratio(self) -> float | None:
        if self.measured is None or not self.predicted:
            return None
        return self.measured / self.predicted


@dataclass(slots=True)
class Comparison:
    rows: list[Row]
    largest: Row | None = None
    cause: str = ""
    problems: list[str] = field(default_factory=list)  # why a prediction is missing
    expected_response: float | None = None  # the response length the rollout was predicted for
    model: str = ""
    gpu: str = ""
    response_share: float | None = None  # the run's mean response / its max_response_length


def _sum(measured: Measured, phases: tuple[str, ...]) -> float | None:
    found = [measured.phases[p] for p in phases if p in measured.phases]
    return sum(found) if found else None


@dataclass(frozen=True, slots=True)
class PredictedStep:
    step: StepTime
    expected_response: float  # the response length it assumed
    log_prob_passes: tuple[str, ...]  # the forward passes its log-prob time counts, as verl times them


def predicted_step(config: Config, options: MemoryOptions, mean_response: float | None
                   ) -> tuple[PredictedStep | None, list[str]]:
    """The step time predicted for the config (with `mean_response` tokens per response when
    given), or the problems that stop it."""
    from generator.plan.rollout_engine import engine_memory
    from generator.plan.step_time import calibrated, estimate_step_time, expected_lengths

    found = memory_setup_from_config(config, gpu=options.gpu, model=options.model)
    if found.setup is None:
        return None, list(found.problems)
    pn = ConfigReader(config).prompts_and_n()
    assert pn is not None  # the setup needs it
    setup = found.setup
    work = replace(setup.workload, responses_per_step=pn[0] * pn[1],
                   mean_response_len=int(round(mean_response)) if mean_response else 0)
    kv = engine_memory(setup.model, setup.candidate, work, responses_per_step=work.responses_per_step).kv_tokens
    step = estimate_step_time(setup.candidate, setup.model, options.gpu, work, kv_tokens=kv)
    passes = ("old_log_prob",) + (("ref",) if work.has_ref else ()) + (("values",) if work.has_critic else ())
    return PredictedStep(step, expected_lengths(work, calibrated(), setup.model.name)[1], passes), []


def _scaled(value: float | None, share: float) -> float | None:
    return None if value is None else value * share


def training_peak(memory: CallMemory) -> float | None:
    if memory.report is None:
        return None
    return max((p.gib - sum(t.gib for t in p.terms if t.name in OUTSIDE_ALLOCATOR)
                for s in memory.report.stages for p in s.phases if p.phase in TRAINING_PHASES), default=None)


def compare(measured: Measured, config: Config | None, options: MemoryOptions) -> Comparison:
    from generator.plan.step_fit import parts

    response = measured.medians.get(k.RESPONSE_MEAN)
    predicted = at_length = None
    problems: list[str] = []
    memory: CallMemory | None = None
    if config is None:
        problems.append("no configuration to predict for: the log holds no start-up config; give --script")
    else:
        predicted, time_problems = predicted_step(config, options, None)
        if predicted is not None and response:
            at_length = predicted_step(config, options, response)[0]
        memory = call_memory(config, options)
        both = [p for p in time_problems if p in memory.problems]  # the same reason once
        problems = ([f"step time and memory not predicted: {p}" for p in both]
                    + [f"step time not predicted: {p}" for p in time_problems if p not in both]
                    + [f"memory not predicted: {p}" for p in memory.problems if p not in both])
    step = predicted.step if predicted is not None else None
    est = parts(step) if step is not None else {}
    est_len = parts(at_length.step) if at_length is not None else {}
    # Each log-prob pass costs the same in the model: compare the passes the log timed.
    passes = predicted.log_prob_passes if predicted is not None else ("old_log_prob", "ref", "values")
    timed = tuple(p for p in passes if p in measured.phases) or passes
    share = len(timed) / len(passes)
    updated = tuple(p for p in ("update_actor", "update_critic") if p in measured.phases) or ("update_actor",)
    rows = [
        Row("time", "rollout (gen)", measured.phases.get("gen"), est.get("gen_s"), est_len.get("gen_s")),
        Row("time", f"log-prob ({'+'.join(timed)})", _sum(measured, timed),
            _scaled(est.get("log_prob_s"), share), _scaled(est_len.get("log_prob_s"), share)),
        Row("time", f"update ({'+'.join(updated)})", _sum(measured, updated), est.get("update_s"),
            est_len.get("update_s")),
    ]
    if "update_weights" in measured.phases:  # timed apart from gen from 0.7.1 on
        rows.append(Row("time", "weight sync (update_weights)", measured.phases["update_weights"],
                        step.weight_sync_s if step else None, at_length.step.weight_sync_s if at_length else None))
    rows += [Row("time", f"{p} (not modelled)", measured.phases[p]) for p in ("reward", "adv") if p in measured.phases]
    rows.append(Row("time", "step", measured.phases.get("step"), est.get("step_s"), est_len.get("step_s")))
    peak = training_peak(memory) if memory is not None else None
    for key, label in ((k.ALLOCATED, "GPU peak allocated (training)"), (k.RESERVED, "GPU peak reserved (training)")):
        if key in measured.memory:
            rows.append(Row("memory", label, measured.memory[key], peak, unit="GiB"))
    if k.HOST_USED in measured.memory:
        host = memory.report.host_ram_per_node_gib if memory is not None and memory.report is not None else None
        rows.append(Row("memory", "host RAM used (node)", measured.memory[k.HOST_USED], host, unit="GiB"))
    found = Comparison(rows, problems=problems,
                       expected_response=predicted.expected_response if predicted is not None else None,
                       model=memory.model if memory is not None else "", gpu=options.gpu.name)
    limit = ConfigReader(config).int("data.max_response_length") if config is not None else None
    if response and limit:
        found.response_share = response / limit
    found.largest = largest_miss(rows)
    if found.largest is not None:
        found.cause = likely_cause(found.largest, measured, found)
    return found


def largest_miss(rows: list[Row]) -> Row | None:
    scored = [(abs(math.log(r.ratio)), r) for r in rows if r.ratio and r.ratio > 0 and r.label != "step"]
    if not scored:
        return None
    return max(scored, key=lambda pair: pair[0])[1]


def likely_cause(row: Row, measured: Measured, found: Comparison) -> str:
    """One sentence: what most likely made this row miss, from what the log says."""
    from generator.plan.error_band import MEMORY_ERROR_BAND, STEP_TIME_ERROR_BAND

    ratio = row.ratio or 1.0
    band = MEMORY_ERROR_BAND if row.kind == "memory" else STEP_TIME_ERROR_BAND
    if abs(math.log(ratio)) <= math.log(1 + band):
        return f"inside the model's error band ({band:.0%}): a tie"
    response = measured.medians.get(k.RESPONSE_MEAN)
    expected = found.expected_response
    clip = measured.medians.get(k.RESPONSE_CLIP)
    if row.kind == "time" and response and expected and row.measured and row.at_measured_length:
        share = response / expected
        closer = abs(math.log(row.measured / row.at_measured_length)) <= LENGTH_EXPLAINS * abs(math.log(ratio))
        if (share < LENGTH_MISS or share > 1 / LENGTH_MISS) and closer:
            return (f"responses averaged {response:.0f} tokens; the prediction assumed {expected:.0f} "
                    f"({'longer' if share < 1 else 'shorter'} than ran): the rollout and the passes over its "
                    "tokens scale with it (see the column at the measured length)")
    if row.label.startswith("rollout") and clip is not None and clip > 0.2:
        return (f"{clip:.0%} of responses hit max_response_length: the rollout's tail ran to the maximum "
                "for many sequences, not a few")
    if row.kind == "memory" and row.label.startswith("GPU peak reserved") and k.ALLOCATED in measured.memory:
        gap = measured.memory[k.RESERVED] - measured.memory[k.ALLOCATED]
        return (f"reserved exceeds allocated by {gap:.1f} GiB: the caching allocator's fragmentation, which the "
                "model does not count (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True narrows it)")
    if row.kind == "memory" and row.label.startswith("host"):
        return "perf/cpu_memory_used_gb is the whole node's used RAM (every process), not verl's alone"
    if row.kind == "memory":
        return ("the run allocated more than predicted: buffers or activations the model does not count"
                if ratio > 1 else "the model over-counts: sequences shorter than the maximum it sizes "
                "activations and logits for, or a term the run did not need")
    return ("slower than predicted: this cluster runs below the model's fitted efficiency" if ratio > 1
            else "faster than predicted: this cluster runs above the model's fitted efficiency")
