"""The calibrated step-time model against published verl step times (issues 12 and 23).

    python bench/rank_vs_published.py [--data bench/data/published_step_times.yaml]
                                      [--write-calibration] [--rounds N]

For every published point (bench/data/published_step_times.yaml, each with its source) the
layout and knobs are evaluated as given (`plan_layout(pins=..., evaluate=True)`). Leave-one-group-out: for each
group (model × GPU type × source) the free constants are refitted on the other groups
(generator.plan.step_fit) and the group is predicted with them. Prints per point the published
seconds, the estimate with the stored constants and the held-out estimate; per group and per
GPU count inside it the Spearman rank correlation of held-out estimate vs published; over all
points the Spearman of GPU-seconds per token; and the share of held-out estimates within
0.5-2x. `--write-calibration` refits on every point and writes
generator/data/step_time_calibration.yaml first. Exit 0; 2 on an unreadable data file.

Measured at issue 23 (41 points): held out, Qwen2.5-7B DAPO 8 GPUs +0.89 (9 layouts),
Qwen3-30B-A3B 16 GPUs +0.77 (4), 32 GPUs +0.50 (3), Qwen3-14B 32 H20 +0.80 (4), Qwen2.5-7B GRPO
8 GPUs +0.75 (9); all points per GPU-second per token +0.91; 39/41 within 0.5-2x
(docs/step-time-model.md).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.hardware import gpu_spec  # noqa: E402
from generator.layout import Offload  # noqa: E402
from generator.model import resolve_model  # noqa: E402
from generator.pins import Pins  # noqa: E402
from generator.plan import plan_layout  # noqa: E402
from generator.plan.rollout_engine import engine_memory  # noqa: E402
from generator.plan.step_fit import Case, fit, leave_one_group_out, parts  # noqa: E402
from generator.plan.step_time import FREE_CONSTANTS, StepConstants, calibrated, estimate_step_time  # noqa: E402
from generator.plan.workload import Workload, algo_roles  # noqa: E402
from generator.resources import data_dir  # noqa: E402

DATA = ROOT / "bench" / "data" / "published_step_times.yaml"
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

    case = Case(id=point["id"], group=point["group"], estimate=estimate_with, step_s=float(point["step_s"]),
                gen_s=point.get("gen_s"), update_s=point.get("update_s"), log_prob_s=point.get("log_prob_s"))
    return case, "" if cand.fits else "predicted not to fit"


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--write-calibration", action="store_true",
                        help="refit the constants on every point and write generator/data/step_time_calibration.yaml")
    parser.add_argument("--rounds", type=int, default=6, help="coordinate-descent rounds per fit")
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
            held_est[case.id] = step.total_s
    print(f"{'point':<16} {'GPUs':>4} {'layout':<18} {'rTP':>3} {'published':>9} {'fitted':>7} {'held-out':>8} "
          f"{'ratio':>5}  gen pub/est")
    for case in cases:
        point = by_id[case.id]
        layout = f"TP{point['tp']} PP{point['pp']}" + (f" VPP{point['vpp']}" if point.get("vpp") else "") + \
            (f" CP{point['cp']}" if point["cp"] > 1 else "") + (f" EP{point['ep']}" if point["ep"] > 1 else "")
        fitted = case.estimate(start)
        out = held_est[case.id]
        gen = f"{case.gen_s:g}/{parts(fitted)['gen_s']:.0f}" if case.gen_s else "-"
        print(f"{case.id:<16} {point['gpus']:>4} {layout:<18} {point['rollout_tp']:>3} {case.step_s:>9g} "
              f"{fitted.total_s:>7.0f} {out:>8.0f} {out / case.step_s:>5.2f}  {gen}")
    print()
    print("Spearman of held-out estimates vs published step times (each group predicted by constants fitted "
          "without it):")
    within_gpus: list[float] = []
    groups = dict.fromkeys(c.group for c in cases)
    for group in groups:
        members = [c for c in cases if c.group == group]
        rho = spearman([held_est[c.id] for c in members], [c.step_s for c in members])
        line = f"  {group}: {_fmt(rho)} over {len(members)} points"
        for gpus in sorted({by_id[c.id]["gpus"] for c in members}):
            same = [c for c in members if by_id[c.id]["gpus"] == gpus]
            if len(same) >= 3:
                rho = spearman([held_est[c.id] for c in same], [c.step_s for c in same])
                line += f"; {gpus} GPUs {_fmt(rho)} over {len(same)}"
                if rho is not None:
                    within_gpus.append(rho)
        print(line)
    per_token = []
    for case in cases:
        point = by_id[case.id]
        tokens = point["train_batch_size"] * point["n"] * (point["prompt_len"] + point["response_len"])
        per_token.append((held_est[case.id] * point["gpus"] / tokens, case.step_s * point["gpus"] / tokens))
    rho = spearman([e for e, _ in per_token], [p for _, p in per_token])
    print(f"  all points, GPU-seconds per token: {_fmt(rho)} over {len(per_token)} points")
    if within_gpus:
        print(f"  within one model and GPU count: min {min(within_gpus):+.2f}, mean "
              f"{sum(within_gpus) / len(within_gpus):+.2f} over {len(within_gpus)} sets")
    inside = sum(_within(held_est[c.id], c.step_s) for c in cases)
    print(f"held-out estimate/published within 0.5-2x: {inside}/{len(cases)} points ({inside / len(cases):.0%})")
    constants = ", ".join(f"{name} {getattr(start, name):.3g}" for name in FREE_CONSTANTS)
    print(f"constants (all points): {constants}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
