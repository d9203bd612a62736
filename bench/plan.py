"""Planner benchmark: verl's shipped Megatron layouts against ours.

    python bench/plan.py --table     # one row per shipped layout: verl's, ours, memory per phase
    python bench/plan.py --timing    # wall time of one search per row
    python bench/plan.py --departures  # per row, what `gen plan` says of verl's layout (issue 23)

For each row of generator/data/verl_layouts.yaml: verl's layout evaluated with the script's own
knobs ("as shipped"), then a search on the same GPUs, lengths, n and batch size ("ours").
Memory columns (GiB, worst pipeline stage): update / optimizer step / log-prob / rollout / weight
sync. `MP` is TP·PP·CP; `off` counts offload steps (param, optimizer, CPU optimizer, recompute).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from generator.plan.reference import verl_layouts
from generator.plan.enumeration import describe_layout
from generator.plan.ranking import deciding_criterion, rank_key


def offload_weight(c) -> int:
    off = c.offload
    return int(off.param) + int(off.optimizer) + int(off.cpu_optimizer) + int(c.recompute)


def offload_text(c) -> str:
    off = c.offload
    parts = [n for n, on in (("param", off.param), ("opt", off.optimizer)) if on]
    if off.cpu_optimizer:
        parts.append(f"cpu{off.cpu_optimizer_fraction:g}")
    if c.recompute:
        parts.append("rc")
    return "+".join(parts) or "-"


def phases(c) -> str:
    ph = {p.phase: p.gib for p in c.memory}
    lp = max(ph.get("log_prob", 0.0), ph.get("ref_log_prob", 0.0))
    return "/".join(f"{v:.0f}" for v in (ph.get("update", 0.0), ph.get("optimizer_step", 0.0), lp,
                                         ph.get("rollout", 0.0), ph.get("weight_sync", 0.0)))


def table() -> int:
    head = ("id", "model", "GPUs", "verl layout", "verl knobs", "verl mem u/os/lp/r/ws", "fits",
            "our layout", "our knobs", "our mem u/os/lp/r/ws", "MP v/o", "off v/o", "limit",
            "est s v/o", "why ours")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in verl_layouts():
        shipped = row.evaluate_as_shipped().candidates[0]
        ours = row.search(top=1)
        best = ours.best
        cells = [row.id, row.model.name, f"{row.row['gpus']}×{row.row['gpu']}", describe_layout(shipped),
                 f"{offload_text(shipped)} gmu{shipped.gpu_memory_utilization:g}", phases(shipped),
                 "yes" if shipped.fits else "NO"]
        if best is None:
            cells += ["none fits", "", "", "", "", ""]
        else:
            cells += [f"{describe_layout(best)} rTP{best.rollout_tp}",
                      f"{offload_text(best)} gmu{best.gpu_memory_utilization:g} "
                      + (f"dyn{best.token_budget}" if best.use_dynamic_bsz else f"mb{best.micro_batch_per_gpu}"),
                      phases(best), f"{shipped.model_parallel_size}/{best.model_parallel_size}",
                      f"{offload_weight(shipped)}/{offload_weight(best)}"]
        cells.append(f"{shipped.limit_gib:g}")
        cells += [step_cells(row, shipped, best), departure(row, shipped, best)]
        print("| " + " | ".join(cells) + " |")
    return 0


def step_cells(row, shipped, best) -> str:
    """Estimated step seconds of verl's layout as shipped and of ours, and the estimated gain."""
    if best is None or shipped.score is None or best.score is None:
        return "-"
    gain = shipped.score.total_s / best.score.total_s
    return f"{shipped.score.total_s:.0f}/{best.score.total_s:.0f} ({gain:.2f}x)"


def departure(row, shipped, best) -> str:
    """Why our plan departs from verl's layout: the first ranking criterion ours wins on."""
    if best is None:
        return "nothing fits"
    seq = row.row["prompt"] + row.row["response"]
    moe = row.model.is_moe
    per_node = min(8, row.row["gpus"])
    if describe_layout(shipped) == describe_layout(best) and shipped.rollout_tp == best.rollout_tp:
        return "verl's layout"
    reason = deciding_criterion(rank_key(best, seq, moe, per_node), rank_key(shipped, seq, moe, per_node))
    return reason or "tie"


def timing() -> int:
    for row in verl_layouts():
        start = time.perf_counter()
        row.search(top=1)
        print(f"{row.id:10} {row.model.name:20} {row.row['gpus']:4} GPUs  {time.perf_counter() - start:6.3f} s")
    return 0


def departures_text() -> int:
    """Per row: the sentence `gen plan` prints for that row's example on the row's own workload."""
    from generator.plan.verl_departures import departures
    from generator.report.departures import departure_text

    for row in verl_layouts():
        found = {d.row_id: d for d in departures(row.search(top=1), row.model, row.workload())}
        print(f"{row.id}: {departure_text(found[row.id]) if row.id in found else 'not among the first examples'}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--departures", action="store_true")
    args = parser.parse_args()
    if args.timing:
        return timing()
    if args.departures:
        return departures_text()
    return table()


if __name__ == "__main__":
    raise SystemExit(main())
