"""A picture of memory: one stacked bar per phase (a segment per term), the usable limit marked.

Three drawings of the same data: `terminal_bars` (text; coloured blocks on a colour terminal,
one letter per term otherwise, so piped and NO_COLOR output stays plain ASCII), and
`svg_chart` / `html_chart` (standalone files for `--chart FILE.svg|.html`, no scripts, no
external resources). Whatever phases and terms the memory model reports are drawn; nothing
here knows their names. Pure functions of the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Protocol, Sequence


# Read-only properties, so frozen dataclasses (plan.candidate's PhaseMemory/MemoryTerm) match.
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


# Distinct, colour-blind-friendly fills (Okabe-Ito, then Tableau), assigned to terms in the
# order they first appear; the limit line is red.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999",
           "#8C564B", "#17BECF", "#BCBD22", "#7F7F7F", "#393B79", "#AD494A", "#637939", "#E7BA52")
LIMIT_COLOUR = "#D62728"
_RICH = ("blue", "dark_orange", "green", "magenta", "cyan", "red3", "yellow", "grey50", "orange4", "turquoise2",
         "gold3", "grey37", "navy_blue", "indian_red", "dark_olive_green3", "light_goldenrod3")


@dataclass(frozen=True)
class Segment:
    term: str
    gib: float
    index: int  # the term's colour and letter


@dataclass(frozen=True)
class Bar:
    phase: str
    gib: float
    segments: tuple[Segment, ...]


def bars(phases: Sequence[PhaseLike]) -> tuple[list[Bar], list[str]]:
    """The bars, and the term names in colour order (a term keeps its colour in every phase)."""
    names: list[str] = []
    out = []
    for phase in phases:
        segments = []
        for term in phase.terms:
            if term.gib <= 0:
                continue
            if term.name not in names:
                names.append(term.name)
            segments.append(Segment(term.name, term.gib, names.index(term.name)))
        out.append(Bar(phase.phase, phase.gib, tuple(segments)))
    return out, names


def _letters(names: Sequence[str]) -> list[str]:
    """One distinct ASCII letter per term: its initial when free, else the next free letter."""
    used: list[str] = []
    for name in names:
        candidates = [c for c in name.lower() if c.isalpha()] + list("abcdefghijklmnopqrstuvwxyz")
        letter = next((c for c in candidates if c not in used), "?")
        used.append(letter)
    return used


def _scale(bar_list: Sequence[Bar], limit: float) -> float:
    return max([limit, *(b.gib for b in bar_list)]) * 1.05 or 1.0


@dataclass(frozen=True)
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
    hold rich markup (coloured blocks); without, plain ASCII (a letter per term)."""
    bar_list, names = bars(phases)
    if not bar_list:
        return []
    letters = _letters(names)
    scale = _scale(bar_list, limit)
    limit_at = min(width - 1, round(limit / scale * width))
    label_width = max(len(b.phase) for b in bar_list)
    lines = []
    for bar in bar_list:
        cells: list[tuple[str, int | None]] = []
        used = 0.0
        for segment in bar.segments:
            start, used = round(used / scale * width), used + segment.gib
            cells += [(letters[segment.index], segment.index)] * max(0, round(used / scale * width) - start)
        cells = cells[:width] + [(" ", None)] * (width - len(cells))
        over = bar.gib > limit
        marker = ("!" if over else "|", None)
        cells[limit_at] = marker if cells[limit_at][1] is None or over else (cells[limit_at][0].upper(), None)
        if color:
            from rich.markup import escape as markup

            body = "".join(f"[{_RICH[i % len(_RICH)]}]█[/]" if i is not None
                           else f"[bold {'red' if over else 'white'}]{markup(c)}[/]" if c in "|!" else c
                           for c, i in cells)
        else:
            body = "".join(c for c, _ in cells)
        verdict = f"over by {bar.gib - limit:.1f}" if over else "fits"
        lines.append(f"{bar.phase.rjust(label_width)} [{body}] {bar.gib:5.1f} GiB {verdict}")
    keys = [f"{letters[i]}={name}" for i, name in enumerate(names)]
    shown = [f"[{_RICH[i % len(_RICH)]}]█[/] {name}" for i, name in enumerate(names)] if color else keys
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
LEFT = 130  # room for the phase names
PLOT_WIDTH = 560
TOP = 40


