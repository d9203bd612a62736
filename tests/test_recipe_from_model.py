"""`gen recipe --from`: the model is recognised from the script's model path, config and layout
(issue 22: a DeepSeek-V3 script was taken for DeepSeek-LLM-7B, verl's placeholder default), and
the `+` the target release needs is kept (a 0.6 DAPO script's own check then failed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

CALL = """#!/bin/bash
set -x
{pre}
python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=512 data.max_prompt_length=1024 data.max_response_length=1024 \\
    actor_rollout_ref.model.path="$LLM" \\
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size={pp} \\
    actor_rollout_ref.actor.megatron.expert_model_parallel_size={ep} \\
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size={rtp} \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1 \\
    trainer.n_gpus_per_node=8 trainer.nnodes={nodes}{extra}
"""


def recipe_from(tmp_path: Path, *, pre: str, pp: int = 1, ep: int = 1, nodes: int = 1, extra: str = "",
                rtp: int = 4, options: tuple[str, ...] = ()):
    legacy = tmp_path / "legacy.sh"
    legacy.write_text(CALL.format(pre=pre, pp=pp, ep=ep, nodes=nodes, extra=extra, rtp=rtp))
    return CliRunner().invoke(app, ["recipe", "--from", str(legacy), "-o", "-", "--verl-version", "0.7.0", *options])


def test_an_alias_in_a_placeholder_path_and_expert_parallelism_name_deepseek_v3(tmp_path: Path) -> None:
    result = recipe_from(tmp_path, pre='LLM="<path_to_dsv3_config>"', ep=32, nodes=4, rtp=16)
    assert result.exit_code == 0, result.output
    assert "recognised from 'dsv3' in the model path" in result.stdout
    assert "DeepSeek-V3" in result.output and "DeepSeek-LLM-7B" not in result.output


def test_a_hub_id_in_the_script_names_the_model(tmp_path: Path) -> None:
    pre = "# huggingface-cli download Qwen/Qwen2.5-7B-Instruct --local-dir /data/ckpt\nLLM=/data/ckpt"
    result = recipe_from(tmp_path, pre=pre)
    assert result.exit_code == 0, result.output
    assert "recognised from the hub id Qwen/Qwen2.5-7B-Instruct in the script" in result.stdout


def test_a_dense_model_does_not_fit_expert_parallelism(tmp_path: Path) -> None:
    result = recipe_from(tmp_path, pre="LLM=/models/Qwen2.5-7B-Instruct", ep=8, nodes=8)
    assert result.exit_code == 2
    assert "no named model fits the script's layout" in result.output and "EP 8 needs a mixture of experts" in result.output
    assert "pass --model" in result.output


def test_verl_default_path_is_no_evidence(tmp_path: Path) -> None:
    result = recipe_from(tmp_path, pre='LLM="<path_to_the_model>"')
    assert result.exit_code == 2 and "DeepSeek-LLM-7B" not in result.output
    assert "names no packaged model" in result.output


def test_the_plus_the_target_release_needs_is_kept(tmp_path: Path) -> None:
    extra = " \\\n    +actor_rollout_ref.actor.megatron.override_transformer_config.my_own_knob=1"
    result = recipe_from(tmp_path, pre="LLM=/models/Qwen2.5-7B-Instruct", extra=extra)
    assert result.exit_code == 0, result.output
    assert "+actor_rollout_ref.actor.megatron.override_transformer_config.my_own_knob=" in result.stdout
    written = tmp_path / "out.sh"
    written.write_text(result.stdout)
    check = CliRunner().invoke(app, ["check", str(written), "--format", "concise", "--select", "VK"])
    assert "my_own_knob" not in check.output, check.output


@pytest.mark.corpus
def test_the_0_6_dapo_script_renders_a_script_its_own_check_passes(corpus_dir: Path, tmp_path: Path) -> None:
    legacy = corpus_dir / "scripts" / "v0.6.0" / "recipe" / "dapo" / "test_dapo_dspk_671b_megatron_96gb.sh"
    out = tmp_path / "dapo.sh"
    result = CliRunner().invoke(app, ["recipe", "--from", str(legacy), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=" in out.read_text()
    check = CliRunner().invoke(app, ["check", str(out), "--format", "concise", "--severity", "error"])
    assert check.exit_code == 0, check.output
