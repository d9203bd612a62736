"""The files `gen plan --chart` and `gen recipe --chart` write: the layout (which GPU holds which
TP, PP, EP and DP ranks and which rollout replica), the candidates side by side (plan only) and the
memory per phase, one below the other in one SVG, or in one HTML page with the numbers' table.

Every title says the model, the GPUs and the layout. No scripts, no external resources.
"""

from __future__ import annotations

import re
from generator.base.safe_text import html_text as escape
from typing import TYPE_CHECKING, Sequence

from generator.report.charts import ChartSection, check_chart_path, stacked_svg
from generator.report.layout_chart import Shape, layout_svg

if TYPE_CHECKING:
    from generator.layout.candidate import Candidate
    from generator.plan.result import Plan
    from generator.plan.verl_departures import Departure
    from generator.render.spec import RecipeSpec

_SIZE = re.compile(r'<svg [^>]*?width="(\d+)" height="(\d+)"')


def shape_of(c: Candidate, gpus: int, nodes: int) -> Shape:
    """The picture's sizes for a planned layout; the planner chooses rollout TP alone, so its
    replicas are TP-only (rollout DP and EP at verl's default, 1)."""
    return Shape(gpus=gpus, gpus_per_node=max(1, gpus // max(1, nodes)), tp=c.tp, pp=c.pp, cp=c.cp, ep=c.ep,
                 etp=c.etp, rollout_tp=c.rollout_tp)


def heading(model: str, gpus: int, gpu: str, shape: Shape) -> str:
    """`qwen2-7b on 8 x h100, TP2 PP1 DP4 · rollout TP2 x 4 replicas` - what every title starts with."""
    return f"{model} on {gpus} x {gpu}, {shape.text()}"


def stack(svgs: Sequence[str]) -> str:
    """Standalone SVGs one below the other, in one SVG (each nested at its offset)."""
    width = height = 0
    inner = []
    for svg in svgs:
        found = _SIZE.search(svg)
        assert found is not None, "every drawing here states its size"
        w, h = int(found.group(1)), int(found.group(2))
        inner.append(svg.replace("<svg ", f'<svg x="0" y="{height}" ', 1))
        width, height = max(width, w), height + h + 12
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">\n<rect x="0" y="0" width="{width}" height="{height}" '
            f'fill="#ffffff"/>\n' + "".join(inner) + "</svg>\n")


def page(title: str, parts: Sequence[str]) -> str:
    """A standalone HTML page: the title, then each part (SVG or HTML) in order."""
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title>"
            "<style>body{margin:8px;font-family:sans-serif}section{margin:0 0 18px}table{border-collapse:collapse}"
            "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}</style></head><body>\n"
            + "".join(f"<section>{part}</section>\n" for part in parts) + "</body></html>\n")


def _numbers(c: Candidate) -> str:
    rows = "".join(f"<tr><td>{escape(p.phase)}</td><td>{escape(t.name)}</td><td>{t.gib:.1f}</td></tr>"
                   for p in c.memory for t in p.terms if t.gib > 0)
    return f"<table><tr><th>phase</th><th>term</th><th>GiB</th></tr>{rows}</table>"


def _drawings(path: str, svgs: Sequence[str], title: str, table: str) -> str:
    return stack(svgs) if path.lower().endswith(".svg") else page(title, [*svgs, table])


def plan_picture(path: str, plan: Plan, departures: Sequence[Departure] = ()) -> str:
    """The chosen layout (else the closest one), the candidates with verl's, and its memory."""
    from generator.base.errors import InputError
    from generator.report.candidates_chart import candidate_rows, candidates_svg

    check_chart_path(path)
    shown = plan.best or (plan.candidates[0] if plan.candidates else None)
    if shown is None:
        raise InputError(f"--chart {path}: no layout was evaluated, nothing to draw")
    shape = shape_of(shown, plan.gpus, plan.nodes)
    head = heading(plan.model, plan.gpus, plan.gpu, shape)
    which = "chosen layout" if plan.best is not None else "closest layout (none fits)"
    svgs = [layout_svg(shape, title=f"{head}: the {which}"),
            candidates_svg(candidate_rows(plan, departures),
                           title=f"{plan.model} on {plan.gpus} x {plan.gpu}: the candidates, verl's layout among them"),
            stacked_svg([ChartSection(f"{head}: memory per GPU by phase", shown.memory, shown.limit_gib)])]
    return _drawings(path, svgs, head, _numbers(shown))


def recipe_picture(path: str, spec: RecipeSpec) -> str:
    """The layout of the script `gen recipe` writes, and its memory per phase."""
    check_chart_path(path)
    shape = shape_of(spec.layout, spec.gpus, spec.nodes)
    head = heading(spec.model.name, spec.gpus, spec.gpu_name, shape)
    svgs = [layout_svg(shape, title=f"{head}: the layout"),
            stacked_svg([ChartSection(f"{head}: memory per GPU by phase", spec.layout.memory, spec.layout.limit_gib)])]
    return _drawings(path, svgs, head, _numbers(spec.layout))


__all__ = ["heading", "page", "plan_picture", "recipe_picture", "shape_of", "stack"]
