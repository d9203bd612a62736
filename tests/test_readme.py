"""The README shows what `gen recipe --model qwen2-7b --gpus 8` really writes."""

from __future__ import annotations

import re

from conftest import REPO


def test_readme_shows_the_golden_recipe_output() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- golden:begin -->\n```bash\n(.*?)```\n<!-- golden:end -->", readme, re.S)
    assert shown is not None, "README lost its recipe output block"
    golden = (REPO / "tests" / "golden" / "run_qwen2-7b_grpo_megatron.sh").read_text(encoding="utf-8")
    assert shown.group(1) == golden


def test_readme_main_command_is_the_recipe_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pip install . && gen recipe --model qwen2-7b --gpus 8" in readme
    assert "pip install -e '.[test]' && python -m pytest -q -n auto" in readme


def test_readme_is_a_front_door_of_at_most_10_kib() -> None:
    """The README is the front door (issue 35: it had grown to 48 KB of lab notes): pitch, install,
    the main commands with their output, exit codes, links. Reference text belongs in docs/."""
    size = len((REPO / "README.md").read_bytes())
    assert size <= 10 * 1024, f"README.md is {size} bytes: move reference text to docs/ and link it"
