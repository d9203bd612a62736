"""`gen calibrate --save` stores the corrections (project or user configuration) and `gen plan`,
`gen recipe`, `gen check --gpu` and `gen explain --memory` apply a stored calibration that
matches (docs/calibrate.md#storing)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from generator.cli import app

runner = CliRunner()
LOGS = FIXTURES / "logs"
PYPROJECT = '[project]\nname = "demo"  # a comment that must stay\n\n[tool.ruff]\nline-length = 99\n'


def gen(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git project holding two H20 runs' scripts and logs; the user configuration in tmp."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    for point, log in (("iseekyan-dapo32b-6", "metrics.log"), ("iseekyan-dapo14b-8", "metrics.jsonl")):
        shutil.copy(LOGS / point / "run.sh", root / f"{point}.sh")
        shutil.copy(LOGS / point / log, root / f"{point}.{log.split('.')[1]}")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(root)
    return root


def save32(*more: str) -> Any:
    return gen("calibrate", "iseekyan-dapo32b-6.log", "--script", "iseekyan-dapo32b-6.sh", "--gpu", "h20",
               "--save", *more)


def save14(*more: str) -> Any:
    return gen("calibrate", "iseekyan-dapo14b-8.jsonl", "--script", "iseekyan-dapo14b-8.sh", "--gpu", "h20",
               "--save", *more)


def test_save_into_pyproject_keeps_every_other_byte_and_runs_accumulate(project: Path) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT)
    first = save32()
    assert first.exit_code == 0, first.output
    text = (project / "pyproject.toml").read_text()
    assert text.startswith(PYPROJECT)  # the rest of the file, byte for byte
    assert "[tool.verl-gen.calibration.h20]" in text and "runs = 1" in text
    assert "calibrated on 1 run of this project" in first.output
    assert save14().exit_code == 0
    assert "runs = 2" in (project / "pyproject.toml").read_text()
    again = save32()  # the same log again replaces its run: not counted twice
    assert "calibrated on 2 runs of this project" in again.output
    assert "runs = 2" in (project / "pyproject.toml").read_text()
    assert not (project / ".verl-gen.toml").exists()


def test_save_without_pyproject_writes_verl_gen_toml_at_the_top(project: Path) -> None:
    result = save32()
    assert result.exit_code == 0, result.output
    text = (project / ".verl-gen.toml").read_text()
    assert "[calibration.h20]" in text and 'model = "Qwen2.5-32B"' in text
    # the project file it made is a valid one for every other command
    assert gen("explain", "iseekyan-dapo32b-6.sh").exit_code == 0


def test_save_user_writes_the_xdg_config_and_leaves_the_project(project: Path, tmp_path: Path) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT)
    result = save32("--user")
    assert result.exit_code == 0, result.output
    assert (project / "pyproject.toml").read_text() == PYPROJECT
    assert "[calibration.h20]" in (tmp_path / "xdg" / "verl-gen" / "config.toml").read_text()
    plan = gen("plan", "--model", "qwen2.5-32b", "--gpus", "16", "--gpu", "h20")
    assert "calibrated on 1 run in your user configuration" in plan.output


def test_user_without_save_is_bad_input(project: Path) -> None:
    result = gen("calibrate", "iseekyan-dapo32b-6.log", "--script", "iseekyan-dapo32b-6.sh", "--user")
    assert result.exit_code == 2 and "give --save too" in result.output


def test_bad_existing_toml_is_one_line_exit_2_and_nothing_written(project: Path) -> None:
    bad = '[project]\nname = "demo"\n[tool.verl-gen\n'
    (project / "pyproject.toml").write_text(bad)
    result = save32()
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("gen: error:")]
    assert len(errors) == 1 and "not valid TOML" in errors[0] and "Traceback" not in result.output
    assert (project / "pyproject.toml").read_text() == bad
    assert not [p for p in os.listdir(project) if p.endswith((".gen-tmp", ".gen-old"))]


def test_a_linked_pyproject_is_refused_and_its_target_untouched(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.toml"
    target.write_text(PYPROJECT)
    (project / "pyproject.toml").symlink_to(target)
    result = save32()
    assert result.exit_code == 2 and "link" in result.output
    assert target.read_text() == PYPROJECT


def _stored(project: Path, entry: str) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT + "\n" + entry)


H20_ENTRY = ('[tool.verl-gen.calibration.h20]\ngpu = "h20"\nrun = [\n'
             '    {log = "sha256:1", model = "Qwen2.5-32B", rollout = 2.0, log-prob = 2.0, update = 2.0, '
             'step = 2.0, memory-offset-gib = 60.0},\n'
             '    {log = "sha256:2", model = "Qwen2.5-32B", rollout = 2.2, log-prob = 2.2, update = 2.2, '
             'step = 2.2, memory-offset-gib = 60.0},\n]\n')


def _plan(*more: str) -> Any:
    return gen("plan", "--model", "qwen2.5-32b", "--gpus", "16", "--gpu", "h20", "--format", "json", *more)


def _step_seconds(output: str) -> float:
    import json

    document = json.loads(output[output.index("{"):])
    return float(document["candidates"][document["chosen"]]["score"]["total_s"])


def test_plan_applies_a_matching_calibration_and_says_so(project: Path) -> None:
    bare = _plan()
    _stored(project, H20_ENTRY)
    calibrated = _plan()
    off = _plan("--no-calibration")
    assert "calibrated on 2 runs of this project, +-7%" in calibrated.output
    assert "calibrat" not in bare.output and "calibrat" not in off.output
    assert _step_seconds(off.output) == _step_seconds(bare.output)
    assert _step_seconds(calibrated.output) > 1.5 * _step_seconds(bare.output)


def test_a_calibration_for_another_gpu_or_release_is_not_applied(project: Path) -> None:
    bare = _plan()
    _stored(project, H20_ENTRY.replace('gpu = "h20"', 'gpu = "h100"'))
    other_gpu = _plan()
    assert "calibration not applied" in other_gpu.output and "it is for h100, this is h20" in other_gpu.output
    assert _step_seconds(other_gpu.output) == _step_seconds(bare.output)
    entry = H20_ENTRY.replace('gpu = "h20"', 'gpu = "h20"\nverl = "0.4.1"')
    (project / "pyproject.toml").write_text(PYPROJECT.replace("[tool.ruff]", '[tool.verl-gen]\nverl-version = '
                                                              '"0.5.0"\n\n[tool.ruff]') + "\n" + entry)
    other_release = _plan()
    assert "it is for verl 0.4.1, this is verl 0.5.0" in other_release.output
    assert _step_seconds(other_release.output) == _step_seconds(bare.output)


def test_recipe_applies_it(project: Path) -> None:
    args = ("recipe", "--model", "qwen2.5-32b", "--gpus", "16", "--gpu", "h20", "-o", "-")
    bare = gen(*args)
    _stored(project, H20_ENTRY)
    calibrated = gen(*args)
    off = gen(*args, "--no-calibration")
    assert "info: calibrated on 2 runs of this project" in calibrated.output
    assert off.output == bare.output
    # the memory offset is in the summary's per-phase memory
    assert calibrated.output != bare.output and "memory update" in calibrated.output


def test_check_gpu_applies_the_memory_offset(project: Path) -> None:
    bare = gen("check", "--gpu", "h20", "iseekyan-dapo32b-6.sh")
    _stored(project, H20_ENTRY)
    calibrated = gen("check", "--gpu", "h20", "iseekyan-dapo32b-6.sh")
    off = gen("check", "--gpu", "h20", "--no-calibration", "iseekyan-dapo32b-6.sh")
    assert "VM811" not in bare.output and "VM811" not in off.output
    assert "VM811" in calibrated.output  # 60 GiB more in training: the predicted OOM
    assert "calibrated on 2 runs of this project" in calibrated.output


def test_explain_memory_shows_the_calibration_term(project: Path) -> None:
    bare = gen("explain", "--memory", "--gpu", "h20", "iseekyan-dapo32b-6.sh")
    _stored(project, H20_ENTRY)
    calibrated = gen("explain", "--memory", "--gpu", "h20", "iseekyan-dapo32b-6.sh")
    off = gen("explain", "--memory", "--gpu", "h20", "--no-calibration", "iseekyan-dapo32b-6.sh")
    assert "calibration 60.0" in calibrated.output and "calibration 60.0" not in bare.output
    assert off.output == bare.output
    # without --memory nothing is read or said
    assert "calibrat" not in gen("explain", "iseekyan-dapo32b-6.sh").output


def test_a_broken_stored_entry_is_not_applied_and_one_line_says_why(project: Path) -> None:
    bare = _plan()
    _stored(project, '[tool.verl-gen.calibration.h20]\ngpu = "h20"\nrun = [{log = "x", rollout = "fast"}]\n')
    result = _plan()
    assert result.exit_code == bare.exit_code
    lines = [line for line in result.output.splitlines() if "calibration" in line]
    assert len(lines) == 1 and "not applied" in lines[0] and "rollout must be a number" in lines[0]
    assert _step_seconds(result.output) == _step_seconds(bare.output)


def test_saved_then_planned_round_trip_uses_the_measured_length(project: Path) -> None:
    assert save32().exit_code == 0
    plan = gen("plan", "--model", "qwen2.5-32b", "--gpus", "16", "--gpu", "h20", "--response-len", "20480")
    assert "as this cluster's runs measured" in plan.output  # the response share of Qwen2.5-32B


def test_runs_of_another_model_transfer_only_what_they_agree_on(project: Path) -> None:
    def plan7b() -> Any:
        return gen("plan", "--model", "qwen2.5-7b", "--gpus", "8", "--gpu", "h20", "--format", "json")

    bare = plan7b()
    one_run = H20_ENTRY.split("    {log = \"sha256:2\"")[0] + "]\n"
    _stored(project, one_run)
    from_one = plan7b()
    assert "runs of Qwen2.5-32B" in from_one.output
    assert _step_seconds(from_one.output) == _step_seconds(bare.output)  # one run of a 32B says nothing of a 7B
    _stored(project, H20_ENTRY)  # two runs of one model that agree (x2.0, x2.2): still that model's
    assert _step_seconds(plan7b().output) == _step_seconds(bare.output)
    two_models = H20_ENTRY.replace('{log = "sha256:2", model = "Qwen2.5-32B"', '{log = "sha256:2", model = "Qwen3-14B"')
    _stored(project, two_models)  # runs of two models that agree: a fact of the cluster
    assert _step_seconds(plan7b().output) > 1.5 * _step_seconds(bare.output)


def test_the_key_names_the_vllm_release_the_log_prints(project: Path) -> None:
    from generator.calibrate.logs import stack_versions

    assert stack_versions("INFO 05-01 llm_engine.py:237] Initializing a V1 LLM engine (v0.8.5.post1) with config") \
        == {"vllm": "0.8.5.post1"}
    assert stack_versions("Initializing an LLM engine (v0.6.3) with config: model=") == {"vllm": "0.6.3"}
    assert stack_versions("step:1 - timing_s/gen:1.0") == {}
    log = project / "iseekyan-dapo32b-6.log"
    log.write_text("(WorkerDict pid=1) INFO Initializing an LLM engine (v0.6.3) with config: x\n" + log.read_text())
    assert save32().exit_code == 0
    text = (project / ".verl-gen.toml").read_text()
    assert '[calibration."h20-vllm-0.6.3"]' in text and 'vllm = "0.6.3"' in text


@pytest.mark.parametrize(("value", "says"), [("1e308", "must be between"), ("-1e308", "must be between"),
                                             ("2.0e4", "must be between")])
def test_a_stored_value_past_any_run_is_not_applied_and_one_line_says_why(project: Path, value: str,
                                                                           says: str) -> None:
    """Issue 35's red-team round: two runs of 1e308 made the fit's mean overflow (a traceback)."""
    bare = _plan()
    runs = ", ".join(f'{{log = "sha256:{i}", model = "Qwen2.5-32B", rollout = {value}, memory-offset-gib = {value}, '
                     f'response-share = {value}}}' for i in range(2))
    _stored(project, f'[tool.verl-gen.calibration.h20]\ngpu = "h20"\nrun = [{runs}]\n')
    result = _plan()
    assert result.exit_code == bare.exit_code and result.exception is None
    lines = [line for line in result.output.splitlines() if "calibration" in line]
    assert len(lines) == 1 and "not applied" in lines[0] and says in lines[0]


def test_a_stored_calibration_is_read_without_tomlkit(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading is tomllib's (a 1 MB project file of stored runs took tomlkit 5 s on every plan);
    tomlkit stays the writer, which must keep every other byte."""
    import tomlkit

    _stored(project, H20_ENTRY)
    monkeypatch.setattr(tomlkit, "parse", lambda *_a, **_k: pytest.fail("tomlkit parsed a file only read"))
    result = _plan()
    assert result.exit_code == 0 and "calibrated on" in result.output
