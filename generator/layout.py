"""The layout records every layer shares, with no logic beyond their own fields.

`Parallelism` is how Megatron splits the actor, `Offload` what it moves to the CPU. The rules
(derive.Layout), the planner, the script reader, the renderer and the recipe library all speak
these types, so they live beneath every one of them. The planner's sized layout (`Candidate`,
its memory and step time) is in generator.candidate: a check never builds one, and its classes
were a third of the dataclasses a check's start created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, TypedDict


class ParallelSizes(TypedDict):
    """Parallelism's fields as keyword arguments (typed, so `Candidate(**layout.sizes(), ...)` checks)."""

    tp: int
    pp: int
    cp: int
    ep: int
    etp: int | None
    vpp: int | None
    first_stage_layers: int | None
    last_stage_layers: int | None


@dataclass(frozen=True, slots=True)
class Parallelism:
    """How Megatron splits the actor: the one layout type the rules (Layout), the planner
    (Candidate) and the recipe library share."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None  # None: Megatron uses TP
    vpp: int | None = None
    first_stage_layers: int | None = None  # override_transformer_config.num_layers_in_first_pipeline_stage
    last_stage_layers: int | None = None

    @property
    def model_parallel_size(self) -> int:
        """TP·PP·CP: the ranks one copy of the model is split over (DP = W / this; generator.derive)."""
        return self.tp * self.pp * self.cp

    def sizes(self) -> ParallelSizes:
        """These fields as keyword arguments, to build another Parallelism type from this one."""
        return ParallelSizes(tp=self.tp, pp=self.pp, cp=self.cp, ep=self.ep, etp=self.etp, vpp=self.vpp,
                             first_stage_layers=self.first_stage_layers, last_stage_layers=self.last_stage_layers)


class Offload(NamedTuple):
    param: bool = False  # actor (and, by interpolation, ref) params and grads to CPU between phases
    grad: bool = False  # emitted for symmetry with verl's examples; frees nothing by itself
    optimizer: bool = False  # Adam state + fp32 master shards to CPU between phases
    cpu_optimizer: bool = False  # Megatron's CPU optimizer (lowers the update peak)
    cpu_optimizer_fraction: float = 0.0
