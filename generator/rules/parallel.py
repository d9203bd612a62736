"""VP3xx — the Megatron parallel layout (docs/batch-chain.md#parallel-layout; E1-E3, H4) and the FSDP mesh
(C13). The divisibility predicates live in generator.layout.derive.layout_problems (shared with the
planner); this module turns them into findings."""

from __future__ import annotations

from typing import Iterator

from generator.layout import derive
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, Rule, Stage, ctx_finding, rule
from generator.config.reader import ConfigReader
from generator.verl.constants import ACTOR, CRITIC, MEGATRON, REF, TRANSFORMER
from generator.verl.versions import parse

_SIZE_KEYS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
              "expert_model_parallel_size", "expert_tensor_parallel_size", "virtual_pipeline_model_parallel_size")
# The keys a finding of each generator.layout.derive layout problem kind points at.
_KEYS_FOR = {
    "model-parallel-grid": (MEGATRON + "tensor_model_parallel_size", MEGATRON + "pipeline_model_parallel_size",
              MEGATRON + "context_parallel_size", "trainer.n_gpus_per_node"),
    "vpp-without-pp": (MEGATRON + "virtual_pipeline_model_parallel_size",),
    "expert-grid": (MEGATRON + "expert_model_parallel_size", MEGATRON + "expert_tensor_parallel_size"),
    "tp-across-nodes": (MEGATRON + "tensor_model_parallel_size",),
    "heads-by-tp": (MEGATRON + "tensor_model_parallel_size",),
    "kv-heads-by-tp": (MEGATRON + "tensor_model_parallel_size",),
    "ep-on-dense": (MEGATRON + "expert_model_parallel_size",),
    "experts-by-ep": (MEGATRON + "expert_model_parallel_size",),
    "layers-by-pp": (MEGATRON + "pipeline_model_parallel_size",),
    "uneven-pipeline-split": (TRANSFORMER + "num_layers_in_first_pipeline_stage", TRANSFORMER + "num_layers_in_last_pipeline_stage"),
    "stage-layers-by-vpp": (MEGATRON + "virtual_pipeline_model_parallel_size",),
}


def layout_findings(the_rule: Rule, ctx: Context, *, with_model: bool) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    layout = view.actor_layout()
    if layout is None or (with_model and ctx.model is None):
        return
    for problem in derive.layout_problems_of(layout, ctx.model if with_model else None):
        if problem.kind == the_rule.reports:
            keys = _KEYS_FOR.get(problem.kind, (MEGATRON + "tensor_model_parallel_size",))
            yield ctx_finding(the_rule, view, keys, problem.message)


_MEG = ("megatron",)


@rule("VP301", "world-not-divisible-by-model-parallel", severity="error", stage="load", verl_ref="E1, A1",
      backends=_MEG, reports="model-parallel-grid")
def world_divisible(ctx: Context) -> Iterator[Finding]:
    # verl's load-time pre-check (A1) is skipped under dynamic bsz from 0.6.0 on; Megatron's own
    # check (E1) then fails when the workers start.
    later: Stage | None = "init" if _dynamic_skips_precheck(ctx) else None
    for finding in layout_findings(world_divisible, ctx, with_model=False):
        yield finding._replace(stage=later)


def _dynamic_skips_precheck(ctx: Context) -> bool:
    if ConfigReader.of(ctx).actor_dynamic is not True:
        return False
    try:
        return parse(ctx.version) >= (0, 6, 0)
    except ValueError:
        return True


@rule("VP302", "vpp-needs-pp", severity="error", stage="init", verl_ref="E2", backends=_MEG, reports="vpp-without-pp")
def vpp_needs_pp(ctx: Context) -> Iterator[Finding]:
    for finding in layout_findings(vpp_needs_pp, ctx, with_model=False):
        key = MEGATRON + "virtual_pipeline_model_parallel_size"
        old = ctx.config.values.get(key)
        yield Finding(finding.code, finding.severity, finding.message, finding.line, key,
                      Fix("remove virtual_pipeline_model_parallel_size", (KeyEdit(key, old, None),)))


@rule("VP303", "expert-grid-not-divisible", severity="error", stage="init", verl_ref="E3", backends=_MEG, reports="expert-grid")
def expert_grid(ctx: Context) -> Iterator[Finding]:
    yield from layout_findings(expert_grid, ctx, with_model=False)


@rule("VP304", "tp-crosses-nodes", severity="warning", stage="silent", verl_ref="§6.1", backends=_MEG, reports="tp-across-nodes")
def tp_in_node(ctx: Context) -> Iterator[Finding]:
    yield from layout_findings(tp_in_node, ctx, with_model=False)


def _differs(view: ConfigReader, prefix: str, interpolated: bool) -> list[tuple[str, object, object]]:
    out = []
    for name in _SIZE_KEYS:
        mine, actor = prefix + "megatron." + name, MEGATRON + name
        if not view.known(mine) or not view.known(actor):
            continue
        if interpolated and not view.explicit(mine):
            continue
        ours, theirs = view.values.get(mine), view.values.get(actor)
        default = 1 if name in _SIZE_KEYS[:4] else None
        if (default if ours is None else ours) != (default if theirs is None else theirs):
            out.append((mine, ours, theirs))
    return out


def _layout_differs(the_rule: Rule, view: ConfigReader, role: str, prefix: str, *,
                    interpolated: bool) -> Iterator[Finding]:
    """One finding when a colocated role's Megatron sizes differ from the actor's (it runs on the
    actor's process groups anyway); the fix copies the actor's sizes."""
    diffs = _differs(view, prefix, interpolated=interpolated)
    if not diffs:
        return
    shown = ", ".join(f"{k.rsplit('.', 1)[-1]} {o} vs actor {a}" for k, o, a in diffs)
    yield ctx_finding(the_rule, view, tuple(k for k, _, _ in diffs),
                      f"{role}.megatron differs from the actor: {shown}; the {role} runs on the actor's layout",
                      fix=Fix(f"set {role}.megatron sizes equal to the actor's",
                              tuple(KeyEdit(k, o, a) for k, o, a in diffs)))


@rule("VP305", "critic-layout-differs", severity="warning", stage="silent", verl_ref="H4, §1.2", backends=_MEG,
      reads_defaults=True)
def critic_layout(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.critic_used is not True or view.str(CRITIC + "strategy") not in (None, "megatron"):
        return
    yield from _layout_differs(critic_layout, view, "critic", CRITIC, interpolated=False)


@rule("VP306", "ref-layout-differs", severity="warning", stage="silent", verl_ref="H4", backends=_MEG)
def ref_layout(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.ref_used is not True:
        return
    yield from _layout_differs(ref_layout, view, "ref", REF, interpolated=True)


@rule("VP307", "fsdp-mesh-not-divisible", severity="error", stage="init", verl_ref="C13", backends=("fsdp",))
def fsdp_mesh(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    gpus = view.gpus
    if gpus is None:
        return
    sp = view.ulysses()
    if sp and sp > 0 and derive.sp_data_parallel_size(gpus, sp) is None:
        yield ctx_finding(fsdp_mesh, view, (ACTOR + "ulysses_sequence_parallel_size",),
                          f"{gpus} GPUs are not divisible by ulysses_sequence_parallel_size {sp}")
    fsdp_size = view.int(ACTOR + "fsdp_config.fsdp_size")
    if fsdp_size and 0 < fsdp_size < gpus and gpus % fsdp_size:
        yield ctx_finding(fsdp_mesh, view, (ACTOR + "fsdp_config.fsdp_size",),
                          f"{gpus} GPUs are not divisible by fsdp_size {fsdp_size}")
