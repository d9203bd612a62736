"""The gpu_memory_utilization values the planner and the memory fixes try, from one home."""

from __future__ import annotations

from collections.abc import Iterator

# The lowest gpu_memory_utilization the planner and the memory fixes go down to (below it the KV
# cache holds too few sequences to be worth a rollout), and the step the fixes take towards it.
MIN_GMU = 0.3
GMU_FIX_STEP = 0.05


def lowered_gmu(gmu: float) -> Iterator[float]:
    """gpu_memory_utilization values below `gmu`, one fix step apart, down to MIN_GMU (rounded as a
    script writes them)."""
    lower = round(gmu - GMU_FIX_STEP, 2)
    while lower >= MIN_GMU:
        yield lower
        lower = round(lower - GMU_FIX_STEP, 2)
