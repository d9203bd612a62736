"""Settings a user left unfilled or carried over (issue 34): an empty model path, a credential that
is its own name, a critic warmup where no critic trains."""

from __future__ import annotations

from generator.judging import check_script
from generator.reading.shell.script_reader import read_script

BASE = """{before}python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator={estimator} \\
    data.train_batch_size=64 \\
    actor_rollout_ref.model.path=$MODEL_PATH \\
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=8 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \\
    critic.ppo_micro_batch_size_per_gpu=1 \\
    trainer.critic_warmup={warmup} \\
    trainer.logger='["console","wandb"]' \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def _found(before: str = "MODEL_PATH=Qwen/Qwen2.5-7B\n", estimator: str = "grpo",
           warmup: int = 0) -> dict[str, tuple[str, str]]:
    text = BASE.format(before=before, estimator=estimator, warmup=warmup)
    results = check_script(read_script(text, "run.sh"), version="0.9.1")
    return {f.code: (f.severity, f.message) for _i, _c, findings in results for f in findings}


def test_an_empty_model_path_is_reported() -> None:
    assert _found("MODEL_PATH=\n")["VX920"][0] == "warning"
    assert "VX920" not in _found()


def test_a_credential_that_is_its_own_name_is_a_placeholder() -> None:
    severity, message = _found("MODEL_PATH=Qwen/Qwen2.5-7B\nexport WANDB_API_KEY='API_KEY'\n")["VS714"]
    assert severity == "warning" and "WANDB_API_KEY='API_KEY'" in message
    assert "VS714" not in _found("MODEL_PATH=Qwen/Qwen2.5-7B\nexport WANDB_API_KEY=3f9a61c0e2\n")
    assert _found("MODEL_PATH=Qwen/Qwen2.5-7B\nexport WANDB_API_KEY=KEY\n")["VS714"][0] == "warning"
    # A setting whose value repeats the last word of its name is a value, not a placeholder.
    assert "VS714" not in _found("MODEL_PATH=Qwen/Qwen2.5-7B\nexport NCCL_DEBUG=DEBUG\n")


def test_critic_warmup_without_a_critic_trains_nothing_for_those_steps() -> None:
    severity, message = _found(warmup=5)["VX919"]
    assert severity == "warning" and "not updated before global step 5" in message
    assert "VX919" not in _found(estimator="gae", warmup=5)  # PPO's critic is what it warms up
    assert "VX919" not in _found(warmup=0)


def _placeholder_findings(override: str) -> list[str]:
    text = f"python3 -m verl.trainer.main_ppo data.train_batch_size=64 {override}\n"
    results = check_script(read_script(text, "run.sh"), version="0.9.1")
    return [f.message for _i, _c, findings in results for f in findings if f.code == "VS714"]


def test_tags_and_special_tokens_are_not_placeholders() -> None:
    # Hydra-quoted, as a script must write them for Hydra to parse the angle brackets
    assert not _placeholder_findings('"+actor_rollout_ref.rollout.stop_tag=\'</answer>\'"')
    assert not _placeholder_findings('"+actor_rollout_ref.rollout.stop_token=\'<|im_end|>\'"')
    assert not _placeholder_findings('"+data.think_start_tag=\'<think>\'"')  # a bare tag where the key names one
    assert _placeholder_findings('"actor_rollout_ref.model.path=\'<model>\'"')  # a bare <word> elsewhere is a blank
    assert _placeholder_findings('"+data.stop_tag=\'<your_path>\'"')


def test_a_tag_table_in_a_structured_value_is_not_a_placeholder() -> None:
    # A tag:colour configuration string: angle-bracketed words inside a structured value are tags.
    table = "export HIGHLIGHT_CONFIGS='<search>:0,0,255;</search>:0,0,255;<information>:255,0,0'\n"
    assert "VS714" not in _found("MODEL_PATH=Qwen/Qwen2.5-7B\n" + table)
    assert not _placeholder_findings('"+data.template=\'<think>:1;<answer>:2\'"')
    # A blank in a path, a whole value, or the head of a path list still is one.
    assert _placeholder_findings('"data.train_files=\'<data_dir>/train.parquet\'"')
    assert _placeholder_findings('"data.train_files=\'/mnt/<user>/train.parquet\'"')
    assert "VS714" in _found("MODEL_PATH=Qwen/Qwen2.5-7B\nexport PYTHONPATH='<verl_root>':$PYTHONPATH\n")
    assert "VS714" in _found("MODEL_PATH=Qwen/Qwen2.5-7B\nexport JUDGE_ADDRESS=\"<JUDGE_SERVER_IP>:8000\"\n")


def test_placeholder_shapes_in_paths_and_phrases_are_reported() -> None:
    assert _placeholder_findings("data.train_files=/data/Your_custom_Training_data.parquet")
    assert _placeholder_findings("custom_reward_function.path=/.../proj/verl/utils/reward_score/r.py")
    # a quoted phrase for the user to replace, through a variable
    text = ('CKPT="Your Checkpoint Directory"\npython3 -m verl.trainer.main_ppo data.train_batch_size=64 '
            'trainer.default_local_dir="$CKPT"\n')
    results = check_script(read_script(text, "run.sh"), version="0.9.1")
    assert [f.line for _i, _c, fs in results for f in fs if f.code == "VS714"] == [2]
    # real values that only resemble the shapes
    assert not _placeholder_findings("data.train_files=/data/yourdata.parquet")
    assert not _placeholder_findings('"+data.system_prompt=\'Your task is to solve the problem step by step now\'"')


def test_a_placeholder_root_reaching_a_path_with_an_unknown_part_is_reported() -> None:
    # The part the script wrote is a blank, whatever the argument fills in after it.
    text = ('ROOT=/path/to/your/root\npython3 -m verl.trainer.main_ppo data.train_batch_size=64 '
            'data.train_files=$ROOT/datasets/$1/train.parquet data.val_files=$ROOT/datasets/$1/test.parquet\n')
    results = check_script(read_script(text, "run.sh"), version="0.9.1")
    (message,) = [f.message for _i, _c, fs in results for f in fs if f.code == "VS714"]
    assert "data.train_files=/path/to/your/root/datasets/$1/train.parquet" in message
    assert "also reaches data.val_files" in message


def test_a_placeholder_assigned_then_exported_by_name_is_reported() -> None:
    before = "MODEL_PATH=Qwen/Qwen2.5-7B\nWANDB_DIR='Your Wandb Log Directory'\nexport WANDB_DIR\n"
    severity, message = _found(before)["VS714"]
    assert severity == "warning" and "WANDB_DIR='Your Wandb Log Directory'" in message
    assert "VS714" not in _found("MODEL_PATH=Qwen/Qwen2.5-7B\nWANDB_DIR=/tmp/wandb\nexport WANDB_DIR\n")


def test_one_placeholder_reaching_two_values_with_unknown_parts_is_one_finding() -> None:
    # The command substitutions are unknown, not blanks: the one thing to fill in is $LOGS.
    text = ('LOGS=/path/to/log_dir\nA=$LOGS/val/$(date +%s)\nB=$LOGS/traj/$(date +%s)\n'
            'python3 -m verl.trainer.main_ppo data.train_batch_size=64 trainer.validation_data_dir="$A" '
            '+actor_rollout_ref.rollout.multi_turn.dump_dir="$B"\n')
    results = check_script(read_script(text, "run.sh"), version="0.9.1")
    (message,) = [f.message for _i, _c, fs in results for f in fs if f.code == "VS714"]
    assert "also reaches actor_rollout_ref.rollout.multi_turn.dump_dir" in message
