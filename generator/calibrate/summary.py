"""A run's steps summarised: per phase the median seconds over the steps after warm-up, memory
at its peak, lengths and rates at their median (pure arithmetic on RunLog.steps)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from generator.calibrate import metric_keys as k
from generator.calibrate.logs import RunLog

# The first step of a run compiles kernels, captures CUDA graphs and warms the allocator: left
# out of the medians when enough steps remain (--warmup sets how many).
DEFAULT_WARMUP = 1
MIN_STEPS_FOR_WARMUP = 3


@dataclass(frozen=True, slots=True)
class Measured:
    steps: int  # steps summarised (after warm-up)
    skipped: int  # warm-up steps left out
    first: int  # first and last step number summarised
    last: int
    phases: dict[str, float] = field(default_factory=dict)  # phase -> median seconds
    memory: dict[str, float] = field(default_factory=dict)  # key -> max GiB over every step (warm-up too)
    medians: dict[str, float] = field(default_factory=dict)  # lengths, mfu, throughput, tokens -> median
    maxima: dict[str, float] = field(default_factory=dict)  # response_length/max, prompt_length/max -> max


def default_warmup(steps: int) -> int:
    return DEFAULT_WARMUP if steps >= MIN_STEPS_FOR_WARMUP else 0


def summarise(run: RunLog, warmup: int | None = None) -> Measured:
    # Training steps are the ones timed: verl logs the validation before training as its own step
    # (`step:0 - val-core/...`), which must not take the warm-up's place.
    timed = sorted(s for s, values in run.steps.items() if any(key.startswith(k.TIMING_PREFIXES) for key in values))
    # Without timers, a step that logged validation scores only is still no training step.
    trained = sorted(s for s, values in run.steps.items() if not all(key.startswith(k.VALIDATION) for key in values))
    numbers = timed or trained or sorted(run.steps)
    skip = default_warmup(len(numbers)) if warmup is None else min(max(0, warmup), max(0, len(numbers) - 1))
    kept = numbers[skip:]

    def median(key: str) -> float | None:
        values = [v for s in kept if (v := k.lookup(run.steps[s], key)) is not None]
        return statistics.median(values) if values else None

    phases = {p: v for p in k.PHASES if (v := median(k.timing_key(p))) is not None}
    # Memory peaks are running maxima of the process: the warm-up step counts.
    memory = {key: max(found) for key in (k.ALLOCATED, k.RESERVED, k.HOST_USED)
              if (found := [v for s in numbers if (v := k.lookup(run.steps[s], key)) is not None])}
    medians = {key: v for key in (k.RESPONSE_MEAN, k.PROMPT_MEAN, k.RESPONSE_CLIP, k.MFU_ACTOR, k.THROUGHPUT,
                                  k.TOTAL_TOKENS) if (v := median(key)) is not None}
    maxima = {key: max(run.steps[s][key] for s in kept if key in run.steps[s])
              for key in (k.RESPONSE_MAX, k.PROMPT_MAX) if any(key in run.steps[s] for s in kept)}
    return Measured(len(kept), skip, kept[0], kept[-1], phases, memory, medians, maxima)
