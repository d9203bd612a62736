"""`gen calibrate`'s corrections, leave-one-out, on series of runs from one cluster (issue 33).

    python bench/calibrate_loo.py

For each series (runs of one source on one GPU type: tests/fixtures/logs, docs/calibrate.md#fixtures)
and each run in it: the corrections (generator.calibrate.fit) are fitted on the other runs of the
series, and the run's step time is predicted with them: at the response length the other runs of the
same model averaged, with the step factor fitted at the others' measured lengths, when they
say; else at the model's length assumption with the factor fitted at it. Prints per run the measured seconds, the uncalibrated and
the calibrated prediction and their errors (|log ratio| as a percentage), and per series and over
all runs the median errors and their ratio. Peak memory is done the same way where a series has
two runs that log it. Exit 0.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.calibrate.compare import Comparison, compare, predicted_step  # noqa: E402
from generator.calibrate.fit import MEMORY_ROW, corrected, fit, named, row  # noqa: E402
from generator.calibrate.logs import read_log  # noqa: E402
from generator.calibrate.match import run_config  # noqa: E402
from generator.calibrate.summary import summarise  # noqa: E402
from generator.config.reader import ConfigReader  # noqa: E402
from generator.config.types import Config  # noqa: E402
from generator.plan.script_setup import MemoryOptions, memory_options  # noqa: E402
from generator.plan.step_fit import parts  # noqa: E402

LOGS = ROOT / "tests" / "fixtures" / "logs"
SERIES = {
    "ISEEKYAN Qwen2.5-7B, H100": ("h100", ("iseekyan-dapo7b-5", "iseekyan-dapo7b-9", "iseekyan-dapo7b-12",
                                           "iseekyan-dapo7b-16", "iseekyan-grpo7b-2")),
    "ISEEKYAN Qwen3-30B-A3B, H100": ("h100", ("iseekyan-moe30b-4", "iseekyan-moe30b-7")),
    "ISEEKYAN 14B/32B, H20": ("h20", ("iseekyan-dapo32b-6", "iseekyan-dapo14b-8")),
}


def error(measured: float, predicted: float) -> float:
    """|log(measured / predicted)| as a percentage: 2x either way is 100 %."""
    return (math.exp(abs(math.log(measured / predicted))) - 1) * 100


def load(name: str, options: MemoryOptions) -> tuple[Config, Comparison]:
    folder = LOGS / name
    (log,) = folder.glob("metrics.*")
    run = read_log(str(log))
    config = run_config(run, str(folder / "run.sh"), verl_version=None).config
    assert config is not None
    return config, compare(summarise(run), config, options)


def main() -> int:
    every_before: list[float] = []
    every_after: list[float] = []
    memory_series = 0
    for series, (gpu, names) in SERIES.items():
        options = memory_options(gpu, None, None, 0.0)
        runs = [(name, *load(name, options)) for name in names]
        print(f"{series}")
        before: list[float] = []
        after: list[float] = []
        for name, config, comparison in runs:
            rest = [c for other, _, c in runs if other != name]
            others = fit(rest, model=comparison.model)
            step = row(comparison, "step")
            if step is None or step.measured is None or step.predicted is None:
                continue
            share = named(others, "response share")
            limit = ConfigReader(config).int("data.max_response_length")
            predicted, factors = step.predicted, fit(rest, at_length=False)  # no length to go on
            at = predicted_step(config, options, share.value * limit)[0] if share is not None and limit else None
            if at is not None:  # the length the model's other runs averaged, and factors at their lengths
                predicted, factors = parts(at.step)["step_s"], others
            calibrated = corrected(predicted, named(factors, "step"))
            before.append(error(step.measured, step.predicted))
            after.append(error(step.measured, calibrated))
            print(f"  {name:<22} measured {step.measured:7.0f} s  uncalibrated {step.predicted:7.0f} s "
                  f"({before[-1]:5.1f} %)  calibrated {calibrated:7.0f} s ({after[-1]:5.1f} %)")
        if before:
            b, a = statistics.median(before), statistics.median(after)
            print(f"  median step-time error: {b:.1f} % uncalibrated, {a:.1f} % calibrated "
                  f"({a / b if b else float('nan'):.2f}x)")
        every_before += before
        every_after += after
        if sum(1 for _, _, c in runs if (r := row(c, MEMORY_ROW)) is not None and r.measured is not None) >= 2:
            memory_series += 1
    b, a = statistics.median(every_before), statistics.median(every_after)
    print(f"all {len(every_before)} runs: median step-time error {b:.1f} % uncalibrated, {a:.1f} % calibrated "
          f"({a / b:.2f}x)")
    if not memory_series:
        print("peak memory: no series has two runs that log it (the published tables give time only); not measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
