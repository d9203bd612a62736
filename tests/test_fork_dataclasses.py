"""Read the fork's code for its dataclass fields (issue 34): a `+key` the project's own copy of the
dataclass declares is a field, not an error (VK610); one it lacks fails on the fork's own evidence."""

from __future__ import annotations

from pathlib import Path

from generator.judging import check_script
from generator.schema.fork_dataclasses import fork_fields
from generator.schema.resolution import resolve_script
from generator.reading.shell.script_reader import read_script

YAML = """actor_rollout_ref:
  actor:
    _target_: verl.workers.config.FSDPActorConfig
    strategy: fsdp
    ppo_mini_batch_size: 16
  rollout:
    name: vllm
    n: 1
data:
  train_batch_size: 64
trainer:
  n_gpus_per_node: 8
  nnodes: 1
"""

ACTOR = """from dataclasses import dataclass
from typing import ClassVar


@dataclass
class ActorConfig:
    _frozen: ClassVar[bool] = True
    strategy: str = "fsdp"
    ppo_mini_batch_size: int = 16


@dataclass
class FSDPActorConfig(ActorConfig):
    my_fork_knob: int = 0
"""


def _fork(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    files = {".git/HEAD": "", "verl/trainer/config/ppo_trainer.yaml": YAML, "verl/version/version": "0.6.1\n",
             "verl/workers/config/actor.py": ACTOR,
             "run.sh": "python3 -m verl.trainer.main_ppo +actor_rollout_ref.actor.my_fork_knob=1 "
                       "+actor_rollout_ref.actor.strategy_x=2 +actor_rollout_ref.actor._frozen=1\n"}
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project


def test_fields_of_the_forks_class_include_its_bases_and_not_class_vars(tmp_path: Path) -> None:
    package = _fork(tmp_path) / "verl"
    assert fork_fields(package, "verl.workers.config.FSDPActorConfig") == {
        "strategy", "ppo_mini_batch_size", "my_fork_knob"}
    assert fork_fields(package, "verl.workers.config.NoSuchConfig") is None
    assert fork_fields(package, "other.workers.config.FSDPActorConfig") is None  # not this package's


def test_a_key_the_forks_own_dataclass_declares_is_not_reported(tmp_path: Path) -> None:
    script_path = _fork(tmp_path) / "run.sh"
    script = read_script(script_path.read_bytes(), str(script_path))
    results = check_script(script, resolution=resolve_script(script, str(script_path)))
    vk610 = {f.key: f for _i, _c, findings in results for f in findings if f.code == "VK610"}
    assert "actor_rollout_ref.actor.my_fork_knob" not in vk610  # verl 0.6.1's class lacks it; the fork's has it
    found = vk610["actor_rollout_ref.actor.strategy_x"]
    assert found.severity == "error" and "the project's own FSDPActorConfig" in found.message
    assert "actor_rollout_ref.actor._frozen" in vk610  # a ClassVar is no field


# --- batch-chain semantics: an actor without an epoch loop ----------------------------------------

# Dynamic batches: verl skips its mini <= train check (VB102), so VB106 alone says what the update does.
CHAIN_YAML = YAML.replace("    ppo_mini_batch_size: 16\n", "    ppo_mini_batch_size: 128\n    ppo_epochs: 4\n"
                          "    ppo_micro_batch_size_per_gpu: 1\n    use_dynamic_bsz: true\n"
                          "    ppo_max_token_len_per_gpu: 16384\n")


def _chain_fork(tmp_path: Path, actor_code: str) -> list[str]:
    project = _fork(tmp_path)
    (project / "verl/trainer/config/ppo_trainer.yaml").write_text(CHAIN_YAML)
    (project / "verl/workers/actor").mkdir(parents=True)
    (project / "verl/workers/actor/dp_actor.py").write_text(actor_code)
    (project / "run.sh").write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    script = read_script((project / "run.sh").read_bytes(), str(project / "run.sh"))
    results = check_script(script, resolution=resolve_script(script, str(project / "run.sh")))
    return [f.message for _i, _c, findings in results for f in findings if f.code == "VB106"]


def test_an_actor_with_an_epoch_loop_updates_once_per_epoch(tmp_path: Path) -> None:
    messages = _chain_fork(tmp_path, "def update_policy(self, data):\n"
                                     "    for _ in range(self.config.ppo_epochs):\n        pass\n")
    assert messages and "4 updates per step" in messages[0]


def test_an_actor_without_an_epoch_loop_updates_once(tmp_path: Path) -> None:
    messages = _chain_fork(tmp_path, "def update_policy(self, data):\n    for batch in data:\n        pass\n")
    assert messages and "one update per step" in messages[0]


# --- a fork that removes its own fields from the section before the class is built ---------------

REMOVER = '''from omegaconf import open_dict


class Trainer:
    def __init__(self, config):
        rollout_config = config.actor_rollout_ref.rollout
        self.knob = rollout_config.get("strategy_x", 0)
        own_fields = ["strategy_x", "other_knob"]
        with open_dict(config):
            for field in own_fields:
                if field in rollout_config:
                    del rollout_config[field]
            for name in list(config.actor_rollout_ref.actor.keys()):
                if name.startswith("myfork_"):
                    del config.actor_rollout_ref.actor[name]
            config.critic.pop("critic_knob", None)
            del self.cache["not_a_config"]
            kwargs.pop("not_a_config_either")
'''


def test_the_fields_a_forks_trainer_deletes_are_read_by_name_or_prefix(tmp_path: Path) -> None:
    from generator.reading.fork_code import read_fork_code

    folder = tmp_path / "trainer"
    folder.mkdir()
    (folder / "fork_trainer.py").write_text(REMOVER)
    code = read_fork_code([folder])
    assert {(r.name, r.prefix) for r in code.removed} == {
        ("strategy_x", False), ("other_knob", False), ("myfork_", True), ("critic_knob", False)}
    assert code.removal_of("myfork_depth") is not None and code.removal_of("strategy_x") is not None
    assert code.removal_of("not_a_config") is None and code.removal_of("not_a_config_either") is None
    assert code.removal_of("strategy") is None  # a name, not a prefix


def test_a_key_the_forks_trainer_removes_before_the_build_is_info(tmp_path: Path) -> None:
    project = _fork(tmp_path)
    (project / "verl/trainer/fork_trainer.py").write_text(REMOVER.replace("rollout_config = config.actor_rollout_ref"
                                                                          ".rollout", "rollout_config = config"
                                                                          ".actor_rollout_ref.actor"))
    script_path = project / "run.sh"
    script = read_script(script_path.read_bytes(), str(script_path))
    results = check_script(script, resolution=resolve_script(script, str(script_path)))
    vk610 = {f.key: f for _i, _c, findings in results for f in findings if f.code == "VK610"}
    found = vk610["actor_rollout_ref.actor.strategy_x"]
    assert found.severity == "info" and "fork_trainer.py:" in found.message and "removes 'strategy_x'" in found.message
    assert vk610["actor_rollout_ref.actor._frozen"].severity == "error"  # not removed: still fails
