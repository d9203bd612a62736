"""Checking a script leaves no reference cycles behind: what a file's reading and checking
builds (the evaluator, its records and pieces, each call's composition) is freed by reference
counting as soon as the file is done. Cycles there made nearly every object of the corpus check
garbage for the cycle collector, ~8% of its CPU (a speed property, guarded here by count, not time)."""

from __future__ import annotations

import gc
from pathlib import Path

from generator.check.runner import check_paths

SCRIPT = """\
#!/bin/bash
source ./common.sh
NODES=1
GPUS=$((NODES * 8))
BATCH=$(( GPUS > 8 ? GPUS * 4 : 16 ))
pick() { echo "$1"; }
MODEL=$(pick Qwen/Qwen2.5-7B)
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=$BATCH \\
    actor_rollout_ref.model.path=$MODEL \\
    actor_rollout_ref.actor.ppo_mini_batch_size=8 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.rollout.n=5 \\
    trainer.default_local_dir='${oc.env:CKPT_ROOT}/run' \\
    trainer.n_gpus_per_node=8 trainer.nnodes=$NODES
"""


def _check(script: Path) -> None:
    # plan_fixes: the text report's [*] marks, which prove each fix by reading the fixed text
    [report] = check_paths([str(script)], version="0.7.0", select=(), ignore=(), env={}, args=[], model_config=None,
                           plan_fixes=True)
    assert report.error is None and report.findings and report.fixable  # the fix loop ran


def test_checking_a_script_leaves_no_cyclic_garbage(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT)
    (tmp_path / "common.sh").write_text("LR=1e-6\n")
    _check(script)  # the first check imports modules and fills the caches, which stay
    gc.collect()
    gc.disable()
    try:
        _check(script)
        assert gc.collect() == 0
    finally:
        gc.enable()
