"""A picture of a Megatron layout: nodes x GPUs, each GPU labelled with its place in every group.

Rank order is Megatron-core's (`megatron/core/parallel_state.py` @ core_v0.15.0,
`initialize_model_parallel(order="tp-cp-ep-dp-pp")` and `RankGenerator`): a global rank is a
mixed-radix number whose fastest digit is the TP rank, then CP, then DP, and PP the slowest.
Experts get a second generator over the same ranks with TP -> expert TP, CP -> 1 and
DP -> expert DP = world / (ETP·EP·PP), in the same order: EP is carved out of each pipeline
stage's DP·CP ranks, it adds no GPUs. Ranks fill node 0's GPUs first (torchrun / Ray hand out
ranks node by node). The rollout engine's replicas are consecutive ranks, rollout TP·DP of them
each: verl `verl/workers/rollout/replica.py` @ v0.9.0 sizes a replica (one inference server) as
`tensor_model_parallel_size * data_parallel_size * pipeline_model_parallel_size` and hands replica
k the workers `[k·size, (k+1)·size)`; inside it vLLM's data-parallel engine d holds the TP ranks
`[d·TP, (d+1)·TP)` (`vllm_rollout/vllm_async_server.py`: data_parallel_size_local = GPUs per node
/ TP). Rollout EP, for a mixture of experts, spans the whole replica: `verl/workers/config/rollout.py`
@ v0.9.0 asserts `expert_parallel_size == tensor_model_parallel_size * data_parallel_size` (vLLM,
SGLang), and refuses rollout PP > 1 for vLLM, SGLang and TensorRT-LLM, so PP is not drawn.

Pure functions: `placements` computes, `layout_svg` draws (SVG, no scripts).
"""

from __future__ import annotations

from dataclasses import dataclass
from generator.base.safe_text import html_text as escape

from generator.layout import derive
from generator.report.palette import ROLLOUT_FILLS, stage_fill

CELL_W = 128
GAP = 6
NODE_LABEL_W = 64
BAND_H = 18  # the rollout replicas' band under each node's row
ROW_GAP = 14
TOP = 52  # the title and the subtitle
MAX_NODES_DRAWN = 16  # a larger cluster repeats the same pattern; the rest is said in words
CHAR_PX = 7.2


@dataclass(frozen=True, slots=True)
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
    rollout_dp: int = 1  # rollout.data_parallel_size: data-parallel engines inside one replica
    rollout_ep: int = 1  # rollout.expert_parallel_size: 1, or TP·DP (the whole replica)

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
    def replica_size(self) -> int:
        return derive.rollout_replica_size(max(1, self.rollout_tp), max(1, self.rollout_dp))

    @property
    def replicas(self) -> int:
        return derive.rollout_replicas(self.gpus, self.replica_size) or 1

    def rollout_text(self) -> str:
        """'rollout TP2 x 4 replicas', 'rollout TP2 DP2 EP4 x 2 replicas'."""
        inside = f"TP{self.rollout_tp}" + (f" DP{self.rollout_dp}" if self.rollout_dp > 1 else "") + (
            f" EP{self.rollout_ep}" if self.rollout_ep > 1 else "")
        return f"rollout {inside} x {self.replicas} replica{'s' if self.replicas != 1 else ''}"

    def text(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}"] + ([f"CP{self.cp}"] if self.cp > 1 else []) + [f"DP{self.dp}"]
        if self.ep > 1:
            parts.append(f"EP{self.ep}" + (f" ETP{self.expert_tp}" if self.expert_tp != self.tp else ""))
        return " ".join(parts) + " · " + self.rollout_text()


@dataclass(frozen=True, slots=True)
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
    replica: int  # the rollout replica (inference server) the GPU serves
    rollout_dp: int  # its data-parallel engine inside the replica
    rollout_tp: int  # its TP rank inside that engine
    rollout_ep: int  # its expert-parallel rank in the replica (0 without rollout EP)


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
        inside = rank % shape.replica_size
        out.append(Placement(rank, rank // per_node, rank % per_node, tp, cp, dp, pp, ep, etp, edp,
                             rank // shape.replica_size, inside // max(1, shape.rollout_tp),
                             inside % max(1, shape.rollout_tp), inside if shape.rollout_ep > 1 else 0))
    return out


