"""Shell completion of option values for both entry points, `gen` and `verl-gen` (issue 36: only
subcommands and flags completed). Asked as the shell asks: the `_GEN_COMPLETE` /
`_VERL_GEN_COMPLETE` variable with COMP_WORDS and COMP_CWORD, the bash script
`gen --show-completion` installs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from generator.cli import completion

BIN = Path(sys.executable).parent


def _complete(program: str, words: list[str]) -> list[str]:
    variable = f"_{program.replace('-', '_').upper()}_COMPLETE"
    env = {**os.environ, variable: "complete_bash", "COMP_WORDS": " ".join([program, *words]),
           "COMP_CWORD": str(len(words))}
    done = subprocess.run([str(BIN / program)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


CASES = [
    (["recipe", "--model", "qwen2-7"], ["qwen2-7b"]),
    (["plan", "--algo", "gr"], ["grpo"]),
    (["recipe", "--gpu", "h2"], ["h20", "h200"]),
    (["check", "--gpu", "a100"], ["a100-80g", "a100-40g"]),  # gen check's options are a table (check_run)
    (["migrate", "run.sh", "--to", "0.9"], ["0.9.1", "0.9.0"]),
    (["rule", "VB10"], [f"VB10{i}" for i in range(1, 10)]),
    (["show", "verl-deepseek-v3-grpo-12"], ["verl-deepseek-v3-grpo-128xh20"]),
    (["recipe", "verl-deepseek-v3-grpo-12"], ["verl-deepseek-v3-grpo-128xh20"]),
    (["doc", "step-"], ["step-time-model"]),
]


@pytest.mark.parametrize("program", ["gen", "verl-gen"])
@pytest.mark.parametrize(("words", "expected"), CASES, ids=[" ".join(words) for words, _ in CASES])
def test_option_values_complete_for_both_entry_points(program: str, words: list[str], expected: list[str]) -> None:
    assert _complete(program, words) == expected


def test_a_value_no_list_holds_completes_to_nothing_so_the_shell_offers_files() -> None:
    assert _complete("gen", ["show", "./scripts/ru"]) == []


def test_every_completed_value_is_one_the_command_accepts() -> None:
    from generator.layout.hardware import gpu_spec
    from generator.model.registry import registry_model
    from generator.render.spec import ALGORITHMS
    from generator.judging import load_rules
    from generator.schema.releases import packaged_releases

    assert all(registry_model(name) is not None for name in completion.model_names())
    assert all(gpu_spec(name).name for name in completion.gpu_names())
    assert completion.algorithms() == list(ALGORITHMS)
    assert completion.releases()[0] == packaged_releases()[-1]  # the default release first
    assert set(completion.rule_codes()) == set(load_rules())


def test_the_default_release_in_help_is_the_newest_packaged_one() -> None:
    """One home for the default: `gen recipe --help` said 0.7.0 while recipes targeted 0.9.1."""
    from generator.render.spec import DEFAULT_VERSION

    done = subprocess.run([str(BIN / "gen"), "recipe", "--help"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})
    assert f"Target verl release (default {DEFAULT_VERSION})." in done.stdout
