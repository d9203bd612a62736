"""A picture of memory: one stacked bar per phase (a segment per term), the usable limit marked.

Three drawings of the same data: `terminal_bars` (text; coloured blocks on a colour terminal,
one letter per term group otherwise, so piped and NO_COLOR output stays plain ASCII), and
`svg_chart` / `html_chart` (standalone files for `--chart FILE.svg|.html`, no scripts, no
external resources). Whatever phases and terms the memory model reports are drawn, each in its
group's colour from generator/report/palette.py (the same in every phase, chart and terminal); a
bar over the limit is on a red wash with its verdict in red. Pure functions of the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from generator.base.safe_text import html_text as escape
from typing import Protocol, Sequence

from generator.report.palette import LIMIT_COLOUR, OVER_FILL, TERM_GROUPS, group_colour, group_of


# Read-only properties, so frozen dataclasses (generator.layout.candidate's PhaseMemory/MemoryTerm) match.
class TermLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def gib(self) -> float: ...


class PhaseLike(Protocol):
    @property
    def phase(self) -> str: ...

    @property
    def gib(self) -> float: ...

    @property
    def terms(self) -> Sequence[TermLike]: ...


# A term is drawn in its group's colour (generator/report/palette.py: nine groups, not eighteen
# hues); a segment keeps its own term's name for the tooltip, the data attributes and the table.


@dataclass(frozen=True, slots=True)
class Segment:
    term: str
    gib: float
    index: int  # the term's group: its colour, letter and place in the legend
    colour: str = ""


@dataclass(frozen=True, slots=True)
class Bar:
    phase: str
    gib: float
    segments: tuple[Segment, ...]


def bars(phases: Sequence[PhaseLike]) -> tuple[list[Bar], list[tuple[int, str]]]:
    """The bars, and the legend: (group index, group name) in the palette's order. A term keeps
    its group's colour in every phase and in every chart; within a bar the segments are in the
    groups' order, so one colour is one stretch (actor weights first, wherever they are)."""
    seen: dict[int, str] = {}
    out = []
    for phase in phases:
        segments = []
        for term in phase.terms:
            if term.gib <= 0:
                continue
            index, group, colour = group_of(term.name)
            seen[index] = group
            segments.append(Segment(term.name, term.gib, index, colour))
        segments.sort(key=lambda s: s.index)  # stable: a group's terms keep the model's order
        out.append(Bar(phase.phase, phase.gib, tuple(segments)))
    return out, sorted(seen.items())


def _letters(names: Sequence[str]) -> list[str]:
    """One distinct ASCII letter per term: its initial when free, else the next free letter."""
    used: list[str] = []
    for name in names:
        candidates = [c for c in name.lower() if c.isalpha()] + list("abcdefghijklmnopqrstuvwxyz")
        letter = next((c for c in candidates if c not in used), "?")
        used.append(letter)
    return used


# One letter per group, fixed over all the groups (not only those a chart shows), so `a` is the
# actor weights in every chart.
_GROUP_LETTERS = dict(enumerate(_letters([name for name, _, _ in TERM_GROUPS] + ["other"])))


def _scale(bar_list: Sequence[Bar], limit: float) -> float:
    return max([limit, *(b.gib for b in bar_list)]) * 1.05 or 1.0


@dataclass(frozen=True, slots=True)
class _Worst:
    phase: str
    gib: float
    terms: tuple[TermLike, ...]


class StageLike(Protocol):
    @property
    def stage(self) -> int: ...

    @property
    def phases(self) -> Sequence[PhaseLike]: ...


def worst_stage_phases(stages: Sequence[StageLike]) -> list[PhaseLike]:
    """Each phase on the pipeline stage where it is largest (named `phase (stage N)` when the
    pipeline has several stages), in the order the phases first appear."""
    best: dict[str, tuple[PhaseLike, int]] = {}
    for stage in stages:
        for phase in stage.phases:
            if phase.phase not in best or phase.gib > best[phase.phase][0].gib:
                best[phase.phase] = (phase, stage.stage)
    several = len(stages) > 1
    return [_Worst(f"{name} (stage {number})" if several else name, phase.gib, tuple(phase.terms))
            for name, (phase, number) in best.items()]


