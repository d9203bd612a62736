"""The scripts `gen recipe --model M --gpus N` writes with no version flag, for every packaged model at
every GPU count where it fits: what the render tests compose with Hydra and what the oracle can ask
verl's own validation about (`trainer_call` gives the config name and the override words the trainer
receives, every knob at its default).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from generator.base.errors import InputError
from generator.render.spec import RecipeSpec

GPU_COUNTS = (1, 2, 4, 8, 16, 24, 32, 64, 96, 128, 256, 512)


@dataclass(frozen=True, slots=True)
class PlannedScript:
    ident: str  # "<model slug>-<algo>-<gpus>"
    spec: RecipeSpec


def _planned(slug: str, gpus: int, algo: str, version: str | None) -> RecipeSpec | None:
    from generator.plan.recipe_plan import planned_spec

    try:
        return planned_spec(model=slug, gpus=gpus, nodes=None, gpu=None, gpu_mem=None, algo=algo,
                            rollout="vllm", launcher="auto", verl_version=version, model_path=None,
                            train_files=None, val_files=None, prompt_len=1024, response_len=1024, n=None,
                            train_batch_size=None, project_name=None, experiment_name=None)
    except InputError:
        return None


def planned_scripts(every: int = 1, *, version: str | None = None,
                    algorithms: tuple[str, ...] | None = None) -> Iterator[PlannedScript]:
    """GRPO for every `every`-th packaged model at each count of GPU_COUNTS where it fits, and the
    other algorithms at its smallest such count. `version` None: the default (newest) release."""
    from generator.model import list_models, model_slug
    from generator.verl.constants import ALGORITHMS

    others = ALGORITHMS[1:] if algorithms is None else tuple(a for a in algorithms if a != "grpo")
    for facts in list_models()[::every]:
        slug = model_slug(facts)
        smallest = None
        for gpus in GPU_COUNTS:
            spec = _planned(slug, gpus, "grpo", version)
            if spec is None:
                continue
            smallest = smallest or gpus
            yield PlannedScript(f"{slug}-grpo-{gpus}", spec)
        if smallest is None:
            continue
        for algo in others:
            spec = _planned(slug, smallest, algo, version)
            if spec is not None:
                yield PlannedScript(f"{slug}-{algo}-{smallest}", spec)


def trainer_call(spec: RecipeSpec) -> tuple[str, list[str]]:
    """(config Hydra composes, override words) of the script `spec` renders, knobs at their
    defaults ($HOME unexpanded): the call as verl's `main_ppo` receives it."""
    from generator.render.recipe_settings import build_recipe, recipe_overrides
    from generator.render.release_form import composed_config_name

    return composed_config_name(spec.version), recipe_overrides(build_recipe(spec))
