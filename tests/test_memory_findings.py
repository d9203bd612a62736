"""A predicted OOM as a finding (VM811, `gen check --gpu`) with the cheapest memory knob that
fits, in the documented order of cost, applied by `gen fix --unsafe --gpu`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app
from generator.layout.hardware import gpu_spec
from generator.model import find_model
from generator.layout.candidate import Candidate
from generator.plan.memory import MemorySetup, evaluate_memory
from generator.plan.memory_check import smallest_fix
from generator.plan.workload import Workload

runner = CliRunner()

# Qwen2.5-32B on 8 × H20, TP8 (DP 1), all offload, micro 1: the shape of verl #3124's script.
SCRIPT = """\
python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer.yaml' \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=512 data.max_prompt_length=2048 data.max_response_length=6144 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-32B \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8 \\
    actor_rollout_ref.actor.megatron.param_offload=True \\
    actor_rollout_ref.actor.megatron.grad_offload=True \\
    actor_rollout_ref.actor.megatron.optimizer_offload=True \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=8 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \\
    actor_rollout_ref.rollout.n=5 \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=1
"""


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "run_qwen32b.sh"
    path.write_text(SCRIPT)
    return path


def test_check_reports_the_predicted_oom_only_when_a_gpu_is_named(tmp_path):
    path = str(_script(tmp_path))
    result = runner.invoke(app, ["check", path, "--gpu", "h20", "--verl-version", "0.7.0", "--select", "VM811"])
    assert result.exit_code == 1
    assert "VM811" in result.stdout and "optimizer_step on pipeline stage 0" in result.stdout
    assert "GiB over" in result.stdout and "[*]" in result.stdout  # a fix is offered
    quiet = runner.invoke(app, ["check", path, "--verl-version", "0.7.0", "--select", "VM811"])
    assert quiet.exit_code == 0 and "VM811" not in quiet.stdout
    bigger = runner.invoke(app, ["check", path, "--gpu", "h200", "--verl-version", "0.7.0", "--select", "VM811"])
    assert bigger.exit_code == 0


def test_fix_applies_the_cheapest_knob_that_fits_and_the_check_then_passes(tmp_path):
    path = _script(tmp_path)
    result = runner.invoke(app, ["fix", str(path), "--gpu", "h20", "--unsafe", "--write", "--verl-version", "0.7.0",
                                 "--select", "VM811"])
    assert result.exit_code == 0, result.stdout + str(result.stderr)
    text = path.read_text()
    # Param and optimizer offload are on already and do not lower the step: the CPU optimizer does.
    assert "+actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True" in text
    assert "optimizer_offload_fraction=0.25" in text
    after = runner.invoke(app, ["check", str(path), "--gpu", "h20", "--verl-version", "0.7.0", "--select", "VM811"])
    assert after.exit_code == 0, after.stdout
    assert runner.invoke(app, ["fix", str(path), "--gpu", "nope"]).exit_code == 2


def _setup(**knobs):
    cand = Candidate(tp=2, pp=2, rollout_tp=2, micro_batch_per_gpu=4, gpu_memory_utilization=0.75, **knobs)
    work = Workload(gpus=8, gpu_memory_gib=gpu_spec("h100").memory_gib, prompt_len=1024, response_len=1024,
                    per_rank_mini_batch=640)
    return MemorySetup(find_model("qwen2-7b"), cand, work)


def test_the_ladder_starts_with_the_cheapest_knob():
    setup = _setup()
    assert not evaluate_memory(setup).fits  # the rollout claim next to resident Megatron state
    change = smallest_fix(setup)
    assert change is not None and change.words.startswith("turn on param_offload")
    assert dict(change.edits) == {"actor_rollout_ref.actor.megatron.param_offload": True,
                                  "actor_rollout_ref.actor.megatron.grad_offload": True}
    assert evaluate_memory(MemorySetup(setup.model, change.knobs, setup.workload)).fits


def test_no_fix_when_even_every_knob_does_not_fit():
    setup = MemorySetup(find_model("qwen2.5-72b"), Candidate(tp=1, pp=1, rollout_tp=8),
                        Workload(gpus=8, gpu_memory_gib=79.6, prompt_len=1024, response_len=1024,
                                 per_rank_mini_batch=64))
    assert smallest_fix(setup) is None


def test_a_call_that_cannot_be_predicted_says_why(tmp_path):
    path = tmp_path / "unknown_model.sh"
    path.write_text(SCRIPT.replace("Qwen/Qwen2.5-32B", "my-org/secret-32b"))
    result = runner.invoke(app, ["check", str(path), "--gpu", "h20", "--verl-version", "0.7.0", "--select", "VM81"])
    assert result.exit_code == 0
    assert "VM812" in result.stdout and "not in the registry" in result.stdout and "VM811" not in result.stdout
    named = tmp_path / "config.json"
    named.write_text('{"hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 8, '
                     '"num_hidden_layers": 64, "vocab_size": 152064, "intermediate_size": 27648, '
                     '"model_type": "qwen2"}')
    known = runner.invoke(app, ["check", str(path), "--gpu", "h20", "--model-config", str(named),
                                "--verl-version", "0.7.0", "--select", "VM81"])
    assert known.exit_code == 1 and "VM811" in known.stdout and "VM812" not in known.stdout


def test_the_projects_gpu_setting_turns_the_memory_rules_on(tmp_path):
    _script(tmp_path)
    (tmp_path / ".verl-gen.toml").write_text('gpu = "h20"\n')
    path = str(tmp_path / "run_qwen32b.sh")
    result = runner.invoke(app, ["check", path, "--verl-version", "0.7.0", "--select", "VM811"])
    assert result.exit_code == 1 and "VM811" in result.stdout and "on h20" in result.stdout
    wider = runner.invoke(app, ["check", path, "--gpu", "h200", "--verl-version", "0.7.0", "--select", "VM811"])
    assert wider.exit_code == 0  # the command line wins over the project setting
