"""The planner's ranking score against published verl step times (issue 12 part 4).

    python bench/rank_vs_published.py [--data bench/data/published_step_times.yaml]

For every published point (bench/data/published_step_times.yaml, each with its source) the
layout and knobs are evaluated as given (`plan_layout(fixed=...)`) and the estimated step time
(generator.plan.step_time) is set beside the published one. Prints, per group of points that
share model, hardware and workload, the Spearman rank correlation of estimate vs published
(the ranking only needs the order right), per GPU count inside the group where there are
several points, the ratio estimate/published per point, and the Spearman over all points of
the estimated vs published GPU-seconds per token. Exit 0; 2 on an unreadable data file.

Measured (19 points from ISEEKYAN/verl_megatron_practice, DAPO on H100): Qwen2.5-7B group +0.32
(12 points; −0.63 among the 9 on 8 GPUs), Qwen3-30B-A3B group +0.74 (7; −0.77 among 4 on 16
GPUs, +1.00 among 3 on 32), all points per GPU-second per token +0.64. Across GPU counts the
order is right; between layouts on the same GPUs it is not: the estimate prefers a wider rollout
TP (fewer KV-cache waves, weights read in parallel) where the published runs are faster with
rollout TP 1, and it ignores TP/CP communication. Estimates are 2-9× the published times: they
assume every response reaches the maximum length (8192), which DAPO's responses do not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.hardware import gpu_spec  # noqa: E402
from generator.model import resolve_model  # noqa: E402
from generator.plan import plan_layout  # noqa: E402

DATA = ROOT / "bench" / "data" / "published_step_times.yaml"


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
    """'20k' → (dynamic, 20480); 'micro 4' → (static, 4)."""
    text = str(text).strip().lower()
    if text.startswith("micro"):
        return False, int(text.split()[1])
    return True, int(float(text.rstrip("k")) * 1024)


def estimate(point: dict[str, Any]) -> tuple[float | None, str]:
    """(estimated step seconds, note) for one published point."""
    model = resolve_model(point["model"])
    dynamic, actor = _budget(point["actor_budget"])
    _, log_prob = _budget(point["log_prob_budget"])
    offload = bool(point["offload"])
    fixed: dict[str, Any] = {
        "tp": point["tp"], "pp": point["pp"], "cp": point["cp"], "ep": point["ep"], "vpp": point.get("vpp"),
        "rollout_tp": point["rollout_tp"], "use_dynamic_bsz": dynamic,
        "offload": {"param": offload, "grad": offload, "optimizer": offload},
        "recompute": bool(point.get("recompute", False)),
        "gpu_memory_utilization": point["gpu_memory_utilization"],
    }
    if "etp" in point:
        fixed["etp"] = point["etp"]
    if dynamic:
        fixed.update(token_budget=actor, log_prob_token_budget=log_prob)
    else:
        fixed.update(micro_batch_per_gpu=actor, log_prob_micro_batch_per_gpu=log_prob)
    plan = plan_layout(model, point["gpus"], nodes=max(1, point["gpus"] // 8), gpu=gpu_spec(point["gpu"]),
                       prompt_len=point["prompt_len"], response_len=point["response_len"], n=point["n"],
                       algo=point["algo"], train_batch_size=point["train_batch_size"],
                       ppo_mini_batch_size=point["ppo_mini_batch_size"], fixed=fixed, top=1)
    cand = plan.candidates[0] if plan.candidates else None
    if cand is None or cand.score is None:
        return None, plan.rejected[0][1] if plan.rejected else "not evaluated"
    return cand.score.total_s, "" if cand.fits else "predicted not to fit"


def _fmt(rho: float | None) -> str:
    return "n/a" if rho is None else f"{rho:+.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    try:
        data = yaml.safe_load(args.data.read_text())
        defaults = data.get("defaults", {})
        points = [{**defaults, **p} for p in data["points"]]
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        print(f"error: cannot read {args.data}: {exc}", file=sys.stderr)
        return 2
    groups: dict[str, list[tuple[dict[str, Any], float]]] = {}
    per_token: list[tuple[float, float]] = []
    print(f"{'point':<18} {'GPUs':>4} {'layout':<16} {'rTP':>3} {'published s':>11} {'estimate s':>10} {'ratio':>6}")
    for point in points:
        est, note = estimate(point)
        layout = f"TP{point['tp']} PP{point['pp']}" + (f" VPP{point['vpp']}" if point.get("vpp") else "") + \
            (f" CP{point['cp']}" if point["cp"] > 1 else "") + (f" EP{point['ep']}" if point["ep"] > 1 else "")
        shown = "-" if est is None else f"{est:10.1f}"
        ratio = "-" if est is None else f"{est / point['step_s']:6.2f}"
        print(f"{point['id']:<18} {point['gpus']:>4} {layout:<16} {point['rollout_tp']:>3} "
              f"{point['step_s']:>11} {shown:>10} {ratio:>6}" + (f"  ({note})" if note else ""))
        if est is None:
            continue
        groups.setdefault(point["group"], []).append((point, est))
        tokens = point["train_batch_size"] * point["n"] * (point["prompt_len"] + point["response_len"])
        per_token.append((est * point["gpus"] / tokens, point["step_s"] * point["gpus"] / tokens))
    print()
    for name, members in groups.items():
        rho = spearman([e for _, e in members], [p["step_s"] for p, _ in members])
        print(f"{name}: Spearman {_fmt(rho)} over {len(members)} points")
        for gpus in sorted({p["gpus"] for p, _ in members}):
            same = [(p, e) for p, e in members if p["gpus"] == gpus]
            if len(same) >= 3:
                rho = spearman([e for _, e in same], [p["step_s"] for p, _ in same])
                print(f"  {gpus} GPUs: Spearman {_fmt(rho)} over {len(same)} points")
    rho = spearman([e for e, _ in per_token], [p for _, p in per_token])
    print(f"all points, GPU-seconds per token: Spearman {_fmt(rho)} over {len(per_token)} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
