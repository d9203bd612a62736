"""What the layout search hands to `gen recipe` and `gen plan`: the ranked candidates, the layouts
it turned away and why, and the batch they were sized for."""

from __future__ import annotations

from dataclasses import dataclass, field

from generator.layout.candidate import Candidate


@dataclass(slots=True)
class Plan:
    model: str
    gpus: int
    nodes: int
    gpu: str
    candidates: list[Candidate] = field(default_factory=list)
    chosen: int | None = None
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (layout, reason)
    # Added by the planner (additive): the batch the layouts were sized for.
    algo: str = "grpo"
    n: int = 1
    prompt_len: int = 1024
    response_len: int = 1024
    train_batch_size: int = 0  # prompts per step (data.train_batch_size)
    ppo_mini_batch_size: int = 0  # prompts per optimizer step (actor.ppo_mini_batch_size)
    gpu_memory_gib: float = 0.0
    # Per candidate: the first ranking criterion on which the first candidate beats it (None for
    # the first, for a tie, or when only one layout was evaluated).
    rank_reasons: list[str | None] = field(default_factory=list)
    # The step time the ranking's step-time band is measured from: the fastest fitting layout with
    # the leader's practice marks, among all the search sized (not only the `top` shown); 0 when none.
    band_reference_s: float = 0.0

    @property
    def best(self) -> Candidate | None:
        return None if self.chosen is None else self.candidates[self.chosen]
