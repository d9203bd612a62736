"""Help and width (issue 22): every option of every command says what it does, `--help` reads at
80 columns with every option name whole, and a piped table keeps to 100 columns unless --wide."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from generator.cli import app

COMMAND = typer.main.get_command(app)
COMMANDS = sorted(COMMAND.commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_help(name: str) -> None:
    sub = COMMAND.commands[name]  # type: ignore[attr-defined]
    missing = [param.opts for param in sub.params if not getattr(param, "help", None)]
    assert not missing, f"gen {name}: options without help: {missing}"


@pytest.mark.parametrize("name", COMMANDS)
def test_help_at_80_columns_keeps_every_option_name_whole(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    words = set(result.output.replace(",", " ").replace("/", " ").split())
    sub = COMMAND.commands[name]  # type: ignore[attr-defined]
    for param in sub.params:
        for flag in [*param.opts, *param.secondary_opts]:
            if flag.startswith("-"):
                assert flag in words, f"gen {name} --help at 80 columns: {flag} is cut or missing"


def test_gen_help_at_80_columns() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert max(len(line) for line in result.output.splitlines()) <= 80
    for name in COMMANDS:
        assert name in result.output


def test_a_piped_list_keeps_to_100_columns_unless_wide() -> None:
    narrow = CliRunner().invoke(app, ["list"])
    assert narrow.exit_code == 0
    assert max(len(line) for line in narrow.output.splitlines()) <= 100
    wide = CliRunner().invoke(app, ["list", "--wide"])
    assert max(len(line) for line in wide.output.splitlines()) > 100  # the library's tags are long
    assert narrow.output.splitlines()[0].split()[0] == "NAME"
    names = [line.split()[0] for line in narrow.output.splitlines()[1:]]
    assert names == [line.split()[0] for line in wide.output.splitlines()[1:]]  # no row is lost
