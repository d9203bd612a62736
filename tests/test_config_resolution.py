"""Which verl and which config a script is judged against, in the documented order: explicit
options, the project configuration, the project's own verl (vendored or submodule), the
installed verl, else inferred from the script's keys. Fixture projects: tests/fixtures/projects/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app
from text_report import finding_lines
from generator.base.errors import InputError
from generator.rules import reads_defaults
from generator.schema.resolution import (
    Resolution,
    declared_release,
    find_project_verl,
    oldest_release_with,
    resolve,
    resolve_script,
    script_keys,
)
from generator.schema.releases import packaged_releases
from generator.reading.shell import read_script

PROJECTS = Path(__file__).resolve().parent / "fixtures" / "projects"
REPO = Path(__file__).resolve().parent.parent
FORK_KEYS = ("actor_rollout_ref.rollout.n_agent", "algorithm.grpo_clip")


@pytest.fixture(autouse=True)
def _no_installed_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test environment must not leak an installed verl into the order under test."""
    monkeypatch.setattr("generator.schema.resolution.installed_verl", lambda: None)


def _check_json(*argv: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["check", *argv, "--format", "json"])
    return result.exit_code, json.loads(result.output)


def _codes_and_keys(doc: dict) -> list[tuple[str, str | None]]:
    return [(f["code"], f.get("key")) for f in doc["files"][0]["findings"]]


def _copy(name: str, tmp_path: Path) -> Path:
    """A checkout of the fixture project (with `.git`: a folder without a project mark is no
    project, so its vendored verl would not be the script's, issue 34)."""
    target = tmp_path / name
    shutil.copytree(PROJECTS / name, target)
    (target / ".git").mkdir(exist_ok=True)
    return target


def test_vendored_fork_is_the_schema_and_its_version_file_the_release() -> None:
    script = PROJECTS / "vendored_fork" / "scripts" / "train_agent.sh"
    code, doc = _check_json(str(script))
    resolution = doc["files"][0]["resolution"]
    assert resolution["release"] == "0.4.1" and doc["files"][0]["verl_version"] == "0.4.1"
    assert resolution["config_dir"] == str(PROJECTS / "vendored_fork" / "verl" / "trainer" / "config")
    assert "the project's verl" in resolution["reason"] and "0.4.1.dev" in resolution["reason"]
    assert resolution["inferred"] is False
    # The fork's own keys are keys of its config (no VK finding names them).
    assert code == 0 and not any(key in FORK_KEYS for c, key in _codes_and_keys(doc) if c.startswith("VK"))


def test_the_same_fork_script_against_a_packaged_release_refuses_the_fork_keys() -> None:
    # What the resolution prevents: judging a fork by upstream's schema of its release.
    script = PROJECTS / "vendored_fork" / "scripts" / "train_agent.sh"
    code, doc = _check_json(str(script), "--verl-version", "0.4.1")
    assert doc["files"][0]["resolution"]["reason"] == "--verl-version"
    unknown = {key for c, key in _codes_and_keys(doc) if c == "VK601"}
    assert set(FORK_KEYS) <= unknown and code == 1


def test_a_typo_is_still_an_unknown_key_of_the_fork(tmp_path: Path) -> None:
    project = _copy("vendored_fork", tmp_path)
    script = project / "scripts" / "typo.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.n_agnet=2 "
                      "actor_rollout_ref.rollout.n_agent=2\n")
    code, doc = _check_json(str(script))
    found = [(c, key) for c, key in _codes_and_keys(doc) if c == "VK601"]
    assert found == [("VK601", "actor_rollout_ref.rollout.n_agnet")] and code == 1
    message = next(f["message"] for f in doc["files"][0]["findings"] if f["code"] == "VK601")
    assert "n_agent" in message  # the fork's own key is the "did you mean"


def test_git_submodule_layout() -> None:
    script = PROJECTS / "submodule" / "examples" / "run_grpo.sh"
    package = find_project_verl(str(script))
    assert package == PROJECTS / "submodule" / "third_party" / "verl" / "verl"
    resolution = resolve(str(script))
    assert resolution.base_release == "0.5.0" and resolution.release == "0.5.0+project"
    assert resolution.config_dir == package / "trainer" / "config"


