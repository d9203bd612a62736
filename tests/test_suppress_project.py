"""Inline suppression (`# verl-gen: ignore[...]`) and the project configuration's select/ignore/
env/args in the commands (issue 14). Each test writes its own script and project file."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app
from generator.reading.suppression_comments import find_suppressions

# trainer.use_legacy_worker_impl exists up to 0.7.1 only, so the guessed release (the newest with
# every key) keeps the legacy workers, whose floored per-rank mini batch VB104 reports.
CALL = ("python3 -m verl.trainer.main_ppo data.train_batch_size=${BS:-8} trainer.use_legacy_worker_impl=auto "
        "actor_rollout_ref.actor.ppo_mini_batch_size=4 trainer.n_gpus_per_node=8\n")


def codes(path: Path, *options: str) -> set[str]:
    result = CliRunner().invoke(app, ["check", str(path), "--format", "json", *options])
    document = json.loads(result.stdout)
    assert document["files"][0]["error"] is None, document
    return {f["code"] for f in document["files"][0]["findings"]}


def test_directives_are_found_per_command_and_per_file():
    text = ("#!/bin/bash\n# verl-gen: ignore[VX9]\n\nset -x\n# why we keep it\n# verl-gen: ignore[vb104, VB2]\n"
            "python3 -m x\n# verl-gen: ignore[VB1]\n\necho later\n")
    found = find_suppressions(text)
    assert found.file_codes == ("VX9",)
    assert found.by_line == {7: ("VB104", "VB2")}  # the one after a blank line is not "directly above"
    assert found.silences("VX901", None) and found.silences("VB201", 7) and not found.silences("VB201", 8)


def test_a_comment_above_the_call_silences_its_codes(tmp_path):
    plain = tmp_path / "plain.sh"
    plain.write_text(CALL)
    before = codes(plain)
    assert "VB104" in before
    quiet = tmp_path / "quiet.sh"
    quiet.write_text("set -x\n# verl-gen: ignore[VB104]\n" + CALL)
    assert codes(quiet) == before - {"VB104"}


def test_a_header_comment_silences_for_the_file(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("#!/bin/bash\n# verl-gen: ignore[VB]\n\nset -x\n" + CALL)
    assert not any(code.startswith("VB") for code in codes(path))


def test_project_ignore_select_and_env(tmp_path):
    (tmp_path / ".verl-gen.toml").write_text('ignore = ["VB104"]\n[env]\nBS = "16"\n')
    path = tmp_path / "run.sh"
    path.write_text(CALL)
    found = codes(path)
    assert "VB104" not in found
    assert "VB104" in codes(path, "--ignore", "VX")  # the command line wins over the project
    explained = CliRunner().invoke(app, ["explain", str(path)]).stdout
    assert "16" in explained.split("responses/step G", 1)[1].splitlines()[0]  # BS=16 from the project env


def test_project_select(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.verl-gen]\nselect = ["VB104"]\n')
    path = tmp_path / "run.sh"
    path.write_text(CALL)
    assert codes(path) == {"VB104"}


def test_unknown_code_in_the_project_is_bad_input(tmp_path):
    (tmp_path / ".verl-gen.toml").write_text('ignore = ["VB1O6"]\n')
    path = tmp_path / "run.sh"
    path.write_text(CALL)
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2 and "unknown rule code 'VB1O6'" in result.output


def test_fix_leaves_a_file_level_suppressed_code_alone(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("# verl-gen: ignore[VB104]\n" + CALL)
    result = CliRunner().invoke(app, ["fix", str(path), "--unsafe"])
    assert "fix VB104" not in result.output and "ppo_mini_batch_size=8" not in result.output
    assert "would fix VX901" in result.output  # other codes are still fixed


def test_fix_leaves_a_command_level_suppressed_code_alone(tmp_path):
    # Two identical calls; the comment above the first silences VB104 there only (issue 12).
    path = tmp_path / "run.sh"
    path.write_text("set -x\n# verl-gen: ignore[VB104]\n" + CALL + "\n" + CALL)
    result = CliRunner().invoke(app, ["fix", str(path), "--unsafe"])
    fixed = [line for line in result.output.splitlines() if "fix VB104" in line]
    assert fixed == [f"{path}:5: would fix VB104: " + fixed[0].split(": would fix VB104: ", 1)[1]], result.output
    written = CliRunner().invoke(app, ["fix", str(path), "--unsafe", "--write"])
    assert written.exit_code == 1, written.output  # the micro-batch errors (no fix) remain in both calls
    first, second = [line for line in path.read_text().splitlines() if line.startswith("python3")]
    assert "ppo_mini_batch_size=4" in first and "ppo_mini_batch_size=4" not in second
    assert "VB104" not in codes(path)  # gen check now shows no VB104 either: nothing left that fix hid
