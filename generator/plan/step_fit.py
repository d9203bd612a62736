"""Fitting the step-time model's free constants to published step times (pure arithmetic).

A case is one published run: a function from StepConstants to the estimated StepTime of its
layout, and the published seconds (step, and where the source gives them: generation, update,
log-prob). The loss is the sum of squared log-ratios estimate/published over every published
part, so a point 2× too slow weighs as much as one 2× too fast. The fit is a coordinate descent
on a multiplicative grid per constant (each constant kept inside BOUNDS, which say what is
physically plausible); leave-one-group-out refits without a group and predicts it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from generator.candidate import StepTime
from generator.plan.step_time import FREE_CONSTANTS, StepConstants

# What each free constant may be: the fit stays inside, so a constant cannot absorb a missing term
# by going unphysical (an MFU above 0.8, a negative overhead).
BOUNDS: dict[str, tuple[float, float]] = {
    "train_mfu": (0.1, 0.7),
    "moe_efficiency": (0.1, 1.0),
    "decode_mfu": (0.1, 0.8),
    "decode_tp_sync_s": (1e-6, 1e-3),
    "decode_step_overhead_s": (1e-4, 0.05),
    "static_pad_share": (0.0, 1.0),
}


@dataclass(frozen=True)
class Case:
    id: str
    group: str
    estimate: Callable[[StepConstants], StepTime]
    step_s: float
    gen_s: float | None = None
    update_s: float | None = None
    log_prob_s: float | None = None


def parts(step: StepTime) -> dict[str, float]:
    """The estimate split as the published tables split a step: generation, update (with its
    communication, bubble and offload share), log-prob, and the whole step."""
    rest = step.comm_s + step.bubble_s + step.offload_s
    return {"step_s": step.total_s, "gen_s": step.rollout_s, "update_s": step.update_s + rest,
            "log_prob_s": step.log_prob_s}


def case_loss(case: Case, k: StepConstants) -> float:
    est = parts(case.estimate(k))
    loss = 0.0
    for name in ("step_s", "gen_s", "update_s", "log_prob_s"):
        published = getattr(case, name)
        if published and est[name] > 0:
            loss += math.log(est[name] / published) ** 2
    return loss


def total_loss(cases: Sequence[Case], k: StepConstants) -> float:
    return sum(case_loss(c, k) for c in cases)


def fit(cases: Sequence[Case], start: StepConstants, *, rounds: int = 6,
        free: Sequence[str] = FREE_CONSTANTS) -> StepConstants:
    """Coordinate descent: each round tries every constant on a grid around its value (factors
    shrinking round by round) and keeps the best; additive grid for shares that may be 0."""
    best, best_loss = start, total_loss(cases, start)
    for round_ in range(rounds):
        spread = 2.0 ** (2.0 / (round_ + 1))
        for name in free:
            low, high = BOUNDS[name]
            value = getattr(best, name)
            if name == "static_pad_share":
                step = 0.25 / (round_ + 1)
                trials = [value + i * step for i in range(-4, 5)]
            else:
                trials = [value * spread ** (i / 4) for i in range(-4, 5)]
            for trial in trials:
                trial = min(high, max(low, trial))
                candidate = replace(best, **{name: trial})
                loss = total_loss(cases, candidate)
                if loss < best_loss - 1e-12:
                    best, best_loss = candidate, loss
    return best


def leave_one_group_out(cases: Sequence[Case], start: StepConstants,
                        rounds: int = 6) -> dict[str, tuple[StepConstants, list[StepTime]]]:
    """Per group: the constants fitted without it and its cases' estimates under them."""
    out: dict[str, tuple[StepConstants, list[StepTime]]] = {}
    for group in dict.fromkeys(c.group for c in cases):
        rest = [c for c in cases if c.group != group]
        constants = fit(rest, start, rounds=rounds)
        out[group] = (constants, [c.estimate(constants) for c in cases if c.group == group])
    return out
