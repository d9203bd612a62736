"""A check verl makes in its own code, judged on the project's copy of verl (issue 34): a fork that
took the check out (or never had it) is not told verl refuses the run."""
from __future__ import annotations

from pathlib import Path

from generator.judging import check_script
from generator.schema.resolution import resolve_script
from generator.reading.shell.script_reader import read_script

YAML = """actor_rollout_ref:
  actor:
    strategy: fsdp
    ppo_mini_batch_size: 128
    ppo_micro_batch_size_per_gpu: 1
    use_dynamic_bsz: false
    ppo_epochs: 1
  rollout:
    name: vllm
    mode: sync
    n: 1
    enable_chunked_prefill: true
    max_num_batched_tokens: 1024
    log_prob_micro_batch_size_per_gpu: 1
  ref:
    log_prob_micro_batch_size_per_gpu: 1
data:
  train_batch_size: 64
  max_prompt_length: 2048
  max_response_length: 2048
trainer:
  n_gpus_per_node: 8
  nnodes: 1
"""
A6_ASSERT = ("def _validate(config):\n"
             "    assert config.data.train_batch_size >= config.actor_rollout_ref.actor.ppo_mini_batch_size\n")
A6_COMMENTED = ("def _validate(config):\n"
                "    # assert config.data.train_batch_size >= config.actor_rollout_ref.actor.ppo_mini_batch_size\n"
                "    assert config.data.train_batch_size >= config.critic.ppo_mini_batch_size\n")
G4_CHECK = ("def build(config, max_model_len, max_num_batched_tokens):\n"
            "    if max_num_batched_tokens < max_model_len and config.enable_chunked_prefill:\n"
            "        raise ValueError('increase max_num_batched_tokens')\n")
G4_ABSENT = "def build(config):\n    return dict(enable_chunked_prefill=config.enable_chunked_prefill)\n"


def _codes(tmp_path: Path, trainer_code: str, rollout_code: str) -> list[str]:
    project = tmp_path / "proj"
    files = {".git/HEAD": "", "verl/trainer/config/ppo_trainer.yaml": YAML, "verl/version/version": "0.4.1\n",
             "verl/trainer/ppo/ray_trainer.py": trainer_code,
             "verl/workers/rollout/vllm_rollout/vllm_rollout.py": rollout_code,
             "run.sh": "python3 -m verl.trainer.main_ppo trainer.nnodes=1\n"}
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    script_path = project / "run.sh"
    script = read_script(script_path.read_bytes(), str(script_path))
    results = check_script(script, resolution=resolve_script(script, str(script_path)))
    return [f.code for _i, _c, findings in results for f in findings if f.severity in ("error", "warning")]


def test_a_fork_that_commented_out_the_mini_batch_assert(tmp_path: Path) -> None:
    assert "VB102" in _codes(tmp_path / "a", A6_ASSERT, G4_CHECK)
    codes = _codes(tmp_path / "b", A6_COMMENTED, G4_CHECK)  # only the critic's assert is left
    assert "VB102" not in codes and "VB106" not in codes


def test_a_fork_whose_rollout_has_no_chunked_prefill_check(tmp_path: Path) -> None:
    assert "VR507" in _codes(tmp_path / "a", A6_ASSERT, G4_CHECK)
    assert "VR507" not in _codes(tmp_path / "b", A6_ASSERT, G4_ABSENT)


# verl 0.7+ makes A6 in its actor config's validate(); a fork may keep the comparison and only warn.
A6_RAISES = ("def validate(self, train_batch_size):\n"
             "    if train_batch_size < self.ppo_mini_batch_size:\n"
             "        raise ValueError('train_batch_size must be >= ppo_mini_batch_size')\n")
A6_WARNS = ("import warnings\n\n\ndef validate(self, train_batch_size):\n"
            "    if train_batch_size < self.ppo_mini_batch_size:\n"
            "        warnings.warn('allowed: this fork inflates the batch internally')\n")


def test_a_fork_that_only_warns_where_verl_refuses_the_mini_batch(tmp_path: Path) -> None:
    assert "VB102" in _codes(tmp_path / "a", A6_RAISES, G4_CHECK)
    codes = _codes(tmp_path / "b", A6_WARNS, G4_CHECK)  # the comparison is there; it refuses nothing
    assert "VB102" not in codes and "VB106" not in codes
