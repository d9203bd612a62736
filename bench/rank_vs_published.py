"""The calibrated step-time model against published verl step times, held out group by group (issues 12, 23, 32).

    python bench/rank_vs_published.py [--data bench/data/published_step_times.yaml]
                                      [--write-calibration] [--rounds N]

For every published point (bench/data/published_step_times.yaml, each with its source) the
layout and knobs are evaluated as given (`plan_layout(pins=..., evaluate=True)`). A point is judged
on its published step, or on its update where the source publishes only phases. Leave-one-group-out:
for each group (one published series: model × GPU type × source) the free constants are refitted on
the other groups (generator.plan.step_fit) and the group is predicted with them. Prints per point
the published seconds, the estimate with the stored constants and the held-out one; per group each
point's held-out error, their median and the band (largest); per series of layouts of one workload
(group × GPU count × measure) the pairs the held-out estimates put in the published order, Kendall's
tau and the error of the estimated ratio between two layouts; the median of that pair error over all
series is the band generator/plan/error_band.py's STEP_TIME_ERROR_BAND holds. `--write-calibration`
refits on every point and writes generator/data/step_time_calibration.yaml first. Then the
cross-check (`--cross-check`, bench/data/nemo_rl_step_times.yaml: NeMo-RL's published GRPO runs on
DGX-H100, never fitted). Exit 0; 2 on an unreadable data file.

Measured at issue 32 (47 points, docs/step-time-model.md): held-out error median 26 % (80th
percentile 62 %), 43/47 within 0.5-2x; pairs in order 80/102; pair error median 14 % (the band),
80th percentile 43 %; NeMo-RL cross-check 3/5 within 0.5-2x.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.layout.hardware import gpu_spec  # noqa: E402
from generator.layout.parallelism import Offload  # noqa: E402
from generator.model import resolve_model  # noqa: E402
from generator.layout.pins import Pins  # noqa: E402
from generator.plan import plan_layout  # noqa: E402
from generator.plan.rollout_engine import engine_memory  # noqa: E402
from generator.plan.error_band import STEP_TIME_ERROR_BAND  # noqa: E402
from generator.plan.step_fit import (Case, estimated, fit, kendall_tau, leave_one_group_out, measure,  # noqa: E402
                                     pair_errors, pair_order, parts, published, quantile)
from generator.plan.step_time import FREE_CONSTANTS, StepConstants, calibrated, estimate_step_time  # noqa: E402
from generator.plan.workload import Workload, algo_roles  # noqa: E402
from generator.base.resources import data_dir  # noqa: E402

DATA = ROOT / "bench" / "data" / "published_step_times.yaml"
# Another framework's published runs (NeMo-RL on DGX-H100), never fitted: a cross-check only.
CROSS_CHECK = ROOT / "bench" / "data" / "nemo_rl_step_times.yaml"
CALIBRATION = data_dir() / "step_time_calibration.yaml"


def ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rho: Pearson correlation of the ranks (handles ties); None under 3 points or no spread."""
    if len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    return float(cov / (vx * vy) ** 0.5)


def _budget(text: str) -> tuple[bool, int]:
    """'20k' → (dynamic, 20480); '11680' → (dynamic, 11680); 'micro 4' → (static, 4)."""
    text = str(text).strip().lower()
    if text.startswith("micro"):
        return False, int(text.split()[1])
    if text.endswith("k"):
        return True, int(float(text.rstrip("k")) * 1024)
    return True, int(text)


def _pins(point: dict[str, Any]) -> Pins:
    """The published point's layout and knobs, evaluated as given."""
    dynamic, actor = _budget(point["actor_budget"])
    _, log_prob = _budget(point["log_prob_budget"])
    offload = bool(point["offload"])
    fraction = float(point.get("cpu_optimizer_fraction", 0.0))
    return Pins(
        tp=point["tp"], pp=point["pp"], cp=point["cp"], ep=point["ep"], vpp=point.get("vpp"), etp=point.get("etp"),
        first_stage_layers=point.get("first"), last_stage_layers=point.get("last"),
        rollout_tp=point["rollout_tp"], use_dynamic_bsz=dynamic,
        offload=Offload(param=offload, grad=offload, optimizer=offload, cpu_optimizer=fraction > 0,
                        cpu_optimizer_fraction=fraction),
        recompute=bool(point.get("recompute", False)), gpu_memory_utilization=point["gpu_memory_utilization"],
        token_budget=actor if dynamic else None, log_prob_token_budget=log_prob if dynamic else None,
        micro_batch_per_gpu=None if dynamic else actor, log_prob_micro_batch_per_gpu=None if dynamic else log_prob)


