"""The Megatron layouts verl ships (packaged `data/verl_layouts.yaml`), as planner inputs.

Used by `bench/plan.py --table` and the tests: each row is evaluated exactly as shipped
(layout and knobs), by layout only (the planner picks the knobs), and searched from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from generator.verl import VLLM_MAX_NUM_BATCHED_TOKENS
from generator.derive import layout_dp, per_rank_mini_batch
from generator.hardware import GpuSpec, gpu_spec
from generator.model import resolve_model
from generator.layout import Offload
from generator.model.facts import ModelFacts
from generator.pins import Pins
from generator.plan.result import Plan
from generator.plan.memory import MemorySetup
from generator.plan.workload import Workload, algo_roles
from generator.resources import data_dir, load_data_yaml

LAYOUT_KEYS = ("tp", "pp", "vpp", "cp", "ep", "etp")


@dataclass(frozen=True)
class VerlLayout:
    row: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def model(self) -> ModelFacts:
        return resolve_model(self.row["model"])

    @property
    def gpu(self) -> GpuSpec:
        return gpu_spec(self.row["gpu"])

    def layout(self) -> dict[str, Any]:
        out = {k: self.row[k] for k in LAYOUT_KEYS if self.row.get(k) is not None}
        if self.row.get("first") is not None:
            out["first_stage_layers"] = self.row["first"]
        if self.row.get("last") is not None:
            out["last_stage_layers"] = self.row["last"]
        return out

    def shipped_pins(self) -> Pins:
        """The layout and the script's own memory knobs, as the planner's pins."""
        r = self.row
        fraction = float(r.get("cpu_optimizer_fraction", 0.0))
        dynamic = bool(r.get("dynamic", False))
        return Pins(
            **self.layout(), rollout_tp=r["rollout_tp"], use_dynamic_bsz=dynamic,
            offload=Offload(param=bool(r.get("param_offload", False)), grad=bool(r.get("param_offload", False)),
                            optimizer=bool(r.get("optimizer_offload", False)), cpu_optimizer=fraction > 0,
                            cpu_optimizer_fraction=fraction),
            recompute=bool(r.get("recompute", False)), gpu_memory_utilization=r["gmu"],
            use_fused_kernels=bool(r.get("fused", False)), enforce_eager=bool(r.get("eager", False)),
            token_budget=r["budget"] if dynamic else None,
            log_prob_token_budget=r.get("lp_budget", r["budget"]) if dynamic else None,
            micro_batch_per_gpu=None if dynamic else r["micro"],
            log_prob_micro_batch_per_gpu=None if dynamic else r.get("lp_micro", r["micro"]))

    def workload(self) -> dict[str, Any]:
        r = self.row
        nodes = max(1, r["gpus"] // 8)
        return {"nodes": nodes, "gpu": self.gpu, "prompt_len": r["prompt"], "response_len": r["response"],
                "n": r["n"], "algo": r["algo"], "train_batch_size": r["train_bs"]}

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
    raw = load_data_yaml(data_dir() / "verl_layouts.yaml")
    return tuple(VerlLayout(row) for row in raw["rows"])