# --- terminal -------------------------------------------------------------------------------


def terminal_bars(phases: Sequence[PhaseLike], limit: float, *, width: int = 40, color: bool = False,
                  line_width: int = 80) -> list[str]:
    """Lines: `phase  [bar with | at the limit]  GiB`, then a legend. With `color` the lines
    hold rich markup (coloured blocks); without, plain ASCII (a letter per term group)."""
    bar_list, legend = bars(phases)
    if not bar_list:
        return []
    letter_of = _GROUP_LETTERS
    scale = _scale(bar_list, limit)
    limit_at = min(width - 1, round(limit / scale * width))
    label_width = max(len(b.phase) for b in bar_list)
    lines = []
    for bar in bar_list:
        cells: list[tuple[str, int | None]] = []
        used = 0.0
        for segment in bar.segments:
            start, used = round(used / scale * width), used + segment.gib
            cells += [(letter_of[segment.index], segment.index)] * max(0, round(used / scale * width) - start)
        cells = cells[:width] + [(" ", None)] * (width - len(cells))
        over = bar.gib > limit
        marker = ("!" if over else "|", None)
        cells[limit_at] = marker if cells[limit_at][1] is None or over else (cells[limit_at][0].upper(), None)
        if color:
            from rich.markup import escape as markup

            body = "".join(f"[{group_colour(i)}]█[/]" if i is not None
                           else f"[bold {'red' if over else 'white'}]{markup(c)}[/]" if c in "|!" else c
                           for c, i in cells)
        else:
            body = "".join(c for c, _ in cells)
        verdict = f"over by {bar.gib - limit:.1f}" if over else "fits"
        if over and color:
            verdict = f"[bold {LIMIT_COLOUR}]{verdict}[/]"  # the bar over the limit stands out
        lines.append(f"{bar.phase.rjust(label_width)} [{body}] {bar.gib:5.1f} GiB {verdict}")
    keys = [f"{letter_of[i]}={name}" for i, name in legend]
    shown = [f"[{group_colour(i)}]█[/] {name}" for i, name in legend] if color else keys
    lines.append(f"{' ' * label_width}  {'[bold]|[/]' if color else '|'} usable limit {limit:.1f} GiB")
    # The legend wrapped by its visible length (markup does not take columns).
    row: list[str] = []
    used = label_width + 2
    for key, text in zip(keys, shown):
        if row and used + len(key) + 2 > line_width:
            lines.append(" " * (label_width + 2) + "  ".join(row))
            row, used = [], label_width + 2
        row.append(text)
        used += len(key) + 2
    if row:
        lines.append(" " * (label_width + 2) + "  ".join(row))
    return lines


# --- SVG / HTML -----------------------------------------------------------------------------

BAR_HEIGHT = 28
BAR_GAP = 14
MIN_LEFT = 130  # room for the phase names (more when a name is longer)
PLOT_WIDTH = 560
TOP = 64  # the title, then the limit's label above the bars (they never overlap)
CHAR_PX = 7.2  # a generous width of one character of the 12 px sans-serif text (13 px bold titles: 8.4)
AXIS_HEIGHT = 36  # ticks, their numbers and "GiB per GPU" under the bars


@dataclass(frozen=True, slots=True)
class ChartSection:
    """One trainer call's picture in a file that may hold several (`gen explain --chart`)."""

    title: str
    phases: Sequence[PhaseLike]
    limit: float


def _tick_step(scale: float) -> float:
    """A round GiB step (1, 2 or 5 × 10^k) that gives four to ten ticks over [0, scale]."""
    import math

    step = 10.0 ** math.floor(math.log10(max(scale, 1e-9) / 5))
    for multiple in (1, 2, 5, 10):
        if scale / (step * multiple) <= 10:
            return step * multiple
    return step * 10


def _value_label(bar: Bar, limit: float) -> str:
    verdict = "fits" if bar.gib <= limit else f"over by {bar.gib - limit:.1f}"
    return f"{bar.gib:.1f} GiB {verdict}"


