"""`gen plan` and `gen recipe` take one set of pin options (generator.cli.pin_options), named as
the planner's pins (generator.layout.pins.OPTION_FIELDS) and helped alike."""

from __future__ import annotations

import dataclasses

import pytest
import typer.main

from generator.cli import app
from generator.cli.pin_options import PINS
from generator.base.errors import InputError
from generator.layout.parallelism import Offload, ParallelSizes
from generator.layout.pins import LAYOUT_FIELDS, OPTION_FIELDS, Pins, pins_from_options, pins_text


def _options(command: str) -> dict[str, tuple[tuple[str, ...], str | None]]:
    click_app = typer.main.get_command(app)
    cmd = click_app.commands[command]  # type: ignore[attr-defined]
    return {p.name: (tuple(p.opts) + tuple(p.secondary_opts), p.help) for p in cmd.params}


def test_plan_and_recipe_take_the_same_pin_options() -> None:
    plan, recipe = _options("plan"), _options("recipe")
    for name in PINS:
        assert plan[name] == recipe[name], name
    assert "pin_values" not in plan and "pin_values" not in recipe


def test_the_pin_options_are_the_planners_pins() -> None:
    assert list(PINS) == list(OPTION_FIELDS)
    assert len(PINS) == 18


def test_the_options_name_the_pins_fields_in_their_order() -> None:
    # a message lists the pins in the options' order (Pins.given), so the fields follow it
    names = [f.name for f in dataclasses.fields(Pins)]
    assert names[: len(OPTION_FIELDS)] == list(OPTION_FIELDS.values())


def test_unset_is_none_and_implied_pins_are_named_last() -> None:
    assert Pins().given() == {} and pins_from_options(tp=None, recompute=None) == Pins()
    pins = pins_from_options(tp=1, param_offload=True, cpu_optimizer_fraction=0.5, recompute=True)
    assert (pins.optimizer_offload, pins.implied) == (True, ("optimizer_offload",))
    assert pins_text(pins) == ("tp=1, param_offload=True, cpu_optimizer_fraction=0.5, recompute=True, "
                               "optimizer_offload=True")
    assert pins_from_options(token_budget=4096).use_dynamic_bsz is True
    assert pins_from_options(micro_batch_per_gpu=2).use_dynamic_bsz is False
    assert pins_from_options(micro_batch_per_gpu=2, dynamic_bsz=True).implied == ()


@pytest.mark.parametrize("options, words", [
    ({"gpu_memory_utilization": 1.0}, "--gpu-memory-utilization must be between 0 and 1, got 1.0"),
    ({"cpu_optimizer_fraction": -0.1}, "--cpu-optimizer-fraction must be between 0 and 1, got -0.1"),
    ({"tp": 0}, "--tp must be a positive whole number, got 0"),
    ({"token_budget": 4096, "dynamic_bsz": False}, "--token-budget goes with dynamic batch size"),
])
def test_a_pin_no_layout_could_take_is_one_line(options: dict[str, float], words: str) -> None:
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(".", r"\.")):
        pins_from_options(**options)


def test_the_layout_fields_are_the_parallelism_fields() -> None:
    assert set(LAYOUT_FIELDS) == set(ParallelSizes.__annotations__)
    assert Pins(tp=2, ep=8, recompute=True).layout_fields() == {"tp": 2, "ep": 8}
    assert Pins(tp=2, offload=Offload(param=True), recompute=False).knobs() == {
        "offload": Offload(param=True), "recompute": False}
