"""Argument handling shared by the commands: `--env`/`--arg` pairs and rule-code lists. One
place, so every command refuses a bad option with the same one-line message. (What the
commands accept as input is generator/inputs/policy.py.)"""

from __future__ import annotations

from typing import Any

from generator.base.errors import InputError, error_line


def say_error(message: str) -> None:
    """A failure, said as every command says one: `gen: error: MESSAGE` on stderr, one line."""
    from generator.base.safe_text import say

    say(error_line(message), flush=True)


def parse_pairs(items: list[str], option: str = "--env") -> dict[str, str]:
    """NAME=VALUE options as a dict; NAME must be a valid shell variable name."""
    pairs: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise InputError(f"{option} expects NAME=VALUE, got '{item}'")
        pairs[name] = value
    return pairs


def parse_codes(values: list[str]) -> tuple[str, ...]:
    """`--select VB1,VK601 --select VS` → ("VB1", "VK601", "VS") (ruff-style prefixes)."""
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())


# --config-dir: one definition for every command that judges a script against verl's config
# (check, fix, explain, diff, show --resolved), resolved the same way (generator.schema.resolution).
CONFIG_DIR_HELP = ("Folder of the verl config YAML the scripts run with (its ppo_trainer.yaml is the schema; "
                   "the release is --verl-version, else the version file of the verl package it sits in, "
                   "else inferred from the script's keys).")


def config_dir_option() -> Any:
    """The `--config-dir` option, as a typer default."""
    import typer

    return typer.Option(None, "--config-dir", help=CONFIG_DIR_HELP)
