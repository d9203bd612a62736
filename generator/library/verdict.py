"""A recipe's own memory verdict, and what the library may say about a recipe that is over.

The library tells the truth (issue 23): a recipe our memory model predicts not to fit its own
GPUs is not labelled `verl-tested`, and `gen recipe NAME` renders it only with --force, saying
which phase is over and by how much. A recipe tagged `known-oom` reproduces a published OOM
(its description names the report and the fix).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.errors import InputError
from generator.library.recipe_format import Recipe

TESTED_TAG = "verl-tested"
OVER_TAG = "predicted-over"  # verl ships it, our memory model says it does not fit
KNOWN_OOM_TAG = "known-oom"  # a published OOM, kept as an example with its fix


@dataclass(frozen=True, slots=True)
class RecipeVerdict:
    fits: bool
    phase: str  # the worst phase
    gib: float
    limit_gib: float

    def text(self) -> str:
        if self.fits:
            return f"fits: peak {self.gib:.1f} GiB in {self.phase} of {self.limit_gib:.1f} usable"
        return f"{self.phase} needs {self.gib:.1f} GiB > {self.limit_gib:.1f} usable (over by " \
               f"{self.gib - self.limit_gib:.1f})"


def recipe_verdict(recipe: Recipe) -> RecipeVerdict | None:
    """The worst phase on the recipe's own GPUs; None when its memory cannot be evaluated."""
    from generator.library.convert import recipe_memory

    try:
        phases, limit = recipe_memory(recipe)
    except InputError:
        return None
    if not phases:
        return None
    worst = max(phases, key=lambda p: p.gib)
    return RecipeVerdict(fits=worst.gib <= limit, phase=worst.phase, gib=worst.gib, limit_gib=limit)


def refuse_over(recipe: Recipe, *, force: bool) -> str | None:
    """InputError for a recipe predicted over its own GPUs (unless `force`); with `force`, the note
    the CLI prints instead."""
    verdict = recipe_verdict(recipe)
    if verdict is None or verdict.fits:
        return None
    why = f"recipe '{recipe.name}' is predicted not to fit {recipe.gpus} x {recipe.gpu}: {verdict.text()}"
    if KNOWN_OOM_TAG in recipe.tags and recipe.description:
        why += f"; {recipe.description}"
    if not force:
        raise InputError(why + "; `gen show " + recipe.name + "` has the terms, --force renders it anyway")
    return why + " (rendered because of --force)"
