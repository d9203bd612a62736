"""The README shows what `gen recipe --model qwen2-7b --gpus 8` really writes."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_readme_shows_the_file_the_recipe_command_writes(tmp_path) -> None:
    """The block titled run_qwen2-7b_grpo_megatron.sh is that file, as `gen recipe --model qwen2-7b
    --gpus 8` writes it (the golden is the same script printed with -o -, which names itself run.sh)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- golden:begin -->\n```bash\n(.*?)```\n<!-- golden:end -->", readme, re.S)
    assert shown is not None, "README lost its recipe output block"
    gen = Path(sys.executable).parent / "gen"
    done = subprocess.run([str(gen), "recipe", "--model", "qwen2-7b", "--gpus", "8"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "run_qwen2-7b_grpo_megatron.sh").read_text(encoding="utf-8")
    assert shown.group(1) == written
    golden = (REPO / "tests" / "golden" / "run_qwen2-7b_grpo_megatron.sh").read_text(encoding="utf-8")
    assert written == golden.replace("bash run.sh`", "bash run_qwen2-7b_grpo_megatron.sh`")


def test_readme_main_command_is_the_recipe_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pip install . && gen recipe --model qwen2-7b --gpus 8" in readme
    assert "pip install -e '.[test]' && python -m pytest -q -n auto" in readme


def test_readme_is_a_front_door_of_at_most_10_kib() -> None:
    """The README is the front door (issue 35: it had grown to 48 KB of lab notes): pitch, install,
    the main commands with their output, exit codes, links. Reference text belongs in docs/."""
    size = len((REPO / "README.md").read_bytes())
    assert size <= 10 * 1024, f"README.md is {size} bytes: move reference text to docs/ and link it"


def _console_blocks(readme: str) -> list[tuple[str, str]]:
    """(command, output) of each ```console block: its `$ gen ...` line and the lines after it."""
    blocks = re.findall(r"```console\n\$ (gen [^\n]*)\n(.*?)```", readme, re.S)
    return [(command, output) for command, output in blocks]


def test_every_console_block_is_what_the_command_prints_run_as_written(tmp_path):
    """A new user runs the README's commands: `gen recipe` anywhere, `gen check run.sh` and `gen fix
    run.sh` in examples/ (the README says so). Each prints what the README shows (issue 36: the
    check and fix outputs came from a run.sh no one had)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = _console_blocks(readme)
    assert [command for command, _ in blocks] == ["gen recipe --model qwen2-7b --gpus 8", "gen check run.sh",
                                                  "gen fix run.sh"]
    gen = Path(sys.executable).parent / "gen"
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    for command, shown in blocks:
        where = tmp_path if command.startswith("gen recipe") else REPO / "examples"
        done = subprocess.run([str(gen), *shlex.split(command)[1:]], cwd=where, env=env, text=True,
                              capture_output=True, timeout=120)
        # `gen recipe` says all on stderr (the README: "the summary on stderr"); check and fix
        # report on stdout, and fix's one-line tally on stderr is not shown.
        printed = done.stderr + done.stdout if command.startswith("gen recipe") else done.stdout
        # The README elides the resolution details of the "checked against" line as "(…)".
        printed = re.sub(r"^(checked against verl [\d.]+) \(.*\)$", r"\1 (…)", printed, flags=re.M)
        assert printed == shown, command
    assert (REPO / "examples" / "run.sh").read_text(encoding="utf-8").count("MICRO=${MICRO:-24}") == 1  # fix: no --write