def _svg_elements(phases: Sequence[PhaseLike], limit: float, title: str, y0: int) -> tuple[list[str], int, int]:
    """The drawing of one section with its top at `y0` (every y is absolute, so sections stack
    without transforms): its elements, width and height. Every label fits inside: the left
    margin holds the longest phase name, the right one the longest value label, the width the
    title."""
    bar_list, legend = bars(phases)
    scale = _scale(bar_list, limit)
    px = PLOT_WIDTH / scale
    left = max(MIN_LEFT, int(16 + CHAR_PX * max((len(b.phase) for b in bar_list), default=0)))
    right = int(24 + CHAR_PX * max([len(f"usable {limit:.1f} GiB") / 2,
                                    *(len(_value_label(b, limit)) for b in bar_list)]))
    legend_rows = (len(legend) + 2) // 3
    column = max(190, int(30 + CHAR_PX * max((len(name) for _, name in legend), default=0)))
    width = max(left + PLOT_WIDTH + right, int(20 + 8.4 * len(title)), left + 3 * column)
    bars_height = len(bar_list) * (BAR_HEIGHT + BAR_GAP) - BAR_GAP
    height = TOP + bars_height + AXIS_HEIGHT + 24 + legend_rows * 20
    top = y0 + TOP
    bottom = top + bars_height
    out: list[str] = []
    if title:
        out.append(f'<text class="title" x="10" y="{y0 + 22}" font-size="13" font-weight="bold">{escape(title)}</text>')
    step = _tick_step(scale)
    tick = 0.0
    while tick <= scale + 1e-9:
        x = left + tick * px
        out.append(f'<line class="grid" x1="{x:.2f}" y1="{top - 4}" x2="{x:.2f}" y2="{bottom + 4}" stroke="#e0e0e0"/>')
        out.append(f'<text class="tick" data-gib="{tick:g}" x="{x:.2f}" y="{bottom + 20}" text-anchor="middle">'
                   f'{tick:g}</text>')
        tick = round(tick + step, 9)
    out.append(f'<text class="axis" x="{left + PLOT_WIDTH:.2f}" y="{bottom + AXIS_HEIGHT - 2}" text-anchor="end">'
               "GiB per GPU</text>")
    for row, bar in enumerate(bar_list):
        y = top + row * (BAR_HEIGHT + BAR_GAP)
        over = bar.gib > limit
        if over:  # the row of a bar over the limit, on a red wash
            out.append(f'<rect class="over" data-phase="{escape(bar.phase)}" x="4" y="{y - 5}" '
                       f'width="{left + PLOT_WIDTH + right - 8}" height="{BAR_HEIGHT + 10}" fill="{OVER_FILL}"/>')
        out.append(f'<text class="phase" x="{left - 8}" y="{y + BAR_HEIGHT / 2 + 4:.1f}" text-anchor="end">'
                   f'{escape(bar.phase)}</text>')
        x = float(left)
        for segment in bar.segments:
            w = segment.gib * px
            out.append(f'<rect class="term" data-phase="{escape(bar.phase)}" data-term="{escape(segment.term)}" '
                       f'data-gib="{segment.gib:.3f}" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{BAR_HEIGHT}" '
                       f'fill="{segment.colour}" stroke="#ffffff" stroke-width="0.5"><title>{escape(bar.phase)}: '
                       f'{escape(segment.term)} {segment.gib:.1f} GiB</title></rect>')
            x += w
        limit_x = left + limit * px
        label_x = limit_x + 8 if x < limit_x < x + 110 else x + 6  # never across the limit line
        emphasis = f' fill="{LIMIT_COLOUR}" font-weight="bold"' if over else ""
        out.append(f'<text class="value" x="{label_x:.1f}" y="{y + BAR_HEIGHT / 2 + 4:.1f}"{emphasis}>'
                   f'{_value_label(bar, limit)}</text>')
    limit_x = left + limit * px
    out.append(f'<line class="limit" data-gib="{limit:.3f}" x1="{limit_x:.2f}" y1="{top - 8}" x2="{limit_x:.2f}" '
               f'y2="{bottom + 8}" stroke="{LIMIT_COLOUR}" stroke-width="3"/>')
    out.append(f'<text class="limit-label" x="{limit_x:.2f}" y="{top - 12}" text-anchor="middle" '
               f'fill="{LIMIT_COLOUR}">usable {limit:.1f} GiB</text>')
    legend_top = bottom + AXIS_HEIGHT + 24
    for i, (index, name) in enumerate(legend):
        lx, ly = left + (i % 3) * column, legend_top + (i // 3) * 20
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{group_colour(index)}"/>')
        out.append(f'<text class="legend" x="{lx + 18}" y="{ly}">{escape(name)}</text>')
    return out, width, height


def stacked_svg(sections: Sequence[ChartSection]) -> str:
    """A standalone SVG: each section's chart below the previous one (one section: `svg_chart`)."""
    elements: list[str] = []
    width = height = 0
    for section in sections:
        drawn, section_width, section_height = _svg_elements(section.phases, section.limit, section.title, height)
        elements += drawn
        width, height = max(width, section_width), height + section_height
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>', *elements, "</svg>"]
    return "\n".join(out) + "\n"


def svg_chart(phases: Sequence[PhaseLike], limit: float, *, title: str = "") -> str:
    """A standalone SVG: one horizontal stacked bar per phase, x proportional to GiB, a term's
    segment in its colour (same colour in every phase), a red line at the usable limit."""
    return stacked_svg([ChartSection(title, phases, limit)])


def _numbers_table(phases: Sequence[PhaseLike]) -> str:
    rows = "".join(f"<tr><td>{escape(p.phase)}</td><td>{escape(t.name)}</td><td>{t.gib:.1f}</td></tr>"
                   for p in phases for t in p.terms if t.gib > 0)
    return f"<table><tr><th>phase</th><th>term</th><th>GiB</th></tr>{rows}</table>\n"


def stacked_html(sections: Sequence[ChartSection]) -> str:
    """A standalone HTML page: for each section its SVG chart and a table of the numbers."""
    title = sections[0].title if len(sections) == 1 else ""
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{escape(title or 'memory per phase')}</title>"
            "<style>body{margin:0;font-family:sans-serif}table{border-collapse:collapse;margin:12px}"
            "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}</style></head><body>\n"
            + "".join(svg_chart(s.phases, s.limit, title=s.title) + _numbers_table(s.phases) for s in sections)
            + "</body></html>\n")


