"""The rows of the packaged `data/verl_layouts.yaml` (verl's shipped Megatron layouts) as data:
the layout, the script's own knobs as pins, the workload. `plan.reference` evaluates them with the
planner; `plan.published` starts plans from them (issue 32)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from generator.layout.hardware import GpuSpec, gpu_spec
from generator.layout.parallelism import Offload
from generator.model import resolve_model
from generator.model.registry import registry_model
from generator.model.facts import ModelFacts
from generator.layout.pins import Pins
from generator.base.resources import data_dir, load_cached_data_yaml

LAYOUT_KEYS = ("tp", "pp", "vpp", "cp", "ep", "etp")


@dataclass(frozen=True, slots=True)
class VerlRow:
    row: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def model(self) -> ModelFacts:
        # A row names a packaged model: looked up in the registry, never as a path (a folder of
        # the working directory named like it is not verl's model) - so what is derived from the
        # rows is packaged data, kept for the process (plan.published).
        return registry_model(self.row["model"]) or resolve_model(self.row["model"])

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



def _looks_like_rows(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("rows"), list)
            and all(isinstance(row, dict) and isinstance(row.get("model"), str) for row in data["rows"]))


@lru_cache(maxsize=1)
def verl_rows() -> tuple[dict[str, Any], ...]:
    return tuple(load_cached_data_yaml(data_dir() / "verl_layouts.yaml", _looks_like_rows)["rows"])
