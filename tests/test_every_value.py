"""Reason over every value of an unknown (issue 34): a batch chain that fails for every node count
an unset `$NNODES` could have is an error; one that fails for some counts only stays undecided."""

from __future__ import annotations

from generator.judging import check_script
from generator.reading.shell.script_reader import read_script


def _script(mini: int, nodes: str = "$NNODES", per_node: str = "8") -> str:
    return f"""python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=64 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=1 \\
    actor_rollout_ref.actor.ppo_mini_batch_size={mini} \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1 \\
    trainer.n_gpus_per_node={per_node} trainer.nnodes={nodes}
"""


def _found(text: str) -> dict[str, tuple[str, str]]:
    results = check_script(read_script(text, "run.sh"), version="0.9.1")
    return {f.code: (f.severity, f.message) for _i, _c, findings in results for f in findings}


def test_a_mini_batch_that_fails_on_every_node_count_is_an_error() -> None:
    found = _found(_script(4))  # 4 prompts over DP = 8·nodes: never divisible
    severity, message = found["VB116"]
    assert severity == "error"
    assert "for every value of trainer.nnodes 1..64" in message and "shown for nnodes=1" in message
    assert "VB117" not in found


def test_a_mini_batch_that_fails_on_some_node_counts_stays_undecided() -> None:
    found = _found(_script(32))  # divides DP on 1, 2 and 4 nodes, not on 3
    assert found["VB117"][0] == "info"
    assert "VB116" not in found


def test_the_gpus_per_node_are_weighed_too() -> None:
    found = _found(_script(4, nodes="1", per_node="$GPUS"))  # fails on 8 GPUs, passes on 1, 2 and 4
    assert "VB116" not in found and found["VB117"][0] == "info"
    found = _found(_script(3, nodes="1", per_node="$GPUS"))  # 3 prompts: fails on 2, 4, 8, passes on 1
    assert "VB116" not in found


def test_a_mini_batch_that_fails_a_different_way_per_node_count_is_an_error() -> None:
    # 2 prompts x 5 responses over 8·nodes ranks: on 1 node 1 per rank, below the micro batch of 2
    # (VB107); on 2 or more, 0 per rank (VB104). No one finding holds for every value; the call
    # fails for every value all the same, each way reported once in its own numbers.
    text = (_script(2).replace(" --config-name=ppo_megatron_trainer", "").replace("rollout.n=1", "rollout.n=5")
            .replace("ppo_micro_batch_size_per_gpu=1", "ppo_micro_batch_size_per_gpu=2"))
    results = check_script(read_script(text, "run.sh"), version="0.4.1")
    found = {f.code: (f.severity, f.message) for _i, _c, findings in results for f in findings}
    assert "VB117" not in found
    assert found["VB107"][0] == found["VB104"][0] == "error"
    assert "shown for nnodes=1" in found["VB107"][1] and "shown for nnodes=2" in found["VB104"][1]
    assert "fails: nnodes=1: VB107; nnodes=2..64: VB104" in found["VB104"][1]
