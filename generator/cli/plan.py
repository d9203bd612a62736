"""`gen plan`: choose (or evaluate) a Megatron layout and show its memory per phase.

Exit codes: 0 a layout fits; 1 the evaluated/searched layouts do not fit the GPU;
2 bad input (unknown model or GPU, impossible GPU count, an invalid --tp/--pp/... layout).
"""

from __future__ import annotations

import json
import sys

import typer

from generator.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, InputError


def candidate_dict(c) -> dict:
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
        "memory_gib": {"update": phases.get("update"),
                       "log_prob": max(phases.get("log_prob", 0.0), phases.get("ref_log_prob", 0.0)),
                       "rollout": phases.get("rollout"), "limit": c.limit_gib},
        "memory_terms": {p.phase: [{"name": t.name, "gib": t.gib, "note": t.note} for t in p.terms]
                         for p in c.memory},
        "fits": c.fits,
        "why": list(c.why),
        "warnings": list(c.warnings),
    }


def plan_dict(plan) -> dict:
    return {
        "model": plan.model, "gpus": plan.gpus, "nodes": plan.nodes, "gpu": plan.gpu,
        "gpu_memory_gib": plan.gpu_memory_gib, "algo": plan.algo, "n": plan.n,
        "prompt_len": plan.prompt_len, "response_len": plan.response_len,
        "train_batch_size": plan.train_batch_size, "ppo_mini_batch_size": plan.ppo_mini_batch_size,
        "chosen": plan.chosen,
        "candidates": [candidate_dict(c) for c in plan.candidates],
        "rejected": [{"layout": layout, "reason": reason} for layout, reason in plan.rejected],
    }


def _offload_text(c) -> str:
    off = c.offload
    parts = [name for name, on in (("param", off.param), ("opt", off.optimizer)) if on]
    if off.cpu_optimizer:
        parts.append(f"cpu-opt {off.cpu_optimizer_fraction:g}")
    if c.recompute:
        parts.append("recompute")
    return "+".join(parts) or "none"


def render_text(plan, out) -> None:
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


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan_command(
        model: str = typer.Option(..., "--model", "-m", help="Model name, hub id, model dir or config.json."),
        gpus: int = typer.Option(..., "--gpus", help="GPUs in total (all nodes)."),
        nodes: int = typer.Option(1, "--nodes", help="Nodes the GPUs are spread over."),
        gpu: str | None = typer.Option(
            None, "--gpu", help="GPU type: h100 h800 h20 h200 a100-80g a100-40g l40s b200 mi300x …"),
        gpu_mem: float | None = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        prompt_len: int = typer.Option(1024, "--prompt-len"),
        response_len: int = typer.Option(1024, "--response-len"),
        n: int | None = typer.Option(None, "--n", help="Responses per prompt (default 5; PPO 1)."),
        algo: str = typer.Option("grpo", "--algo", help="grpo|ppo|dapo|gspo|rloo|reinforce_plus_plus"),
        train_batch_size: int | None = typer.Option(None, "--train-batch-size"),
        tp: int | None = typer.Option(None, "--tp"),
        pp: int | None = typer.Option(None, "--pp"),
        cp: int | None = typer.Option(None, "--cp"),
        ep: int | None = typer.Option(None, "--ep"),
        etp: int | None = typer.Option(None, "--etp"),
        vpp: int | None = typer.Option(None, "--vpp"),
        first_stage_layers: int | None = typer.Option(None, "--first-stage-layers"),
        last_stage_layers: int | None = typer.Option(None, "--last-stage-layers"),
        top: int = typer.Option(5, "--top", help="Candidates to show."),
        output_format: str = typer.Option("text", "--format", help="text|json"),
    ) -> None:
        """Choose a Megatron layout (or evaluate one given with --tp/--pp/...) and show memory per phase."""
        from generator.hardware import gpu_spec
        from generator.model import resolve_model
        from generator.plan import plan_layout
        from generator.plan.search import default_n

        try:
            if output_format not in ("text", "json"):
                raise InputError(f"--format must be text or json, got '{output_format}'")
            facts = resolve_model(model)
            spec = gpu_spec(gpu, gpu_mem)
            layout = {"tp": tp, "pp": pp, "cp": cp, "ep": ep, "etp": etp, "vpp": vpp,
                      "first_stage_layers": first_stage_layers, "last_stage_layers": last_stage_layers}
            fixed = {k: v for k, v in layout.items() if v is not None}
            if fixed:
                fixed.setdefault("tp", 1)
                fixed.setdefault("pp", 1)
            plan = plan_layout(facts, gpus, nodes=nodes, gpu=spec, prompt_len=prompt_len,
                               response_len=response_len, n=n if n is not None else default_n(algo.lower()),
                               algo=algo, train_batch_size=train_batch_size, fixed=fixed or None, top=top)
            if fixed and not plan.candidates and plan.rejected:
                layout_text, reason = plan.rejected[0]
                if "does not fit" not in reason:
                    raise InputError(f"layout {layout_text} is invalid for {facts.name}: {reason}")
        except InputError as err:
            typer.echo(f"gen plan: {err}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        if output_format == "json":
            json.dump(plan_dict(plan), sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            render_text(plan, sys.stdout)
        if plan.chosen is None:
            raise typer.Exit(EXIT_FINDINGS)
