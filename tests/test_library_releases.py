"""The library across releases: verl's own 0.8 / main-2608 Megatron examples imported as
version-stamped recipes (tools/import_verl_examples.py keeps them in sync), the hand-written 0.7
recipes kept with their stamps, the planner's recipes stamped with the newest release (what
`pip install verl` gives), and `gen list --verl-version` filtering by stamp."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.library.store import load_library
from generator.verl.versions import parse

LIBRARY = load_library()
EXAMPLES = [r for r in LIBRARY.sorted() if r.name.startswith("example-")]
PLANNED = [r for r in LIBRARY.sorted() if "planned" in r.tags]
HAND_WRITTEN = [r for r in LIBRARY.sorted() if r not in EXAMPLES and r not in PLANNED]


def _list(*args: str) -> list[dict]:
    result = CliRunner().invoke(app, ["list", "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["recipes"]


def test_verl_examples_of_0_8_and_main_are_in_the_library() -> None:
    stamps = {v for r in EXAMPLES for v in r.verl_versions}
    assert len(EXAMPLES) >= 12 and {"0.8.0", "0.9.1"} <= stamps
    for recipe in EXAMPLES:
        assert "verl-example" in recipe.tags and "verl-tested" not in recipe.tags  # verl ships it; nobody measured it
        assert recipe.provenance.startswith("verl examples/") and "sha256" in recipe.provenance


def test_the_0_7_recipes_are_kept_with_their_stamps() -> None:
    assert len(HAND_WRITTEN) >= 32
    assert all(r.verl_versions and parse(r.target_version) <= parse("0.7.0") for r in HAND_WRITTEN)


def test_the_planned_recipes_target_the_newest_release() -> None:
    from generator.schema.releases import newest_release

    assert len(PLANNED) >= 60
    assert all(r.verl_versions == (newest_release(),) for r in PLANNED), \
        sorted({r.verl_versions for r in PLANNED})


@pytest.mark.parametrize("release, expect_examples, expect_planned, expect_old", [
    ("0.9.1", True, True, False), ("0.8.0", True, False, False), ("0.7.0", False, False, True),
    ("0.9", True, True, False)])
def test_gen_list_filters_by_release(release: str, expect_examples: bool, expect_planned: bool,
                                     expect_old: bool) -> None:
    rows = _list("--verl-version", release)
    names = {row["name"] for row in rows}
    assert bool(names & {r.name for r in EXAMPLES}) == expect_examples
    assert bool(names & {r.name for r in PLANNED}) == expect_planned
    assert bool(names & {r.name for r in HAND_WRITTEN}) == expect_old
    for row in rows:
        assert any(v == release or v.startswith(release + ".") for v in row["verl_versions"]), row


def test_gen_list_bad_release_is_exit_2() -> None:
    result = CliRunner().invoke(app, ["list", "--verl-version", "banana"])
    assert result.exit_code == 2 and "not a release number" in result.stderr


def test_an_example_our_memory_model_calls_over_says_so() -> None:
    from generator.library.verdict import OVER_TAG, recipe_verdict

    for recipe in EXAMPLES:
        verdict = recipe_verdict(recipe)
        assert verdict is not None and (OVER_TAG in recipe.tags) == (not verdict.fits), (recipe.name, verdict.text())


def test_an_example_recipe_renders_for_its_release() -> None:
    result = CliRunner().invoke(app, ["recipe", "example-main2608-grpo-moonlight-16b-a3b", "-o", "-"])
    assert result.exit_code == 0, result.output
    assert "for verl 0.9.1" in result.stdout and "model_engine=megatron" in result.stdout
    assert "--config-name" not in result.stdout


@pytest.mark.slow
def test_imported_examples_are_in_sync_with_the_importer() -> None:
    from tools.import_verl_examples import main

    assert main(["--check"]) == 0
