"""A call that runs no training step (`trainer.total_epochs=0`, `trainer.val_only=True`) gets no
verdict on what a training step does: verl's fit() validates and returns before its epoch loop.
Its load and init checks still run. Every config here is written by the test."""

from __future__ import annotations

import pytest

from generator.judging import check_config
from generator.judging.examples import config_for

A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.rollout."
# 0.4.1, 6 GPUs, sync rollout: train_batch_size 1000 is not divisible by 6 (VB113 at run time);
# 256·10/6 floors (VB105, silent); micro 2 divides 426, n 10 makes 10000 responses % 6 = 4 (VB101 at load).
STEP = ["data.train_batch_size=1000", f"{R}n=10", f"{A}ppo_mini_batch_size=256",
        f"{A}ppo_micro_batch_size_per_gpu=2", f"{A}use_dynamic_bsz=False"]


def judged(extra: list[str]) -> set[str]:
    config = config_for(STEP + extra, config_name="ppo_trainer", version="0.4.1",
                        base=("trainer.n_gpus_per_node=6", "trainer.nnodes=1", f"{R}name=vllm"))
    return {f.code for f in check_config(config) if f.severity != "info"}


def test_a_training_call_gets_its_runtime_batch_findings():
    found = judged([])
    assert {"VB113", "VB105", "VB101"} <= found


@pytest.mark.parametrize("stop", ["trainer.total_epochs=0", "trainer.val_only=True"])
def test_an_evaluation_only_call_keeps_only_the_load_checks(stop):
    found = judged([stop])
    assert "VB113" not in found and "VB105" not in found
    assert "VB101" in found  # validate_config runs before fit() returns


def _validates_only(version: str, reads: bool | None) -> bool:
    from generator.rules import runs_no_training_step
    from generator.rules.core import Context, ForkChecks

    config = config_for(STEP + ["trainer.val_only=True"], config_name="ppo_trainer", version="0.4.1")
    config.version = version  # the release the fork's trainer is of (this test's own config object)
    return runs_no_training_step(Context(config, fork_checks=ForkChecks(trainer_reads_val_only=reads)))


def test_val_only_counts_where_the_release_or_the_fork_reads_it():
    assert _validates_only("0.4.1", None)
    assert _validates_only("0.1.0+project", True)  # the fork's own trainer reads it
    assert not _validates_only("0.1.0", None)  # verl 0.1's fit() has no val_only: it trains
    assert not _validates_only("0.4.1+project", False)  # a fork whose trainer never reads it


def test_the_fork_trainer_is_read_for_val_only(tmp_path):
    from generator.reading.fork_code import trainer_reads_val_only

    (tmp_path / "trainer").mkdir()
    assert trainer_reads_val_only(tmp_path) is None
    (tmp_path / "trainer" / "ray_trainer.py").write_text("def fit(self):\n    pass\n")
    assert trainer_reads_val_only(tmp_path) is False
    (tmp_path / "trainer" / "ray_trainer.py").write_text(
        "def fit(self):\n    if self.config.trainer.get('val_only', False):\n        return\n")
    assert trainer_reads_val_only(tmp_path) is True
