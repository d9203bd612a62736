"""A project's own copy of verl's entry, read (ast, never run) before its words are judged as Hydra's
(issue 34: a fork's `main_ppo` that takes a positional YAML with argparse)."""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app

runner = CliRunner()

ARGPARSE_MAIN = '''"""
import hydra

@hydra.main(config_path='config', config_name='ppo_trainer', version_base=None)
def main(config):
    run_ppo(config)
"""


def main():
    import argparse
    from omegaconf import OmegaConf

    parser = argparse.ArgumentParser()
    parser.add_argument("override_yaml")
    args = parser.parse_args()
    run_ppo(OmegaConf.merge(OmegaConf.load("config/ppo_trainer.yaml"), OmegaConf.load(args.override_yaml)))
'''

HYDRA_MAIN = '''import hydra


@hydra.main(config_path="config", config_name="ppo_trainer", version_base=None)
def main(config):
    run_ppo(config)
'''


def _project(tmp_path: Path, main_source: str) -> Path:
    (tmp_path / "setup.py").write_text("")  # the project root: the entry beside it is inside the project
    (tmp_path / "verl" / "trainer").mkdir(parents=True)
    (tmp_path / "verl" / "trainer" / "main_ppo.py").write_text(main_source)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.yaml").write_text("data:\n  train_batch_size: 8\n")
    script = tmp_path / "scripts" / "run.sh"
    script.write_text("set -x\npython3 -m verl.trainer.main_ppo ./scripts/run.yaml\n")
    return script


def _codes(script: Path, root: Path) -> list[str]:
    here = os.getcwd()
    os.chdir(root)
    try:
        result = runner.invoke(app, ["check", str(script), "--verl-version", "0.4.1", "--format", "json"])
    finally:
        os.chdir(here)
    assert result.exit_code in (0, 1), result.stdout
    import json

    document = json.loads(result.stdout)
    return sorted(f["code"] for file in document["files"] for f in file["findings"]
                  if f["severity"] in ("error", "warning"))


def test_an_argparse_entry_takes_no_hydra_overrides(tmp_path: Path) -> None:
    """The fork's main_ppo parses a positional YAML (its @hydra.main left in a string): the YAML is
    no stray Hydra word (VS712) and the config it builds is unknown, so no micro batch is 'not set'."""
    script = _project(tmp_path, ARGPARSE_MAIN)
    assert _codes(script, tmp_path) == []


def test_a_hydra_entry_still_gets_its_words_judged(tmp_path: Path) -> None:
    script = _project(tmp_path, HYDRA_MAIN)
    codes = _codes(script, tmp_path)
    assert "VS712" in codes and "VB109" in codes


def test_a_job_submitting_script_exporting_placeholders(tmp_path: Path) -> None:
    """Issue 34's miss: a script with no trainer call of its own that starts a cluster and submits a
    job running another script exports placeholders the job gets: reported (VS714), whether the
    script reads the variable itself (`ray start --address=$MASTER_ADDR`) or only exports it."""
    (tmp_path / "setup.py").write_text("")
    script = tmp_path / "submit.sh"
    script.write_text("export MASTER_ADDR=YOUR_SERVER_IP\nexport WANDB_API_KEY=YOUR_WANDB_API_KEY\n"
                      "wandb login $WANDB_API_KEY\nray start --head --node-ip-address=$MASTER_ADDR\n"
                      "ray job submit --address=http://127.0.0.1:8265 -- bash recipe/dapo/run_dapo.sh\n")
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = runner.invoke(app, ["check", str(script), "--format", "json"])
    finally:
        os.chdir(here)
    import json

    findings = [f for file in json.loads(result.stdout)["files"] for f in file["findings"]]
    assert sorted((f["code"], f["line"]) for f in findings if f["code"] == "VS714") == [("VS714", 1), ("VS714", 2)]


def test_an_entry_handing_argv_to_another_main_is_not_read_as_argparse(tmp_path: Path) -> None:
    """`sys.argv += [...]; from verl.trainer.main_ppo import main; main()`: the words may still be
    Hydra's (the imported main's), so they are judged as ever."""
    wrapper = "import sys\nsys.argv.append('trainer.nnodes=1')\nfrom verl.trainer.ppo_entry import main\nmain()\n"
    script = _project(tmp_path, wrapper)
    assert "VS712" in _codes(script, tmp_path)
