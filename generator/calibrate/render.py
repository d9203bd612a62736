"""What `gen calibrate` prints: one text block or one JSON document per log (the one place its
output is formatted)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.calibrate import metric_keys as k
from generator.calibrate.compare import Comparison, Row
from generator.calibrate.fit import Correction
from generator.calibrate.logs import RunLog
from generator.calibrate.summary import Measured
from generator.base.safe_text import json_text, one_line


@dataclass(frozen=True, slots=True)
class Calibrated:
    """Everything said about one log."""

    run: RunLog
    measured: Measured
    comparison: Comparison
    config_source: str = ""
    differences: list[str] = field(default_factory=list)  # the script against the log's own config
    contradictions: list[str] = field(default_factory=list)  # the log's numbers against the config

    @property
    def partial(self) -> bool:
        return bool(self.run.cut_off or self.differences or self.contradictions or self.comparison.problems)


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.1f} {unit}" if value < 1000 else f"{value:.0f} {unit}"


def _ratio(row: Row) -> str:
    return "-" if row.ratio is None else f"{row.ratio:.2f}x"


def _lengths(measured: Measured, comparison: Comparison) -> str:
    parts = []
    if k.RESPONSE_MEAN in measured.medians:
        mean = f"responses: mean {measured.medians[k.RESPONSE_MEAN]:.0f} tokens"
        if comparison.expected_response:
            mean += f" (predicted for {comparison.expected_response:.0f})"
        parts.append(mean)
    if k.RESPONSE_MAX in measured.maxima:
        parts.append(f"max {measured.maxima[k.RESPONSE_MAX]:.0f}")
    if k.RESPONSE_CLIP in measured.medians:
        parts.append(f"{measured.medians[k.RESPONSE_CLIP]:.0%} clipped")
    return ", ".join(parts)


def text(done: Calibrated) -> str:
    m, c, run = done.measured, done.comparison, done.run
    skipped = f", {m.skipped} warm-up step{'s' if m.skipped != 1 else ''} skipped" if m.skipped else ", no warm-up skipped"
    release = k.newest_first_release(run.keys)
    span = f"step {m.first}" if m.first == m.last else f"steps {m.first}-{m.last}"
    lines = [f"{run.path}: {run.format} log, {span} ({m.steps} summarised{skipped})"
             + (f"; written by verl >= {release} (by its keys)" if release else "")]
    if done.config_source:
        lines.append(f"  configuration: {done.config_source}")
    for difference in done.differences:
        lines.append(f"  differs from --script: {difference}")
    for contradiction in done.contradictions:
        lines.append(f"  another configuration than predicted for: {contradiction}")
    mfu = m.medians.get(k.MFU_ACTOR)
    facts = [f"model {c.model}" if c.model else "", f"GPU {c.gpu}", _lengths(m, c),
             f"update MFU {mfu:.2f} (verl's count)" if mfu is not None else ""]
    lines.append("  " + "; ".join(f for f in facts if f))
    width = max(len(r.label) for r in c.rows)
    lines.append(f"  {'phase':<{width}}  {'measured':>10}  {'predicted':>10}  {'ratio':>6}  {'at measured length':>18}")
    for row in c.rows:
        if row.measured is None and row.predicted is None:
            continue
        lines.append(f"  {row.label:<{width}}  {_number(row.measured, row.unit):>10}  "
                     f"{_number(row.predicted, row.unit):>10}  {_ratio(row):>6}  "
                     f"{_number(row.at_measured_length, row.unit):>18}")
    if c.largest is not None:
        lines.append(f"  largest miss: {c.largest.label}, measured {_ratio(c.largest)} the prediction: {c.cause}")
    for problem in c.problems:
        lines.append(f"  {problem}")
    for note in run.notes:
        lines.append(f"  note: {note}")
    return "\n".join(one_line(line) for line in lines) + "\n"  # a value from the log cannot start a line


def as_dict(done: Calibrated) -> dict[str, Any]:
    m, c, run = done.measured, done.comparison, done.run
    return {
        "path": run.path, "format": run.format, "cut_off": run.cut_off, "notes": run.notes,
        "verl_at_least": k.newest_first_release(run.keys),
        "steps": {"summarised": m.steps, "warmup_skipped": m.skipped, "first": m.first, "last": m.last},
        "configuration": done.config_source or None, "differences": done.differences,
        "contradictions": done.contradictions, "model": c.model or None, "gpu": c.gpu,
        "measured": {"phases_s": m.phases, "memory_gib": m.memory, "medians": m.medians, "maxima": m.maxima},
        "expected_response_tokens": c.expected_response,
        "rows": [{"kind": r.kind, "phase": r.label, "unit": r.unit, "measured": r.measured, "predicted": r.predicted,
                  "ratio": r.ratio, "predicted_at_measured_length": r.at_measured_length} for r in c.rows],
        "largest_miss": None if c.largest is None else {"phase": c.largest.label, "ratio": c.largest.ratio,
                                                         "cause": c.cause},
        "problems": c.problems,
    }


def corrections_text(corrections: list[Correction], runs: int, saved: str = "") -> str:
    if not corrections:
        return ""
    lines = [f"corrections fitted on {runs} run{'s' if runs != 1 else ''}"
             + (":" if saved else " (shown; --save stores them):")]
    lines += [f"  {c.describe()}" for c in corrections]
    if saved:
        lines.append(saved)
    return "\n".join(one_line(line) for line in lines) + "\n"


def documents(done: list[Calibrated], errors: list[dict[str, str]], corrections: list[Correction],
              saved: str = "") -> str:
    fitted = [{"name": c.name, "kind": c.kind, "value": c.value, "spread": c.spread, "runs": c.runs}
              for c in corrections]
    return json_text({"logs": [as_dict(d) for d in done], "corrections": fitted, "errors": errors,
                      "saved": saved or None})
