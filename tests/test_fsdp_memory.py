"""The FSDP actor's memory model (plan/fsdp_memory.py): each term follows the knob verl's FSDP
workers read, and `gen check --gpu` / `gen fix --unsafe --gpu` judge and repair FSDP scripts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app
from generator.model import find_model
from generator.model.params import total_params
from generator.plan.fsdp_memory import FsdpKnobs, fsdp_phases, fsdp_verdict

runner = CliRunner()
QWEN7 = find_model("Qwen2.5-7B")
BASE = FsdpKnobs(gpus=8, gpu_memory_gib=79.6, prompt_len=1024, response_len=1024, micro_batch=4,
                 per_rank_mini=32, per_rank_batch=64)


def _term(knobs: FsdpKnobs, phase: str, name: str) -> float:
    phases = fsdp_phases(QWEN7, knobs)
    return sum(t.gib for t in phases[phase].terms if t.name == name)


def test_states_are_sharded_over_the_fsdp_group_and_hsdp_replicates() -> None:
    assert QWEN7 is not None
    eight = _term(BASE, "update", "optimizer")
    assert abs(_term(replace(BASE, gpus=16), "update", "optimizer") - eight / 2) < 0.01
    # fsdp_size 4 on 16 GPUs shards over 4 (HSDP: 4 replicas): the 4-GPU shard.
    assert abs(_term(replace(BASE, gpus=16, fsdp_size=4), "update", "optimizer") - eight * 2) < 0.01
    # fp32 master in the actor: 4 B weights + 4 B grads + 8 B Adam per parameter, ÷ 8.
    n = total_params(QWEN7)
    assert abs(eight - n * 8 / 8 / 2**30) < 0.01


def test_offload_frees_the_state_outside_the_update_only() -> None:
    on = replace(BASE, param_offload=True, optimizer_offload=True)
    assert _term(on, "rollout", "actor-weights") == 0 and _term(on, "rollout", "optimizer") == 0
    assert _term(BASE, "rollout", "optimizer") > 0
    assert fsdp_phases(QWEN7, on)["update"].gib == fsdp_phases(QWEN7, BASE)["update"].gib
    # FSDP2's offload policy keeps them on the host through the update as well.
    policy = replace(on, strategy="fsdp2", offload_policy=True)
    assert fsdp_phases(QWEN7, policy)["update"].gib < fsdp_phases(QWEN7, BASE)["update"].gib


def test_lora_trains_only_the_adapters_and_has_no_reference_copy() -> None:
    lora = replace(BASE, lora_rank=32)
    assert _term(lora, "update", "grads") < _term(BASE, "update", "grads") / 50
    assert _term(lora, "update", "weights") == _term(BASE, "update", "weights")  # the base stays in model_dtype
    assert _term(replace(lora, model_dtype_bytes=2), "update", "weights") * 2 == _term(lora, "update", "weights")


def test_ulysses_checkpointing_and_token_budgets_scale_the_activations() -> None:
    full = _term(BASE, "update", "activations")
    assert abs(_term(replace(BASE, ulysses=2), "update", "activations") - full / 2) < 0.01
    assert _term(replace(BASE, gradient_checkpointing=False), "update", "activations") > 5 * full
    budget = replace(BASE, use_dynamic_bsz=True, token_budget=4096)
    assert abs(_term(budget, "update", "activations") - full / 2) < 0.01  # 4096 tokens vs 4 × 2048


def test_a_vision_tower_counts_in_the_weights() -> None:
    vl = find_model("Qwen2.5-VL-7B")
    assert vl is not None and vl.vision_params > 0
    assert total_params(vl) - total_params(QWEN7) >= vl.vision_params - 10**6


def test_packed_micro_batches_give_the_length_that_fits() -> None:
    big = replace(BASE, gpus=1, micro_batch=64, per_rank_mini=256, per_rank_batch=256)
    verdict = fsdp_verdict(QWEN7, big)
    assert not verdict.fits and verdict.fill_limit == 0.0  # 7B full training on one GPU: never fits
    lora = replace(big, lora_rank=32)
    verdict = fsdp_verdict(QWEN7, lora)
    assert verdict.length_dependent and 0 < (verdict.fill_limit or 0) < 1
    padded = fsdp_verdict(QWEN7, replace(lora, remove_padding=False))
    assert not padded.fits and padded.fill_limit is None  # padded to the maximum lengths: certain


# Qwen2.5-14B with the FSDP actor on 8 × H800, log-probs of 8 padded 10k-token sequences per GPU:
# the shape of verl #2828 (CUDA OOM inside entropy_from_logits in compute_log_prob).
SCRIPT = """\
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=128 data.max_prompt_length=2048 data.max_response_length=8192 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct \\
    actor_rollout_ref.model.use_remove_padding=False \\
    actor_rollout_ref.model.enable_gradient_checkpointing=True \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.actor.fsdp_config.param_offload=True \\
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=8 \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \\
    actor_rollout_ref.rollout.n=8 \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=1
"""


def test_check_and_fix_an_fsdp_script(tmp_path: Path) -> None:
    """After verl#2828: the log-prob pass runs out of memory; the fix lowers its micro batch."""
    path = tmp_path / "run_qwen32b_fsdp.sh"
    path.write_text(SCRIPT)
    args = ["--gpu", "h800", "--verl-version", "0.5.0"]
    result = runner.invoke(app, ["check", str(path), *args, "--select", "VM811"])
    assert result.exit_code == 1, result.stdout
    assert "VM811 error" in result.stdout and "log_prob needs" in result.stdout
    assert "pipeline stage" not in result.stdout
    fixed = runner.invoke(app, ["fix", str(path), "--unsafe", "--write", *args])
    assert fixed.exit_code in (0, 1), fixed.stdout
    assert "rollout.log_prob_micro_batch_size_per_gpu=8" not in path.read_text()
    again = runner.invoke(app, ["check", str(path), *args, "--select", "VM811"])
    assert again.exit_code == 0, again.stdout


def test_an_fsdp_script_without_a_known_model_says_why(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT.replace("Qwen/Qwen2.5-14B-Instruct", "/data/my-private-model"))
    result = runner.invoke(app, ["check", str(path), "--gpu", "h800", "--verl-version", "0.5.0",
                                 "--select", "VM812"])
    assert "VM812" in result.stdout and "my-private-model" in result.stdout
