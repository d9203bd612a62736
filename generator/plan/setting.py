"""What one layout search is asked: the cluster, the batch and the release defaults it sizes for.

Built once by `plan.search.plan_layout` from the user's options; the enumeration, the sizing and
the ranking all read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.base.errors import InputError
from generator.layout.hardware import GpuSpec
from generator.plan.release_defaults import BASELINE, RolloutDefaults


@dataclass(frozen=True, slots=True)
class Setting:
    """The cluster and batch one search sizes for (prompts and mini batch already chosen)."""

    gpus: int
    gpus_per_node: int
    gpu: GpuSpec
    prompt_len: int
    response_len: int
    n: int
    algo: str
    train_batch_size: int
    mini: int
    mean_response_len: int = 0  # expected response tokens for the step-time score (0: a share of the max)
    rollout: RolloutDefaults = BASELINE
    # The practice the sizing keeps (generator.plan.practice): the share of usable memory every
    # phase leaves free when knobs are chosen (0: a fully pinned script, judged as written), and the
    # smallest dynamic token budget (times CP) it may choose.
    spare: float = 0.0
    least_budget: int = 0

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.response_len


def nodes_for_gpus(gpus: int, gpu_name: str, per_node: int) -> tuple[int, str]:
    """(nodes, why) for `--gpus` without `--nodes`: one node up to the GPU type's GPUs per node,
    else gpus / per-node. Ray places each node's GPUs as one group on one machine
    (trainer.n_gpus_per_node), so 16 GPUs on one "node" could never be scheduled on 8-GPU
    machines. A count that does not fill whole nodes is an InputError with the reason."""
    if gpus <= per_node:
        return 1, ""
    if gpus % per_node:
        raise InputError(f"--gpus {gpus} does not fill whole {gpu_name} nodes of {per_node} GPUs; give a multiple "
                         f"of {per_node} or --nodes N with N dividing {gpus}")
    nodes = gpus // per_node
    return nodes, (f"{gpus} GPUs are more than the {per_node} of one {gpu_name} node: {nodes} nodes x {per_node}, "
                   "each node's GPUs one Ray placement group (--nodes chooses another split)")