def test_src_layout_fork_is_found(tmp_path: Path) -> None:
    # A project installed with package_dir={"": "src"} keeps its verl fork in src/verl; its scripts
    # run `python3 -m verl.trainer.main_ppo` from the checkout, so the fork is the schema there too.
    project = _copy("vendored_fork", tmp_path)
    (project / "src").mkdir()
    shutil.move(str(project / "verl"), str(project / "src" / "verl"))
    script = project / "scripts" / "train_agent.sh"
    assert find_project_verl(str(script)) == project / "src" / "verl"
    code, doc = _check_json(str(script))
    resolution = doc["files"][0]["resolution"]
    assert resolution["config_dir"] == str(project / "src" / "verl" / "trainer" / "config")
    assert not [key for c, key in _codes_and_keys(doc) if c == "VK601" and key in FORK_KEYS]


@pytest.mark.parametrize(("fork_mode", "refused"), [("sync", False), ("async", True)])
def test_rollout_mode_sync_is_refused_only_where_the_fork_dropped_it(
        tmp_path: Path, fork_mode: str, refused: bool) -> None:
    # A fork of verl 0.7 that kept the sync rollout says so in its own config's default.
    project = _copy("vendored_fork", tmp_path)
    (project / "verl" / "version" / "version").write_text("0.7.0.dev\n")
    config = project / "verl" / "trainer" / "config" / "ppo_trainer.yaml"
    config.write_text(config.read_text().replace("    name: vllm\n", f"    name: vllm\n    mode: {fork_mode}\n", 1))
    script = project / "scripts" / "mode.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.mode=sync\n")
    _, doc = _check_json(str(script))
    assert doc["files"][0]["resolution"]["release"] == "0.7.0"
    assert any(c == "VR508" for c, _ in _codes_and_keys(doc)) is refused


@pytest.mark.parametrize(("version_file", "refused"), [("0.1", False), ("0.2.0.dev", True)])
def test_chunked_prefill_token_check_starts_with_verl_0_2(
        tmp_path: Path, version_file: str, refused: bool) -> None:
    # verl 0.1's vLLM rollout passed both values to vLLM unchecked; the refusal came in 0.2.
    project = _copy("vendored_fork", tmp_path)
    (project / "verl" / "version" / "version").write_text(version_file + "\n")
    config = project / "verl" / "trainer" / "config" / "ppo_trainer.yaml"
    config.write_text(config.read_text().replace(
        "    name: vllm\n", "    name: vllm\n    enable_chunked_prefill: False\n    max_num_batched_tokens: 8192\n", 1))
    script = project / "scripts" / "prefill.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.max_prompt_length=1024 data.max_response_length=8192 "
                      "actor_rollout_ref.rollout.enable_chunked_prefill=True "
                      "actor_rollout_ref.rollout.max_num_batched_tokens=8192\n")
    _, doc = _check_json(str(script))
    assert any(c == "VR507" for c, _ in _codes_and_keys(doc)) is refused


def test_a_project_entry_config_is_the_evidence_when_the_script_sets_no_verl_key(tmp_path: Path) -> None:
    # `python -m pkg.main_x` whose @hydra.main config is the project's fork of verl's: with no verl
    # in the checkout and no plain verl key in the script, that config's keys pick the release.
    project = tmp_path / "selfplay"
    (project / "pkg" / "configs").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "main_x.py").write_text(
        "import hydra\n\n@hydra.main(config_path='configs', config_name='x_ppo_trainer', version_base=None)\n"
        "def main(config):\n    pass\n")
    (project / "pkg" / "configs" / "x_ppo_trainer.yaml").write_text(
        "data:\n  train_batch_size: 64\nactor_rollout_ref:\n  rollout:\n    use_fire_sampling: False\n"
        "    mode: sync\nx:\n  problem_types: [a, b]\n")
    script = project / "run.sh"
    script.write_text("python3 -m pkg.main_x x.problem_types=[a] trainer.total_epochs=1\n")
    resolution = resolve_script(read_script(script.read_bytes(), str(script)), str(script))
    assert resolution.inferred and resolution.base_release == "0.4.1"
    assert "the keys of x_ppo_trainer.yaml at" in resolution.reason


def test_project_file_pins_the_release(tmp_path: Path) -> None:
    script = PROJECTS / "toml_project" / "scripts" / "run_ppo.sh"
    code, doc = _check_json(str(script))
    resolution = doc["files"][0]["resolution"]
    assert resolution["release"] == resolution["schema"] == "0.6.1"
    assert resolution["reason"] == f"verl-version of [tool.verl-gen] in {PROJECTS / 'toml_project' / 'pyproject.toml'}"
    assert resolution["config_source"] == "packaged schema 0.6.1"


