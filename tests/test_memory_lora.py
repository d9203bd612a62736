"""LoRA in the Megatron memory model (issue 32): with actor_rollout_ref.model.lora.rank > 0 the base
is frozen, so Megatron's grad buffer and distributed optimizer hold only the adapters; the bf16 base
stays, and a critic (a full model of its own) keeps its whole state."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from generator.config import build_config
from generator.layout.hardware import gpu_spec
from generator.library.convert import recipe_memory_setup
from generator.library.store import load_library
from generator.model import find_model
from generator.model.params import megatron_lora_share, total_params
from generator.plan.memory import MemorySetup, evaluate_memory
from generator.plan.script_setup import memory_setup_from_config
from generator.script.extract import trainer_call
from generator.reading.shell import read_launch

LIBRARY = load_library()


def _terms(setup: MemorySetup, phase: str = "update") -> dict[str, float]:
    report = evaluate_memory(setup)
    stage = report.stages[0]
    return {t.name: t.gib for t in next(p for p in stage.phases if p.phase == phase).terms}


def test_the_adapter_share_counts_rank_times_in_plus_out_of_each_targeted_linear():
    m = find_model("qwen2-7b")  # dense: linear_qkv, linear_proj, linear_fc1 (gate+up), linear_fc2
    h, q, kv, ffn = m.hidden_size, m.num_attention_heads * m.head_dim, m.num_kv_heads * m.head_dim, m.ffn_hidden_size
    per_layer = (h + q + 2 * kv) + (q + h) + (h + 2 * ffn) + (ffn + h)
    dense, experts = megatron_lora_share(m, 8)
    assert dense == pytest.approx(8 * per_layer * m.num_layers / total_params(m)) and experts == 0
    assert megatron_lora_share(m, 0) == (0.0, 0.0)
    moe_dense, moe_experts = megatron_lora_share(find_model("qwen3-30b-a3b"), 32)
    assert 0 < moe_dense < 0.05 and 0 < moe_experts < 0.1  # routed experts' linears are adapted too


def test_lora_drops_the_frozen_bases_grads_and_optimizer_state():
    recipe = LIBRARY.get("verl-qwen3-30b-a3b-grpo-lora-8gpu")
    with_lora = recipe_memory_setup(recipe)
    assert with_lora.workload.lora_rank == 32  # read from the recipe's actor_rollout_ref.model.lora.rank
    full = replace(with_lora, workload=replace(with_lora.workload, lora_rank=0))
    lora_terms, full_terms = _terms(with_lora), _terms(full)
    dense, experts = megatron_lora_share(with_lora.model, 32)
    assert lora_terms["grads"] < full_terms["grads"] * max(dense, experts) * 1.01  # only the adapters' grads
    assert lora_terms["optimizer"] < full_terms["optimizer"] * max(dense, experts) * 1.01
    assert full_terms["weights"] < lora_terms["weights"] < full_terms["weights"] * (1 + max(dense, experts))
    assert evaluate_memory(with_lora).fits and not evaluate_memory(full).fits  # 94.8 GiB before LoRA was read


def test_a_critic_keeps_its_whole_state_beside_a_lora_actor():
    recipe = LIBRARY.get("verl-qwen2-7b-ppo-8gpu")
    setup = recipe_memory_setup(recipe)
    assert setup.workload.has_critic and setup.workload.lora_rank == 0
    lora = replace(setup, workload=replace(setup.workload, lora_rank=64))
    for phase in ("update", "rollout", "log_prob"):
        assert _terms(lora, phase).get("critic", 0.0) == pytest.approx(_terms(setup, phase).get("critic", 0.0))
    assert _terms(lora)["grads"] < _terms(setup)["grads"] / 5


SCRIPT = r"""#!/bin/bash
python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer' \
    algorithm.adv_estimator=grpo \
    data.train_batch_size=64 data.max_prompt_length=512 data.max_response_length=512 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.model.lora.rank=16 \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def test_a_scripts_lora_rank_reaches_the_memory_model(tmp_path: Path):
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    call = trainer_call(read_launch(str(path)))
    assert call is not None
    setup = memory_setup_from_config(build_config(call.invocation, version="0.7.0"), gpu=gpu_spec("h100")).setup
    assert setup is not None and setup.workload.lora_rank == 16
    plain = path.read_text().replace("    actor_rollout_ref.model.lora.rank=16 \\\n", "")
    path.write_text(plain)
    call = trainer_call(read_launch(str(path)))
    assert call is not None
    setup = memory_setup_from_config(build_config(call.invocation, version="0.7.0"), gpu=gpu_spec("h100")).setup
    assert setup is not None and setup.workload.lora_rank == 0
