"""What one layout search is asked: the cluster, the batch and the release defaults it sizes for.

Built once by `plan.search.plan_layout` from the user's options; the enumeration, the sizing and
the ranking all read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.hardware import GpuSpec
from generator.plan.release_defaults import BASELINE, RolloutDefaults


@dataclass(frozen=True)
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

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.response_len
