"""`--config-dir` on every command that judges a script against verl's config (check, fix,
explain, diff, show --resolved): one option definition, one resolution. The fixture is a fork's
config tree (tests/fixtures/projects/vendored_fork) given by path to a script that lives outside it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

PROJECTS = Path(__file__).resolve().parent / "fixtures" / "projects"
SCRIPT = PROJECTS / "vendored_fork" / "scripts" / "train_agent.sh"


@pytest.fixture(autouse=True)
def _no_installed_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("generator.schema.resolution.installed_verl", lambda: None)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(a script outside any project, the fork's config folder inside its verl package)."""
    package = tmp_path / "fork" / "verl"
    shutil.copytree(PROJECTS / "vendored_fork" / "verl", package)
    script = tmp_path / "elsewhere" / "train.sh"
    script.parent.mkdir()
    script.write_bytes(SCRIPT.read_bytes())
    return script, package / "trainer" / "config"


def _codes_and_keys(report: dict) -> set[tuple[str, str | None]]:
    return {(f["code"], f.get("key")) for f in report["findings"]}


def _run(*argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(argv))
    return result.exit_code, result.stdout, result.stderr


def test_check_fix_explain_show_and_diff_take_the_forks_config(layout: tuple[Path, Path]) -> None:
    script, config = layout
    # Without the option, the fork's keys are unknown to any packaged release.
    code, out, _ = _run("check", str(script), "--format", "json")
    unknown = {("VK601", "actor_rollout_ref.rollout.n_agent"), ("VK601", "algorithm.grpo_clip")}
    assert unknown <= _codes_and_keys(json.loads(out)["files"][0])
    code, out, _ = _run("check", str(script), "--format", "json", "--config-dir", str(config))
    with_dir = json.loads(out)["files"][0]
    assert with_dir["resolution"]["release"] == "0.4.1"  # the version file beside the folder
    assert not unknown & _codes_and_keys(with_dir)

    code, out, err = _run("fix", str(script), "--config-dir", str(config))
    assert "(verl 0.4.1)" in err and code != 2

    code, out, _ = _run("explain", str(script), "--format", "json", "--config-dir", str(config))
    call = json.loads(out)["files"][0]["calls"][0]
    assert call["verl_version"] == "0.4.1" and call["resolution"]["config_dir"] == str(config.resolve())

    code, out, _ = _run("show", str(script), "--resolved", "--format", "json", "--config-dir", str(config))
    shown = json.loads(out)["files"][0]["calls"][0]
    assert shown["verl_version"] == "0.4.1" and str(config.resolve()) in shown["config_source"]
    assert shown["config"]["actor_rollout_ref"]["rollout"]["n_agent"] == 2  # the fork's key, composed

    code, out, _ = _run("diff", str(script), str(script), "--format", "json", "--config-dir", str(config))
    assert code == 0 and str(config.resolve()) in json.loads(out)["version_from"]


@pytest.mark.parametrize("command", [["check"], ["fix"], ["explain"], ["show", "--resolved"], ["diff", "X"]])
def test_a_folder_without_a_ppo_config_is_bad_input(command: list[str], layout: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    script, _ = layout
    argv = [command[0], str(script), *(str(script) if c == "X" else c for c in command[1:])]
    code, out, err = _run(*argv, "--config-dir", str(tmp_path))
    assert code == 2
    assert "--config-dir" in err and "no ppo_trainer.yaml" in err and "Traceback" not in out + err


def test_show_without_resolved_refuses_config_dir(layout: tuple[Path, Path]) -> None:
    script, config = layout
    code, _, err = _run("show", str(script), "--config-dir", str(config))
    assert code == 2 and "--resolved" in err