def test_project_file_config_dirs_are_the_schema() -> None:
    script = PROJECTS / "toml_configdir" / "jobs" / "run.sh"
    resolution = resolve(str(script), project=_project(str(script)))
    assert resolution.base_release == "0.4.1"
    assert resolution.config_dir == (PROJECTS / "toml_configdir" / "conf").resolve()
    assert resolution.reason.startswith("config-dirs of ")


def test_order_explicit_then_project_then_fork(tmp_path: Path) -> None:
    project = _copy("vendored_fork", tmp_path)
    script = str(project / "scripts" / "train_agent.sh")
    assert resolve(script).config_dir == project / "verl" / "trainer" / "config"
    (project / ".verl-gen.toml").write_text('verl-version = "0.6.1"\n')
    code, doc = _check_json(script)
    assert doc["files"][0]["resolution"]["schema"] == "0.6.1"  # the project file beats the fork
    code, doc = _check_json(script, "--verl-version", "0.7.0")
    assert doc["files"][0]["resolution"]["schema"] == "0.7.0"  # the option beats both
    config_dir = str(project / "verl" / "trainer" / "config")
    code, doc = _check_json(script, "--config-dir", config_dir)
    assert doc["files"][0]["resolution"]["config_dir"] == config_dir
    assert doc["files"][0]["resolution"]["release"] == "0.4.1"  # from the version file beside it


def test_fork_without_a_version_file_infers_its_base_release(tmp_path: Path) -> None:
    project = _copy("vendored_fork", tmp_path)
    (project / "verl" / "version" / "version").unlink()
    resolution = resolve(str(project / "scripts" / "train_agent.sh"),
                         keys=lambda: [("actor_rollout_ref.rollout.n", "ppo_trainer")])
    assert resolution.inferred and "no version file" in resolution.reason
    assert resolution.config_dir == project / "verl" / "trainer" / "config"


def test_no_verl_anywhere_guesses_the_newest_release_with_every_key(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    # rollout.agent.* exists from 0.5.0 on and is still there: the newest release has every key.
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8 "
                      "actor_rollout_ref.rollout.agent.agent_loop_config_path=loops.yaml\n")
    parsed = read_script(script.read_bytes(), str(script))
    resolution = resolve(str(script), keys=lambda: script_keys(parsed.invocations))
    assert resolution.inferred and resolution.reason.startswith("guessed from the script's keys")
    assert resolution.release == packaged_releases()[-1] and resolution.config_dir is None
    result = CliRunner().invoke(app, ["check", str(script)])
    assert f"checked against {resolution.summary()}" in result.output


def test_a_key_newer_releases_removed_keeps_the_guess_on_its_release(tmp_path: Path) -> None:
    # rollout.update_weights_bucket_megabytes moved under checkpoint_engine in 0.7.1.
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8 "
                      "actor_rollout_ref.rollout.update_weights_bucket_megabytes=512 "
                      "actor_rollout_ref.rollout.agent.agent_loop_config_path=loops.yaml\n")
    parsed = read_script(script.read_bytes(), str(script))
    resolution = resolve(str(script), keys=lambda: script_keys(parsed.invocations))
    assert resolution.release == "0.7.0", resolution.reason


def test_a_group_selection_counts_as_a_key_of_the_releases_that_have_the_option(tmp_path: Path) -> None:
    # model_engine=megatron composes from 0.8.0 on (0.7.1 has the group without the option), and
    # the Megatron engine keys exist in ppo_trainer only under that selection.
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo model_engine=megatron "
                      "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2\n")
    keys = script_keys(read_script(script.read_bytes(), str(script)).invocations)
    assert ("model_engine=megatron", "ppo_trainer") in keys
    assert oldest_release_with(keys) == "0.8.0"
    assert resolve(str(script), keys=lambda: keys).release == packaged_releases()[-1]