def case_for(point: dict[str, Any]) -> tuple[Case | None, str]:
    """The published point as a fitting case (its layout sized as given), or (None, why not)."""
    model = resolve_model(point["model"])
    gpu = gpu_spec(point["gpu"])
    plan = plan_layout(model, point["gpus"], nodes=max(1, point["gpus"] // 8), gpu=gpu,
                       prompt_len=point["prompt_len"], response_len=point["response_len"], n=point["n"],
                       algo=point["algo"], train_batch_size=point["train_batch_size"],
                       ppo_mini_batch_size=point["ppo_mini_batch_size"], pins=_pins(point), evaluate=True, top=1)
    cand = plan.candidates[0] if plan.candidates else None
    if cand is None or cand.score is None:
        return None, plan.rejected[0][1] if plan.rejected else "not evaluated"
    has_ref, has_critic = algo_roles(point["algo"])
    dp = point["gpus"] // cand.model_parallel_size
    mini = cand.ppo_mini_batch_size or point["ppo_mini_batch_size"]
    responses = point["train_batch_size"] * point["n"]
    work = Workload(gpus=point["gpus"], gpu_memory_gib=gpu.memory_gib, prompt_len=point["prompt_len"],
                    response_len=point["response_len"], per_rank_mini_batch=max(1, mini * point["n"] // dp),
                    has_ref=has_ref, has_critic=has_critic, responses_per_step=responses,
                    max_num_batched_tokens=max(8192, point["prompt_len"] + point["response_len"]),
                    mean_response_len=int(point.get("mean_response_len") or 0))
    kv_tokens = engine_memory(model, cand, work, responses_per_step=responses).kv_tokens

    def estimate_with(k: StepConstants) -> Any:
        return estimate_step_time(cand, model, gpu, work, kv_tokens=kv_tokens, constants=k)

    case = Case(id=point["id"], group=point["group"], estimate=estimate_with, step_s=_seconds(point.get("step_s")),
                gen_s=point.get("gen_s"), update_s=point.get("update_s"), log_prob_s=point.get("log_prob_s"))
    return case, "" if cand.fits else "predicted not to fit"


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


def estimate(point: dict[str, Any]) -> tuple[float | None, str]:
    """(estimated step seconds with the calibrated constants, note) for one published point."""
    case, note = case_for(point)
    return (None, note) if case is None else (case.estimate(calibrated()).total_s, note)


def load_points(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    defaults = data.get("defaults", {})
    return [{**defaults, **p} for p in data["points"]]


def _fmt(rho: float | None) -> str:
    return "n/a" if rho is None else f"{rho:+.2f}"


def _within(est: float, published: float) -> bool:
    return 0.5 <= est / published <= 2.0


def published_response_share(points: list[dict[str, Any]]) -> float:
    """Median published mean/maximum response length over the points that give a mean."""
    shares = sorted(p["mean_response_len"] / p["response_len"] for p in points if p.get("mean_response_len"))
    middle = len(shares) // 2
    return shares[middle] if len(shares) % 2 else (shares[middle - 1] + shares[middle]) / 2


def write_calibration(constants: StepConstants, cases: list[Case], path: Path) -> None:
    values = {name: float(f"{getattr(constants, name):.4g}") for name in
              (*FREE_CONSTANTS, "mean_response_share", "mean_prompt_share")}
    header = ("# The step-time model's constants (generator.plan.step_time.StepConstants).\n"
              "# Written by `python bench/rank_vs_published.py --write-calibration`: the free constants\n"
              f"# ({', '.join(FREE_CONSTANTS)}) fitted by generator.plan.step_fit on all {len(cases)} points of\n"
              "# bench/data/published_step_times.yaml (each with its source); mean_response_share is the median\n"
              "# published mean/maximum response length (dapo14b.csv, dapo32b.csv, verl docs/perf/dpsk.md);\n"
              "# mean_prompt_share is assumed (no source publishes mean prompt lengths).\n")
    path.write_text(header + yaml.safe_dump({"constants": values}, sort_keys=False))


def cross_check(path: Path, constants: StepConstants) -> list[tuple[str, float, float]]:
    """(id, published, estimated) step seconds of each cross-check point under `constants` (fitted
    on the verl points only, so every one of these is held out)."""
    out = []
    for point in load_points(path):
        case, note = case_for(point)
        if case is None:
            print(f"{point['id']}: not evaluated ({note})")
            continue
        out.append((case.id, case.step_s, case.estimate(constants).total_s))
    return out


def print_cross_check(path: Path, constants: StepConstants) -> None:
    rows = cross_check(path, constants)
    print()
    print(f"Cross-check, not fitted ({path.name}: NeMo-RL's published GRPO step times on DGX-H100):")
    for point_id, seconds, est in rows:
        print(f"  {point_id:<22} published {seconds:>6g} s, estimated {est:>6.0f} s, ratio {est / seconds:.2f}")
    inside = sum(_within(est, seconds) for _, seconds, est in rows)
    print(f"  within 0.5-2x: {inside}/{len(rows)} points")


def _layout(point: dict[str, Any]) -> str:
    return (f"TP{point['tp']} PP{point['pp']}" + (f" VPP{point['vpp']}" if point.get("vpp") else "")
            + (f" CP{point['cp']}" if point["cp"] > 1 else "") + (f" EP{point['ep']}" if point["ep"] > 1 else ""))


def print_points(cases: list[Case], by_id: dict[str, dict[str, Any]], start: StepConstants,
                 held_est: dict[str, float]) -> None:
    """Each point: published seconds (the step, or the update where only phases are published),
    the estimate with the stored constants and the one held out with its group."""
    print(f"{'point':<16} {'GPUs':>4} {'layout':<18} {'rTP':>3} {'what':<6} {'published':>9} {'fitted':>7} "
          f"{'held-out':>8} {'ratio':>5}  gen pub/est")
    for case in cases:
        point = by_id[case.id]
        fitted = case.estimate(start)
        out = held_est[case.id]
        gen = f"{case.gen_s:g}/{parts(fitted)['gen_s']:.0f}" if case.gen_s else "-"
        what = "step" if case.step_s else "update"
        print(f"{case.id:<16} {point['gpus']:>4} {_layout(point):<18} {point['rollout_tp']:>3} {what:<6} "
              f"{published(case):>9g} {estimated(case, fitted):>7.0f} {out:>8.0f} {out / published(case):>5.2f}  {gen}")


def print_groups(cases: list[Case], held_est: dict[str, float]) -> list[float]:
    """Per group (predicted by constants fitted without it): each point's error, their median and
    the band (largest); over all points the median and the 80th percentile of |error|."""
    print()
    print("Held out group by group: error = held-out estimate / published - 1 (step, or update where only "
          "phases are published)")
    errors: list[float] = []
    for group in dict.fromkeys(c.group for c in cases):
        members = [c for c in cases if c.group == group]
        errs = [held_est[c.id] / published(c) - 1 for c in members]
        errors.extend(errs)
        magnitudes = [abs(e) for e in errs]
        listed = " ".join(f"{e:+.0%}" for e in errs)
        print(f"  {group}: median |error| {quantile(magnitudes, 0.5):.0%}, band {max(magnitudes):.0%} "
              f"({len(members)} points: {listed})")
    magnitudes = [abs(e) for e in errors]
    print(f"  all {len(errors)} points: median |error| {quantile(magnitudes, 0.5):.0%}, 80th percentile "
          f"{quantile(magnitudes, 0.8):.0%}, largest {max(magnitudes):.0%}")
    return errors


def series_of(cases: list[Case], by_id: dict[str, dict[str, Any]]) -> dict[tuple[str, int, str], list[Case]]:
    """Series of layouts of one workload: one group (model, GPU type, source), one GPU count and one
    published measure (step, or update where only phases are published)."""
    out: dict[tuple[str, int, str], list[Case]] = {}
    for case in cases:
        out.setdefault((case.group, by_id[case.id]["gpus"], measure(case)), []).append(case)
    return {key: members for key, members in out.items() if len(members) >= 2}


def print_rank_agreement(cases: list[Case], by_id: dict[str, dict[str, Any]], held_est: dict[str, float]) -> float:
    """Within each series: does the held-out order agree with the published one (pairs, Kendall's
    tau), and how far is each pair's estimated ratio from the published ratio. Returns the band
    the planner may treat as a tie: the median pair error (ln-ratio) as a relative difference."""
    print()
    print("Rank agreement within each series of layouts of one workload (held-out estimates):")
    all_pairs: list[float] = []
    agree = disagree = 0
    for (group, gpus, what), members in series_of(cases, by_id).items():
        est = [held_est[c.id] for c in members]
        pub = [published(c) for c in members]
        concordant, discordant, tied = pair_order(est, pub)
        agree, disagree = agree + concordant, disagree + discordant
        errs = pair_errors(est, pub)
        all_pairs.extend(errs)
        tau = kendall_tau(est, pub)
        share = concordant / (concordant + discordant) if concordant + discordant else float("nan")
        print(f"  {group}, {gpus} GPUs, {what.removesuffix('_s')}: {len(members)} layouts, pairs in order "
              f"{concordant}/{concordant + discordant} ({share:.0%}), Kendall tau {_fmt(tau)}, "
              f"pair error median {math.expm1(quantile(errs, 0.5)):.0%}")
    band = math.expm1(quantile(all_pairs, 0.5))
    print(f"  all series: pairs in order {agree}/{agree + disagree} ({agree / max(1, agree + disagree):.0%}); "
          f"error of the estimated ratio between two layouts: median {band:.0%}, 80th percentile "
          f"{math.expm1(quantile(all_pairs, 0.8)):.0%} over {len(all_pairs)} pairs")
    return band


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--write-calibration", action="store_true",
                        help="refit the constants on every point and write generator/data/step_time_calibration.yaml")
    parser.add_argument("--rounds", type=int, default=6, help="coordinate-descent rounds per fit")
    parser.add_argument("--cross-check", type=Path, default=CROSS_CHECK,
                        help="published points of another framework, estimated but never fitted")
    args = parser.parse_args(argv)
    try:
        points = load_points(args.data)
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        print(f"error: cannot read {args.data}: {exc}", file=sys.stderr)
        return 2
    cases: list[Case] = []
    by_id: dict[str, dict[str, Any]] = {}
    for point in points:
        case, note = case_for(point)
        if case is None:
            print(f"{point['id']}: not evaluated ({note})")
            continue
        cases.append(case)
        by_id[case.id] = point
    start = calibrated()
    if args.write_calibration:
        constants = fit(cases, replace(StepConstants(), mean_response_share=published_response_share(points)),
                        rounds=args.rounds)
        write_calibration(constants, cases, CALIBRATION)
        print(f"wrote {CALIBRATION}")
        start = constants
    held = leave_one_group_out(cases, start, rounds=args.rounds)
    held_est: dict[str, float] = {}
    for group, (_, steps) in held.items():
        for case, step in zip([c for c in cases if c.group == group], steps):
            held_est[case.id] = estimated(case, step)
    print_points(cases, by_id, start, held_est)
    print_groups(cases, held_est)
    band = print_rank_agreement(cases, by_id, held_est)
    steps_only = [c for c in cases if c.step_s]
    per_token = []
    for case in steps_only:
        point = by_id[case.id]
        tokens = point["train_batch_size"] * point["n"] * (point["prompt_len"] + point["response_len"])
        per_token.append((held_est[case.id] * point["gpus"] / tokens, published(case) * point["gpus"] / tokens))
    rho = spearman([e for e, _ in per_token], [p for _, p in per_token])
    print(f"all step points, Spearman of GPU-seconds per token: {_fmt(rho)} over {len(per_token)} points")
    inside = sum(_within(held_est[c.id], published(c)) for c in cases)
    print(f"held-out estimate/published within 0.5-2x: {inside}/{len(cases)} points ({inside / len(cases):.0%})")
    print(f"STEP_TIME_ERROR_BAND measured: {band:.2f} (generator/plan/error_band.py holds "
          f"{STEP_TIME_ERROR_BAND:.2f})")
    constants = ", ".join(f"{name} {getattr(start, name):.3g}" for name in FREE_CONSTANTS)
    print(f"constants (all points): {constants}")
    if args.cross_check.exists():
        try:
            print_cross_check(args.cross_check, start)
        except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
            print(f"error: cannot read {args.cross_check}: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
