"""Launch failures verl users reported, rebuilt as scripts we write (each test names the public
issue or example it follows), caught by `gen check` against the release the user ran (issue 25)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app

runner = CliRunner()

HEAD = "python3 -m verl.trainer.main_ppo \\\n"
BASE = [
    "algorithm.adv_estimator=grpo",
    "data.train_batch_size=32", "data.max_prompt_length=512", "data.max_response_length=512",
    "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.n=4",
    "trainer.n_gpus_per_node=8", "trainer.nnodes=1",
]


def _script(tmp_path: Path, overrides: list[str], *, before: str = "", name: str = "run.sh") -> Path:
    path = tmp_path / name
    path.write_text("#!/usr/bin/env bash\nset -x\n" + before + HEAD
                    + " \\\n".join("    " + o for o in [*BASE, *overrides]) + "\n")
    return path


def _check(path: Path, version: str, *extra: str) -> str:
    result = runner.invoke(app, ["check", str(path), "--verl-version", version, *extra])
    assert result.exit_code in (0, 1), result.stdout
    return result.stdout


def test_a_field_the_model_dataclass_lacks(tmp_path: Path) -> None:
    """verl's own examples/sglang_multiturn/run_qwen2.5-0.5b_gsm8k_multiturn_w_interaction.sh @ v0.6.0
    sets +actor_rollout_ref.model.enable_activation_offloading=True; HFModelConfig at v0.6.0 has no
    such field, and the rollout worker builds the model section from its _target_."""
    path = _script(tmp_path, ["+actor_rollout_ref.model.enable_activation_offloading=True"])
    out = _check(path, "0.6.0", "--select", "VK610")
    assert "VK610 error" in out and "HFModelConfig" in out and "enable_activation_offloading" in out
    # a field the dataclass has but the YAML leaves out is accepted with '+'
    ok = _script(tmp_path, ["+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=bf16"], name="ok.sh")
    assert "VK610" not in _check(ok, "0.6.0", "--select", "VK610")
    # before 0.6.0 the model section is a plain mapping
    assert "VK610" not in _check(path, "0.5.0", "--select", "VK610")
