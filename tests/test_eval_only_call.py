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
