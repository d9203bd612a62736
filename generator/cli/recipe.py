"""`gen recipe`: plan a layout, check the config, and write a Megatron run_*.sh.

The command is thin: options -> RecipeSpec (generator.plan.recipe_plan for --model, the library for a
recipe NAME, generator.render.legacy for --from) -> generator.render.generate -> an atomic write.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, TypedDict

import typer

from generator.cli.completion import complete_algo, complete_gpu, complete_model, complete_recipe, complete_release
from generator.schema.releases import newest_release
from generator.cli.common import say_error
from generator.cli.pin_options import with_pin_options
from generator.cli.calibration import NO_CALIBRATION_HELP, apply_stored
from generator.base.errors import EXIT_BAD_INPUT, InputError
from generator.base.safe_text import payload_problem, say, write_payload

if TYPE_CHECKING:
    from generator.render.spec import RecipeSpec


def _fail(message: str) -> None:
    say_error(message)
    raise typer.Exit(EXIT_BAD_INPUT)


def _files(paths: list[str] | None) -> Any:
    """One file stays a plain (Hydra-quoted) string; several become a Hydra list knob."""
    if not paths:
        return None
    if len(paths) == 1:
        return paths[0]
    from generator.render.quoting import hydra_body, shell_word
    from generator.render.spec import HydraText

    if any(not p or "\x00" in p for p in paths):
        raise InputError("--train-files/--val-files must be non-empty paths")
    # each element quoted as a knob's text is, so OmegaConf resolves no `${` in a file name
    hydra = "[" + ",".join("'" + hydra_body(p) + "'" for p in paths) + "]"
    return HydraText(hydra, shell_word(hydra), f"{len(paths)} parquet files (a Hydra list)")


class RunOptions(TypedDict, total=False):
    """The run options the user gave (loggers, checkpoints, resuming, learning rate, epochs); an
    option not given is absent, so the recipe's or the planner's own default stays."""

    loggers: tuple[str, ...]
    checkpoint_dir: str
    save_freq: int
    resume_mode: str
    resume_from: str
    lr: float
    total_epochs: int
    ppo_mini_batch_size: int


def _run_options(loggers: tuple[str, ...] | None, checkpoint_dir: str | None, save_freq: int | None,
                 resume_mode: str | None, resume_from: str | None, lr: float | None, total_epochs: int | None,
                 ppo_mini_batch_size: int | None) -> RunOptions:
    run = RunOptions()
    # in the order `--from`'s refusal names them
    if loggers is not None:
        run["loggers"] = loggers
    if checkpoint_dir is not None:
        run["checkpoint_dir"] = checkpoint_dir
    if save_freq is not None:
        run["save_freq"] = save_freq
    if resume_mode is not None:
        run["resume_mode"] = resume_mode
    if resume_from is not None:
        run["resume_from"] = resume_from
    if lr is not None:
        run["lr"] = lr
    if total_epochs is not None:
        run["total_epochs"] = total_epochs
    if ppo_mini_batch_size is not None:
        run["ppo_mini_batch_size"] = ppo_mini_batch_size
    return run


def _from_library(name: str, **options: Any) -> RecipeSpec:
    """A packaged recipe NAME -> RecipeSpec; the library's notes (what a re-plan changed) go to stderr."""
    from generator.library import spec_for_cli

    spec, notes = spec_for_cli(name, **options)
    for note in notes:
        say(f"note: {note}", flush=True)
    return spec


