"""The planner's shortcuts give what the long way gives (issue 22: `gen plan` faster, same output).

Each shortcut is checked against the computation it replaces: the worst stage of each phase
against every stage evaluated in full, the quick fit check and the rollout phase alone against
phase_memory, the search's step-time floors against estimate_step_time at every rollout TP, the
quick relief climb against the full one, the release the plan sizes memory for against the one
`gen recipe` writes for.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from generator.layout.derive import Layout
from generator.layout.hardware import gpu_spec
from generator.layout.parallelism import Offload
from generator.layout.candidate import Candidate
from generator.model import find_model
from generator.layout.pins import Pins
from generator.plan.activations import in_flight_count
from generator.plan.memory import (MemorySetup, evaluate_memory, phase_memory, training_phases_fit,
                                   worst_rollout_phase)
from generator.plan.ranking import _floor_work, _rollout_tp_options, step_floor_s
from generator.plan.release_defaults import rollout_defaults
from generator.plan.rollout_engine import engine_memory
from generator.plan.setting import Setting
from generator.plan.sizing import GMU_STEPS
from generator.plan.step_time import estimate_step_time
from generator.plan.workload import Workload

H100 = gpu_spec("h100", None)

# (model, GPUs, layout fields, knobs): pipelines even and uneven, with VPP, MoE with EP,
# recompute, offload, dynamic and fixed micro-batches, a reference model or a critic.
CASES = [
    ("deepseek-v3", 256, dict(tp=8, pp=16, ep=32, etp=1), dict(use_dynamic_bsz=True, token_budget=4096)),
    ("deepseek-v3", 256, dict(tp=8, pp=8, ep=32, etp=1, first_stage_layers=7), dict(
        use_dynamic_bsz=True, token_budget=2048, recompute=True, offload=Offload(param=True, grad=True))),
    ("qwen3-235b-a22b", 64, dict(tp=4, pp=4, ep=8, etp=1, vpp=2), dict(micro_batch_per_gpu=2)),
    ("qwen2.5-72b", 32, dict(tp=8, pp=4), dict(micro_batch_per_gpu=1, offload=Offload(
        optimizer=True, cpu_optimizer=True, cpu_optimizer_fraction=0.5))),
    ("qwen2.5-7b", 8, dict(tp=2, pp=2, vpp=2), dict(use_dynamic_bsz=True, token_budget=6144)),
    ("qwen2.5-7b", 8, dict(tp=1, pp=1), dict(micro_batch_per_gpu=4)),
]


def _work(gpus: int, *, critic: bool = False, ref: bool = True) -> Workload:
    return Workload(gpus=gpus, gpu_memory_gib=H100.memory_gib, prompt_len=1024, response_len=2048,
                    per_rank_mini_batch=64, has_ref=ref, has_critic=critic, responses_per_step=1280)


@pytest.mark.parametrize("critic", [False, True])
@pytest.mark.parametrize("gmu", [0.0, 0.3, 0.85])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{'-'.join(map(str, c[2].values()))}")
def test_worst_stage_shortcut_matches_every_stage_in_full(case, gmu, critic):
    """phase_memory evaluates the first stage of each kind; evaluate_memory evaluates every
    stage in full. The worst of each phase must agree."""
    name, gpus, layout, knobs = case
    model = find_model(name)
    cand = Candidate(**layout, rollout_tp=8, gpu_memory_utilization=gmu, **knobs)
    work = _work(gpus, critic=critic, ref=not critic)
    shortcut = phase_memory(model, cand, work, detail=False)
    full = evaluate_memory(MemorySetup(model, cand, work), detail=False).worst_phases()
    assert [(p.phase, p.gib) for p in shortcut] == [(p.phase, p.gib) for p in full]
    # The premise: stages of a kind (the same layers, between the first and the last) differ in
    # no phase but the update, and a later one's update is no larger.
    middle: dict[tuple[int, int], tuple[float, ...]] = {}
    update: dict[tuple[int, int], float] = {}
    for stage in evaluate_memory(MemorySetup(model, cand, work), detail=False).stages[1:-1]:
        kind = (stage.dense_layers, stage.moe_layers)
        rest = tuple(p.gib for p in stage.phases if p.phase != "update")
        assert middle.setdefault(kind, rest) == rest
        gib = next(p.gib for p in stage.phases if p.phase == "update")
        assert gib <= update.setdefault(kind, gib)
        update[kind] = gib


@pytest.mark.parametrize("pp", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("vpp", [None, 2, 4])
def test_a_later_stage_holds_no_more_micro_batches(pp, vpp):
    """The other premise of the worst-stage shortcut: 1F1B's in-flight count never grows along
    the pipeline, whatever the micro-batches per step."""
    for micro_batches in (1, 2, pp - 1, pp, pp + 1, 64):
        counts = [in_flight_count(pp, vpp, stage, micro_batches) for stage in range(pp)]
        assert counts == sorted(counts, reverse=True) and counts[0] >= 1


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_worst_rollout_phase_is_phase_memorys_rollout_with_its_terms(case):
    name, gpus, layout, knobs = case
    model = find_model(name)
    cand = Candidate(**layout, rollout_tp=8, gpu_memory_utilization=0.0, **knobs)
    work = _work(gpus)
    rollout = worst_rollout_phase(model, cand, work)
    assert rollout == next(p for p in evaluate_memory(MemorySetup(model, cand, work), detail=False).worst_phases()
                           if p.phase == "rollout")
    assert rollout.gib == next(p.gib for p in phase_memory(model, cand, work, detail=False) if p.phase == "rollout")
    assert rollout.terms and math.isclose(sum(t.gib for t in rollout.terms), rollout.gib, abs_tol=0.006)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_training_phases_fit_is_every_phase_but_the_rollout_within_the_limit(case):
    """The quick check gives up at the first phase over the limit; the long way compares the
    worst stage of every phase but the rollout with it. Limits on both sides of each phase."""
    name, gpus, layout, knobs = case
    model = find_model(name)
    cand = Candidate(**layout, rollout_tp=8, gpu_memory_utilization=0.3, **knobs)
    work = _work(gpus)
    worst = phase_memory(model, cand, work, detail=False)
    limits = sorted({p.gib for p in worst} | {p.gib - 0.01 for p in worst} | {0.0, 1e6})
    verdicts = set()
    for limit in limits:
        expected = all(p.gib <= limit for p in worst if p.phase != "rollout")
        assert training_phases_fit(model, cand, work, limit) == expected, limit
        # The ladder checks each setting at its own gmu, standing in for MIN_GMU: no phase the
        # check reads may depend on it.
        for gmu in (0.0, 0.85):
            assert training_phases_fit(model, replace(cand, gpu_memory_utilization=gmu), work, limit) == expected
        verdicts.add(expected)
    assert verdicts == {True, False}


def _setting(gpus: int, gpus_per_node: int = 8) -> Setting:
    return Setting(gpus=gpus, gpus_per_node=min(gpus, gpus_per_node), gpu=H100, prompt_len=1024, response_len=2048,
                   n=5, algo="grpo", train_batch_size=256, mini=64, mean_response_len=0,
                   rollout=rollout_defaults(None))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_step_floor_is_the_least_estimate_over_rollout_tps(case):
    """The floors compute the trainer's part once per layout; the definition estimates the whole
    step for each rollout TP (no offload, dynamic batches, the largest gmu) and keeps the least."""
    name, gpus, layout_fields, _ = case
    model = find_model(name)
    s = _setting(gpus)
    layout = Layout(gpus=gpus, gpus_per_node=s.gpus_per_node, **layout_fields)
    work = _floor_work(model, layout, s)
    best = math.inf
    for rtp in _rollout_tp_options(s.gpus, s.gpus_per_node):
        probe = Candidate(**layout.sizes(), rollout_tp=rtp, use_dynamic_bsz=True, token_budget=3 * s.seq_len,
                          gpu_memory_utilization=max(GMU_STEPS))
        kv = engine_memory(model, probe, work, responses_per_step=s.train_batch_size * s.n).kv_tokens
        if kv > 0:
            step = estimate_step_time(probe, model, s.gpu, work, kv_tokens=kv)
            best = min(best, step.total_s - step.bubble_s)
    assert step_floor_s(model, layout, s) == (best if best < math.inf else 0.0)
    assert step_floor_s(model, layout, s) > 0


def test_engine_split_reads_no_training_layout():
    """The floors share one KV size per rollout TP across layouts: the engine's split must not
    change with the trainer's layout."""
    model = find_model("qwen3-235b-a22b")
    work = _work(64)
    base = Candidate(rollout_tp=8, gpu_memory_utilization=0.85)
    seen = {engine_memory(model, replace(base, **fields), work, responses_per_step=1280)
            for _, _, fields, _ in CASES[:3]} | {engine_memory(model, base, work, responses_per_step=1280)}
    assert len(seen) == 1


