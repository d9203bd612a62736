"""`gen show FILE…`: text/json/yaml views, bad input per file, exit codes, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

runner = CliRunner()


def shell_fixture(fixtures_dir: Path, name: str) -> str:
    return str(fixtures_dir / "shell" / name)


def test_text_lists_overrides_with_lines_and_sources(fixtures_dir: Path) -> None:
    result = runner.invoke(app, ["show", shell_fixture(fixtures_dir, "loop_array.sh")], env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any("line 21: python3 -m verl.trainer.main_ppo" in ln and "(loop)" in ln for ln in lines)
    assert any(ln.split() == ["24", "actor_rollout_ref.actor.ppo_mini_batch_size=128", "[variable",
                              "$train_prompt_mini_bsz]"] for ln in lines), lines
    assert "\x1b[" not in result.output  # NO_COLOR and not a terminal: no escape codes


def test_text_marks_unknowns_and_hazards(fixtures_dir: Path) -> None:
    result = runner.invoke(app, ["show", shell_fixture(fixtures_dir, "hazards.sh")])
    assert result.exit_code == 0
    assert "<?unset:use_kl_loss>" in result.output
    assert "? $use_kl_loss is not set by the script" in result.output
    assert "! line 10 comment-in-continuation" in result.output


def test_json_shape(fixtures_dir: Path) -> None:
    result = runner.invoke(app, ["show", "--format", "json", shell_fixture(fixtures_dir, "hazards.sh"),
                                 shell_fixture(fixtures_dir, "strings_srun.sh")])
    assert result.exit_code == 0
    data = json.loads(result.output)
    first, second = data["files"]
    assert first["error"] is None
    inv = first["invocations"][0]
    assert {"line", "entry", "launcher", "config_path", "config_name", "branch", "passes_args", "overrides",
            "hazards"} <= set(inv)
    override = inv["overrides"][0]
    assert {"key", "op", "value", "line", "source", "resolved"} <= set(override)
    assert {h["kind"] for h in inv["hazards"]} >= {"duplicate-key", "comment-in-continuation"}
    assert {h["kind"] for h in first["hazards"]} >= {"backslash-space", "orphan-overrides"}
    srun = second["invocations"][0]
    assert (srun["launcher"], srun["config_name"]) == ("srun python -m", "ppo_megatron_trainer")


def test_yaml_is_the_same_data(fixtures_dir: Path) -> None:
    from ruamel.yaml import YAML

    path = shell_fixture(fixtures_dir, "array_heredoc.sh")
    as_yaml = runner.invoke(app, ["show", "--format", "yaml", path])
    as_json = runner.invoke(app, ["show", "--format", "json", path])
    assert as_yaml.exit_code == 0
    assert YAML(typ="safe", pure=True).load(as_yaml.output) == json.loads(as_json.output)


def test_env_and_arg_are_assumed(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("ENGINE=${1:-vllm}\npython3 -m verl.trainer.main_ppo a.engine=$ENGINE a.gpus=$GPUS\n")
    result = runner.invoke(app, ["show", "--format", "json", "--env", "GPUS=4", "--arg", "sglang", str(script)])
    data = json.loads(result.output)["files"][0]
    values = {o["key"]: o["value"] for o in data["invocations"][0]["overrides"]}
    assert values == {"a.engine": "sglang", "a.gpus": "4"}
    assert data["assumed_env"] == {"GPUS": "4"} and data["assumed_args"] == ["sglang"]


def test_bad_files_error_per_file_and_exit_2(tmp_path: Path, fixtures_dir: Path) -> None:
    binary = tmp_path / "binary.sh"
    binary.write_bytes(b"\0\1\2python3")
    latin = tmp_path / "latin1.sh"
    latin.write_bytes(b"X=caf\xe9\n")
    big = tmp_path / "big.sh"
    with open(big, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    broken = tmp_path / "broken.sh"
    broken.write_text("python3 -m verl.trainer.main_ppo a.b=1\nif [[ ; then ( fi\n")
    good = shell_fixture(fixtures_dir, "loop_array.sh")
    fifo = tmp_path / "pipe.sh"
    os.mkfifo(fifo)
    paths = [str(tmp_path / "missing.sh"), str(fifo), str(binary), str(latin), str(big), str(broken), good]
    result = runner.invoke(app, ["show", "--format", "json", *paths])
    assert result.exit_code == 2
    files = json.loads(result.stdout)["files"]
    errors = [f["error"] for f in files]
    assert errors[:5] == ["no such file", "is a FIFO (named pipe), not a regular file",
                          "binary file (contains NUL bytes), not a shell script", "not valid UTF-8 text (line 1)",
                          "50.0 MB is too large for a launch script (limit 1 MB)"]
    assert errors[5] is None and any(h["kind"] == "parse-error" for h in files[5]["hazards"])
    assert errors[6] is None and files[6]["invocations"]


def test_real_command_line_no_traceback(tmp_path: Path, fixtures_dir: Path) -> None:
    binary = tmp_path / "b.sh"
    binary.write_bytes(b"\0")
    broken = tmp_path / "broken.sh"
    broken.write_text("python3 -m verl.trainer.main_ppo a.b=1\nif [[ ; then ( fi\n")
    env = dict(os.environ, NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-m", "generator", "show", str(tmp_path / "nope.sh"), str(binary),
                           shell_fixture(fixtures_dir, "trailing_backslash.sh"), str(broken)],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"gen: error: {tmp_path / 'nope.sh'}: no such file",
        f"gen: error: {binary}: binary file (contains NUL bytes), not a shell script",
        f"gen: error: {broken}: bash syntax error at line 2 (the rest was read)",
    ]
    assert "trainer.nnodes=1" in proc.stdout
    assert "a.b=1" in proc.stdout  # the readable part of the broken file is still shown


@pytest.mark.parametrize("args", [["--format", "xml"], ["--env", "NOEQUALS"], ["--env", "1X=2"]])
def test_bad_options(args: list[str], fixtures_dir: Path) -> None:
    result = runner.invoke(app, ["show", *args, shell_fixture(fixtures_dir, "loop_array.sh")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_unknown_recipe_name_is_one_line() -> None:
    result = runner.invoke(app, ["show", "no-such-recipe-anywhere"])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1


def test_show_scripts_function_for_library_branch(fixtures_dir: Path) -> None:
    """The library's `gen show NAME` shares the command; show_scripts stays callable alone."""
    import io

    from generator.cli.show import show_scripts

    out = io.StringIO()
    code = show_scripts([shell_fixture(fixtures_dir, "trailing_backslash.sh")], output_format="json", stream=out)
    assert code == 0
    assert json.loads(out.getvalue())["files"][0]["invocations"][0]["entry"] == "verl.trainer.main_ppo"


