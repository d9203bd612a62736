"""Layout planning: which Megatron layout, batch sizes and memory knobs to use.

`search` enumerates and ranks layouts, `memory` sizes each one phase by phase, `candidate`
holds what they hand to `gen plan` and `gen recipe`.
"""

from __future__ import annotations

from generator.plan.batch import batch_sizes
from generator.plan.candidate import Candidate, MemoryTerm, Offload, PhaseMemory, Plan
from generator.plan.search import plan_layout

__all__ = ["Candidate", "MemoryTerm", "Offload", "PhaseMemory", "Plan", "batch_sizes", "plan_layout"]
