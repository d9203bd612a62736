"""What `gen plan` prints: the plan as a JSON document and as a text table.

Pure functions of a Plan (generator.plan); the CLI chooses the stream.
"""

from __future__ import annotations

import textwrap
from dataclasses import asdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from generator.report.doc_pages import doc_link
from generator.plan.error_band import STEP_TIME_ERROR_BAND
from generator.report.documents import JSON_SCHEMA_VERSION
from generator.base.safe_text import markup, one_line, printable

if TYPE_CHECKING:
    from rich.table import Table

    from generator.layout.candidate import Candidate, StepTime
    from generator.plan.result import Plan
    from generator.plan.verl_departures import Departure


def candidate_dict(c: Candidate) -> dict[str, Any]:
    phases = {p.phase: p.gib for p in c.memory}
    return {
        "tp": c.tp, "pp": c.pp, "vpp": c.vpp, "cp": c.cp, "ep": c.ep, "etp": c.etp,
        "first_stage_layers": c.first_stage_layers, "last_stage_layers": c.last_stage_layers,
        "rollout_tp": c.rollout_tp,
        "micro_batch_per_gpu": c.micro_batch_per_gpu,
        "log_prob_micro_batch_per_gpu": c.log_prob_micro_batch_per_gpu,
        "use_dynamic_bsz": c.use_dynamic_bsz,
        "token_budget": c.token_budget, "log_prob_token_budget": c.log_prob_token_budget,
        "ppo_mini_batch_size": c.ppo_mini_batch_size,
        "offload": {"param": c.offload.param, "grad": c.offload.grad, "optimizer": c.offload.optimizer,
                    "cpu_optimizer": c.offload.cpu_optimizer,
                    "cpu_optimizer_fraction": c.offload.cpu_optimizer_fraction},
        "recompute": c.recompute,
        "use_fused_kernels": c.use_fused_kernels,
        "gpu_memory_utilization": c.gpu_memory_utilization,
        # "log_prob" is the larger of the two log-prob phases (what the table shows), kept for
        # readers of schema 1; "old_log_prob"/"ref_log_prob" are each phase on its own.
        "memory_gib": {"update": phases.get("update"),
                       "log_prob": max(phases.get("log_prob", 0.0), phases.get("ref_log_prob", 0.0)),
                       "old_log_prob": phases.get("log_prob"), "ref_log_prob": phases.get("ref_log_prob"),
                       "rollout": phases.get("rollout"), "limit": c.limit_gib},
        "memory_terms": {p.phase: [{"name": t.name, "gib": t.gib, "note": t.note} for t in p.terms]
                         for p in c.memory},
        "fits": c.fits,
        "score": score_dict(c.score),
        "why": list(c.why),
        "warnings": list(c.warnings),
    }


def score_dict(score: StepTime | None) -> dict[str, float] | None:
    """The estimated step time by part (seconds, 2 decimals); None for a layout not sized."""
    if score is None:
        return None
    parts = {name: round(seconds, 2) for name, seconds in asdict(score).items()}
    return {"total_s": round(score.total_s, 2), **parts}


def score_items(score: StepTime) -> list[str]:
    """The score's parts as short 'name seconds' items for the text output."""
    return [f"rollout {score.rollout_s:.1f}", f"log-prob {score.log_prob_s:.1f}", f"update {score.update_s:.1f}",
            f"offload {score.offload_s:.1f}", f"bubble {score.bubble_s:.1f}", f"comm {score.comm_s:.1f}",
            f"sync {score.weight_sync_s:.1f}"]


def plan_dict(plan: Plan, departures: Sequence[Departure] = ()) -> dict[str, Any]:
    """The plan as JSON; `verl_layouts` sets it beside verl's shipped layouts for the same model and
    GPU count (generator.plan.verl_departures; empty when verl ships none)."""
    from generator.report.departures import departure_dict

    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "model": plan.model, "gpus": plan.gpus, "nodes": plan.nodes, "gpu": plan.gpu,
        "gpu_memory_gib": plan.gpu_memory_gib, "algo": plan.algo, "n": plan.n,
        "prompt_len": plan.prompt_len, "response_len": plan.response_len,
        "train_batch_size": plan.train_batch_size, "ppo_mini_batch_size": plan.ppo_mini_batch_size,
        "chosen": plan.chosen,
        "candidates": [{**candidate_dict(c), "ranked_below_first_by": _rank_reason(plan, i)}
                       for i, c in enumerate(plan.candidates)],
        "rejected": [{"layout": layout, "reason": reason} for layout, reason in plan.rejected],
        "verl_layouts": [departure_dict(d) for d in departures],
    }


def _rank_reason(plan: Plan, index: int) -> str | None:
    return plan.rank_reasons[index] if index < len(plan.rank_reasons) else None


def _offload_text(c: Candidate) -> str:
    return "+".join(c.relief(short=True)) or "none"


def _row(index: int, plan: Plan, c: Candidate) -> list[str]:
    from generator.plan.enumeration import describe_layout

    phases = {p.phase: p.gib for p in c.memory}
    batching = (f"dyn {c.token_budget}/{c.log_prob_token_budget}" if c.use_dynamic_bsz
                else f"micro {c.micro_batch_per_gpu}")
    return ["*" if index == plan.chosen else str(index), describe_layout(c), str(c.rollout_tp), batching,
            _offload_text(c), f"{c.gpu_memory_utilization:g}", f"{phases.get('update', 0):.1f}",
            f"{max(phases.get('log_prob', 0), phases.get('ref_log_prob', 0)):.1f}",
            f"{phases.get('rollout', 0):.1f}", f"{c.limit_gib:.1f}", "yes" if c.fits else "NO",
            f"{c.score.total_s:.1f}" if c.score else "-"]


