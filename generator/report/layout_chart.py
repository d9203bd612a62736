"""A picture of a Megatron layout: nodes x GPUs, each GPU labelled with its place in every group.

Rank order is Megatron-core's (`megatron/core/parallel_state.py` @ core_v0.15.0,
`initialize_model_parallel(order="tp-cp-ep-dp-pp")` and `RankGenerator`): a global rank is a
mixed-radix number whose fastest digit is the TP rank, then CP, then DP, and PP the slowest.
Experts get a second generator over the same ranks with TP -> expert TP, CP -> 1 and
DP -> expert DP = world / (ETP·EP·PP), in the same order: EP is carved out of each pipeline
stage's DP·CP ranks, it adds no GPUs. Ranks fill node 0's GPUs first (torchrun / Ray hand out
ranks node by node). The rollout engine's replicas are consecutive ranks, rollout TP of them each
(verl `verl/workers/megatron_workers.py` @ v0.7.0 builds its rollout mesh as
`(dp, infer_tp, infer_pp)`, so a replica's ranks are adjacent).

Pure functions: `placements` computes, `layout_svg` draws (SVG, no scripts).
"""

from __future__ import annotations

from dataclasses import dataclass
from generator.base.safe_text import html_text as escape

from generator.layout import derive
from generator.report.palette import ROLLOUT_FILLS, stage_fill

CELL_W = 128
CELL_H = 74
GAP = 6
NODE_LABEL_W = 64
BAND_H = 18  # the rollout replicas' band under each node's row
ROW_GAP = 14
TOP = 52  # the title and the subtitle
MAX_NODES_DRAWN = 16  # a larger cluster repeats the same pattern; the rest is said in words
CHAR_PX = 7.2


@dataclass(frozen=True)
class Shape:
    """The sizes the picture needs (a Parallelism's, plus the cluster's)."""

    gpus: int
    gpus_per_node: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None
    rollout_tp: int = 1

    @property
    def dp(self) -> int:
        return derive.data_parallel_size(self.gpus, self.tp, self.pp, self.cp) or 1  # an invalid layout: 1

    @property
    def expert_tp(self) -> int:
        return self.etp or self.tp

    @property
    def expert_dp(self) -> int:
        return derive.expert_data_parallel_size(self.gpus, self.tp, self.pp, self.ep, self.etp) or 1

    @property
    def rollout_dp(self) -> int:
        return derive.rollout_replicas(self.gpus, derive.rollout_replica_size(self.rollout_tp)) or 1

    def text(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}"] + ([f"CP{self.cp}"] if self.cp > 1 else []) + [f"DP{self.dp}"]
        if self.ep > 1:
            parts.append(f"EP{self.ep}" + (f" ETP{self.expert_tp}" if self.expert_tp != self.tp else ""))
        return " ".join(parts) + f" · rollout TP{self.rollout_tp} x DP{self.rollout_dp}"


@dataclass(frozen=True)
class Placement:
    rank: int
    node: int
    local: int  # the GPU's index in its node
    tp: int
    cp: int
    dp: int
    pp: int
    ep: int  # expert-parallel rank (0 without EP)
    etp: int
    edp: int
    replica: int  # the rollout replica the GPU serves


def _digits(rank: int, sizes: tuple[int, ...]) -> list[int]:
    out = []
    for size in sizes:
        out.append(rank % size)
        rank //= size
    return out


