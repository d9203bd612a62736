"""`gen plan`: choose (or evaluate) a Megatron layout and show its memory per phase.

Exit codes: 0 a layout fits; 1 the evaluated/searched layouts do not fit the GPU;
2 bad input (unknown model or GPU, impossible GPU count, an invalid --tp/--pp/... layout).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import typer

from generator.cli.calibration import NO_CALIBRATION_HELP, apply_stored
from generator.cli.completion import complete_algo, complete_gpu, complete_model
from generator.cli.common import say_error
from generator.cli.pin_options import with_pin_options
from generator.base.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, InputError
from generator.base.safe_text import json_text, say, write

if TYPE_CHECKING:
    from generator.plan.result import Plan
    from generator.plan.verl_departures import Departure


def _write_chart(path: str, plan: Plan, force: bool, beside_verl: Sequence[Departure]) -> None:
    """--chart FILE.svg|.html: the chosen layout (else the closest one) on the GPUs, the candidates
    side by side with verl's layout, and the memory per phase (generator/report/pictures.py)."""
    from generator.base.files import write_atomic
    from generator.report.pictures import plan_picture

    write_atomic(path, plan_picture(path, plan, beside_verl), replace=force)
    say(f"wrote {path}")  # on stderr: stdout is the plan (or its JSON)


def register(app: typer.Typer) -> None:
    @app.command("plan")
    @with_pin_options
    def plan_command(
        model: str = typer.Option(..., "--model", "-m", autocompletion=complete_model, help="Model name (qwen2-7b; `gen models`), hub id, model dir or config.json."),
        gpus: int = typer.Option(..., "--gpus", help="GPUs in total (all nodes)."),
        nodes: int | None = typer.Option(
            None, "--nodes", help="Nodes the GPUs are spread over (default: as many as the GPU type's nodes "
                                  "need, as gen recipe derives them)."),
        gpu: str | None = typer.Option(
            None, "--gpu", autocompletion=complete_gpu, help="GPU type: h100 h800 h20 h200 a100-80g a100-40g l40s b200 mi300x …"),
        gpu_mem: float | None = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        prompt_len: int = typer.Option(1024, "--prompt-len",
            help="Max prompt tokens (data.max_prompt_length)."),
        response_len: int = typer.Option(1024, "--response-len",
            help="Max response tokens (data.max_response_length)."),
        mean_response_len: int | None = typer.Option(
            None, "--mean-response-len", help="Expected response tokens for the step-time ranking (default: 15% "
                                              "of --response-len, the median of published runs)."),
        n: int | None = typer.Option(None, "--n", help="Responses per prompt (default 5; PPO 1)."),
        algo: str = typer.Option("grpo", "--algo", autocompletion=complete_algo, help="grpo|ppo|dapo|gspo|rloo|reinforce_plus_plus"),
        train_batch_size: int | None = typer.Option(None, "--train-batch-size",
            help="Prompts per step (data.train_batch_size; default: planned)."),
        ppo_mini_batch_size: int | None = typer.Option(None, "--ppo-mini-batch-size",
            help="Pin ppo_mini_batch_size (prompts per update)."),
        top: int = typer.Option(5, "--top", help="Candidates to show."),
        output_format: str = typer.Option("text", "--format", help="text|json"),
        wide: bool = typer.Option(False, "--wide", help="One table row per candidate (needs ~130 columns)."),
        chart: Optional[str] = typer.Option(
            None, "--chart", help="Also write the pictures: the layout on the GPUs, the candidates side by side "
                                  "and the memory per phase, in FILE.svg or FILE.html."),
        force: bool = typer.Option(False, "--force", help="Replace an existing --chart file."),
        no_calibration: bool = typer.Option(False, "--no-calibration", help=NO_CALIBRATION_HELP),
        pin_values: dict[str, Any] | None = None,
    ) -> None:
        """Choose a Megatron layout (or evaluate one given with --tp/--pp/...) and show memory per phase."""
        from generator.layout.hardware import gpu_spec
        from generator.model import resolve_model
        from generator.plan import plan_layout
        from generator.plan.batch_choice import default_n
        from generator.plan.setting import nodes_for_gpus
        from generator.layout.pins import LAYOUT_FIELDS, pins_from_options
        from generator.plan.verl_departures import departures
        # Memory at the release `gen recipe` writes for (render.spec.DEFAULT_VERSION, the newest packaged
        # one), named without importing the renderer: ~25 ms of imports a plan does not use.
        from generator.schema.releases import newest_release

        try:
            if output_format not in ("text", "json"):
                raise InputError(f"--format must be text or json, got '{output_format}'")
            facts = resolve_model(model)
            spec = gpu_spec(gpu, gpu_mem)
            apply_stored(Path.cwd(), spec.name, None, no_calibration)
            if nodes is None:  # derived as `gen recipe` derives them: one search, one answer
                nodes = nodes_for_gpus(gpus, spec.name, spec.gpus_per_node)[0]
            pinned = pin_values or {}
            # the knobs checked as `gen recipe` checks them; a layout given (taken as it is, so
            # layout_problems can say why it is invalid) is evaluated, with the knobs pinned
            layout = {k: pinned[k] for k in LAYOUT_FIELDS if pinned.get(k) is not None}
            knobs = {k: v for k, v in pinned.items() if k not in LAYOUT_FIELDS}
            pins = replace(pins_from_options(**knobs), **layout)
            evaluate = bool(layout)
            workload: dict[str, Any] = {
                "nodes": nodes, "gpu": spec, "prompt_len": prompt_len, "response_len": response_len,
                "n": n if n is not None else default_n(algo.lower()), "algo": algo,
                "mean_response_len": mean_response_len, "verl_version": newest_release()}
            plan = plan_layout(facts, gpus, **workload, train_batch_size=train_batch_size,
                               ppo_mini_batch_size=ppo_mini_batch_size, pins=pins, evaluate=evaluate, top=top)
            # Each of verl's shipped layouts for this model and GPU count, on this workload (issue 23).
            beside_verl = departures(plan, facts, workload)
            if evaluate and not plan.candidates and plan.rejected:
                layout_text, reason = plan.rejected[0]
                if "does not fit" not in reason:
                    raise InputError(f"layout {layout_text} is invalid for {facts.name}: {reason}")
            if chart is not None:
                _write_chart(chart, plan, force, beside_verl)
        except InputError as err:
            say_error(str(err))
            if output_format == "json":
                from generator.report.documents import dumps

                write(dumps({"error": str(err)}))
            raise typer.Exit(EXIT_BAD_INPUT) from None
        from generator.report.plan_report import plan_dict, render_text
        from generator.base.safe_text import use_color

        if output_format == "json":
            write(json_text(plan_dict(plan, beside_verl)))
        else:
            render_text(plan, sys.stdout, wide=wide, color=use_color(sys.stdout), departures=beside_verl)
        if plan.chosen is None:
            raise typer.Exit(EXIT_FINDINGS)
