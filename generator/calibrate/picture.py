"""`gen calibrate --chart`: a picture of each run: measured against predicted per phase (time
and memory, each on its own scale) and the run's step split into its phases, measured beside
predicted. The memory chart's colours (generator.report.palette.SERIES_COLOURS): measured in its first,
predicted in its second; the phases of the step in its order. One SVG, or an HTML page around it.
Pure text; the caller writes it through generator.base.files.write_atomic."""

from __future__ import annotations

from collections.abc import Sequence
from generator.base.safe_text import html_text as escape

from generator.calibrate import metric_keys as k
from generator.calibrate.render import Calibrated
from generator.report.palette import SERIES_COLOURS as PALETTE

WIDTH = 760
LABEL_W = 230  # the phase names' column
VALUE_W = 90  # room right of the longest bar for its value
BAR_H = 12
MEASURED, PREDICTED = PALETTE[0], PALETTE[1]
# The step's parts as verl times them, in the order they run; what the timers leave out is "other".
STEP_PARTS = ("gen", "reward", "old_log_prob", "ref", "values", "adv", "update_critic", "update_actor",
              "update_weights")
# The model's parts, named as the comparison names its rows, and the measured timers each covers.
MODEL_PARTS = (("rollout", ("gen",)), ("log-prob", ("old_log_prob", "ref", "values")),
               ("update", ("update_critic", "update_actor")), ("weight sync", ("update_weights",)))


def _value(v: float, unit: str) -> str:
    return f"{v:.1f} {unit}" if v < 1000 else f"{v:.0f} {unit}"


def _text(x: float, y: float, text: str, cls: str, anchor: str = "start", size: int = 11) -> str:
    return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-family="sans-serif">{escape(text)}</text>')


def _comparison(done: Calibrated, y: float) -> tuple[list[str], float]:
    out: list[str] = []
    span = WIDTH - LABEL_W - VALUE_W - 20
    for kind, unit, title in (("time", "s", "time per phase"), ("memory", "GiB", "memory")):
        rows = [r for r in done.comparison.rows if r.kind == kind and r.measured is not None]
        if not rows:
            continue
        out.append(_text(10, y + 12, f"{title} ({unit}): measured against predicted", "section", size=12))
        y += 20
        top = max(max(r.measured or 0.0, r.predicted or 0.0) for r in rows) or 1.0
        for r in rows:
            out.append(_text(LABEL_W - 8, y + BAR_H + 2, r.label, "phase", "end"))
            for offset, value, colour, who in ((0, r.measured, MEASURED, "measured"),
                                               (BAR_H + 2, r.predicted, PREDICTED, "predicted")):
                if value is None:
                    out.append(_text(LABEL_W, y + offset + BAR_H - 2, f"{who}: -", "value", size=10))
                    continue
                w = max(1.0, span * value / top)
                out.append(f'<rect class="{who}" data-phase="{escape(r.label)}" x="{LABEL_W}" y="{y + offset:.1f}" '
                           f'width="{w:.1f}" height="{BAR_H}" fill="{colour}"><title>{escape(r.label)}: {who} '
                           f'{_value(value, unit)}</title></rect>')
                out.append(_text(LABEL_W + w + 4, y + offset + BAR_H - 2, _value(value, unit), "value", size=10))
            if r.ratio is not None:
                out.append(_text(WIDTH - 10, y + BAR_H + 2, f"{r.ratio:.2f}x", "ratio", "end", size=10))
            y += 2 * BAR_H + 10
        y += 6
    return out, y


def _segments(parts: Sequence[tuple[str, float]], total: float, y: float, label: str, span: float,
              colour_of: dict[str, int]) -> list[str]:
    out = [_text(LABEL_W - 8, y + BAR_H, label, "phase", "end")]
    x = float(LABEL_W)
    for name, seconds in parts:
        index = colour_of.get(name, len(colour_of))
        w = span * seconds / total if total else 0.0
        out.append(f'<rect class="part" data-part="{escape(name)}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
                   f'height="{BAR_H + 4}" fill="{PALETTE[index % len(PALETTE)]}"><title>{escape(name)} '
                   f'{_value(seconds, "s")}</title></rect>')
        x += w
    out.append(_text(x + 4, y + BAR_H, _value(sum(s for _, s in parts), "s"), "value", size=10))
    return out


