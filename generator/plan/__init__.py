"""Layout planning: which Megatron layout, batch sizes and memory knobs to use.

`search` is the entry point: `enumeration` lists the layouts, `sizing` chooses each one's knobs
(memory from `memory`, phase by phase), `ranking` orders them; `result` holds what they hand to
`gen plan` and `gen recipe`. The layout records themselves live in `generator.layout.parallelism` and
`generator.layout.candidate`.
"""

from __future__ import annotations

from generator.plan.batch_choice import batch_sizes
from generator.plan.result import Plan
from generator.plan.search import plan_layout

__all__ = ["Plan", "batch_sizes", "plan_layout"]
