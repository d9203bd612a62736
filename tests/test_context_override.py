"""VM809 judges prompt + response against the context length verl's rollout reads: the model's,
unless the script raises it through the model's override_config, which verl applies to the HF
config first. Every script here is written by the test."""

from __future__ import annotations

import pytest

from generator.judging import check_script
from generator.reading.shell.script_reader import read_script

M = "actor_rollout_ref.model.override_config."


def _vm809(override: str, config: str = "ppo_trainer", version: str = "0.7.0") -> str | None:
    text = f"""python3 -m verl.trainer.main_ppo --config-name={config} \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-Math-7B {override} \\
    data.max_prompt_length=2048 data.max_response_length=8192 \\
    actor_rollout_ref.rollout.name=vllm trainer.n_gpus_per_node=8 trainer.nnodes=1
"""
    results = check_script(read_script(text, "run.sh"), version=version)
    return next((f.message for _i, _c, findings in results for f in findings if f.code == "VM809"), None)


def test_the_model_context_is_judged_without_an_override() -> None:
    message = _vm809("")
    assert message is not None and "max_position_embeddings 4096" in message


@pytest.mark.parametrize("config", ["ppo_trainer", "ppo_megatron_trainer"])
def test_an_override_that_holds_the_sequence_stands_it_down(config: str) -> None:
    assert _vm809(f"+{M}max_position_embeddings=32768", config) is None


def test_an_override_still_too_short_is_reported_with_its_value() -> None:
    message = _vm809(f"+{M}max_position_embeddings=8192")
    assert message is not None and "override_config max_position_embeddings 8192" in message


def test_before_070_megatron_reads_the_override_under_model_config_only() -> None:
    assert _vm809(f"+{M}max_position_embeddings=32768", "ppo_megatron_trainer", "0.4.1") is not None
    assert _vm809(f"+{M}model_config.max_position_embeddings=32768", "ppo_megatron_trainer", "0.4.1") is None