@pytest.mark.parametrize("version", ["9.9", "0.7", "banana", "0.7.5"])
def test_unknown_verl_version_is_one_line_exit_2(version: str, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8\n")
    result = subprocess.run([sys.executable, "-m", "generator", "check", str(script), "--verl-version", version],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"gen: error: --verl-version: unknown verl release '{version}'; known: " + result.stderr.split("known: ")[1].strip()]
    with pytest.raises(InputError):
        resolve(str(script), version=version)


def test_config_dir_without_a_ppo_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no ppo_trainer.yaml"):
        resolve(None, config_dir=str(tmp_path))


def test_installed_verl_in_a_subprocess() -> None:
    script = PROJECTS / "installed" / "scripts" / "run_ppo.sh"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECTS / "installed" / "site"), str(REPO)]))
    result = subprocess.run([sys.executable, "-m", "generator", "check", str(script), "--format", "json"],
                            capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    resolution = json.loads(result.stdout)["files"][0]["resolution"]
    assert resolution["schema"] == "0.7.0"
    assert resolution["reason"] == f"installed verl 0.7.0 at {PROJECTS / 'installed' / 'site' / 'verl'}"


def test_sarif_and_text_name_the_resolution() -> None:
    script = str(PROJECTS / "toml_project" / "scripts" / "run_ppo.sh")
    sarif = json.loads(CliRunner().invoke(app, ["check", script, "--format", "sarif"]).output)
    verl = sarif["runs"][0]["properties"]["verl"]
    assert verl == [{"path": script, **resolve(script, project=_project(script)).as_dict(), "call_resolutions": []}]
    text = CliRunner().invoke(app, ["check", script]).output
    assert "checked against verl 0.6.1 (config: packaged schema 0.6.1; chosen: verl-version of" in text


def _project(script: str):
    from generator.project.settings import load_project

    return load_project(script)


def test_resolution_summary_and_base_release() -> None:
    res = Resolution("0.4.1+project2", "verl config YAML at /p", "the project's verl at /p")
    assert res.base_release == "0.4.1"
    assert res.summary() == "verl 0.4.1 (config: verl config YAML at /p; chosen: the project's verl at /p)"


def test_unreadable_fork_config_stands_in_and_skips_default_rules(tmp_path: Path) -> None:
    project = _copy("vendored_fork", tmp_path)
    config = project / "verl" / "trainer" / "config" / "ppo_trainer.yaml"
    config.write_text("defaults:\n  - {actor: dp, extra: 1}\n")  # a defaults entry no composer reads
    code, doc = _check_json(str(project / "scripts" / "train_agent.sh"))
    resolution = doc["files"][0]["resolution"]
    assert resolution["schema"] == "0.4.1" and resolution["release"] == "0.4.1"
    assert resolution["config_source"].startswith("packaged schema 0.4.1, standing in for verl config YAML at")
    assert str(config.parent) in resolution["stand_in"] and "could not be read" in resolution["reason"]
    codes = [c for c, _ in _codes_and_keys(doc)]
    # Keys the stand-in lacks are not judged; rules that read defaults say once why they did not run.
    assert "VK601" not in codes and codes.count("VK609") == 1
    vk609 = next(f["message"] for f in doc["files"][0]["findings"] if f["code"] == "VK609")
    assert f"checked against verl 0.4.1 defaults standing in for the config at {config.parent}" in vk609
    assert not {"VB109", "VB201", "VB204"} & set(codes) and code == 0


def test_own_ppo_trainer_under_config_path_is_the_schema(tmp_path: Path) -> None:
    # A project's --config-path with its own ppo_trainer.yaml: its keys, not the packaged ones.
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "ppo_trainer.yaml").write_text("data:\n  train_batch_size: 8\n  my_sampler: uniform\n"
                                           "actor_rollout_ref:\n  rollout:\n    n: 1\n")
    script = tmp_path / "run.sh"
    script.write_text(f"python3 -m verl.trainer.main_ppo --config-path={conf} --config-name=ppo_trainer "
                      "data.my_sampler=weighted data.train_batch_sise=16\n")
    result = CliRunner().invoke(app, ["check", str(script), "--verl-version", "0.7.0", "--select", "VK"])
    unknown = [line for line in finding_lines(result.output) if "VK601" in line]
    assert len(unknown) == 1 and "data.train_batch_sise" in unknown[0], result.output
    assert "did you mean data.train_batch_size?" in unknown[0]
    # The report names the call's own config beside the script's release.
    assert f"run.sh:1: this call checked against verl 0.7.0 (config: ppo_trainer.yaml at {conf}, over packaged " \
        "schema 0.7.0; chosen: --verl-version)" in result.output
    code, doc = _check_json(str(script), "--verl-version", "0.7.0")
    (call,) = doc["files"][0]["call_resolutions"]
    assert call["line"] == 1 and call["config_dir"] == str(conf) and call["release"] == "0.7.0"


