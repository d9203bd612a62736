"""The memory model's fitted constants against known outcomes, and the error band, leave-one-out.

Two constants of plan/memory.py are fitted, not derived: OVERHEAD_GIB (the per-GPU memory no
tensor term holds: CUDA context, the driver's reserve, NCCL buffers, allocator slack) and
STEP_TEMP_BYTES (what the optimizer step allocates per parameter of the GPU's optimizer shard).
Every other term follows Megatron-core / vLLM / verl source (docs/memory-model.md). A known
outcome is a configuration reported to run (`fits`) or to run out of memory (`over`), optionally
with a measured peak. Each outcome's phases are linear in both constants: every phase holds the
overhead once, the optimizer step holds STEP_TEMP_BYTES times its shard. So a verdict at other
constants needs no re-evaluation, and the fit is a window per constant:

- the overhead: above the largest value that still lets an `over` outcome fit (in a phase
  other than the step), at or below the smallest that keeps every `fits` outcome within its limit;
- the step bytes, given that overhead: the same over the optimizer-step phases.

Each constant is the middle of its window. Leave-one-out: each outcome is judged with constants
fitted without it, and the band is the largest relative error of such a prediction against a
measured peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from generator.plan import memory
from generator.plan.memory import MemorySetup, evaluate_memory

STEP_PHASE = "optimizer_step"


@dataclass(frozen=True, slots=True)
class PhaseLine:
    """One (stage, phase) of an outcome as a line in the constants: gib at the model's current
    constants, and how many GiB one byte per shard parameter of step allocations adds."""

    stage: int
    phase: str
    gib: float
    step_gib_per_byte: float


@dataclass(frozen=True, slots=True)
class Outcome:
    """A known outcome with its phases as lines; `measured_gib` is a reported peak, if any."""

    id: str
    expect: str  # "fits" or "over"
    usable_gib: float
    lines: tuple[PhaseLine, ...]
    measured_gib: float | None = None
    known_miss: str = ""  # why the model is known to disagree (kept out of the fit)
    failing_phase: str = ""  # where an `over` outcome was reported to fail, when known

    @property
    def fails_in_step(self) -> bool:
        return self.expect == "over" and self.failing_phase == STEP_PHASE


@dataclass(frozen=True, slots=True)
class Constants:
    overhead_gib: float
    step_temp_bytes: float


CURRENT = Constants(memory.OVERHEAD_GIB, memory.STEP_TEMP_BYTES)


def phase_lines(setup: MemorySetup) -> tuple[tuple[PhaseLine, ...], float]:
    """Every (stage, phase) of a setup as a line, and its usable limit."""
    report = evaluate_memory(setup)
    lines = []
    for stage in report.stages:
        for phase in stage.phases:
            step = sum(t.gib for t in phase.terms if t.name == "step-temporaries")
            lines.append(PhaseLine(stage.stage, phase.phase, phase.gib,
                                   step / memory.STEP_TEMP_BYTES if memory.STEP_TEMP_BYTES else 0.0))
    return tuple(lines), report.usable_gib


def outcome(id_: str, expect: str, setup: MemorySetup, measured_gib: float | None = None,
            known_miss: str = "", failing_phase: str = "") -> Outcome:
    lines, usable = phase_lines(setup)
    return Outcome(id_, expect, usable, lines, measured_gib, known_miss, failing_phase)


def line_gib(line: PhaseLine, c: Constants) -> float:
    return (line.gib + (c.overhead_gib - CURRENT.overhead_gib)
            + (c.step_temp_bytes - CURRENT.step_temp_bytes) * line.step_gib_per_byte)


def peak_gib(o: Outcome, c: Constants) -> float:
    return max(line_gib(line, c) for line in o.lines)


def fits(o: Outcome, c: Constants) -> bool:
    return peak_gib(o, c) <= o.usable_gib


def agrees(o: Outcome, c: Constants) -> bool:
    return fits(o, c) == (o.expect == "fits")


def _overhead_bound(o: Outcome, phases: str) -> float:
    """The overhead at which the outcome's worst phase (of `phases`: "step" or "other") reaches
    its limit, the step bytes held at their current value."""
    lines = [x for x in o.lines if (x.phase == STEP_PHASE) == (phases == "step")]
    if not lines:
        return float("inf")
    return o.usable_gib - max(x.gib for x in lines) + CURRENT.overhead_gib


def _step_bound(o: Outcome, overhead: float) -> float:
    """The step bytes at which the outcome's optimizer step reaches its limit at `overhead`."""
    bounds = []
    for x in o.lines:
        if x.phase != STEP_PHASE or x.step_gib_per_byte <= 0:
            continue
        rest = line_gib(x, Constants(overhead, 0.0))
        bounds.append((o.usable_gib - rest) / x.step_gib_per_byte)
    return min(bounds) if bounds else float("inf")


@dataclass(frozen=True, slots=True)
class Window:
    low: float  # exclusive: above every bound an `over` outcome sets
    high: float  # inclusive: at or below every bound a `fits` outcome sets

    @property
    def middle(self) -> float:
        if self.low == float("-inf"):
            return self.high
        if self.high == float("inf"):
            return self.low
        return (self.low + self.high) / 2

    @property
    def empty(self) -> bool:
        return self.low >= self.high


def overhead_window(outcomes: Sequence[Outcome]) -> Window:
    """Over the phases other than the step: `fits` outcomes cap the overhead, `over` outcomes
    reported to fail outside the step floor it. The floor is at least the part of the overhead
    vLLM's own claim holds (the rollout phase carries the overhead less that part)."""
    high = min((_overhead_bound(o, "other") for o in outcomes if o.expect == "fits"), default=float("inf"))
    low = max((_overhead_bound(o, "other") for o in outcomes if o.expect == "over" and not o.fails_in_step),
              default=float("-inf"))
    return Window(max(low, memory.ENGINE_COUNTED_OVERHEAD_GIB), high)


def step_window(outcomes: Sequence[Outcome], overhead: float) -> Window:
    high = min((_step_bound(o, overhead) for o in outcomes if o.expect == "fits"), default=float("inf"))
    low = max((_step_bound(o, overhead) for o in outcomes if o.fails_in_step), default=0.0)
    return Window(low, high)


def fit_constants(outcomes: Sequence[Outcome]) -> Constants:
    """The middle of the overhead's window, then the middle of the step bytes' window at it
    (outcomes with a known miss are left out)."""
    used = [o for o in outcomes if not o.known_miss]
    overhead = overhead_window(used).middle
    return Constants(round(overhead, 2), round(step_window(used, overhead).middle, 2))


@dataclass(frozen=True, slots=True)
class LeftOut:
    """One outcome judged with constants fitted without it."""

    outcome: Outcome
    constants: Constants
    peak_gib: float
    agrees: bool

    @property
    def error(self) -> float | None:
        """Relative error of the predicted peak against the measured one."""
        m = self.outcome.measured_gib
        return None if m is None else abs(self.peak_gib - m) / m


def leave_one_out(outcomes: Sequence[Outcome]) -> tuple[LeftOut, ...]:
    out = []
    for i, o in enumerate(outcomes):
        c = fit_constants([x for j, x in enumerate(outcomes) if j != i])
        out.append(LeftOut(o, c, peak_gib(o, c), agrees(o, c)))
    return tuple(out)


def error_band(left_out: Sequence[LeftOut]) -> float:
    """The largest leave-one-out relative error on a measured peak (0 when none was measured)."""
    return max((x.error for x in left_out if x.error is not None), default=0.0)
