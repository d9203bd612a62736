"""The schema and the batch arithmetic taken from the project's own code (issue 20, items 1-2).

Each fixture under tests/fixtures/projects/ models one layout seen in public projects built on
verl: a fork vendored in a sub-folder checked from the checkout root, a fork whose trainer entry
composes a config of its own name, a stale `_generated_ppo_trainer.yaml`, a project config that
composes verl's trainer config through `hydra.searchpath: pkg://verl.trainer.config`, and a fork
whose trainer repeats the batch by its own key and still reads `data.val_batch_size`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.reading.fork_code import read_fork_code
from generator.schema.generated import read_config
from generator.schema.imports import imported_verl, vendored_forks
from generator.reading.shell import read_launch

PROJECTS = Path(__file__).resolve().parent / "fixtures" / "projects"


@pytest.fixture(autouse=True)
def _no_installed_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("generator.schema.resolution.installed_verl", lambda: None)


def _check(project: Path, script: str, monkeypatch: pytest.MonkeyPatch, *extra: str) -> tuple[int, dict]:
    """`gen check --format json SCRIPT` run from the project's root, as its user runs it."""
    monkeypatch.chdir(project)
    result = CliRunner().invoke(app, ["check", script, "--format", "json", *extra])
    return result.exit_code, json.loads(result.output)["files"][0]


def _codes(doc: dict, severities: tuple[str, ...] = ("error", "warning")) -> list[str]:
    return sorted(f["code"] for f in doc["findings"] if f["severity"] in severities)


# --- 1. what Python would import -------------------------------------------------------------


def test_a_fork_in_a_sub_folder_is_found_through_the_pythonpath_tail(monkeypatch):
    # PYTHONPATH={the_path_of_your_verl}/src/verl: the placeholder head is unknown, the tail is
    # a folder of the checkout, and the verl there is what `python -m verl...` imports.
    code, doc = _check(PROJECTS / "subfolder_fork", "Agent_RL/scripts/train/train.sh", monkeypatch)
    assert code == 0, doc["findings"]
    # data.apply_chat and data.prompt_template_name are the fork's keys; the one warning is the
    # exported placeholder itself (Python would not import from `{the_path_of_your_verl}`).
    [placeholder] = [f for f in doc["findings"] if f["severity"] in ("error", "warning")]
    assert placeholder["code"] == "VS714" and placeholder["message"].startswith("export PYTHONPATH=")
    assert doc["resolution"]["release"] == "0.2.0"
    assert "PYTHONPATH {the_path_of_your_verl}/src/verl" in doc["resolution"]["reason"]


def test_a_fork_in_a_sub_folder_is_the_only_fork_of_the_checkout(monkeypatch):
    code, doc = _check(PROJECTS / "subfolder_fork", "Agent_RL/scripts/train/train_plain.sh", monkeypatch)
    assert code == 0 and _codes(doc) == []
    assert "the only verl fork in the checkout (Agent_RL/src/verl/verl)" in doc["resolution"]["reason"]


def test_without_the_fork_the_same_script_is_judged_by_a_packaged_release(monkeypatch, tmp_path):
    # The control: the same script with its fork removed gets VK601 on the fork's keys.
    shutil.copytree(PROJECTS / "subfolder_fork", tmp_path / "p")
    shutil.rmtree(tmp_path / "p" / "Agent_RL" / "src")
    _, doc = _check(tmp_path / "p", "Agent_RL/scripts/train/train_plain.sh", monkeypatch)
    assert "VK601" in _codes(doc)


def test_of_several_forks_the_nearest_is_taken_and_the_others_are_named(tmp_path):
    (tmp_path / ".git").mkdir()  # a checkout (a working directory alone is no project: issue 34)
    for where in ("a/verl", "tools/b/verl"):
        folder = tmp_path / where / "trainer" / "config"
        folder.mkdir(parents=True)
        (folder / "ppo_trainer.yaml").write_text("data: {train_batch_size: 8}\n")
    (tmp_path / "tools" / "b" / "run.sh").write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8\n")
    script = str(tmp_path / "tools" / "b" / "run.sh")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in vendored_forks(tmp_path)) == ["a/verl", "tools/b/verl"]
    found = imported_verl(read_launch(script).invocations, script, cwd=str(tmp_path))
    assert found is not None and found.package == tmp_path / "tools" / "b" / "verl"
    assert "also in the checkout: a/verl" in found.reason


