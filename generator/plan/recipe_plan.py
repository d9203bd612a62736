"""Plan a recipe from `gen recipe`'s options: the layout and batch sizes for a model on N GPUs,
as the RecipeSpec the renderer writes."""

from __future__ import annotations

from pathlib import Path

from generator.base.errors import InputError
from generator.layout.hardware import gpu_spec
from generator.model import model_slug, resolve_model
from generator.layout.pins import NO_PINS, Pins, pins_text
from generator.plan import plan_layout
from generator.plan.batch_choice import default_n
from generator.plan.setting import nodes_for_gpus
from generator.render.spec import DEFAULT_VERSION, HydraText, RecipeSpec
from generator.verl.constants import ALGORITHMS


def planned_spec(*, model: str, gpus: int, nodes: int | None, gpu: str | None, gpu_mem: float | None, algo: str,
                 rollout: str, launcher: str, verl_version: str | None, model_path: str | None,
                 train_files: str | HydraText | None, val_files: str | HydraText | None, prompt_len: int,
                 response_len: int, n: int | None, train_batch_size: int | None, project_name: str | None,
                 experiment_name: str | None, ppo_mini_batch_size: int | None = None,
                 loggers: tuple[str, ...] = ("console",), checkpoint_dir: str | None = None, save_freq: int = 20,
                 resume_mode: str | None = None, resume_from: str | None = None, lr: float = 1e-6,
                 total_epochs: int = 15, pins: Pins = NO_PINS,
                 mean_response_len: int | None = None) -> RecipeSpec:
    """`gen recipe --model M --gpus N ...` options -> RecipeSpec, with the layout and batch sizes
    the planner chooses. InputError (one line) on bad options or when no layout fits.
    `nodes` None: as many nodes as the GPU type's GPUs per node need (nodes_for_gpus)."""
    if algo not in ALGORITHMS:
        raise InputError(f"unknown algorithm '{algo}'; choose one of {', '.join(ALGORITHMS)}")
    if gpus < 1:
        raise InputError(f"--gpus must be at least 1, got {gpus}")
    device = gpu_spec(gpu, gpu_mem)
    nodes_note = ""
    if nodes is None:
        nodes, nodes_note = nodes_for_gpus(gpus, device.name, device.gpus_per_node)
    if nodes < 1 or gpus % nodes:
        raise InputError(f"{gpus} GPUs cannot be split evenly over {nodes} node(s)")
    if n is None:
        n = default_n(algo)
    facts = resolve_model(model)
    if model_path is None:
        model_path = local_model_path(model)
    version = verl_version or DEFAULT_VERSION
    if verl_version is not None:
        from generator.verl.versions import parse

        try:
            parse(verl_version)
        except ValueError:
            raise InputError(f"not a verl version: '{verl_version}'") from None

    plan = plan_layout(facts, gpus, nodes=nodes, gpu=device, prompt_len=prompt_len, response_len=response_len,
                       n=n, algo=algo, train_batch_size=train_batch_size, ppo_mini_batch_size=ppo_mini_batch_size,
                       pins=pins, mean_response_len=mean_response_len, verl_version=version)
    best = plan.best
    if best is None:
        reasons = "; ".join(f"{layout}: {reason.removeprefix('does not fit: ')}"
                            for layout, reason in plan.rejected[:3]) or "no layout fits"
        pinned = f" with {pins_text(pins)}" if pins.given() else ""
        raise InputError(f"no Megatron layout of {facts.name} fits {gpus} x {device.name}{pinned}: {reasons}")
    train_bs = getattr(plan, "train_batch_size", None) or train_batch_size
    mini = getattr(plan, "ppo_mini_batch_size", None)
    if train_bs is None or mini is None:
        raise InputError("the planner did not choose batch sizes for this layout")
    return RecipeSpec(
        model=facts, layout=best, gpus=gpus, nodes=nodes, gpu_name=device.name, gpu_memory_gib=device.memory_gib,
        algo=algo, rollout=rollout, launcher=launcher, version=version, model_path=model_path,
        train_files=train_files, val_files=val_files, prompt_len=prompt_len, response_len=response_len,
        mean_response_len=mean_response_len, n=n,
        train_batch_size=train_bs, ppo_mini_batch_size=mini, project_name=project_name,
        experiment_name=experiment_name, model_slug=model_slug(facts), loggers=loggers,
        checkpoint_dir=checkpoint_dir, save_freq=save_freq, resume_mode=resume_mode, resume_from=resume_from,
        lr=lr, total_epochs=total_epochs, nodes_note=nodes_note,
    )


def local_model_path(model: str) -> str | None:
    """`--model ./my-model/` (a folder, or its config.json) -> the folder's absolute path, which
    the script then loads; None for a registry name or hub id (the script uses the hub id).
    Absolute, because the script may run from another folder than the one it was written in."""
    path = Path(model).expanduser()
    if path.is_file() and path.name == "config.json":
        path = path.parent
    if not (path / "config.json").is_file():
        return None
    return str(path.resolve())