def _breakdown(done: Calibrated, y: float) -> tuple[list[str], float]:
    phases = done.measured.phases
    measured = [(p, phases[p]) for p in STEP_PARTS if p in phases]
    if not measured:
        return [], y
    step = phases.get("step")
    other = step - sum(s for _, s in measured) if step is not None else 0.0
    if other > 0:
        measured.append(("other", other))
    # The model's parts, coloured as the first measured timer each covers.
    colour_of = {name: i for i, (name, _) in enumerate(measured)}
    predicted: list[tuple[str, float]] = []
    for label, timers in MODEL_PARTS:
        found = next((r for r in done.comparison.rows if r.label.startswith(label)), None)
        if found is not None and found.predicted:
            predicted.append((next((t for t in timers if t in colour_of), timers[0]), found.predicted))
    total = max(sum(s for _, s in measured), sum(s for _, s in predicted)) or 1.0
    span = WIDTH - LABEL_W - VALUE_W - 20
    out = [_text(10, y + 12, "the step, phase by phase (s)", "section", size=12)]
    y += 20
    out += _segments(measured, total, y, "measured", span, colour_of)
    y += BAR_H + 10
    if predicted:  # the same colour for the same phase: a model's part takes its measured timer's
        out += _segments(sorted(predicted, key=lambda p: colour_of.get(p[0], len(colour_of))), total, y,
                         "predicted", span, colour_of)
        y += BAR_H + 10
    lx, ly = 10.0, y + 10
    for index, (name, _) in enumerate(measured):
        width = 22 + 7 * len(name)
        if lx + width > WIDTH - 10:
            lx, ly = 10.0, ly + 16
        out.append(f'<rect class="key" x="{lx:.1f}" y="{ly - 9:.1f}" width="10" height="10" '
                   f'fill="{PALETTE[index % len(PALETTE)]}"/>')
        out.append(_text(lx + 14, ly, name, "legend", size=10))
        lx += width
    return out, ly + 12


def svg(done: Sequence[Calibrated]) -> str:
    out: list[str] = []
    y = 10.0
    for d in done:
        model = d.comparison.model or "unknown model"
        out.append(_text(10, y + 14, f"{d.run.path}: {model} on {d.comparison.gpu or 'unknown GPU'}", "title",
                         size=13))
        lx = WIDTH - 10 - 2 * 90
        for index, (name, colour) in enumerate((("measured", MEASURED), ("predicted", PREDICTED))):
            out.append(f'<rect class="key" x="{lx + index * 90:.1f}" y="{y + 5:.1f}" width="10" height="10" '
                       f'fill="{colour}"/>')
            out.append(_text(lx + index * 90 + 14, y + 14, name, "legend", size=10))
        y += 26
        rows, y = _comparison(d, y)
        out += rows
        parts, y = _breakdown(d, y)
        out += parts
        y += 16
    height = int(y) + 10
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
                      f'viewBox="0 0 {WIDTH} {height}">', f'<rect x="0" y="0" width="{WIDTH}" height="{height}" '
                      'fill="#ffffff"/>', *out, "</svg>"]) + "\n"


def picture(done: Sequence[Calibrated], *, html: bool = False) -> str:
    drawn = svg(done)
    if not html:
        return drawn
    lengths = "; ".join(f"{d.run.path}: responses {d.measured.medians[k.RESPONSE_MEAN]:.0f} tokens"
                        for d in done if k.RESPONSE_MEAN in d.measured.medians)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gen calibrate</title></head><body>\n"
            + drawn + (f"<p>{escape(lengths)}</p>\n" if lengths else "") + "</body></html>\n")
