"""verl 0.9's asserts where its engine enforces them (issue 34): each test a script the engine
stops, judged on the release that runs it."""

from __future__ import annotations

from generator.judging import check_script
from generator.reading.shell.script_reader import read_script


def _found(text: str, version: str = "0.9.1") -> dict[str, tuple[str, str]]:
    results = check_script(read_script(text, "run.sh"), version=version)
    return {f.code: (f.severity, f.message) for _i, _c, findings in results for f in findings}


def _dynamic(cap: int) -> str:
    return f"""python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=64 data.max_prompt_length=1024 data.max_response_length=4096 \\
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.use_dynamic_bsz=True \\
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu={cap} \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def test_engine_token_cap_below_the_response_length_is_an_error() -> None:
    severity, message = _found(_dynamic(4000))["VD401"]
    assert severity == "error" and "truncated at max_response_length 4096" in message


def test_engine_token_cap_below_prompt_plus_response_is_a_warning() -> None:
    severity, message = _found(_dynamic(4608))["VD401"]
    assert severity == "warning" and "longer than 4608 tokens" in message


def test_engine_token_cap_that_holds_a_sequence_passes() -> None:
    assert "VD401" not in _found(_dynamic(5120))


def test_legacy_workers_compare_the_padded_length() -> None:
    severity, _ = _found(_dynamic(4608), version="0.6.1")["VD401"]
    assert severity == "error"


def _router(mode: str, bypass: str) -> str:
    return f"""python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    actor_rollout_ref.actor.megatron.router_replay.mode={mode} \\
    algorithm.rollout_correction.bypass_mode={bypass}
"""


def test_router_replay_r2_with_bypass_mode_is_refused_on_091() -> None:
    assert _found(_router("R2", "True"))["VX918"][0] == "error"
    assert "VX918" not in _found(_router("R3", "True"))
    assert "VX918" not in _found(_router("R2", "False"))
    assert "VX918" not in _found(_router("R2", "True"), version="0.9.0")  # 0.9.0 does not check it


def _rollout_dp(tp: int, dp: int) -> str:
    return f"""python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.tensor_model_parallel_size={tp} \\
    actor_rollout_ref.rollout.data_parallel_size={dp} \\
    trainer.n_gpus_per_node=8 trainer.nnodes=4
"""


def test_vllm_rollout_dp_with_a_tp_above_a_node_is_an_error() -> None:
    assert _found(_rollout_dp(16, 2))["VR512"][0] == "error"
    assert "VR512" not in _found(_rollout_dp(8, 2))
    assert "VR512" not in _found(_rollout_dp(16, 1))  # one replica may span nodes (VR504's concern)


def test_batched_tokens_below_model_len_is_info_on_091_where_verl_raises_them() -> None:
    text = """python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.enable_chunked_prefill=False \\
    actor_rollout_ref.rollout.max_num_batched_tokens=4096 \\
    actor_rollout_ref.rollout.max_model_len=8192
"""
    severity, message = _found(text)["VR506"]
    assert severity == "info" and "raises max_num_batched_tokens to 8192 itself" in message
    assert _found(text, version="0.9.0")["VR506"][0] == "warning"


def test_fsdp_keys_megatron_never_reads_are_info() -> None:
    text = """python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    actor_rollout_ref.model.enable_gradient_checkpointing=True \\
    actor_rollout_ref.actor.use_torch_compile=False
"""
    severity, message = _found(text)["VX921"]
    assert severity == "info" and "enable_gradient_checkpointing=True has no effect" in message
    assert "use_torch_compile" not in message  # False asks for nothing


def test_router_replay_mode_is_checked_where_091_keeps_it() -> None:
    text = """python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    actor_rollout_ref.actor.megatron.router_replay.mode=R4
"""
    severity, message = _found(text)["VX912"]
    assert severity == "error" and "router_replay.mode=R4" in message
    assert "VX912" not in _found(text.replace("R4", "R3"))
