"""Memory relief for a call that does not fit: one rung is one change of knobs (and the overrides
that say it in the script); the cheapest change is found the same way for the Megatron actor
(plan/memory_check) and the FSDP one (plan/fsdp_setup), each with its own rungs in the order of
cost docs/memory-model.md gives."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

K = TypeVar("K")

# The Megatron actor's memory relief, cheapest first (docs/memory-model.md#knobs-in-order-of-cost):
# param (+grad) offload, optimizer offload, Megatron's CPU optimizer at rising fractions, full
# recompute. The planner climbs it cumulatively (PLANNER_LADDER); `gen check --gpu` tries each step
# alone, then stacked, at finer fractions (plan/memory_check).
MEGATRON_RELIEF = ("param_offload", "optimizer_offload", "cpu_optimizer", "recompute")
PLANNER_CPU_FRACTIONS = (0.5, 1.0)
CHECK_CPU_FRACTIONS = (0.25, 0.5, 0.75, 1.0)

Rung4 = tuple[bool, bool, float, bool]  # (param offload, optimizer offload, CPU-optimizer fraction, recompute)


def _planner_ladder() -> tuple[Rung4, ...]:
    """Nothing, then each MEGATRON_RELIEF step on top of the ones before it (the CPU optimizer
    once per PLANNER_CPU_FRACTIONS)."""
    rungs: list[Rung4] = [(False, False, 0.0, False)]
    param, optimizer, fraction, recompute = False, False, 0.0, False
    for step in MEGATRON_RELIEF:
        if step == "cpu_optimizer":
            for fraction in PLANNER_CPU_FRACTIONS:
                rungs.append((param, optimizer, fraction, recompute))
            continue
        param = param or step == "param_offload"
        optimizer = optimizer or step == "optimizer_offload"
        recompute = recompute or step == "recompute"
        rungs.append((param, optimizer, fraction, recompute))
    return tuple(rungs)


PLANNER_LADDER: tuple[Rung4, ...] = _planner_ladder()


@dataclass(frozen=True)  # no slots: a slotted Generic dataclass breaks KnobChange[T](...) calls
class KnobChange(Generic[K]):
    """One rung: the knobs it gives and the overrides that say it in the script."""

    words: str
    knobs: K
    edits: tuple[tuple[str, Any], ...]


Rung = Callable[[K], Iterator[KnobChange[K]]]


def cheapest_change(knobs: K, rungs: Sequence[Rung[K]], fits: Callable[[K], tuple[bool, float]]
                    ) -> KnobChange[K] | None:
    """The cheapest change that fits (fits: knobs -> (fits, peak GiB)): each rung alone first,
    cheapest first; then every rung on top of the ones before it (the strongest step of each)."""
    for rung in rungs:
        for change in rung(knobs):
            ok, peak = fits(change.knobs)
            if ok:
                return replace(change, words=f"{change.words} (peak {peak:.1f} GiB)")
    base, words, edits = knobs, list[str](), tuple[tuple[str, Any], ...]()
    for rung in rungs:
        last = None
        for change in rung(base):
            last = change
            ok, peak = fits(change.knobs)
            if ok:
                return KnobChange("; ".join([*words, change.words]) + f" (peak {peak:.1f} GiB)", change.knobs,
                                  edits + change.edits)
        if last is not None:
            base, words, edits = last.knobs, [*words, last.words], edits + last.edits
    return None