def test_the_working_directory_after_cd_is_where_python_imports_from(tmp_path):
    (tmp_path / ".git").mkdir()  # a checkout (a working directory alone is no project: issue 34)
    folder = tmp_path / "fork" / "verl" / "trainer" / "config"
    folder.mkdir(parents=True)
    (folder / "ppo_trainer.yaml").write_text("data: {train_batch_size: 8}\n")
    other = tmp_path / "vendor" / "old" / "verl" / "trainer" / "config"
    other.mkdir(parents=True)
    (other / "ppo_trainer.yaml").write_text("data: {train_batch_size: 8}\n")
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "run.sh"
    script.write_text("cd fork\npython3 -m verl.trainer.main_ppo data.train_batch_size=8\n")
    found = imported_verl(read_launch(str(script)).invocations, str(script), cwd=str(tmp_path))
    assert found is not None and found.package == tmp_path / "fork" / "verl"
    assert "the working directory fork" in found.reason


def test_the_forks_entry_composes_its_own_config_name(monkeypatch):
    # main_ppo.py: @hydra.main(config_name="search_trainer"); the fork's keys are in that file.
    code, doc = _check(PROJECTS / "renamed_config", "scripts/train.sh", monkeypatch)
    flagged = [(f["code"], f.get("key")) for f in doc["findings"] if f["severity"] == "error"]
    assert flagged == [("VK601", "trainer.no_such_key")]  # a key no config has is still an error
    assert code == 1
    assert "its trainer entry composes search_trainer.yaml" in doc["resolution"]["reason"]


def test_a_stale_generated_yaml_gives_way_to_the_primary_one(monkeypatch):
    code, doc = _check(PROJECTS / "stale_generated", "scripts/train.sh", monkeypatch)
    assert code == 0 and _codes(doc) == []  # data.filter_accuracy is in ppo_trainer.yaml
    assert "_generated_ppo_trainer.yaml is stale" in doc["resolution"]["reason"]


def test_read_config_names_the_file_taken_and_why():
    folder = PROJECTS / "stale_generated" / "verl" / "trainer" / "config"
    chosen = read_config(folder, "ppo_trainer")
    assert chosen is not None and chosen.file == "ppo_trainer.yaml" and chosen.note
    assert "data.filter_accuracy" in chosen.flat


def test_a_primary_that_cannot_be_composed_still_gives_its_own_keys(tmp_path):
    # A fork added a root section to ppo_trainer.yaml and never regenerated the flat file; one of
    # its defaults entries is not in the checkout (ignored by its .gitignore), so Hydra's
    # composition cannot be redone here: the generated keys are read with the body's over them.
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "ppo_trainer.yaml").write_text(
        "defaults:\n  - data@data: legacy_data\n  - _self_\n"
        "hinter:\n  model:\n    path: x\ntrainer:\n  total_epochs: 3\n", encoding="utf-8")
    (folder / "_generated_ppo_trainer.yaml").write_text(
        "data:\n  train_batch_size: 8\ntrainer:\n  total_epochs: 1\n", encoding="utf-8")
    chosen = read_config(folder, "ppo_trainer")
    assert chosen is not None and chosen.flat["hinter.model.path"] == "x"
    assert chosen.flat["trainer.total_epochs"] == 3 and chosen.flat["data.train_batch_size"] == 8
    assert chosen.note is not None and "cannot be composed here" in chosen.note


def test_verls_own_generated_yaml_agrees_with_its_primary():
    # verl 0.7.0's tree: both files give the same keys, so the generated one is kept.
    folder = Path(__file__).resolve().parents[2] / "shared" / "verl-config" / "v0.7.0" / "verl" / "trainer" / "config"
    if not folder.is_dir():
        pytest.skip("../shared/verl-config is not here")
    chosen = read_config(folder, "ppo_trainer")
    assert chosen is not None and chosen.file == "_generated_ppo_trainer.yaml" and chosen.note is None


def test_a_searchpath_to_verls_package_and_the_projects_own_is_composed(monkeypatch):
    code, doc = _check(PROJECTS / "searchpath_project", "scripts/train.sh", monkeypatch)
    flagged = [(f["code"], f.get("key")) for f in doc["findings"] if f["severity"] == "error"]
    # agent.* (its own), env.* (pkg://agentlib.configs) and verl's keys (pkg://verl.trainer.config) all exist
    assert flagged == [("VK601", "trainer.no_such_key")]
    assert code == 1


