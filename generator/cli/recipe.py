"""`gen recipe`: plan a layout, check the config, and write a Megatron run_*.sh.

The command is thin: options -> RecipeSpec (via the planner) -> generator.render.generate ->
an atomic write. The packaged-recipe form (`gen recipe NAME`) is handled by the library
when it registers a resolver (see `_from_library`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from generator.errors import EXIT_BAD_INPUT, InputError


def _fail(message: str) -> None:
    typer.echo(f"gen recipe: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def build_spec(*, model: str, gpus: int, nodes: int, gpu: str | None, gpu_mem: float | None, algo: str,
               rollout: str, launcher: str, verl_version: str | None, model_path: str | None,
               train_files: str | None, val_files: str | None, prompt_len: int, response_len: int,
               n: int | None, train_batch_size: int | None, project_name: str | None,
               experiment_name: str | None) -> Any:
    """Options -> RecipeSpec, with the layout and batch sizes the planner chooses."""
    from generator.hardware import gpu_spec
    from generator.model import model_slug, resolve_model
    from generator.render.recipe import DEFAULT_VERSION, RecipeSpec
    from generator.verl import ALGORITHMS

    if algo not in ALGORITHMS:
        raise InputError(f"unknown algorithm '{algo}'; choose one of {', '.join(ALGORITHMS)}")
    if gpus < 1:
        raise InputError(f"--gpus must be at least 1, got {gpus}")
    if nodes < 1 or gpus % nodes:
        raise InputError(f"{gpus} GPUs cannot be split evenly over {nodes} node(s)")
    if n is None:
        n = 1 if algo == "ppo" else 5
    facts = resolve_model(model)
    device = gpu_spec(gpu, gpu_mem)
    version = verl_version or DEFAULT_VERSION
    if verl_version is not None:
        from generator.versions import parse

        try:
            parse(verl_version)
        except ValueError:
            raise InputError(f"not a verl version: '{verl_version}'") from None

    from generator.plan import plan_layout

    plan = plan_layout(facts, gpus, nodes=nodes, gpu=device, prompt_len=prompt_len, response_len=response_len,
                       n=n, algo=algo, train_batch_size=train_batch_size)
    best = plan.best
    if best is None:
        reasons = "; ".join(reason for _, reason in plan.rejected[:3]) or "no layout fits"
        raise InputError(f"no Megatron layout of {facts.name} fits {gpus} x {device.name}: {reasons}")
    train_bs = getattr(plan, "train_batch_size", None) or train_batch_size
    mini = getattr(plan, "ppo_mini_batch_size", None)
    if train_bs is None or mini is None:
        raise InputError("the planner did not choose batch sizes for this layout")
    return RecipeSpec(
        model=facts, layout=best, gpus=gpus, nodes=nodes, gpu_name=device.name, gpu_memory_gib=device.memory_gib,
        algo=algo, rollout=rollout, launcher=launcher, version=version, model_path=model_path,
        train_files=train_files, val_files=val_files, prompt_len=prompt_len, response_len=response_len, n=n,
        train_batch_size=train_bs, ppo_mini_batch_size=mini, project_name=project_name,
        experiment_name=experiment_name, model_slug=model_slug(facts),
    )


def _files(paths: list[str] | None) -> Any:
    """One file stays a plain (Hydra-quoted) string; several become a Hydra list knob."""
    if not paths:
        return None
    if len(paths) == 1:
        return paths[0]
    from generator.overrides import format_value
    from generator.render.quoting import shell_word
    from generator.render.recipe import HydraText

    if any(not p or "\x00" in p for p in paths):
        raise InputError("--train-files/--val-files must be non-empty paths")
    hydra = format_value(list(paths))
    return HydraText(hydra, shell_word(hydra), f"{len(paths)} parquet files (a Hydra list)")


def _from_library(name: str, **options: Any) -> Any:
    """A packaged recipe NAME -> RecipeSpec; the library's notes (what a re-plan changed) go to stderr."""
    from generator.library import spec_for_cli

    spec, notes = spec_for_cli(name, **options)
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    return spec


