"""Fitting the step-time model's free constants to published step times (pure arithmetic).

A case is one published run: a function from StepConstants to the estimated StepTime of its
layout, and the published seconds (step, and where the source gives them: generation, update,
log-prob; a few sources give only the update and log-prob). The loss is the sum of squared log-ratios estimate/published over every published
part, so a point 2× too slow weighs as much as one 2× too fast. The fit is a coordinate descent
on a multiplicative grid per constant (each constant kept inside BOUNDS, which say what is
physically plausible); leave-one-group-out refits without a group and predicts it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from generator.layout.candidate import StepTime
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
    "gemm_half_dim": (16.0, 4096.0),
    "expert_half_rows": (16.0, 8192.0),
    "cross_node_sync_s": (1e-6, 2e-4),
}


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    group: str
    estimate: Callable[[StepConstants], StepTime]
    step_s: float | None  # None: the source gives only some phases (update, log-prob)
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


def measure(case: Case) -> str:
    """The published seconds a case is judged on: the whole step, or the update where the source
    gives only phases."""
    return "step_s" if case.step_s else "update_s"


def published(case: Case) -> float:
    value = getattr(case, measure(case))
    return float(value or 0.0)


def estimated(case: Case, step: StepTime) -> float:
    """The estimate of the measure the case is judged on."""
    return parts(step)[measure(case)]


def pair_order(estimates: Sequence[float], truths: Sequence[float]) -> tuple[int, int, int]:
    """(concordant, discordant, tied) pairs of two orderings of the same items: a pair is tied when
    either side calls the two equal (then it says nothing about the order)."""
    concordant = discordant = tied = 0
    for i in range(len(truths)):
        for j in range(i + 1, len(truths)):
            sign = (estimates[i] - estimates[j]) * (truths[i] - truths[j])
            if sign > 0:
                concordant += 1
            elif sign < 0:
                discordant += 1
            else:
                tied += 1
    return concordant, discordant, tied


def kendall_tau(estimates: Sequence[float], truths: Sequence[float]) -> float | None:
    """Kendall's tau-a over the untied pairs: (concordant − discordant)/(concordant + discordant);
    None with no untied pair."""
    concordant, discordant, _ = pair_order(estimates, truths)
    if concordant + discordant == 0:
        return None
    return (concordant - discordant) / (concordant + discordant)


def pair_errors(estimates: Sequence[float], truths: Sequence[float]) -> list[float]:
    """For every pair in one series, how far the estimated ratio of the two times is from the
    published one: |ln(est_i/est_j) − ln(pub_i/pub_j)|. The estimates' shared bias (a workload's
    token count, the cluster's speed) cancels, so this is the error of telling two layouts apart."""
    out = []
    for i in range(len(truths)):
        for j in range(i + 1, len(truths)):
            out.append(abs(math.log(estimates[i] / estimates[j]) - math.log(truths[i] / truths[j])))
    return out


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile of `values` by linear interpolation between order statistics."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
