"""When verl notices a finding (its stage), per finding where it depends on the settings, and the
rules added to agree with verl 0.7.0's own config load (VB210, VK610, VK611)."""

from __future__ import annotations

from pathlib import Path

from generator.config import config_from_overrides
from generator.config.build import build_config
from generator.judging import check_config, check_script
from generator.judging.examples import BASE
from generator.reading.shell import read_script

A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.rollout."


def _errors(overrides: list[str], version: str = "0.7.0", config_name: str = "ppo_megatron_trainer") -> dict:
    base = [o for o in BASE if "megatron" in config_name or ".megatron." not in o]
    config = config_from_overrides(base + overrides, version=version, config_name=config_name)
    return {f.code: f for f in check_config(config) if f.severity == "error"}


def test_world_divisibility_is_a_load_error_only_with_static_batching():
    static = _errors([f"{A}megatron.tensor_model_parallel_size=3"])["VP301"]
    dynamic = _errors([f"{A}megatron.tensor_model_parallel_size=3", f"{A}use_dynamic_bsz=True"])["VP301"]
    assert (static.stage, static.to_dict()["stage"]) == (None, "load")
    assert (dynamic.stage, dynamic.to_dict()["stage"]) == ("init", "init")


def test_rollout_checks_fail_at_worker_init_from_0_7_0():
    for version, stage in (("0.6.1", "load"), ("0.7.0", "init")):
        found = _errors([f"{R}expert_parallel_size=4"], version=version)
        assert found["VR502"].to_dict()["stage"] == stage, version
    assert _errors([f"{R}mode=sync"])["VR508"].to_dict()["stage"] == "init"


def test_critic_mini_against_the_deprecated_global_micro_uses_the_users_numbers():
    critic = ["algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=null"]
    finding = _errors(critic + ["critic.ppo_mini_batch_size=32", "critic.ppo_micro_batch_size=128",
                                "data.train_batch_size=128"])["VB210"]
    assert "32 is not divisible by critic.ppo_micro_batch_size 128" in finding.message
    assert [(e.key, e.new) for e in finding.fix.edits] == [("critic.ppo_micro_batch_size", 32)]
    # a dynamic-bsz critic skips the check, and a critic that is not used is not built
    assert "VB210" not in _errors(critic + ["critic.ppo_micro_batch_size=12", "critic.use_dynamic_bsz=True"])
    assert "VB210" not in _errors(["algorithm.adv_estimator=grpo", "critic.ppo_micro_batch_size_per_gpu=null",
                                   "critic.ppo_micro_batch_size=12"])


def test_fsdp_minimal_batch_is_the_gpu_count_whatever_sp_is():
    found = _errors(["trainer.n_gpus_per_node=3", f"{A}ulysses_sequence_parallel_size=2",
                     "data.train_batch_size=64", f"{A}ppo_mini_batch_size=16"], config_name="ppo_trainer")
    assert "not divisible by the 3 GPUs" in found["VB101"].message


def test_added_keys_under_dataclass_sections():
    assert "VK610" in _errors([f"+{A}megatron.no_such_field=1"])
    assert "VK610" in _errors([f"+{A}no_such_section.x=1"])
    assert "VK610" not in _errors([f"++{A}ppo_epochs=2"])  # ++ on an existing field just sets it
    assert "VK610" not in _errors([f"+{A}megatron.override_transformer_config.recompute_granularity=full"])
    # the rollout section carries a _target_ (RolloutConfig): the workers build it, and refuse the key
    assert "VK610" in _errors([f"+{R}no_such_field=1"])
    assert "VK610" not in _errors([f"+{R}engine_kwargs.vllm.swap_space=4"])  # an open mapping of the dataclass
    assert "VK610" not in _errors([f"+{A}fsdp_config.mixed_precision.param_dtype=bf16"], config_name="ppo_trainer")
    assert "VK610" not in _errors([f"+{A}megatron.no_such_field=1"], version="0.5.0")


_CALL = ("#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path={path} --config-name=my_grpo "
         "trainer.n_gpus_per_node=8\n")


def _tree(root: Path) -> None:
    """A verl checkout's config folders (no Python files, like the shared config trees)."""
    (root / "verl" / "trainer" / "config").mkdir(parents=True)
    (root / "verl" / "trainer" / "config" / "my_grpo.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\n")
    (root / "recipe" / "mine" / "config").mkdir(parents=True)
    (root / "recipe" / "mine" / "config" / "my_grpo.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\n")


def _vk611(root: Path, path: str, script_dir: Path) -> list:
    script = read_script(_CALL.format(path=path).encode(), str(script_dir / "run.sh"))
    results = check_script(script, version="0.7.0", config_root=str(root))
    return [f for _inv, _cfg, findings in results for f in findings if f.code == "VK611"]


def test_relative_config_path_follows_hydra_not_the_script_folder(tmp_path):
    _tree(tmp_path)
    script_dir = tmp_path / "recipe" / "mine"
    # next to the script, but Hydra looks in verl/trainer/: refused at compose
    (script_dir / "my_configs").mkdir()
    (script_dir / "my_configs" / "my_grpo.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\n")
    (missing,) = _vk611(tmp_path, "my_configs", script_dir)
    assert missing.severity == "error" and missing.to_dict()["stage"] == "load"
    assert f"{tmp_path}/verl/trainer/my_configs does not exist" in missing.message
    assert '"$(pwd)/my_configs"' in missing.message
    assert _vk611(tmp_path, "config", script_dir) == []  # verl/trainer/config/my_grpo.yaml
    invocation = read_script(_CALL.format(path="config").encode(), str(script_dir / "run.sh")).invocations[0]
    config = build_config(invocation, version="0.7.0", script_dir=str(script_dir), config_root=str(tmp_path))
    assert config.relative_config_path[:2] == ("config", "found")
    assert config.relative_config_path[2] == str(tmp_path / "verl" / "trainer" / "config")


def test_relative_config_path_of_a_recipe_entry_is_a_warning_when_only_its_package_was_seen(tmp_path):
    _tree(tmp_path)
    text = _CALL.replace("verl.trainer.main_ppo", "recipe.mine.main").format(path="conf")
    script = read_script(text.encode(), str(tmp_path / "run.sh"))
    results = check_script(script, version="0.7.0", config_root=str(tmp_path))
    (finding,) = [f for _i, _c, fs in results for f in fs if f.code == "VK611"]
    assert finding.severity == "warning" and "recipe/mine/conf" in finding.message
    # with the entry file itself present, the folder is sure
    (tmp_path / "recipe" / "mine" / "main.py").write_text("")
    results = check_script(script, version="0.7.0", config_root=str(tmp_path))
    assert [f.severity for _i, _c, fs in results for f in fs if f.code == "VK611"] == ["error"]