def _cell_lines(p: Placement, shape: Shape) -> list[tuple[str, str]]:
    """(class, text) of the labels inside one GPU's box."""
    lines = [("gpu", f"GPU {p.local} · rank {p.rank}"), ("stage", f"PP stage {p.pp}"),
             ("ranks", f"TP {p.tp}" + (f" · CP {p.cp}" if shape.cp > 1 else "") + f" · DP {p.dp}")]
    if shape.ep > 1:
        lines.append(("experts", f"EP {p.ep}" + (f" · ETP {p.etp}" if shape.expert_tp != shape.tp else "")
                      + f" · EDP {p.edp}"))
    lines.append(("rollout", f"rollout TP {p.rollout_tp}" + (f" · DP {p.rollout_dp}" if shape.rollout_dp > 1 else "")))
    if shape.rollout_ep > 1:
        lines.append(("rollout-experts", f"rollout EP {p.rollout_ep}"))
    return lines


def _cell_height(shape: Shape) -> int:
    lines = 4 + (shape.ep > 1) + (shape.rollout_ep > 1)  # as _cell_lines gives them
    return 14 + 15 * lines


def _replica_key(shape: Shape) -> str:
    size = shape.replica_size
    parts = f"rollout TP {shape.rollout_tp}" + (f" x DP {shape.rollout_dp}" if shape.rollout_dp > 1 else "")
    experts = f"; its experts over all {size} (EP {shape.rollout_ep})" if shape.rollout_ep > 1 else ""
    return f"rollout replica: one server on {size} GPU{'s' if size != 1 else ''}, {parts}{experts}"


def _segment_label(p: Placement, shape: Shape, width: float) -> str:
    """The band's label for one data-parallel engine of a replica, as long as its width allows."""
    for text in ((f"rollout {p.replica} · DP {p.rollout_dp}", f"R{p.replica} DP{p.rollout_dp}", f"R{p.replica}")
                 if shape.rollout_dp > 1 else (f"rollout {p.replica}", f"R{p.replica}")):
        if CHAR_PX * len(text) + 6 <= width:
            return text
    return text


def layout_svg(shape: Shape, *, title: str) -> str:
    """A standalone SVG: a row per node (the first MAX_NODES_DRAWN), a box per GPU filled by its
    pipeline stage, a frame around each TP group's GPUs that share a node, and under each row a
    band per rollout replica."""
    per_node = max(1, shape.gpus_per_node)
    nodes = max(1, -(-shape.gpus // per_node))
    drawn = min(nodes, MAX_NODES_DRAWN)
    cells = placements(shape)
    cell_h = _cell_height(shape)
    subtitle = f"{shape.gpus} GPUs = {nodes} node{'s' if nodes != 1 else ''} x {per_node} · {shape.text()}"
    row_h = cell_h + BAND_H + ROW_GAP
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
        out.append(f'<text class="node" x="8" y="{y + cell_h / 2 + 4:.0f}" font-weight="bold">node {node}</text>')
        row = [p for p in cells if p.node == node]
        for p in row:
            x = NODE_LABEL_W + p.local * (CELL_W + GAP)
            out.append(f'<g class="gpu" data-rank="{p.rank}" data-node="{p.node}" data-tp="{p.tp}" '
                       f'data-cp="{p.cp}" data-dp="{p.dp}" data-pp="{p.pp}" data-ep="{p.ep}" data-edp="{p.edp}" '
                       f'data-replica="{p.replica}" data-rollout-dp="{p.rollout_dp}" data-rollout-tp="{p.rollout_tp}" '
                       f'data-rollout-ep="{p.rollout_ep}">')
            out.append(f'<rect x="{x}" y="{y}" width="{CELL_W}" height="{cell_h}" rx="4" fill="{stage_fill(p.pp)}" '
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
                           f'width="{x1 - x0}" height="{cell_h + 6}" rx="6" fill="none" stroke="#333333" '
                           f'stroke-width="2"/>')
                start = i
        # The rollout replicas' band: one colour per replica, a segment per data-parallel engine in it.
        band_y = y + cell_h + 4
        start = 0
        for i in range(1, len(row) + 1):
            if i == len(row) or (row[i].replica, row[i].rollout_dp) != (row[start].replica, row[start].rollout_dp):
                x0 = NODE_LABEL_W + row[start].local * (CELL_W + GAP)
                x1 = NODE_LABEL_W + row[i - 1].local * (CELL_W + GAP) + CELL_W
                colour = ROLLOUT_FILLS[row[start].replica % len(ROLLOUT_FILLS)]
                out.append(f'<rect class="replica" data-replica="{row[start].replica}" '
                           f'data-rollout-dp="{row[start].rollout_dp}" x="{x0}" y="{band_y}" '
                           f'width="{x1 - x0}" height="{BAND_H - 4}" rx="3" fill="{colour}"/>')
                label = _segment_label(row[start], shape, x1 - x0)
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