def test_text_says_where_values_are_set(fixtures_dir: Path) -> None:
    result = runner.invoke(app, ["show", shell_fixture(fixtures_dir, "sourcing_main.sh"),
                                 shell_fixture(fixtures_dir, "array_heredoc.sh")])
    assert "trainer.n_gpus_per_node=8  [variable $GPUS_PER_NODE, set at sourcing_common.sh:1]" in result.output
    assert "data.train_batch_size=64  [array, set at line 12]" in result.output


def test_no_color_on_a_terminal_means_no_escape_codes(fixtures_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    out = runner.invoke(app, ["show", shell_fixture(fixtures_dir, "trailing_backslash.sh")]).stdout
    assert "trainer.nnodes=1" in out and "\x1b" not in out
    monkeypatch.delenv("NO_COLOR")
    coloured = runner.invoke(app, ["show", shell_fixture(fixtures_dir, "trailing_backslash.sh")]).stdout
    assert "\x1b[" in coloured


def test_resolved_prints_the_composed_config_of_each_call(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=96 trainer.n_gpus_per_node=8 "
                      "data.train_files=$MISSING_DIR/t.parquet\n")
    result = runner.invoke(app, ["show", str(script), "--resolved", "--verl-version", "0.7.0"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"# {script}:1: verl.trainer.main_ppo (ppo_trainer, verl 0.7.0")
    import yaml

    config = yaml.safe_load(result.stdout)
    assert config["data"]["train_batch_size"] == 96  # the script's override
    assert config["trainer"]["n_gpus_per_node"] == 8
    assert config["actor_rollout_ref"]["actor"]["ppo_epochs"] == 1  # the release's default
    assert config["data"]["train_files"].startswith("<unknown: $MISSING_DIR")
    document = json.loads(runner.invoke(app, ["show", str(script), "--resolved", "--format", "json"]).stdout)
    call = document["files"][0]["calls"][0]
    assert document["schema_version"] == 1 and call["config"]["data"]["train_batch_size"] == 96


def test_nest_keeps_a_key_that_is_also_a_prefix() -> None:
    from generator.report.show_report import nest

    assert nest({"a.b": 1, "a.c.d": 2}) == {"a": {"b": 1, "c": {"d": 2}}}
    assert nest({"a": 1, "a.b": 2}) == {"a": 1, "a.b": 2}
