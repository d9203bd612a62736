"""The recipe library: packaged and user recipes (YAML), search, and conversion to the
renderer's spec and to an effective Config. See recipe.py for the file format."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from generator.base.errors import InputError
from generator.library.recipe_format import Recipe, recipe_from_mapping, recipe_to_mapping
from generator.library.store import Library, load_library, read_recipe, user_library_dir

if TYPE_CHECKING:
    from generator.render.spec import RecipeSpec

# `gen recipe NAME` options that only make sense when planning from --model.
_PLANNING_ONLY = ("model", "n", "train_batch_size", "gpu_mem")


def spec_for_cli(name: str, *, library: str | None = None, gpus: int | None = None, nodes: int | None = None,
                 gpu: str | None = None, verl_version: str | None = None, force: bool = False,
                 **options: Any) -> tuple[RecipeSpec, list[str]]:
    """`gen recipe NAME [--gpus N] ...` -> (a RecipeSpec, notes). With another GPU count the layout
    is re-planned and the notes say what changed. A recipe predicted over its own GPUs is refused
    unless `force` (generator.library.verdict)."""
    from generator.library.convert import to_spec
    from generator.library.verdict import refuse_over

    recipe = load_library(library).get(name)
    if gpu is not None and recipe.gpu_assumed:
        recipe = on_gpu(recipe, gpu)
    over_note = refuse_over(recipe, force=force) if gpus in (None, recipe.gpus) else None
    for option in _PLANNING_ONLY:
        if options.get(option) is not None:
            raise InputError(f"--{option.replace('_', '-')} is not used with a recipe name ('{name}'); "
                             "edit the recipe (or gen import a script) to change it")
    if gpu is not None and gpu != recipe.gpu:
        raise InputError(f"recipe '{name}' is for {recipe.gpu} (a run recorded it); --gpu {gpu} is not used "
                         "with a recipe name")
    if nodes == 1:
        nodes = None  # the CLI's default, not a request: nodes follow from --gpus and the GPU type
    passthrough = {key: options[key] for key in ("launcher", "model_path", "train_files", "val_files",
                                                   "project_name", "experiment_name", "loggers", "checkpoint_dir",
                                                   "save_freq", "resume_mode", "resume_from", "lr", "total_epochs")
                   if options.get(key) is not None}
    if options.get("ppo_mini_batch_size") is not None:
        raise InputError(f"--ppo-mini-batch-size is not used with a recipe name ('{name}' sets "
                         f"{recipe.config.ppo_mini_batch_size}); edit the recipe to change it")
    for key, default in (("rollout", "vllm"), ("algo", "grpo"), ("prompt_len", 1024), ("response_len", 1024)):
        value = options.get(key)
        recipe_value = {"rollout": recipe.config.rollout_name, "algo": recipe.algorithm,
                        "prompt_len": recipe.config.prompt_len, "response_len": recipe.config.response_len}[key]
        if value is not None and value != default and value != recipe_value:
            raise InputError(f"--{key.replace('_', '-')} {value} is not used with a recipe name ('{name}' sets "
                             f"{recipe_value})")
    result = to_spec(recipe, gpus, version=verl_version, nodes=nodes if gpus is not None else None, **passthrough)
    return result.spec, list(result.notes) + ([over_note] if over_note else [])


def on_gpu(recipe: Recipe, gpu: str) -> Recipe:
    """A recipe whose GPU was only assumed, judged on the GPU the user names."""
    from dataclasses import replace

    from generator.layout.hardware import gpu_spec

    return replace(recipe, gpu=gpu_spec(gpu).name, gpu_assumed=False)


__all__ = ["Library", "Recipe", "load_library", "read_recipe", "recipe_from_mapping", "recipe_to_mapping",
           "recipe_spec", "user_library_dir"]
