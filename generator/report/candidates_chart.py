"""The planner's candidates side by side: a row per layout, its estimated step time by part and its
peak memory per GPU by phase, verl's shipped layout among them and the chosen one marked.

The step time bar is stacked by part (generator.layout.candidate.StepTime), the memory column holds one
thin bar per phase stacked by term group, both on scales shared by every row so rows compare by
length; a phase over the usable limit is outlined and its number is red. Colours come from
generator/report/palette.py. Pure functions: `candidate_rows` gathers, `candidates_svg` draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from generator.base.safe_text import html_text as escape
from typing import TYPE_CHECKING, Sequence

from generator.plan.verl_departures import PARTS
from generator.report.charts import PhaseLike, bars
from generator.report.palette import LIMIT_COLOUR, STEP_COLOURS, group_colour, group_of

if TYPE_CHECKING:
    from generator.layout.candidate import Candidate, StepTime
    from generator.plan.result import Plan
    from generator.plan.verl_departures import Departure

STEP_W = 300
MEMORY_W = 300
PHASE_LABEL_W = 84
PHASE_H = 9
PHASE_GAP = 3
ROW_PAD = 10
TOP = 58
CHAR_PX = 7.2
LEGEND_X = 96  # the legends' items, after their heading ("step time", "memory")
STEP_KEY_W = 176  # one step part's key: room for "TP/CP/EP communication"


@dataclass(frozen=True, slots=True)
class CandidateRow:
    label: str  # "#1 TP2 PP1 · rollout TP2"
    step: StepTime | None
    phases: Sequence[PhaseLike]
    limit: float
    chosen: bool = False
    verl: str = ""  # the verl example this layout is (empty: not one of verl's)


def _layout_text(c: Candidate) -> str:
    from generator.plan.enumeration import describe_layout

    return f"{describe_layout(c)} · rollout TP{c.rollout_tp}"


def candidate_rows(plan: Plan, departures: Sequence[Departure] = ()) -> list[CandidateRow]:
    """The plan's candidates in rank order, then each verl layout the plan did not list (evaluated
    on the plan's workload with verl's own knobs, as `gen plan` words it)."""
    import os

    from generator.plan.enumeration import describe_layout

    def same(a: Candidate, b: Candidate) -> bool:
        return describe_layout(a) == describe_layout(b) and a.rollout_tp == b.rollout_tp

    rows = []
    for i, c in enumerate(plan.candidates):
        verl = next((os.path.basename(d.script) for d in departures if same(d.verl, c)), "")
        rows.append(CandidateRow(f"#{i + 1} {_layout_text(c)}", c.score, c.memory, c.limit_gib,
                                 chosen=i == plan.chosen, verl=verl))
    for d in departures:
        if not any(same(d.verl, c) for c in plan.candidates):
            rows.append(CandidateRow(f"verl {_layout_text(d.verl)}", d.verl.score, d.verl.memory, d.verl.limit_gib,
                                     verl=os.path.basename(d.script)))
    return rows


def _row_label(row: CandidateRow) -> str:
    marks = (["chosen"] if row.chosen else []) + ([f"verl's {row.verl}"] if row.verl else [])
    return row.label + (f" ({', '.join(marks)})" if marks else "")


def _row_height(row: CandidateRow) -> int:
    return max(34, len(row.phases) * (PHASE_H + PHASE_GAP) - PHASE_GAP + 2 * ROW_PAD)


def candidates_svg(rows: Sequence[CandidateRow], *, title: str) -> str:
    """A standalone SVG of the rows (see the module's doc)."""
    label_w = int(16 + CHAR_PX * max((len(_row_label(r)) for r in rows), default=10))
    step_scale = max([r.step.total_s for r in rows if r.step is not None] + [1e-9]) * 1.05
    mem_scale = max([r.limit for r in rows] + [p.gib for r in rows for p in r.phases] + [1e-9]) * 1.05
    step_x = label_w + 10
    mem_x = step_x + STEP_W + 70
    bars_x = mem_x + PHASE_LABEL_W
    value_w = int(CHAR_PX * len("over by 000.0 GiB"))
    legend_items = [(name, STEP_COLOURS[field]) for field, name in PARTS]
    groups = sorted({group_of(t.name)[:2] for r in rows for p in r.phases for t in p.terms if t.gib > 0})
    memory_items = [(name, group_colour(i)) for i, name in groups]
    width = max(bars_x + MEMORY_W + value_w + 20, int(24 + 8.4 * len(title)), LEGEND_X + STEP_KEY_W * len(PARTS) + 10)
    body_h = sum(_row_height(r) for r in rows)
    height = TOP + body_h + 110
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="candidates" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text class="title" x="10" y="20" font-size="13" font-weight="bold">{escape(title)}</text>',
           f'<text class="heading" x="{step_x}" y="{TOP - 10}" font-weight="bold">step time (s, estimated)</text>',
           f'<text class="heading" x="{mem_x}" y="{TOP - 10}" font-weight="bold">peak memory per GPU by phase '
           f'(GiB)</text>']
    y = TOP
    for index, row in enumerate(rows):
        h = _row_height(row)
        if row.chosen:
            out.append(f'<rect class="chosen" x="2" y="{y}" width="{width - 4}" height="{h}" fill="#EAF4EA"/>')
        elif index % 2:
            out.append(f'<rect x="2" y="{y}" width="{width - 4}" height="{h}" fill="#F6F6F6"/>')
        weight = ' font-weight="bold"' if row.chosen else ""
        out.append(f'<text class="candidate" data-row="{index}" data-chosen="{str(row.chosen).lower()}" '
                   f'data-verl="{escape(row.verl)}" x="8" y="{y + h / 2 + 4:.0f}"{weight}>'
                   f'{escape(_row_label(row))}</text>')
        mid = y + h / 2
        if row.step is not None:
            x = float(step_x)
            for field, part in PARTS:
                colour = STEP_COLOURS[field]
                seconds = float(getattr(row.step, field))
                if seconds <= 0:
                    continue
                w = seconds / step_scale * STEP_W
                out.append(f'<rect class="part" data-row="{index}" data-part="{part}" data-s="{seconds:.2f}" '
                           f'x="{x:.2f}" y="{mid - 8:.1f}" width="{w:.2f}" height="16" fill="{colour}">'
                           f'<title>{part} {seconds:.1f} s</title></rect>')
                x += w
            out.append(f'<text class="step-value" x="{x + 5:.1f}" y="{mid + 4:.0f}">{row.step.total_s:.0f} s</text>')
        else:
            out.append(f'<text class="step-value" x="{step_x}" y="{mid + 4:.0f}">not estimated</text>')
        phase_bars, _ = bars(row.phases)
        py = y + ROW_PAD
        for bar in phase_bars:
            over = bar.gib > row.limit
            out.append(f'<text class="phase" x="{bars_x - 4}" y="{py + PHASE_H - 1}" text-anchor="end" '
                       f'font-size="9">{escape(bar.phase)}</text>')
            x = float(bars_x)
            for segment in bar.segments:
                w = segment.gib / mem_scale * MEMORY_W
                out.append(f'<rect class="term" data-row="{index}" data-phase="{escape(bar.phase)}" '
                           f'data-term="{escape(segment.term)}" x="{x:.2f}" y="{py}" width="{w:.2f}" '
                           f'height="{PHASE_H}" fill="{segment.colour}"/>')
                x += w
            if over:
                out.append(f'<rect class="over" data-row="{index}" data-phase="{escape(bar.phase)}" x="{bars_x}" '
                           f'y="{py - 1}" width="{x - bars_x:.2f}" height="{PHASE_H + 2}" fill="none" '
                           f'stroke="{LIMIT_COLOUR}" stroke-width="2"/>')
            py += PHASE_H + PHASE_GAP
        limit_x = bars_x + row.limit / mem_scale * MEMORY_W
        out.append(f'<line class="limit" data-gib="{row.limit:.2f}" x1="{limit_x:.2f}" y1="{y + 4}" '
                   f'x2="{limit_x:.2f}" y2="{y + h - 4}" stroke="{LIMIT_COLOUR}" stroke-width="2"/>')
        peak = max((b.gib for b in phase_bars), default=0.0)
        verdict = f"{peak:.1f} GiB" if peak <= row.limit else f"over by {peak - row.limit:.1f} GiB"
        colour = f' fill="{LIMIT_COLOUR}" font-weight="bold"' if peak > row.limit else ""
        out.append(f'<text class="memory-value" x="{bars_x + MEMORY_W + 8}" y="{mid + 4:.0f}"{colour}>'
                   f'{verdict}</text>')
        y += h
    # Legends: the step's parts, then the memory groups and the limit, each after its heading (the
    # two share hues, so the heading says which a colour belongs to).
    ly = y + 24
    out.append(f'<text class="legend-heading" x="10" y="{ly}" font-weight="bold">step time</text>')
    out.append(f'<text class="legend-heading" x="10" y="{ly + 24}" font-weight="bold">memory</text>')
    for i, (name, colour) in enumerate(legend_items):
        lx = LEGEND_X + i * STEP_KEY_W
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text class="legend" x="{lx + 17}" y="{ly}">{escape(name)}</text>')
    ly += 24
    for i, (name, colour) in enumerate(memory_items + [("usable limit", LIMIT_COLOUR)]):
        lx = LEGEND_X + (i % 7) * 140
        row_y = ly + (i // 7) * 20
        out.append(f'<rect x="{lx}" y="{row_y - 10}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text class="legend" x="{lx + 17}" y="{row_y}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = ["CandidateRow", "candidate_rows", "candidates_svg"]