def test_installed_unpackaged_release_reads_its_yaml_and_stands_in_when_broken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site" / "verl"
    shutil.copytree(PROJECTS / "vendored_fork" / "verl" / "trainer", package / "trainer")
    monkeypatch.setattr("generator.schema.resolution.installed_verl", lambda: ("0.7.3", package))
    script = str(tmp_path / "run.sh")
    for _ in range(2):  # the second lookup finds the folder registered, still not "packaged"
        resolution = resolve(script)
        assert (resolution.release, resolution.config_dir) == ("0.7.3", package / "trainer" / "config")
        assert resolution.reason == f"installed verl 0.7.3 at {package}" and resolution.stand_in is None
    broken = tmp_path / "site2" / "verl"
    (broken / "trainer" / "config").mkdir(parents=True)
    (broken / "trainer" / "config" / "ppo_trainer.yaml").write_text("a: [1\n")
    monkeypatch.setattr("generator.schema.resolution.installed_verl", lambda: ("0.7.4", broken))
    resolution = resolve(script)
    assert resolution.release == "0.7.1" and resolution.stand_in is not None  # nearest older packaged
    assert "not valid YAML" in resolution.stand_in


def test_a_script_written_by_gen_recipe_is_judged_by_the_release_it_was_written_for(tmp_path: Path) -> None:
    script = tmp_path / "run_qwen.sh"
    script.write_text("#!/usr/bin/env bash\n# Qwen2-7B GRPO on 8 GPUs\n"
                      "# Written by `gen recipe` for verl 0.7.0 (Megatron actor, vllm rollout); runs here\n"
                      "python3 -m verl.trainer.main_ppo data.train_batch_size=8\n")
    parsed = read_script(script.read_bytes(), str(script))
    resolution = resolve_script(parsed)
    assert (resolution.release, resolution.inferred) == ("0.7.0", False)
    assert resolution.reason == "the script's header (written by gen recipe for verl 0.7.0)"
    # Only verl-gen's own header counts, and only for a packaged release.
    assert declared_release(b"# written for verl 0.7.0\n") is None
    assert declared_release(b"# Written by `gen recipe` for verl 9.9.9 (x)\n") == "9.9.9"
    script.write_text(script.read_text().replace("0.7.0 (", "9.9.9 ("))
    assert resolve_script(read_script(script.read_bytes(), str(script))).inferred


def test_project_config_dirs_hold_recipe_configs_too() -> None:
    # --config-path comes from the environment; the project file names the folder.
    script = PROJECTS / "toml_configdir" / "jobs" / "run_recipe.sh"
    code, doc = _check_json(str(script), "--select", "VK")
    found = _codes_and_keys(doc)
    assert found == [("VK601", "agent.max_turn")] and code == 1  # agent.max_turns is the recipe's own key
    message = doc["files"][0]["findings"][0]["message"]
    assert "did you mean agent.max_turns?" in message and "grpo_agent" in message


def test_diff_judges_scripts_by_the_verl_the_first_one_runs(tmp_path: Path) -> None:
    project = _copy("vendored_fork", tmp_path)
    a = project / "scripts" / "train_agent.sh"
    b = project / "scripts" / "train_more_agents.sh"
    b.write_text(a.read_text().replace("n_agent=2", "n_agent=4"))
    result = CliRunner().invoke(app, ["diff", str(a), str(b), "--format", "json"])
    doc = json.loads(result.output)
    assert doc["verl_version"].startswith("0.4.1+project") and "the project's verl" in doc["version_from"]
    assert [c["key"] for c in doc["changes"]] == ["actor_rollout_ref.rollout.n_agent"]


def test_default_dependent_findings_say_the_default_is_an_inferred_releases(tmp_path: Path) -> None:
    """docs/rules/defaults.md: with an inferred release the default-dependent rules run, and each
    of their findings names whose default it read; a named release adds nothing."""
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8 "
                      "actor_rollout_ref.actor.ppo_mini_batch_size=8 trainer.n_gpus_per_node=8\n")
    code, doc = _check_json(str(script))
    assert doc["files"][0]["resolution"]["inferred"] is True
    release = doc["files"][0]["resolution"]["release"]
    messages = {f["code"]: f["message"] for f in doc["files"][0]["findings"]}
    note = f"[verl {release}'s default; the release was inferred from the script's keys]"
    assert messages["VB109"].endswith(note) and messages["VB201"].endswith(note)
    assert not any(note in m for c, m in messages.items() if not reads_defaults(c))
    code, doc = _check_json(str(script), "--verl-version", release)
    named = {f["code"]: f["message"] for f in doc["files"][0]["findings"]}
    assert "VB109" in named and not any("inferred" in m for m in named.values())
