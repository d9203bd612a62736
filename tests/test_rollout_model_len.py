"""VR506 compares max_num_batched_tokens with the max_model_len verl hands vLLM: the sync rollout
(vllm_rollout_spmd.py, 0.7.0 dev trees) passes rollout.max_model_len or prompt + response, the
async server the model's context length. Every script here is written by the test."""

from __future__ import annotations

from generator.judging import check_script
from generator.reading.shell.script_reader import read_script


def _vr506(mode: str, tokens: int = 8192, version: str = "0.7.0+b178a3c") -> str | None:
    text = f"""python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B \\
    data.max_prompt_length=512 data.max_response_length=512 \\
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode={mode} \\
    actor_rollout_ref.rollout.enable_chunked_prefill=False \\
    actor_rollout_ref.rollout.max_num_batched_tokens={tokens} \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""
    results = check_script(read_script(text, "run.sh"), version=version)
    return next((f.message for _i, _c, findings in results for f in findings if f.code == "VR506"), None)


def test_the_sync_rollout_passes_prompt_plus_response() -> None:
    assert _vr506("sync") is None  # 512 + 512 <= 8192: vllm_rollout_spmd's own check passes


def test_the_async_server_passes_the_model_context() -> None:
    message = _vr506("async")
    assert message is not None and "max_model_len 32768" in message


def test_the_sync_rollout_still_reports_a_budget_below_prompt_plus_response() -> None:
    message = _vr506("sync", tokens=768)
    assert message is not None and "max_model_len 1024" in message and "512 + 512" in message
