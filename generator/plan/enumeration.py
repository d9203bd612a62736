"""Which Megatron layouts the search visits: TP inside a node, PP up to MAX_PP, CP for long
sequences, EP over the experts, VPP on short pipelines, and the uneven first/last stage splits
that keep a stage short. Validity is not judged here (`generator.layout.derive.layout_problems` does).
"""

from __future__ import annotations

from generator.layout.derive import Layout, data_parallel_size
from generator.layout.parallelism import Parallelism
from generator.model import ModelFacts
from generator.plan.setting import Setting

MAX_PP = 16
MAX_EP = 32  # verl's largest shipped EP (DeepSeek-V3 on 512 GPUs); all-to-all beyond is slow
LONG_SEQUENCE = 4096  # context parallelism pays off from this sequence length (CP 2; CP 4 from 4x)


def powers_of_two(limit: int) -> list[int]:
    out, value = [], 1
    while value <= limit:
        out.append(value)
        value *= 2
    return out


def stage_splits(layers: int, pp: int) -> list[tuple[int | None, int | None]]:
    """Even split when it divides, else uneven first/last stage layer counts."""
    if pp == 1:
        return [(None, None)]
    if layers % pp == 0:
        return [(None, None)]
    splits: list[tuple[int | None, int | None]] = []
    for per_stage in (layers // pp, -(-layers // pp)):
        rest = layers - (pp - 1) * per_stage
        # Keep the odd stage short or nearly even: a 16-layer last stage behind fifteen
        # 3-layer stages (DeepSeek-V3 on PP16) would hold the whole pipeline back.
        if 1 <= rest <= per_stage + 1:
            splits.append((None, rest))  # a short (or long) last stage
            splits.append((rest, None))  # a short first stage: it also holds the most activations
        both = layers - (pp - 2) * per_stage
        if pp > 2 and both >= 2 and both % 2 == 0:
            splits.append((both // 2, both // 2))
    return list(dict.fromkeys(splits))


def enumerate_layouts(model: ModelFacts, s: Setting) -> list[Layout]:
    # A TP group must sit inside one node: TP divides the GPUs of a node.
    tps = [t for t in powers_of_two(s.gpus_per_node) if s.gpus % t == 0 and s.gpus_per_node % t == 0]
    cps = [1] + ([2] if s.seq_len >= LONG_SEQUENCE else []) + ([4] if s.seq_len >= 4 * LONG_SEQUENCE else [])
    out: list[Layout] = []
    for tp in tps:
        for cp in cps:
            for pp in range(1, min(MAX_PP, model.num_layers) + 1):
                if data_parallel_size(s.gpus, tp, pp, cp) is None:
                    continue
                eps: list[tuple[int, int | None]] = [(1, None)]
                if model.is_moe:
                    eps = [(ep, 1 if ep > 1 else None) for ep in powers_of_two(min(model.num_experts or 1, MAX_EP))
                           if (model.num_experts or 1) % ep == 0 and ep <= s.gpus // pp]
                # Interleaving pays off on short pipelines; deeper ones are already bubble-bound by M.
                vpps = [None] + ([2] if 1 < pp <= 4 else [])
                for first, last in stage_splits(model.num_layers, pp):
                    for ep, etp in eps:
                        for vpp in vpps:
                            out.append(Layout(gpus=s.gpus, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp, vpp=vpp,
                                              first_stage_layers=first, last_stage_layers=last,
                                              gpus_per_node=s.gpus_per_node))
    return out


def describe_layout(layout: Parallelism) -> str:
    parts = [f"TP{layout.tp}", f"PP{layout.pp}"]
    if layout.vpp and layout.vpp > 1:
        parts.append(f"VPP{layout.vpp}")
    if layout.cp > 1:
        parts.append(f"CP{layout.cp}")
    if layout.ep > 1:
        parts.append(f"EP{layout.ep}")
    if layout.etp is not None:
        parts.append(f"ETP{layout.etp}")
    if layout.first_stage_layers or layout.last_stage_layers:
        parts.append(f"first/last {layout.first_stage_layers or '-'}/{layout.last_stage_layers or '-'}")
    return " ".join(parts)