def test_a_searchpath_whose_verl_is_absent_is_no_internal_error(monkeypatch, tmp_path):
    shutil.copytree(PROJECTS / "searchpath_project", tmp_path / "p")
    shutil.rmtree(tmp_path / "p" / "verl")
    (tmp_path / "p" / ".git").mkdir()  # a checkout (a folder without one is not a project: issue 34)
    code, doc = _check(tmp_path / "p", "scripts/train.sh", monkeypatch)
    assert code in (0, 1) and doc["error"] is None
    assert ("VK601", "trainer.no_such_key") in [(f["code"], f.get("key")) for f in doc["findings"]]
    # No verl anywhere and no verl key the script sets plainly on verl's trainer: the release is the
    # newest packaged by default, so rules that read its defaults (VB204's micro-batch pair) stand down.
    assert doc["resolution"]["inferred"]
    assert not {"VB109", "VB201", "VB204", "VR510"} & set(_codes(doc))


# --- 2. behaviour read from the fork's code --------------------------------------------------


def test_a_trainer_repeating_by_its_own_key_stands_every_batch_rule_down(monkeypatch):
    # mini 128 > train 64 (VB102/VB106 in verl's chain) and no micro batch (VB109): the fork
    # samples data.n_samples rollouts per prompt and batches in its own code.
    code, doc = _check(PROJECTS / "repeating_fork", "scripts/train.sh", monkeypatch)
    batch = [f["code"] for f in doc["findings"] if f["code"].startswith("VB")]
    assert batch == ["VB118"]
    vb118 = next(f for f in doc["findings"] if f["code"] == "VB118")
    assert "data.n_samples=8" in vb118["message"] and "ray_trainer.py:19" in vb118["message"]
    assert code == 0


def test_a_neutral_repeat_count_keeps_the_batch_rules(monkeypatch, tmp_path):
    shutil.copytree(PROJECTS / "repeating_fork", tmp_path / "p")
    script = tmp_path / "p" / "scripts" / "train.sh"
    script.write_text(script.read_text().replace("data.n_samples=8", "data.n_samples=1"))
    _, doc = _check(tmp_path / "p", "scripts/train.sh", monkeypatch)
    assert "VB118" not in _codes(doc, ("info",)) and {"VB102", "VB109"} <= set(_codes(doc))


def test_a_deprecated_key_the_fork_still_reads_is_not_reported(monkeypatch):
    _, doc = _check(PROJECTS / "repeating_fork", "scripts/train.sh", monkeypatch)
    assert "VK608" not in _codes(doc)


def test_a_fork_that_warns_the_key_is_deprecated_keeps_the_warning(monkeypatch, tmp_path):
    shutil.copytree(PROJECTS / "repeating_fork", tmp_path / "p")
    trainer = tmp_path / "p" / "verl" / "trainer" / "ppo" / "ray_trainer.py"
    trainer.write_text(trainer.read_text().replace("no validation batch size: the whole set is one batch",
                                                   "WARNING: val_batch_size is deprecated"))
    _, doc = _check(tmp_path / "p", "scripts/train.sh", monkeypatch)
    assert "VK608" in _codes(doc)


def test_fork_code_reads_repeat_keys_and_live_reads_only():
    code = read_fork_code([PROJECTS / "repeating_fork" / "verl" / "trainer"])
    assert [k.key for k in code.repeat_keys] == ["data.n_samples"]  # not rollout.n, not the validation n_val
    assert code.reads("data.val_batch_size")
    assert not code.reads("data.no_such_key")


def test_a_fork_the_readme_installs_with_pip_e_wins_over_the_nearest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # run from the checkout's root: the README is inside the project
    (tmp_path / ".git").mkdir()  # a checkout (the working directory alone is not a project: issue 34)
    for where in ("agent/verl_fork/verl", "scripts/old/verl"):
        folder = tmp_path / where / "trainer" / "config"
        folder.mkdir(parents=True)
        (folder / "ppo_trainer.yaml").write_text("data: {train_batch_size: 8}\n")
    (tmp_path / "README.md").write_text("## Install\n\n```bash\npip install -e ./agent/verl_fork\n```\n")
    script = tmp_path / "scripts" / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8\n")
    found = imported_verl(read_launch(str(script)).invocations, str(script), cwd=str(tmp_path))
    assert found is not None and found.package == tmp_path / "agent" / "verl_fork" / "verl"
    assert "`pip install -e ./agent/verl_fork` in README.md" in found.reason


def test_explain_sees_the_fork_check_sees(monkeypatch):
    """`gen explain` builds each call's config as `gen check` does (generator.judging.calls), so the
    fork code of the project's own verl package changes its batch chain as it stands check's rules
    down (explain printed verl's chain for a run the fork batches itself)."""
    monkeypatch.chdir(PROJECTS / "repeating_fork")
    result = CliRunner().invoke(app, ["explain", "scripts/train.sh"])
    assert result.exit_code == 0, result.output
    assert "changed by this fork: data.n_samples=8" in result.output
    assert "per-rank mini m" not in result.output  # verl's chain does not describe this run
