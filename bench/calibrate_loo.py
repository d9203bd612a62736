"""`gen calibrate`'s stored corrections, leave-one-out, on series of runs from one cluster (issue 33).

    python bench/calibrate_loo.py

For each series (runs of one source on one GPU type: tests/fixtures/logs, docs/calibrate.md#fixtures)
and each run in it: what the other runs of the series measured is stored as `gen calibrate --save`
stores it (generator.calibrate.saved: per run, each phase's measured / predicted at its measured
response length, the training peak's measured - predicted GiB, the response share per model), and
the run's step time and training peak are predicted again the way `gen plan`, `gen check --gpu` and
`gen explain --memory` apply a stored calibration (generator.base.session.Calibration: the phase
factors, the memory offset, and the response share the other runs of its model measured). Nothing
of the held-out run is used. Prints per run the measured figure, the uncalibrated and calibrated
predictions and their errors (|log ratio| as a percentage: 2x either way is 100 %), and per series
and over all runs the median errors and their ratio; per series also the medians of the rollout's
and the update's errors (each phase is corrected by its own factor). Peak memory likewise, where a
series has two runs that log it. A last series predicts each H20 run from the other model's runs
only (the cross-model case). Exit 0.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.base import session  # noqa: E402
from generator.calibrate.compare import Comparison, compare, predicted_step, training_peak  # noqa: E402
from generator.calibrate.fit import MEMORY_ROW, row, run_values  # noqa: E402
from generator.calibrate.logs import read_log  # noqa: E402
from generator.calibrate.match import run_config  # noqa: E402
from generator.calibrate.saved import Entry, Key, StoredRun, applied  # noqa: E402
from generator.calibrate.summary import summarise  # noqa: E402
from generator.config.types import Config  # noqa: E402
from generator.plan.script_setup import MemoryOptions, call_memory, memory_options  # noqa: E402
from generator.plan.step_fit import parts  # noqa: E402

LOGS = ROOT / "tests" / "fixtures" / "logs"
# One series per published table and GPU type: runs of one cluster and one workload (docs/calibrate.md#fixtures).
# The GRPO table is another contributor's (another cluster, data set and model), so it is its own series; the
# H20 tables are two models of one cluster, each a series, and together the cross-model case.
SERIES = {
    "ISEEKYAN dapo7b.csv, Qwen2.5-Math-7B DAPO, H100": ("h100", tuple(f"iseekyan-dapo7b-{n}" for n in (
        3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 18))),
    "ISEEKYAN grpo_qwen2.5_7b.csv, Qwen2.5-7B-Instruct GRPO, H100": ("h100", tuple(
        f"iseekyan-grpo7b-{n}" for n in (2, 3, 6, 7, 8, 9, 12, 13, 14))),
    "ISEEKYAN dapo_moe30b.csv, Qwen3-30B-A3B DAPO, H100": ("h100", tuple(f"iseekyan-moe30b-{n}" for n in (
        3, 4, 5, 6, 7, 8, 9))),
    "ISEEKYAN dapo14b.csv, Qwen3-14B-Base DAPO, H20": ("h20", tuple(f"iseekyan-dapo14b-{n}" for n in (8, 9, 10, 11))),
    "ISEEKYAN dapo32b.csv, Qwen2.5-32B DAPO, H20": ("h20", ("iseekyan-dapo32b-6", "iseekyan-dapo32b-7")),
}
# Across models: each run of the H20 cluster predicted from the other model's runs only (what a
# calibration stored for one model gives a plan of another on the same cluster).
ACROSS_MODELS = {
    "ISEEKYAN H20, each run predicted from the other model's runs only": (
        "h20", tuple(f"iseekyan-dapo14b-{n}" for n in (8, 9, 10, 11)) + ("iseekyan-dapo32b-6", "iseekyan-dapo32b-7")),
}


# The phases whose medians are printed beside the step's: the rollout and the update, as the logs time them.
PHASE_PARTS = (("rollout", "gen_s"), ("update", "update_s"))


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


def predictions(config: Config, options: MemoryOptions) -> tuple[dict[str, float], float | None]:
    """(the step and its parts in seconds, training peak GiB) as the models give them under the
    session's calibration."""
    step = predicted_step(config, options, None)[0]
    return (parts(step.step) if step is not None else {}), training_peak(call_memory(config, options))


def median_line(what: str, before: list[float], after: list[float]) -> str:
    b, a = statistics.median(before), statistics.median(after)
    return (f"median {what} error: {b:.1f} % uncalibrated, {a:.1f} % calibrated "
            f"({a / b if b else float('nan'):.2f}x{', halved' if a <= b / 2 else ', NOT halved'})")


def main() -> int:
    every: dict[str, tuple[list[float], list[float]]] = {"step-time": ([], []), "peak-memory": ([], [])}
    counted: set[tuple[str, str]] = set()
    for series, (gpu, names) in {**SERIES, **ACROSS_MODELS}.items():
        across = series in ACROSS_MODELS
        options = memory_options(gpu, None, None, 0.0)
        runs = [(name, *load(name, options)) for name in names]
        print(series)
        errors: dict[str, tuple[list[float], list[float]]] = {
            "step-time": ([], []), "peak-memory": ([], []), **{phase: ([], []) for phase, _ in PHASE_PARTS}}
        for name, config, comparison in runs:
            others = [StoredRun(other, c.model, run_values(c)) for other, _, c in runs
                      if other != name and (not across or c.model != comparison.model)]
            session.current().calibration = None
            before = predictions(config, options)
            session.current().calibration = applied(Entry(Key(gpu), tuple(others)), "project")
            after = predictions(config, options)
            session.current().calibration = None
            for phase, part in PHASE_PARTS:  # the step's parts, in the medians only
                found = row(comparison, phase)
                if found is not None and found.measured and part in before[0] and part in after[0]:
                    errors[phase][0].append(error(found.measured, before[0][part]))
                    errors[phase][1].append(error(found.measured, after[0][part]))
            measured = (row(comparison, "step"), row(comparison, MEMORY_ROW))
            for what, found, b, a, unit in (("step-time", measured[0], before[0].get("step_s"), after[0].get("step_s"),
                                             "s"),
                                            ("peak-memory", measured[1], before[1], after[1], "GiB")):
                if found is None or found.measured is None or b is None or a is None:
                    continue
                errors[what][0].append(error(found.measured, b))
                errors[what][1].append(error(found.measured, a))
                if (name, what) not in counted:  # a run in two series counts once in the total
                    counted.add((name, what))
                    every[what][0].append(errors[what][0][-1])
                    every[what][1].append(errors[what][1][-1])
                print(f"  {name:<22} {what:<11} measured {found.measured:7.0f} {unit:<3} uncalibrated {b:7.0f} "
                      f"({errors[what][0][-1]:5.1f} %)  calibrated {a:7.0f} ({errors[what][1][-1]:5.1f} %)")
        for what, (before_e, after_e) in errors.items():
            if len(before_e) >= 2:
                print("  " + median_line(what, before_e, after_e))
            elif what in dict(PHASE_PARTS):
                continue
            else:
                print(f"  {what}: fewer than two runs of the series log it; not measured")
    for what, (before_e, after_e) in every.items():
        if before_e:
            print(f"all {len(before_e)} runs (each once): " + median_line(what, before_e, after_e))
        else:
            print(f"{what}: no series has two runs that log it (the published tables give times only); "
                  "not measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