def html_chart(phases: Sequence[PhaseLike], limit: float, *, title: str = "") -> str:
    """A standalone HTML page holding the SVG chart and a table of the numbers."""
    return stacked_html([ChartSection(title, phases, limit)])


def check_chart_path(path: str, *, force: bool = True) -> None:
    """Refuse (InputError), before any work, a --chart file name that is neither *.svg nor
    *.html/*.htm, a symbolic link (the write would replace its target), or an existing file
    without `force` (--force)."""
    import os

    from generator.base.errors import InputError

    if not path.lower().endswith((".svg", ".html", ".htm")):
        raise InputError(f"--chart {path}: the file name must end in .svg or .html")
    if os.path.islink(path):
        raise InputError(f"--chart {path}: is a symbolic link; nothing written (name the file itself)")
    if not force and os.path.lexists(path):
        raise InputError(f"--chart {path}: exists; pass --force to overwrite it")


def charts_for(path: str, sections: Sequence[ChartSection]) -> str:
    """The chart text `--chart path` writes: SVG for *.svg, HTML for *.html/*.htm; several
    sections are drawn one below the other."""
    check_chart_path(path)
    return stacked_svg(sections) if path.lower().endswith(".svg") else stacked_html(sections)


def chart_for(path: str, phases: Sequence[PhaseLike], limit: float, *, title: str = "") -> str:
    """`charts_for` with one section."""
    return charts_for(path, [ChartSection(title, phases, limit)])


__all__ = ["LIMIT_COLOUR", "ChartSection", "bars", "chart_for", "charts_for", "check_chart_path", "html_chart", "stacked_html",
           "stacked_svg", "svg_chart", "terminal_bars", "worst_stage_phases"]
