"""A call's memory report as data (for `--format json`) and as plain text: every phase on every
pipeline stage, each term named, the usable limit, the verdict and the headroom. The "cli" side
may restyle the text; the data is the contract (docs/memory-model.md)."""

from __future__ import annotations

from typing import Any

from generator.layout.candidate import PhaseMemory
from generator.plan.memory import MemoryReport, StageMemory
from generator.plan.script_setup import CallMemory


def _phase_dict(phase: PhaseMemory) -> dict[str, Any]:
    return {"gib": phase.gib, "terms": [{"name": t.name, "gib": t.gib, "note": t.note} for t in phase.terms]}


def _stage_dict(stage: StageMemory) -> dict[str, Any]:
    return {"stage": stage.stage, "layers": stage.layers, "dense_layers": stage.dense_layers,
            "moe_layers": stage.moe_layers, "phases": {p.phase: _phase_dict(p) for p in stage.phases}}


def memory_dict(report: MemoryReport) -> dict[str, Any]:
    """`memory: {fits, usable_gib, peak_gib, peak_phase, peak_stage, stages: [...]}` and the rest."""
    return {
        "fits": report.fits,
        "gpu_memory_gib": report.gpu_memory_gib,
        "usable_gib": report.usable_gib,
        "headroom_gib": report.headroom_gib,
        "peak_gib": report.peak_gib,
        "peak_phase": report.peak_phase,
        "peak_stage": report.peak_stage,
        "margin_gib": round(report.usable_gib - report.peak_gib, 2),
        "stages": [_stage_dict(s) for s in report.stages],
        "host_ram_per_node_gib": report.host_ram_per_node_gib,
        "host_ram_terms": [{"name": t.name, "gib": t.gib, "note": t.note} for t in report.host_terms],
    }


def _stage_groups(report: MemoryReport) -> list[tuple[list[int], StageMemory]]:
    """Stages whose phases are identical, shown once ("stages 1-14")."""
    groups: list[tuple[list[int], StageMemory]] = []
    for stage in report.stages:
        if groups and groups[-1][1].phases == stage.phases and (groups[-1][1].dense_layers, groups[-1][1].moe_layers) \
                == (stage.dense_layers, stage.moe_layers):
            groups[-1][0].append(stage.stage)
        else:
            groups.append(([stage.stage], stage))
    return groups


def _stage_label(stages: list[int], stage: StageMemory) -> str:
    which = f"stage {stages[0]}" if len(stages) == 1 else f"stages {stages[0]}-{stages[-1]}"
    kinds = [f"{n} {kind}" for n, kind in ((stage.dense_layers, "dense"), (stage.moe_layers, "MoE")) if n]
    return f"{which} ({', '.join(kinds) or 'no'} layers)"


def memory_text(report: MemoryReport, *, indent: str = "  ") -> str:
    verdict = "fits" if report.fits else "DOES NOT FIT"
    margin = report.usable_gib - report.peak_gib
    lines = [f"{indent}memory per GPU: {verdict} — peak {report.peak_gib:.1f} GiB in {report.peak_phase} on stage "
             f"{report.peak_stage}, usable {report.usable_gib:.1f} of {report.gpu_memory_gib:g} GiB"
             + (f" (headroom {report.headroom_gib:g})" if report.headroom_gib else "")
             + (f", {margin:.1f} GiB to spare" if margin >= 0 else f", {-margin:.1f} GiB over")]
    for stages, stage in _stage_groups(report):
        lines.append(f"{indent}{_stage_label(stages, stage)}")
        for phase in stage.phases:
            mark = "  OVER" if phase.gib > report.usable_gib else ""
            terms = ", ".join(f"{t.name} {t.gib:.1f}" for t in phase.terms if t.gib)
            lines.append(f"{indent}  {phase.phase:>14} {phase.gib:6.1f} GiB{mark} = {terms}")
    if report.host_ram_per_node_gib:
        parts = ", ".join(f"{t.name} {t.gib:.0f}" for t in report.host_terms if t.gib)
        lines.append(f"{indent}host RAM per node: {report.host_ram_per_node_gib:.0f} GiB = {parts}")
    return "\n".join(lines) + "\n"


def call_memory_dict(call: CallMemory) -> dict[str, Any] | None:
    """A call's `memory` object; None (with `memory_problems`) when it could not be predicted."""
    if call.report is None:
        return None
    return {"model": call.model, "model_from": call.model_source, "model_config": call.model_config,
            "gpu": call.gpu.name, **memory_dict(call.report)}


def call_memory_text(call: CallMemory) -> str:
    if call.report is None:
        return "  memory per GPU: not predicted — " + "; ".join(call.problems) + "\n"
    config = f": {call.model_config}" if call.model_config and call.model_config != call.model_source else ""
    head = f"  memory of {call.model} (from {call.model_source}{config}) on {call.gpu.name}:\n"
    return head + memory_text(call.report, indent="  ")
