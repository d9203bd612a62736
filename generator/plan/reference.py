"""The Megatron layouts verl ships (packaged `data/verl_layouts.yaml`), as planner inputs.

Used by `bench/plan.py --table` and the tests: each row is evaluated exactly as shipped
(layout and knobs), by layout only (the planner picks the knobs), and searched from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from generator.verl.constants import VLLM_MAX_NUM_BATCHED_TOKENS
from generator.layout.derive import layout_dp, per_rank_mini_batch
from generator.layout.pins import Pins
from generator.plan.result import Plan
from generator.plan.memory import MemorySetup
from generator.plan.workload import Workload, algo_roles
from generator.plan.verl_rows import LAYOUT_KEYS, VerlRow, verl_rows

__all__ = ["LAYOUT_KEYS", "VerlLayout", "verl_layouts"]


@dataclass(frozen=True, slots=True)
class VerlLayout(VerlRow):
    """A row of verl's shipped layouts, with the planner's evaluations of it."""

    def evaluate_as_shipped(self) -> Plan:
        return self.evaluate_for(self.workload())

    def evaluate_for(self, workload: dict[str, Any]) -> Plan:
        """verl's layout with the script's own knobs on `workload` (plan_layout's workload
        arguments): the script's own for `evaluate_as_shipped`, a plan's for `gen plan`'s comparison."""
        return self._evaluate(self.shipped_pins(), workload)

    def evaluate_with(self, pins: Pins) -> Plan:
        """Any layout and knobs (`pins`) on this row's own workload (the tests' probes)."""
        return self._evaluate(pins, self.workload())

    def _evaluate(self, pins: Pins, workload: dict[str, Any]) -> Plan:
        from generator.plan.search import plan_layout

        return plan_layout(self.model, self.row["gpus"], pins=pins, evaluate=True, **workload, top=1)

    def memory_setup(self) -> MemorySetup:
        """verl's layout with the script's own knobs, as the memory model evaluates it (the
        batch and workload the planner derives for the row)."""
        r = self.row
        cand = self.evaluate_as_shipped().candidates[0]
        has_ref, has_critic = algo_roles(r["algo"])
        dp = layout_dp(r["gpus"], cand)
        mini = cand.ppo_mini_batch_size or r["mini"]
        work = Workload(gpus=r["gpus"], gpu_memory_gib=self.gpu.memory_gib, prompt_len=r["prompt"],
                        response_len=r["response"], per_rank_mini_batch=per_rank_mini_batch(mini, r["n"], dp), has_ref=has_ref,
                        has_critic=has_critic, max_num_batched_tokens=max(VLLM_MAX_NUM_BATCHED_TOKENS, r["prompt"] + r["response"]))
        return MemorySetup(self.model, cand, work)

    def evaluate_layout(self) -> Plan:
        from generator.plan.search import plan_layout

        return plan_layout(self.model, self.row["gpus"], pins=Pins(**self.layout()), evaluate=True,
                           **self.workload(), top=1)

    def search(self, top: int = 5) -> Plan:
        from generator.plan.search import plan_layout

        return plan_layout(self.model, self.row["gpus"], **self.workload(), top=top)


@lru_cache(maxsize=1)
def verl_layouts() -> tuple[VerlLayout, ...]:
    return tuple(VerlLayout(row) for row in verl_rows())
