"""verl's own example recipes in the library (imported `example-*`, and the `verl-*` recipes written
from verl's scripts) render without --force (issue 32: evidence or silence).

`gen recipe NAME` refuses a recipe only when the verdict rests on evidence: a verdict on a GPU no
run recorded is a note that says how to settle it (--gpu), a verl configuration over by less than
the memory error band is a tie that goes to practice, and one the calibration set records as
fitting is a known miss of our model, not a reason to refuse. Reported OOMs (`known-oom`) and
recipes on a GPU the user names are still refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from generator.base.errors import InputError
from generator.library import spec_for_cli
from generator.library.recipe_format import recipe_from_mapping, recipe_to_mapping
from generator.library.store import load_library
from generator.library.verdict import KNOWN_OOM_TAG, recipe_verdict, refuse_over

LIBRARY = load_library()
RECIPES = {name: r for name, r in LIBRARY.recipes.items() if name.startswith(("example-", "verl-"))}
OVER = sorted(name for name, r in RECIPES.items()
              if (v := recipe_verdict(r)) is not None and not v.fits and KNOWN_OOM_TAG not in r.tags)


def test_the_examples_are_there():
    assert len(RECIPES) >= 40
    assert len(OVER) >= 10  # the notes below are exercised on real recipes, not on none


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_verl_example_renders_without_force(name):
    recipe = RECIPES[name]
    if KNOWN_OOM_TAG in recipe.tags:  # a reported OOM, not a run: refused (tests/test_library.py)
        with pytest.raises(InputError):
            refuse_over(recipe, force=False)
        return
    note = refuse_over(recipe, force=False)
    if name in OVER:
        assert note is not None and "predicted over" in note, name
    else:
        assert note is None


@pytest.mark.parametrize("name", [n for n in OVER if RECIPES[n].gpu_assumed])
def test_an_assumed_gpu_is_a_note_that_says_how_to_settle_it(name):
    note = refuse_over(RECIPES[name], force=False)
    assert note is not None and "no run recorded its GPU (h100 assumed)" in note and "--gpu" in note
    # the same recipe on a GPU a run recorded (or a user names) is refused: the refusal is not weakened
    recorded = replace(RECIPES[name], gpu_assumed=False, origin="user")
    with pytest.raises(InputError, match="predicted not to fit"):
        refuse_over(recorded, force=False)


def test_gen_recipe_with_gpu_judges_an_assumed_gpu_on_the_users_one():
    name = "example-0.8.0-grpo-qwen3-8b"  # predicted over on the assumed 80 GB
    assert RECIPES[name].gpu_assumed and not recipe_verdict(RECIPES[name]).fits
    _spec, notes = spec_for_cli(name)
    assert any("pass --gpu TYPE" in n for n in notes)
    with pytest.raises(InputError, match="predicted not to fit 8 x h100"):
        spec_for_cli(name, gpu="h100")
    _spec, notes = spec_for_cli(name, gpu="h200")  # 141 GB: it fits, no note
    assert not any("predicted" in n for n in notes)


def test_a_recorded_gpu_cannot_be_swapped_on_the_command_line():
    with pytest.raises(InputError, match="a run recorded it"):
        spec_for_cli("verl-qwen3-235b-a22b-grpo-32xh20", gpu="h100")


def test_a_tie_inside_the_error_band_goes_to_practice_only_for_verls_own_recipes():
    recipe = RECIPES["verl-qwen3-235b-a22b-grpo-32xh20"]  # 96.8 of 95.6 GiB: over by 1.3 %
    verdict = recipe_verdict(recipe)
    assert verdict is not None and 0 < verdict.over_share <= 0.04
    assert "a tie that goes to verl's practice" in (refuse_over(recipe, force=False) or "")
    with pytest.raises(InputError):  # the same configuration as a user's recipe is refused
        refuse_over(replace(recipe, name="my-235b", origin="user"), force=False)


def test_a_known_miss_of_the_model_names_the_calibration_point():
    note = refuse_over(RECIPES["verl-qwen3-235b-a22b-grpo-64xh20"], force=False)
    assert note is not None and "memory_calibration.yaml dpsk-g14-64" in note and "docs/perf/dpsk.md" in note


def test_a_recipe_that_names_no_gpu_is_on_an_assumed_one_and_round_trips():
    mapping = recipe_to_mapping(RECIPES["example-0.8.0-grpo-qwen3-8b"])
    assert mapping["gpu_assumed"] is True
    assert recipe_from_mapping(mapping, where="x").gpu_assumed
    del mapping["gpu"], mapping["gpu_assumed"]
    assert recipe_from_mapping(mapping, where="x").gpu_assumed  # no GPU named: h100 by assumption
    mapping["gpu"] = "h20"
    assert not recipe_from_mapping(mapping, where="x").gpu_assumed
    assert "gpu_assumed" not in recipe_to_mapping(recipe_from_mapping(mapping, where="x"))
