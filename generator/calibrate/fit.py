"""Per-cluster corrections fitted from compared runs (issue 33, part 2; not stored yet).

For each time row (rollout, log-prob, update, weight sync, step) a factor: the geometric mean of
measured / predicted over the runs, the prediction taken at the run's measured mean response
length when the log gives one (the length is the workload's, not the cluster's: it is fitted on
its own, as the share of max_response_length the responses averaged). For the GPU's training
peak an offset in GiB: the mean of measured − predicted. Each with its spread over the runs
(the geometric standard deviation − 1 of a factor, the standard deviation of an offset): none
from one run. Pure arithmetic on Comparison rows.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only named in annotations: a stored calibration is read without the models
    from generator.calibrate.compare import Comparison, Row

# The corrections and the row each is fitted on (Row.label starts with it).
TIME_ROWS = ("rollout", "log-prob", "update", "weight sync", "step")
MEMORY_ROW = "GPU peak allocated"
SHARE = "response share"


@dataclass(frozen=True, slots=True)
class Correction:
    name: str  # a TIME_ROWS entry, MEMORY_ROW, or "response share"
    kind: str  # factor | offset | share
    value: float
    spread: float | None  # None from one run
    runs: int

    def describe(self) -> str:
        if self.kind == "factor":
            text = f"{self.name} x{self.value:.2f}"
            return text + (f" (+-{self.spread:.0%}, {self.runs} runs)" if self.spread is not None else " (1 run)")
        if self.kind == "offset":
            text = f"{self.name} {self.value:+.1f} GiB"
            return text + (f" (+-{self.spread:.1f} GiB, {self.runs} runs)" if self.spread is not None else " (1 run)")
        text = f"responses average {self.value:.0%} of max_response_length"
        return text + (f" (+-{self.spread:.0%}, {self.runs} runs)" if self.spread is not None else " (1 run)")


def row(comparison: Comparison, name: str) -> Row | None:
    return next((r for r in comparison.rows if r.label.startswith(name)), None)


def basis(found: Row, at_length: bool = True) -> float | None:
    """The prediction a factor corrects: at the measured length when there is one (`at_length`),
    else the model's own length assumption (what a plan without a known length predicts)."""
    return (found.at_measured_length if at_length else None) or found.predicted


def factor(name: str, ratios: Sequence[float]) -> Correction:
    """A factor: the median of the ratios on a log scale (the geometric mean of one or two), so
    that one run of another workload among several of this one does not pull it; its spread the
    geometric standard deviation - 1."""
    logs = [math.log(r) for r in ratios]
    spread = math.exp(statistics.stdev(logs)) - 1 if len(logs) > 1 else None
    return Correction(name, "factor", math.exp(statistics.median(logs)), spread, len(logs))


def mean_of(name: str, kind: str, values: Sequence[float]) -> Correction:
    """An offset or a share: the mean, its spread the standard deviation."""
    spread = statistics.stdev(values) if len(values) > 1 else None
    return Correction(name, kind, statistics.fmean(values), spread, len(values))


def run_values(comparison: Comparison) -> dict[str, float]:
    """What one run says, by correction name: each time row's measured / predicted (at its
    measured length), the GPU training peak's measured - predicted GiB, the response share. A
    stored calibration keeps these per run (generator.calibrate.saved), so runs accumulate."""
    out: dict[str, float] = {}
    for name in TIME_ROWS:
        found = row(comparison, name)
        predicted = basis(found) if found is not None else None
        if found is not None and found.measured and predicted:
            out[name] = found.measured / predicted
    peak = row(comparison, MEMORY_ROW)
    if peak is not None and peak.measured is not None and peak.predicted is not None:
        out[MEMORY_ROW] = peak.measured - peak.predicted
    if comparison.response_share:
        out[SHARE] = comparison.response_share
    return out


def fit(comparisons: Sequence[Comparison], *, model: str | None = None, at_length: bool = True) -> list[Correction]:
    """The corrections the runs support (a row no run measured and predicted gets none). The
    response share is the workload's (model and data), not the cluster's: with `model`, only that
    model's runs give it. `at_length=False` fits the factors on the predictions at the model's
    own length assumption, for a prediction that has no length to go on."""
    out: list[Correction] = []
    for name in TIME_ROWS:
        ratios = []
        for c in comparisons:
            found = row(c, name)
            predicted = basis(found, at_length) if found is not None else None
            if found is not None and found.measured and predicted:
                ratios.append(found.measured / predicted)
        if ratios:
            out.append(factor(name, ratios))
    offsets = [r.measured - r.predicted for c in comparisons
               if (r := row(c, MEMORY_ROW)) is not None and r.measured is not None and r.predicted is not None]
    if offsets:
        out.append(mean_of(MEMORY_ROW, "offset", offsets))
    shares = [c.response_share for c in comparisons if c.response_share and model in (None, c.model)]
    if shares:
        out.append(mean_of(SHARE, "share", shares))
    return out


def corrected(prediction: float, correction: Correction | None) -> float:
    """A prediction with its correction applied (unchanged without one)."""
    if correction is None:
        return prediction
    return prediction * correction.value if correction.kind == "factor" else prediction + correction.value


def named(corrections: Sequence[Correction], name: str) -> Correction | None:
    return next((c for c in corrections if c.name == name), None)
