"""A recipe's own memory verdict, and what the library may say about a recipe that is over.

The library tells the truth (issue 23): a recipe our memory model predicts not to fit its own
GPUs is not labelled `verl-tested`, and `gen recipe NAME` renders it only with --force, saying
which phase is over and by how much. A recipe tagged `known-oom` reproduces a published OOM
(its description names the report and the fix).

Evidence or silence (issue 32): a verdict refuses only when it rests on evidence.
- A recipe whose GPU no run recorded (`gpu_assumed`: verl's launch scripts do not name the GPU)
  is judged on an assumed GPU; over there is a note that says what would settle it (`--gpu`),
  never a refusal. `gen recipe NAME --gpu TYPE` judges it on the user's GPU, and refuses.
- verl's own packaged recipes (its examples and published layouts) are practice: over by less
  than the memory model's measured error band is a tie, and a tie goes to practice; one the
  calibration set records as fitting (a known miss of the model, data/memory_calibration.yaml
  `recipe`) renders with a note that names the miss.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.base.errors import InputError
from generator.library.recipe_format import Recipe
from generator.plan.error_band import MEMORY_ERROR_BAND

TESTED_TAG = "verl-tested"
OVER_TAG = "predicted-over"  # verl ships it, our memory model says it does not fit
KNOWN_OOM_TAG = "known-oom"  # a published OOM, kept as an example with its fix
# verl's own configurations as the packaged library names them: imported examples (`example-`,
# tools/import_verl_examples.py) and its published layouts (`verl-`, written from verl's scripts)
PRACTICE_PREFIXES = ("example-", "verl-")


@dataclass(frozen=True, slots=True)
class RecipeVerdict:
    fits: bool
    phase: str  # the worst phase
    gib: float
    limit_gib: float

    @property
    def over_share(self) -> float:
        """How far over the usable memory, as a share of it (negative: spare)."""
        return (self.gib - self.limit_gib) / self.limit_gib

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


def is_practice(recipe: Recipe) -> bool:
    """verl's own configuration, as packaged (a user's copy under the same name is the user's)."""
    return recipe.origin == "packaged" and recipe.name.startswith(PRACTICE_PREFIXES) \
        and KNOWN_OOM_TAG not in recipe.tags


def unsettled_note(recipe: Recipe, verdict: RecipeVerdict) -> str | None:
    """The note for a recipe predicted over where the prediction is not evidence enough to refuse
    it (the GPU is assumed, or verl's practice is over by less than the error band); None when the
    verdict stands."""
    if verdict.fits:
        return None
    over = f"recipe '{recipe.name}' is predicted over on {recipe.gpus} x {recipe.gpu}: {verdict.text()}"
    if recipe.gpu_assumed:
        return f"{over}; no run recorded its GPU ({recipe.gpu} assumed): pass --gpu TYPE to judge it on yours"
    if not is_practice(recipe):
        return None
    if verdict.over_share <= MEMORY_ERROR_BAND:
        return (f"{over}; inside the memory model's error band ({MEMORY_ERROR_BAND:.0%}) of a configuration "
                "verl ships, a tie that goes to verl's practice")
    from generator.plan.known_outcomes import recorded_point

    point = recorded_point(recipe.name)
    if point is not None and point["expect"] == "fits":
        return (f"{over}; verl documents this configuration as one to run ({point['source']}): a known miss of "
                f"our memory model (memory_calibration.yaml {point['id']}), and practice outranks the model")
    return None


def refuse_over(recipe: Recipe, *, force: bool) -> str | None:
    """InputError for a recipe predicted over its own GPUs (unless `force`); with `force`, the note
    the CLI prints instead. A verdict that rests on an assumed GPU, or is a tie with verl's
    practice, is a note (`unsettled_note`), never a refusal."""
    verdict = recipe_verdict(recipe)
    if verdict is None or verdict.fits:
        return None
    unsettled = unsettled_note(recipe, verdict)
    if unsettled is not None:
        return unsettled
    why = f"recipe '{recipe.name}' is predicted not to fit {recipe.gpus} x {recipe.gpu}: {verdict.text()}"
    if KNOWN_OOM_TAG in recipe.tags and recipe.description:
        why += f"; {recipe.description}"
    if not force:
        raise InputError(why + "; `gen show " + recipe.name + "` has the terms, --force renders it anyway")
    return why + " (rendered because of --force)"