@dataclass(frozen=True)
class ChartSection:
    """One trainer call's picture in a file that may hold several (`gen explain --chart`)."""

    title: str
    phases: Sequence[PhaseLike]
    limit: float


def _svg_elements(phases: Sequence[PhaseLike], limit: float, title: str, y0: int) -> tuple[list[str], int, int]:
    """The drawing of one section with its top at `y0` (every y is absolute, so sections stack
    without transforms): its elements, width and height."""
    bar_list, names = bars(phases)
    scale = _scale(bar_list, limit)
    px = PLOT_WIDTH / scale
    legend_rows = (len(names) + 2) // 3
    height = TOP + len(bar_list) * (BAR_HEIGHT + BAR_GAP) + 30 + legend_rows * 20
    width = LEFT + PLOT_WIDTH + 90
    top = y0 + TOP
    out: list[str] = []
    if title:
        out.append(f'<text x="10" y="{y0 + 22}" font-size="14" font-weight="bold">{escape(title)}</text>')
    for row, bar in enumerate(bar_list):
        y = top + row * (BAR_HEIGHT + BAR_GAP)
        out.append(f'<text x="{LEFT - 8}" y="{y + BAR_HEIGHT / 2 + 4:.1f}" text-anchor="end">{escape(bar.phase)}</text>')
        x = float(LEFT)
        for segment in bar.segments:
            w = segment.gib * px
            out.append(f'<rect class="term" data-phase="{escape(bar.phase)}" data-term="{escape(segment.term)}" '
                       f'data-gib="{segment.gib:.3f}" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{BAR_HEIGHT}" '
                       f'fill="{PALETTE[segment.index % len(PALETTE)]}"><title>{escape(bar.phase)}: '
                       f'{escape(segment.term)} {segment.gib:.1f} GiB</title></rect>')
            x += w
        verdict = "fits" if bar.gib <= limit else f"over by {bar.gib - limit:.1f}"
        limit_x = LEFT + limit * px
        label_x = limit_x + 8 if x < limit_x < x + 110 else x + 6  # never across the limit line
        out.append(f'<text x="{label_x:.1f}" y="{y + BAR_HEIGHT / 2 + 4:.1f}">{bar.gib:.1f} GiB {verdict}</text>')
    limit_x = LEFT + limit * px
    bottom = top + len(bar_list) * (BAR_HEIGHT + BAR_GAP) - BAR_GAP
    out.append(f'<line class="limit" data-gib="{limit:.3f}" x1="{limit_x:.2f}" y1="{top - 8}" x2="{limit_x:.2f}" '
               f'y2="{bottom + 8}" stroke="{LIMIT_COLOUR}" stroke-width="3"/>')
    out.append(f'<text x="{limit_x:.2f}" y="{top - 12}" text-anchor="middle" fill="{LIMIT_COLOUR}">'
               f'usable {limit:.1f} GiB</text>')
    legend_top = bottom + 30
    for i, name in enumerate(names):
        lx, ly = LEFT + (i % 3) * 190, legend_top + (i // 3) * 20
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{PALETTE[i % len(PALETTE)]}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly}">{escape(name)}</text>')
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

    from generator.errors import InputError

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


__all__ = ["PALETTE", "LIMIT_COLOUR", "ChartSection", "bars", "chart_for", "charts_for", "check_chart_path", "html_chart", "stacked_html",
           "stacked_svg", "svg_chart", "terminal_bars", "worst_stage_phases"]
