"""What `gen plan` prints: the plan as a JSON document and as a text table.

Pure functions of a Plan (generator.plan); the CLI chooses the stream.
"""

from __future__ import annotations

from typing import Any, TextIO

from generator.report.documents import JSON_SCHEMA_VERSION


def candidate_dict(c: Any) -> dict[str, Any]:
    phases = {p.phase: p.gib for p in c.memory}
    return {
        "tp": c.tp, "pp": c.pp, "vpp": c.vpp, "cp": c.cp, "ep": c.ep, "etp": c.etp,
        "first_stage_layers": c.first_stage_layers, "last_stage_layers": c.last_stage_layers,
        "rollout_tp": c.rollout_tp,
        "micro_batch_per_gpu": c.micro_batch_per_gpu,
        "log_prob_micro_batch_per_gpu": c.log_prob_micro_batch_per_gpu,
        "use_dynamic_bsz": c.use_dynamic_bsz,
        "token_budget": c.token_budget, "log_prob_token_budget": c.log_prob_token_budget,
        "ppo_mini_batch_size": c.ppo_mini_batch_size,
        "offload": {"param": c.offload.param, "grad": c.offload.grad, "optimizer": c.offload.optimizer,
                    "cpu_optimizer": c.offload.cpu_optimizer,
                    "cpu_optimizer_fraction": c.offload.cpu_optimizer_fraction},
        "recompute": c.recompute,
        "use_fused_kernels": c.use_fused_kernels,
        "gpu_memory_utilization": c.gpu_memory_utilization,
        # "log_prob" is the larger of the two log-prob phases (what the table shows), kept for
        # readers of schema 1; "old_log_prob"/"ref_log_prob" are each phase on its own.
        "memory_gib": {"update": phases.get("update"),
                       "log_prob": max(phases.get("log_prob", 0.0), phases.get("ref_log_prob", 0.0)),
                       "old_log_prob": phases.get("log_prob"), "ref_log_prob": phases.get("ref_log_prob"),
                       "rollout": phases.get("rollout"), "limit": c.limit_gib},
        "memory_terms": {p.phase: [{"name": t.name, "gib": t.gib, "note": t.note} for t in p.terms]
                         for p in c.memory},
        "fits": c.fits,
        "why": list(c.why),
        "warnings": list(c.warnings),
    }


def plan_dict(plan: Any) -> dict[str, Any]:
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "model": plan.model, "gpus": plan.gpus, "nodes": plan.nodes, "gpu": plan.gpu,
        "gpu_memory_gib": plan.gpu_memory_gib, "algo": plan.algo, "n": plan.n,
        "prompt_len": plan.prompt_len, "response_len": plan.response_len,
        "train_batch_size": plan.train_batch_size, "ppo_mini_batch_size": plan.ppo_mini_batch_size,
        "chosen": plan.chosen,
        "candidates": [candidate_dict(c) for c in plan.candidates],
        "rejected": [{"layout": layout, "reason": reason} for layout, reason in plan.rejected],
    }


def _offload_text(c: Any) -> str:
    off = c.offload
    parts = [name for name, on in (("param", off.param), ("opt", off.optimizer)) if on]
    if off.cpu_optimizer:
        parts.append(f"cpu-opt {off.cpu_optimizer_fraction:g}")
    if c.recompute:
        parts.append("recompute")
    return "+".join(parts) or "none"


def render_text(plan: Any, out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    from generator.plan.search import describe_layout

    console = Console(file=out, highlight=False, soft_wrap=True, width=160 if not out.isatty() else None)
    console.print(f"{plan.model} on {plan.gpus}×{plan.gpu} ({plan.gpu_memory_gib:g} GiB), {plan.algo} n={plan.n}, "
                  f"prompt/response {plan.prompt_len}/{plan.response_len}, "
                  f"train_batch_size {plan.train_batch_size}, ppo_mini_batch_size {plan.ppo_mini_batch_size}")
    table = Table(show_lines=False)
    for column in ("#", "layout", "rollout TP", "batching", "offload", "gmu", "update", "log-prob", "rollout",
                   "usable", "fits"):
        table.add_column(column)
    for index, c in enumerate(plan.candidates):
        phases = {p.phase: p.gib for p in c.memory}
        batching = (f"dyn {c.token_budget}/{c.log_prob_token_budget}" if c.use_dynamic_bsz
                    else f"micro {c.micro_batch_per_gpu}")
        table.add_row("*" if index == plan.chosen else str(index), describe_layout(c), str(c.rollout_tp), batching,
                      _offload_text(c), f"{c.gpu_memory_utilization:g}", f"{phases.get('update', 0):.1f}",
                      f"{max(phases.get('log_prob', 0), phases.get('ref_log_prob', 0)):.1f}",
                      f"{phases.get('rollout', 0):.1f}", f"{c.limit_gib:.1f}", "yes" if c.fits else "NO")
    console.print(table)
    shown = plan.best or (plan.candidates[0] if plan.candidates else None)
    if shown is None:
        console.print("no layout fits; closest misses:")
        for layout, reason in plan.rejected[:8]:
            console.print(f"  {layout}: {reason}")
        return
    for line in shown.why:
        console.print(f"why: {line}")
    for line in shown.warnings:
        console.print(f"note: {line}")
    for phase in shown.memory:
        terms = ", ".join(f"{t.name} {t.gib:.1f}" for t in phase.terms if t.gib)
        console.print(f"{phase.phase:>12}: {phase.gib:6.1f} GiB = {terms}")
