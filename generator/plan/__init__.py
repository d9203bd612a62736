"""Layout planning: which Megatron layout, batch sizes and memory knobs to use.

The entry points import lazily so that `generator.memory` (which needs the Candidate types
in this package) and the search can import each other's modules without a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from generator.plan.candidate import Candidate, MemoryTerm, Offload, PhaseMemory, Plan

if TYPE_CHECKING:
    from generator.models import GpuSpec
    from generator.models_types import ModelFacts


def plan_layout(model: ModelFacts, gpus: int, *, nodes: int = 1, gpu: GpuSpec, prompt_len: int = 1024,
                response_len: int = 1024, n: int = 5, algo: str = "grpo", train_batch_size: int | None = None,
                fixed: dict | None = None, top: int = 5) -> Plan:
    from generator.plan.search import plan_layout as _plan_layout

    return _plan_layout(model, gpus, nodes=nodes, gpu=gpu, prompt_len=prompt_len, response_len=response_len,
                        n=n, algo=algo, train_batch_size=train_batch_size, fixed=fixed, top=top)


def batch_sizes(gpus: int, n: int, prompt_len: int, response_len: int, algo: str = "grpo",
                train_batch_size: int | None = None) -> tuple[int, int]:
    """(train_batch_size, ppo_mini_batch_size) in prompts; see generator.plan.search.batch_sizes."""
    from generator.plan.search import batch_sizes as _batch_sizes

    return _batch_sizes(gpus, n, prompt_len, response_len, algo, train_batch_size)


__all__ = ["Candidate", "MemoryTerm", "Offload", "PhaseMemory", "Plan", "batch_sizes", "plan_layout"]