def test_plan_sizes_memory_at_the_release_recipe_writes_for():
    from generator.render.spec import DEFAULT_VERSION
    from generator.schema.releases import newest_release

    assert newest_release() == DEFAULT_VERSION


# Searches whose climbs end every way: a fit on a cheap rung, on the CPU optimizer, below the
# target gmu, a miss with every offload (so the full climb is redone), a pinned gmu.
SEARCHES = [
    ("qwen2.5-72b", 32, dict(gpu="a100-80g", train_batch_size=64, top=3)),
    ("qwen2.5-72b", 16, dict(gpu="a100-40g")),
    ("qwen3-235b-a22b", 32, {}),
    ("qwen3-30b-a3b", 16, dict(pins=Pins(gpu_memory_utilization=0.6))),
    ("qwen2.5-7b", 8, dict(pins=Pins(tp=4, pp=2, gpu_memory_utilization=0.6), evaluate=True)),
    ("qwen2.5-32b", 16, dict(gpu="h20", response_len=8192)),
    ("deepseek-v3", 128, {}),
]


@pytest.mark.parametrize("name,gpus,options", SEARCHES, ids=lambda v: str(v) if not isinstance(v, dict) else "")
def test_quick_climb_chooses_what_the_full_climb_chooses(name, gpus, options, monkeypatch):
    """The relief ladder drops settings at the first phase over the limit (`quick`); climbing
    with every setting evaluated in full must give the same plan, rejections and reasons included."""
    from functools import partial

    from generator.plan import plan_layout
    from generator.plan import sizing
    from generator.report.plan_report import plan_dict
    from generator.schema.releases import newest_release

    options = dict(options)
    gpu = gpu_spec(options.pop("gpu", None), None)

    def plan() -> dict[str, object]:
        return plan_dict(plan_layout(find_model(name), gpus, gpu=gpu, verl_version=newest_release(), **options))

    quick = plan()
    calls = []
    full_climb = partial(sizing._climb, quick=False)
    monkeypatch.setattr(sizing, "_climb", lambda *a, **k: calls.append(1) or full_climb(*a, **k))
    assert plan() == quick
    assert calls  # the full climb did run


def test_a_pinned_gmu_keeps_the_smallest_size_that_fits():
    """With the gmu pinned, the climb tries the sizes from the largest down; a layout whose
    larger sizes miss but whose smallest fits is a candidate, not a rejection without a reason
    (the failed probe of a larger size used to stand in for the smallest size's result)."""
    from generator.plan import plan_layout
    from generator.schema.releases import newest_release

    facts, gpu = find_model("qwen2.5-32b"), gpu_spec("h20", None)
    common = dict(gpu=gpu, response_len=8192, verl_version=newest_release())
    plan = plan_layout(facts, 16, pins=Pins(gpu_memory_utilization=0.6), top=50, **common)
    assert all(reason for _, reason in plan.rejected), plan.rejected
    # TP4 PP2 fits when evaluated alone with the same pin, so the search must not reject it.
    alone = plan_layout(facts, 16, pins=Pins(tp=4, pp=2, gpu_memory_utilization=0.6), evaluate=True, **common)
    assert alone.chosen is not None and alone.candidates[alone.chosen].fits
    assert "TP4 PP2" not in {layout for layout, _ in plan.rejected}