def placements(shape: Shape) -> list[Placement]:
    """Every GPU's ranks in each group, Megatron's order (see the module's doc)."""
    per_node = max(1, shape.gpus_per_node)
    out = []
    for rank in range(shape.gpus):
        tp, cp, dp, pp = _digits(rank, (shape.tp, shape.cp, shape.dp, shape.pp))
        etp, ep, edp, _ = _digits(rank, (shape.expert_tp, shape.ep, shape.expert_dp, shape.pp))
        out.append(Placement(rank, rank // per_node, rank % per_node, tp, cp, dp, pp, ep, etp, edp,
                             rank // max(1, shape.rollout_tp)))
    return out


def _cell_lines(p: Placement, shape: Shape) -> list[tuple[str, str]]:
    """(class, text) of the labels inside one GPU's box."""
    lines = [("gpu", f"GPU {p.local} · rank {p.rank}"), ("stage", f"PP stage {p.pp}"),
             ("ranks", f"TP {p.tp}" + (f" · CP {p.cp}" if shape.cp > 1 else "") + f" · DP {p.dp}")]
    if shape.ep > 1:
        lines.append(("experts", f"EP {p.ep}" + (f" · ETP {p.etp}" if shape.expert_tp != shape.tp else "")
                      + f" · EDP {p.edp}"))
    return lines


def _replica_key(shape: Shape) -> str:
    return f"rollout replica ({shape.rollout_tp} GPU{'s' if shape.rollout_tp != 1 else ''}, rollout TP)"


def layout_svg(shape: Shape, *, title: str) -> str:
    """A standalone SVG: a row per node (the first MAX_NODES_DRAWN), a box per GPU filled by its
    pipeline stage, a frame around each TP group's GPUs that share a node, and under each row a
    band per rollout replica."""
    per_node = max(1, shape.gpus_per_node)
    nodes = max(1, -(-shape.gpus // per_node))
    drawn = min(nodes, MAX_NODES_DRAWN)
    cells = placements(shape)
    subtitle = f"{shape.gpus} GPUs = {nodes} node{'s' if nodes != 1 else ''} x {per_node} · {shape.text()}"
    row_h = CELL_H + BAND_H + ROW_GAP
    legend_top = TOP + drawn * row_h + (22 if drawn < nodes else 0)
    stages = min(shape.pp, 8)
    width = max(NODE_LABEL_W + per_node * (CELL_W + GAP) + 10, int(24 + 8.4 * len(title)),
                int(24 + CHAR_PX * len(subtitle)), NODE_LABEL_W + stages * 110 + 10,
                int(NODE_LABEL_W + 224 + CHAR_PX * len(_replica_key(shape)) + 10))
    height = legend_top + 64
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="layout" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text class="title" x="10" y="20" font-size="13" font-weight="bold">{escape(title)}</text>',
           f'<text class="subtitle" x="10" y="38">{escape(subtitle)}</text>']
    for node in range(drawn):
        y = TOP + node * row_h
        out.append(f'<text class="node" x="8" y="{y + CELL_H / 2 + 4:.0f}" font-weight="bold">node {node}</text>')
        row = [p for p in cells if p.node == node]
        for p in row:
            x = NODE_LABEL_W + p.local * (CELL_W + GAP)
            out.append(f'<g class="gpu" data-rank="{p.rank}" data-node="{p.node}" data-tp="{p.tp}" '
                       f'data-cp="{p.cp}" data-dp="{p.dp}" data-pp="{p.pp}" data-ep="{p.ep}" data-edp="{p.edp}" '
                       f'data-replica="{p.replica}">')
            out.append(f'<rect x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" rx="4" fill="{stage_fill(p.pp)}" '
                       f'stroke="#888888" stroke-width="1"/>')
            for i, (kind, text) in enumerate(_cell_lines(p, shape)):
                weight = ' font-weight="bold"' if kind == "gpu" else ""
                out.append(f'<text class="{kind}" x="{x + 6}" y="{y + 15 + i * 15}"{weight}>{escape(text)}</text>')
            out.append("</g>")
        # A frame around each run of one TP group's GPUs in this row (TP is the fastest digit, so a
        # group is adjacent; wider than a node it continues on the next row).
        start = 0
        for i in range(1, len(row) + 1):
            if i == len(row) or (row[i].pp, row[i].dp, row[i].cp) != (row[start].pp, row[start].dp, row[start].cp):
                x0 = NODE_LABEL_W + row[start].local * (CELL_W + GAP) - 3
                x1 = NODE_LABEL_W + row[i - 1].local * (CELL_W + GAP) + CELL_W + 3
                out.append(f'<rect class="tp-group" data-tp-size="{shape.tp}" x="{x0}" y="{y - 3}" '
                           f'width="{x1 - x0}" height="{CELL_H + 6}" rx="6" fill="none" stroke="#333333" '
                           f'stroke-width="2"/>')
                start = i
        # The rollout replicas' band.
        band_y = y + CELL_H + 4
        start = 0
        for i in range(1, len(row) + 1):
            if i == len(row) or row[i].replica != row[start].replica:
                x0 = NODE_LABEL_W + row[start].local * (CELL_W + GAP)
                x1 = NODE_LABEL_W + row[i - 1].local * (CELL_W + GAP) + CELL_W
                colour = ROLLOUT_FILLS[row[start].replica % len(ROLLOUT_FILLS)]
                out.append(f'<rect class="replica" data-replica="{row[start].replica}" x="{x0}" y="{band_y}" '
                           f'width="{x1 - x0}" height="{BAND_H - 4}" rx="3" fill="{colour}"/>')
                label = f"rollout {row[start].replica}" if x1 - x0 >= 70 else f"R{row[start].replica}"
                out.append(f'<text class="replica-label" x="{(x0 + x1) / 2:.0f}" y="{band_y + BAND_H - 8}" '
                           f'text-anchor="middle" fill="#ffffff" font-weight="bold">{label}</text>')
                start = i
    if drawn < nodes:
        out.append(f'<text class="more" x="{NODE_LABEL_W}" y="{TOP + drawn * row_h + 8}">… {nodes - drawn} more '
                   f'nodes, ranks {drawn * per_node}-{shape.gpus - 1}, in the same pattern</text>')
    # Legend: the stage fills, the TP frame, the rollout band.
    for s in range(stages):
        lx = NODE_LABEL_W + s * 110
        out.append(f'<rect x="{lx}" y="{legend_top}" width="14" height="14" fill="{stage_fill(s)}" stroke="#888888"/>')
        out.append(f'<text class="legend" x="{lx + 20}" y="{legend_top + 11}">PP stage {s}</text>')
    if shape.pp > stages:
        out.append(f'<text class="legend" x="{NODE_LABEL_W + stages * 110}" y="{legend_top + 11}">…</text>')
    ly = legend_top + 30
    out.append(f'<rect x="{NODE_LABEL_W}" y="{ly}" width="28" height="14" rx="4" fill="none" stroke="#333333" '
               f'stroke-width="2"/>')
    out.append(f'<text class="legend" x="{NODE_LABEL_W + 34}" y="{ly + 11}">TP group ({shape.tp} GPU{"s" if shape.tp != 1 else ""})</text>')
    out.append(f'<rect x="{NODE_LABEL_W + 190}" y="{ly}" width="28" height="14" rx="3" fill="{ROLLOUT_FILLS[0]}"/>')
    out.append(f'<text class="legend" x="{NODE_LABEL_W + 224}" y="{ly + 11}">{_replica_key(shape)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = ["Placement", "Shape", "layout_svg", "placements"]
