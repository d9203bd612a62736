"""Mechanisms found on issue 20's fifth sample (public projects on verl nobody here had looked
at), one per test, on fixtures written here: absolute paths written on another machine (a
wrapper's callee, a call's --config-path), a project entry that runs verl's own validation, the
release a project pins in its dependency files, a project config over verl's PPO config whose
verl is absent, a verl submodule that is not checked out, and a wrapper that runs the script its
argument names."""

from __future__ import annotations

from pathlib import Path

from tests.project_check import check_json, new_project, write

from generator.reading.foreign_paths import checkout_copy





# --- absolute paths written on another machine -------------------------------------------------

# A launcher whose mini batch is larger than its step (VB102), on as many nodes as the wrapper says.
CALLEE = """python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=64 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=$NODES
"""


def test_checkout_copy_matches_the_longest_tail_of_two_parts_or_more(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    target = write(project / "examples" / "agent" / "run.sh", "echo\n")
    write(project / "run.sh", "echo\n")
    here = str(project / "slurm")
    (project / "slurm").mkdir()
    assert checkout_copy("/mnt/team/alice/proj/examples/agent/run.sh", here) == str(target)
    assert checkout_copy("/elsewhere/run.sh", here) is None  # one part (`run.sh`) is no evidence
    assert checkout_copy(str(target), None) == str(target)  # a path that exists is taken as written
    assert checkout_copy("examples/agent/run.sh", here) is None  # relative paths are not this module's


def test_a_wrapper_runs_another_machines_path_to_the_checkouts_launcher(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    write(project / "examples" / "agent" / "run_x.sh", CALLEE)
    wrapper = write(project / "slurm" / "run_node.sh",
                     "export NODES=2\nbash /mnt/cluster/alice/proj/examples/agent/run_x.sh\n")
    code, _, findings = check_json(wrapper, project)
    batch = [f for f in findings if f["code"] == "VB102"]
    assert len(batch) == 1 and code == 1
    assert "in /mnt/cluster/alice/proj/examples/agent/run_x.sh, run by line 2" in str(batch[0]["message"])
    assert not [f for f in findings if f["code"] in ("VS730", "VS709", "VB117")]  # read, nodes known


def test_a_script_submitted_to_ray_through_bash_is_followed(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    write(project / "examples" / "agent" / "run_x.sh", CALLEE)
    write(project / "slurm" / "run_node.sh", "export NODES=2\nbash /mnt/cluster/alice/proj/examples/agent/run_x.sh\n")
    submit = write(project / "slurm" / "submit.sh",
                    "RAY_ADDRESS='http://10.0.0.1:8265' ray job submit --working-dir . -- "
                    "bash /mnt/cluster/alice/proj/slurm/run_node.sh\n")
    _, _, findings = check_json(submit, project)
    batch = [f for f in findings if f["code"] == "VB102"]
    assert len(batch) == 1
    # The innermost script first: the finding's line is run_x.sh's.
    assert ("[in /mnt/cluster/alice/proj/examples/agent/run_x.sh, run by line 2; "
            "in /mnt/cluster/alice/proj/slurm/run_node.sh, run by line 1]") in str(batch[0]["message"])


def test_a_path_no_checkout_file_ends_stays_unread(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    write(project / "run_x.sh", CALLEE)
    wrapper = write(project / "slurm" / "run_node.sh", "bash /opt/other/run_x.sh\n")
    _, _, findings = check_json(wrapper, project)
    assert not [f for f in findings if f["code"] == "VB102"]


OWN_CONFIG = """data:
  train_batch_size: 32
  val_batch_size: null
trainer:
  n_gpus_per_node: 8
custom_flag: true
"""


def test_a_config_path_written_on_another_machine_is_the_checkouts_folder(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    write(project / "pkg" / "rl" / "config" / "my_config.yaml", OWN_CONFIG)
    script = write(project / "scripts" / "train.sh",
                    "python3 -m pkg.rl.entry --config-path=/mnt/disk/proj/pkg/rl/config/ --config-name=my_config \\\n"
                    "    custom_flag=false data.train_bach_size=16\n")
    _, _, findings = check_json(script, project)
    typo = [f for f in findings if f["code"] == "VK601"]
    assert [f["key"] for f in typo] == ["data.train_bach_size"]  # checked against the project's config
    assert not [f for f in findings if f["code"] == "VK609"]


# --- a project entry that runs verl's own validation --------------------------------------------

TRAINER = """class Trainer:
    def loader(self):
        size = self.config.data.val_batch_size
        return size
"""


def test_an_entry_running_verls_validation_keeps_the_deprecation(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    write(project / "pkg" / "rl" / "config" / "my_config.yaml", OWN_CONFIG)
    write(project / "pkg" / "rl" / "trainer.py", TRAINER)
    entry = write(project / "pkg" / "rl" / "entry.py", "import hydra\n")
    script = write(project / "scripts" / "train.sh",
                    "python3 -m pkg.rl.entry --config-path=/mnt/disk/proj/pkg/rl/config/ --config-name=my_config \\\n"
                    "    data.val_batch_size=64\n")
    _, _, findings = check_json(script, project)
    assert not [f for f in findings if f["code"] == "VK608"]  # the project's trainer batches validation by it
    entry.write_text("import hydra\nfrom verl.utils.config import validate_config\n")
    _, _, findings = check_json(script, project)
    assert [f["key"] for f in findings if f["code"] == "VK608"] == ["data.val_batch_size"]  # verl warns


# --- the release a project pins -----------------------------------------------------------------

PLAIN_CALL = "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8\n"


def test_the_release_pinned_in_pyproject_is_the_one_judged(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    write(project / "pyproject.toml", '[project]\nname = "x"\ndependencies = ["verl-tool==1.0", "verl[vllm]==0.7.0"]\n')
    script = write(project / "examples" / "run.sh", PLAIN_CALL)
    _, resolution, _ = check_json(script, project)
    assert resolution["release"] == "0.7.0"
    assert resolution["reason"] == "the project pins verl==0.7.0 (pyproject.toml)"
    assert resolution["inferred"] is False


def test_a_pin_without_a_packaged_schema_takes_its_minors_release(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    write(project / "requirements.txt", "# verl==0.6.1  (an old note)\ntorch\nverl==0.4.0\n")
    script = write(project / "run.sh", PLAIN_CALL)
    _, resolution, _ = check_json(script, project)
    assert resolution["release"] == "0.4.1"
    assert "pins verl==0.4.0 (requirements.txt); judged by packaged 0.4.1" in str(resolution["reason"])


def test_no_single_release_no_pin(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    write(project / "pyproject.toml", '[project.optional-dependencies]\nold = ["verl==0.7.0"]\nnew = ["verl"]\n'
                                       '[tool.uv.sources]\nverl = { git = "https://github.com/volcengine/verl.git", '
                                       'rev = "78bba31" }\n')
    script = write(project / "run.sh", PLAIN_CALL)
    _, resolution, _ = check_json(script, project)
    assert "pins" not in str(resolution["reason"]) and resolution["inferred"] is True
    (project / "pyproject.toml").write_text('dependencies = ["verl>=0.5"]\n')  # a range names no release
    _, resolution, _ = check_json(script, project)
    assert "pins" not in str(resolution["reason"])


# --- a project config over verl's PPO config, verl absent ---------------------------------------

ENTRY = """import hydra

@hydra.main(config_path="config", config_name="x_trainer", version_base=None)
def main(config):
    pass
"""
LAYERED = """hydra:
  searchpath:
    - file://verl/verl/trainer/config
defaults:
  - ppo_trainer
  - _self_
custom_reward_function:
  name: my_score
"""


def _layered_project(tmp_path: Path) -> tuple[Path, Path]:
    project = new_project(tmp_path)
    write(project / "pkg" / "recipe" / "main_x.py", ENTRY)
    write(project / "pkg" / "recipe" / "config" / "x_trainer.yaml", LAYERED)
    script = write(project / "run.sh", "python3 -m pkg.recipe.main_x \\\n"
                    "    actor_rollout_ref.rollout.multi_turn.completion_callback=my.cb \\\n"
                    "    trainer.n_gpus_per_node=8\n")
    return project, script


def test_the_calls_keys_are_evidence_when_its_config_layers_an_absent_verl(tmp_path: Path) -> None:
    project, script = _layered_project(tmp_path)
    _, resolution, _ = check_json(script, project)
    # completion_callback is in 0.4.1 and 0.5.0 only: the newest release with both keys.
    assert resolution["release"] == "0.5.0"
    assert "the keys of the call (its x_trainer.yaml layers verl's ppo_trainer)" in str(resolution["reason"])


# --- a verl submodule that is not checked out ---------------------------------------------------

def test_an_absent_verl_submodule_stands_in_and_keys_are_not_called_unknown(tmp_path: Path) -> None:
    project, script = _layered_project(tmp_path)
    script.write_text(script.read_text().replace("completion_callback=my.cb", "enable_tokenization_sanity_check=False"))
    _, _, findings = check_json(script, project)
    assert [f["key"] for f in findings if f["code"] == "VK601"] == [
        "actor_rollout_ref.rollout.multi_turn.enable_tokenization_sanity_check"]  # no submodule: judged
    write(project / ".gitmodules", '[submodule "verl"]\n\tpath = verl\n\turl = https://github.com/volcengine/verl.git\n')
    (project / "verl").mkdir()
    _, resolution, findings = check_json(script, project)
    assert not [f for f in findings if f["code"] == "VK601"]
    assert "git submodule at verl (.gitmodules), which is not checked out" in str(resolution["reason"])
    assert resolution["stand_in"] and "verl submodule at verl" in str(resolution["stand_in"])
    assert [f["code"] for f in findings if f["code"] == "VK609"] == ["VK609"]  # says the keys were not checked


# --- a wrapper that runs the script it is given -------------------------------------------------

WRAPPER_OF_ARGUMENT = """SCRIPT=$1
ray start --head
bash ${SCRIPT} 2>&1 | tee $LOG_DIR/main_ppo.log
"""


def test_a_wrapper_of_its_argument_is_not_a_launcher_whose_call_is_unread(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    wrapper = write(project / "launch.sh", WRAPPER_OF_ARGUMENT)
    code, _, findings = check_json(wrapper, project)
    assert [(f["code"], f["line"]) for f in findings] == [("VS730", 3)] and code == 0
    assert "runs the script its argument names" in str(findings[0]["message"])
    # Any other command whose script is not found keeps VS709: that one may hold the call.
    wrapper.write_text(WRAPPER_OF_ARGUMENT + "bash scripts/missing.sh\n")
    code, _, findings = check_json(wrapper, project)
    assert [f["code"] for f in findings] == ["VS709"] and code == 1
