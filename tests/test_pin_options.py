"""`gen plan` and `gen recipe` take one set of pin options (generator.cli.pin_options), named as
the planner's pins (generator.plan.recipe_plan.PIN_OPTIONS) and helped alike."""

from __future__ import annotations

import typer.main

from generator.cli import app
from generator.cli.pin_options import PINS
from generator.plan.recipe_plan import PIN_OPTIONS


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
    assert list(PINS) == list(PIN_OPTIONS)
    assert len(PINS) == 18