def register(app: typer.Typer) -> None:
    """Add `gen recipe` to `app`."""

    @app.command("recipe")
    @with_pin_options
    def recipe(
        name: Optional[str] = typer.Argument(None, autocompletion=complete_recipe, help="A packaged recipe (see `gen list`); omit to plan from --model."),
        model: Optional[str] = typer.Option(None, "--model", "-m", autocompletion=complete_model, help="Model name (qwen2-7b; `gen models`), hub id, model dir or config.json."),
        gpus: Optional[int] = typer.Option(None, "--gpus", help="Total GPUs."),
        nodes: Optional[int] = typer.Option(None, "--nodes", help="Nodes (GPUs are split evenly; default: the "
                                            "GPU type's GPUs per node, e.g. --gpus 16 on h100 = 2 nodes x 8)."),
        gpu: Optional[str] = typer.Option(None, "--gpu", autocompletion=complete_gpu, help="GPU type: h100, h20, h200, a100-80g, ... (default h100)."),
        gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        algo: str = typer.Option("grpo", "--algo", autocompletion=complete_algo, help="grpo | ppo | dapo | gspo | rloo | reinforce_plus_plus."),
        rollout: str = typer.Option("vllm", "--rollout", help="vllm | sglang."),
        launcher: str = typer.Option("auto", "--launcher", help="local | ray | slurm (default: local on one node, "
                                     "ray job submit to a running cluster on more)."),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", autocompletion=complete_release,
                                                   help=f"Target verl release (default {newest_release()})."),
        model_path: Optional[str] = typer.Option(None, "--model-path", help="Model directory or HF id in the script."),
        train_files: Optional[list[str]] = typer.Option(None, "--train-files", help="Training parquet file (repeat for several)."),
        val_files: Optional[list[str]] = typer.Option(None, "--val-files", help="Validation parquet file (repeat for several)."),
        prompt_len: int = typer.Option(1024, "--prompt-len", help="Max prompt tokens."),
        response_len: int = typer.Option(1024, "--response-len", help="Max response tokens."),
        mean_response_len: Optional[int] = typer.Option(
            None, "--mean-response-len", help="Expected response tokens for the step-time ranking (default: 15% "
                                              "of --response-len, the median of published runs)."),
        n: Optional[int] = typer.Option(None, "--n", help="Responses per prompt (default 5; PPO 1)."),
        train_batch_size: Optional[int] = typer.Option(None, "--train-batch-size", help="Prompts per step."),
        ppo_mini_batch_size: Optional[int] = typer.Option(None, "--ppo-mini-batch-size",
                                                          help="Prompts per optimizer update (default: a quarter "
                                                               "of the train batch)."),
        project_name: Optional[str] = typer.Option(None, "--project-name",
            help="trainer.project_name (default: the recipe's name)."),
        experiment_name: Optional[str] = typer.Option(None, "--experiment-name",
            help="trainer.experiment_name (default: model, algorithm and GPUs)."),
        logger: Optional[list[str]] = typer.Option(None, "--logger", help="Logger (repeat for several: console, "
                                                   "wandb, tensorboard, ...; default console)."),
        checkpoint_dir: Optional[str] = typer.Option(None, "--checkpoint-dir", help="Where checkpoints are saved "
                                                     "(trainer.default_local_dir)."),
        save_freq: Optional[int] = typer.Option(None, "--save-freq", help="Steps between checkpoints; -1 never "
                                                "(default 20)."),
        resume_mode: Optional[str] = typer.Option(None, "--resume-mode", help="auto | disable | resume_path "
                                                  "(with --resume-from)."),
        resume_from: Optional[str] = typer.Option(None, "--resume-from", help="Checkpoint folder to resume from."),
        lr: Optional[float] = typer.Option(None, "--lr", help="Actor learning rate (default 1e-6)."),
        epochs: Optional[int] = typer.Option(None, "--epochs", help="Passes over the training data (default 15)."),
        legacy: Optional[str] = typer.Option(None, "--from", help="Re-render this legacy script in the clean form."),
        output: Optional[str] = typer.Option(None, "--output", "-o", help="Output file ('-' = stdout)."),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing output file; render a recipe "
                                   "NAME our memory model predicts over its GPUs."),
        library: Optional[str] = typer.Option(None, "--library", help="User recipe folder for NAME (default: "
                                              "$VERL_GEN_LIBRARY, else ~/.config/verl-gen/recipes)."),
        chart: Optional[str] = typer.Option(None, "--chart", help="Also write the pictures of the script's layout "
                                            "on the GPUs and its memory per phase: FILE.svg or FILE.html."),
        no_calibration: bool = typer.Option(False, "--no-calibration", help=NO_CALIBRATION_HELP),
        pin_values: dict[str, Any] | None = None,
    ) -> None:
        """Write a Megatron launch script whose layout, batch sizes and memory are planned and checked."""
        from generator.render import default_filename, generate

        command = None
        try:
            if chart is not None:  # a bad name refused before any work
                from generator.report.charts import check_chart_path

                check_chart_path(chart, force=force)
            options = dict(gpus=gpus, nodes=nodes, gpu=gpu, gpu_mem=gpu_mem, algo=algo, rollout=rollout,
                           launcher=launcher, verl_version=verl_version, model_path=model_path,
                           train_files=_files(train_files), val_files=_files(val_files), prompt_len=prompt_len,
                           response_len=response_len, n=n, train_batch_size=train_batch_size,
                           project_name=project_name, experiment_name=experiment_name)
            run = _run_options(tuple(logger) if logger else None, checkpoint_dir, save_freq, resume_mode,
                               resume_from, lr, epochs, ppo_mini_batch_size)
            if legacy is not None and name is not None:
                raise InputError(f"give a recipe name ('{name}') or --from {legacy}, not both")
            from generator.layout.pins import pins_from_options

            pins = pins_from_options(**(pin_values or {}))
            from generator.layout.hardware import gpu_spec

            # The project the script is written into (its --output folder when that exists).
            into = Path(output).parent if output and output != "-" and Path(output).parent.is_dir() else Path.cwd()
            apply_stored(into, gpu_spec(gpu, gpu_mem).name, verl_version, no_calibration)
            if mean_response_len is not None and (legacy is not None or name is not None):
                raise InputError("--mean-response-len plans from --model; a recipe name or --from keeps its layout")
            if pins.given() and (legacy is not None or name is not None):
                raise InputError("layout and knob pins (--tp, --rollout-tp, --param-offload, ...) plan from --model; "
                                 "a recipe name or --from keeps its own layout")
            if legacy is not None and run:
                given = ", ".join("--" + key.replace("_", "-") for key in run)
                raise InputError(f"{given}: not used with --from (the legacy script's own values are kept)")
            if legacy is not None:
                from generator.render.legacy import spec_from_script
                from generator.render.spec import DEFAULT_VERSION

                spec = spec_from_script(legacy, version=verl_version or DEFAULT_VERSION, model=model,
                                        launcher=launcher, gpu=gpu, gpu_mem=gpu_mem).spec
                command = f"gen recipe --from {Path(legacy).name} --launcher {spec.launcher} " \
                          f"--verl-version {spec.version}"
            elif name is not None:
                spec = _from_library(name, model=model, library=library, force=force, **options, **run)
                command = " ".join(["gen recipe", name] + ([f"--gpus {gpus}"] if gpus else [])
                                   + ([f"--launcher {launcher}"] if launcher not in ("auto", "local") else []))
            else:
                if model is None or gpus is None:
                    raise InputError("give --model and --gpus (or a packaged recipe name)")
                from generator.plan.recipe_plan import planned_spec

                spec = planned_spec(model=model, **options, **run, pins=pins,
                                    mean_response_len=mean_response_len)
            target = output or default_filename(spec)
            filename = "run.sh" if target == "-" else Path(target).name
            rendered = generate(spec, filename=filename, command=command)
            picture = None
            if chart is not None:  # drawn before anything is written: both files or neither's text wrong
                from generator.report.pictures import recipe_picture

                picture = recipe_picture(chart, spec)
            if target == "-":
                problem = payload_problem(rendered.text)
                if problem is not None:  # a value copied by --from holds what a runner would obey
                    raise InputError(f"the script is not printed: its {problem}, which a terminal or a CI "
                                     "runner would obey; write it to a file with --output")
                write_payload(rendered.text)
            else:
                from generator.base.files import write_atomic

                write_atomic(target, rendered.text, replace=force, mode=0o777)
            if chart is not None and picture is not None:
                from generator.base.files import write_atomic

                write_atomic(chart, picture, replace=force)
        except InputError as err:
            _fail(str(err))
            return
        say(rendered.summary, flush=True)
        if target != "-":
            say(f"wrote {target}", flush=True)
        if chart is not None:
            say(f"wrote {chart}", flush=True)