WIDE_COLUMNS = ("#", "layout", "rollout TP", "batching", "offload", "gmu", "update", "log-prob", "rollout",
                "usable", "fits", "step s")


def _stacked(plan: Plan, width: int) -> list[str]:
    """The candidates for an 80-column terminal: a few short lines each instead of 12 columns."""
    lines = []
    for index, c in enumerate(plan.candidates):
        mark, layout, rtp, batching, offload, gmu, update, log_prob, rollout, usable, fits, _ = _row(index, plan, c)
        lines.append(f"{mark:>2}  {layout}")
        lines.append(f"    rollout TP{rtp}, gmu {gmu}; {batching}; offload {offload}")
        lines.append(f"    GiB: update {update}, log-prob {log_prob}, rollout {rollout} of {usable} usable: "
                     + ("fits" if c.fits else "does NOT fit"))
        if c.score is not None:
            lines += _wrap_items(score_items(c.score), f"    step ~{c.score.total_s:.1f} s = ", width)
        reason = _rank_reason(plan, index)
        if reason:
            lines += textwrap.wrap(f"behind the first on: {reason}", width=width, initial_indent="    ",
                                   subsequent_indent="      ")
    return lines


def render_text(plan: Plan, out: TextIO, *, wide: bool = False, color: bool = False, width: int = 80,
                departures: Sequence[Departure] = ()) -> None:
    """`gen plan` as text: the candidates (stacked to fit 80 columns, or one table row each with
    `wide`), why the first was chosen, how it stands against verl's shipped layouts (`departures`),
    its memory per phase term by term, and a bar per phase.
    Without `color` the output is plain ASCII text: no box drawing, no escape codes."""
    import textwrap

    from generator.report.departures import departure_text

    from generator.report.charts import terminal_bars
    from generator.report.tables import plain_table

    header = (f"{plan.model} on {plan.gpus}x{plan.gpu} ({plan.gpu_memory_gib:g} GiB), {plan.algo} n={plan.n}, "
              f"prompt/response {plan.prompt_len}/{plan.response_len}, "
              f"train_batch_size {plan.train_batch_size}, ppo_mini_batch_size {plan.ppo_mini_batch_size}")
    lines = textwrap.wrap(one_line(header), width=width) or [""]
    rows = [_row(index, plan, c) for index, c in enumerate(plan.candidates)]
    table_text = None
    if wide and color:
        table_text = _rich_table(rows)
    elif wide:
        lines += plain_table(WIDE_COLUMNS, rows).splitlines()
    else:
        lines += _stacked(plan, width)
    shown = plan.best or (plan.candidates[0] if plan.candidates else None)
    tail: list[str] = []
    bar_lines: list[str] = []  # rich markup when `color`
    if shown is None:
        tail.append("no layout fits; closest misses:")
        tail += [f"  {layout}: {reason}" for layout, reason in plan.rejected[:8]]
    else:
        for label, items in (("why: ", shown.why), ("note: ", shown.warnings),
                             ("verl: ", [departure_text(d) for d in departures])):
            for item in items:
                tail += textwrap.wrap(one_line(item), width=width, initial_indent=label,
                                      subsequent_indent=" " * len(label))
        if shown.score is not None:
            tail += textwrap.wrap(
                "score: estimated seconds per step (calibrated on published verl runs; two layouts' times "
                f"within {STEP_TIME_ERROR_BAND:.0%} tie); among layouts that fit, verl's practice rules and its "
                f"published layout rank before it ({doc_link('docs/plan-practice.md')}, "
                f"{doc_link('docs/step-time-model.md')})",
                width=width, initial_indent="", subsequent_indent="       ")
        label_width = max((len(p.phase) for p in shown.memory), default=0)
        for phase in shown.memory:
            terms = [f"{t.name} {t.gib:.1f}" for t in phase.terms if t.gib]
            tail += _wrap_items(terms, f"{phase.phase:>{label_width}}: {phase.gib:6.1f} GiB = ", width)
        bar_width = max(20, width - label_width - 26)
        bar_lines = ["", *terminal_bars(shown.memory, shown.limit_gib, width=bar_width, color=color,
                                        line_width=width)]
    if not color:
        out.write(printable("\n".join([*lines, *tail, *bar_lines]) + "\n"))
        return
    from rich.console import Console

    console = Console(file=out, highlight=False, soft_wrap=True)
    for line in lines:
        console.print(markup(line))
    if table_text is not None:
        console.print(table_text)
    for line in tail:
        console.print(markup(line))
    for line in bar_lines:
        console.print(line)


def _wrap_items(items: list[str], lead: str, width: int) -> list[str]:
    """`lead` then the items joined by ", ", continued under the first item; an item is never split."""
    lines, current = [], lead
    for number, item in enumerate(items):
        piece = item + ("," if number < len(items) - 1 else "")
        if current.strip() and current != lead and len(current) + 1 + len(piece) > width:
            lines.append(current)
            current = " " * len(lead) + piece
        else:
            current += ("" if current == lead else " ") + piece
    lines.append(current)
    return lines


def _rich_table(rows: list[list[str]]) -> Table:
    from rich.table import Table

    table = Table(show_lines=False)
    for column in WIDE_COLUMNS:
        table.add_column(column)
    for row in rows:
        table.add_row(*(markup(cell) for cell in row))
    return table