def register(app: typer.Typer) -> None:
    """Add `gen recipe` to `app`."""

    @app.command("recipe")
    def recipe(
        name: Optional[str] = typer.Argument(None, help="A packaged recipe (see `gen list`); omit to plan from --model."),
        model: Optional[str] = typer.Option(None, "--model", "-m", help="Model name (qwen2-7b, llama3.1-8b, ...) or a config.json."),
        gpus: Optional[int] = typer.Option(None, "--gpus", help="Total GPUs."),
        nodes: int = typer.Option(1, "--nodes", help="Nodes (GPUs are split evenly)."),
        gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type: h100, h20, h200, a100-80g, ... (default h100)."),
        gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        algo: str = typer.Option("grpo", "--algo", help="grpo | ppo | dapo | gspo | rloo | reinforce_plus_plus."),
        rollout: str = typer.Option("vllm", "--rollout", help="vllm | sglang."),
        launcher: str = typer.Option("local", "--launcher", help="local | ray | slurm."),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", help="Target verl release (default 0.7.0)."),
        model_path: Optional[str] = typer.Option(None, "--model-path", help="Model directory or HF id in the script."),
        train_files: Optional[list[str]] = typer.Option(None, "--train-files", help="Training parquet file (repeat for several)."),
        val_files: Optional[list[str]] = typer.Option(None, "--val-files", help="Validation parquet file (repeat for several)."),
        prompt_len: int = typer.Option(1024, "--prompt-len", help="Max prompt tokens."),
        response_len: int = typer.Option(1024, "--response-len", help="Max response tokens."),
        n: Optional[int] = typer.Option(None, "--n", help="Responses per prompt (default 5; PPO 1)."),
        train_batch_size: Optional[int] = typer.Option(None, "--train-batch-size", help="Prompts per step."),
        project_name: Optional[str] = typer.Option(None, "--project-name"),
        experiment_name: Optional[str] = typer.Option(None, "--experiment-name"),
        legacy: Optional[str] = typer.Option(None, "--from", help="Re-render this legacy script in the clean form."),
        output: Optional[str] = typer.Option(None, "--output", "-o", help="Output file ('-' = stdout)."),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
        library: Optional[str] = typer.Option(None, "--library", help="User recipe folder for NAME (default: "
                                              "$VERL_GEN_LIBRARY, else ~/.config/verl-gen/recipes)."),
    ) -> None:
        """Write a Megatron launch script whose layout, batch sizes and memory are planned and checked."""
        from generator.render import default_filename, generate

        command = None
        try:
            options = dict(gpus=gpus, nodes=nodes, gpu=gpu, gpu_mem=gpu_mem, algo=algo, rollout=rollout,
                           launcher=launcher, verl_version=verl_version, model_path=model_path,
                           train_files=_files(train_files), val_files=_files(val_files), prompt_len=prompt_len,
                           response_len=response_len, n=n, train_batch_size=train_batch_size,
                           project_name=project_name, experiment_name=experiment_name)
            if legacy is not None and name is not None:
                raise InputError(f"give a recipe name ('{name}') or --from {legacy}, not both")
            if legacy is not None:
                from generator.render.legacy import spec_from_script
                from generator.render.recipe import DEFAULT_VERSION

                spec = spec_from_script(legacy, version=verl_version or DEFAULT_VERSION, model=model,
                                        launcher=launcher, gpu=gpu, gpu_mem=gpu_mem).spec
                command = f"gen recipe --from {Path(legacy).name} --launcher {launcher} " \
                          f"--verl-version {spec.version}"
            elif name is not None:
                spec = _from_library(name, model=model, library=library, **options)
                command = " ".join(["gen recipe", name] + ([f"--gpus {gpus}"] if gpus else [])
                                   + ([f"--launcher {launcher}"] if launcher != "local" else []))
            else:
                if model is None or gpus is None:
                    raise InputError("give --model and --gpus (or a packaged recipe name)")
                spec = build_spec(model=model, **options)
            target = output or default_filename(spec)
            filename = "run.sh" if target == "-" else Path(target).name
            rendered = generate(spec, filename=filename, command=command)
            if target == "-":
                sys.stdout.write(rendered.text)
            else:
                from generator.files import write_atomic

                write_atomic(target, rendered.text, replace=force, mode=0o777)
        except InputError as err:
            _fail(str(err))
            return
        typer.echo(rendered.summary, err=True)
        if target != "-":
            typer.echo(f"wrote {target}", err=True)
