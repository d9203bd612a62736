"""Every pipeline stage and the phases added to the memory model: optimizer step, CUDA graphs,
weight sync, host RAM, headroom — each against numbers computed by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.model import find_model, total_params
from generator.layout.parallelism import Offload
from generator.layout.candidate import Candidate
from generator.plan.memory import (CUDA_GRAPH_GIB, ENGINE_COUNTED_OVERHEAD_GIB, FIT_FRACTION, OVERHEAD_GIB, PHASES,
                                   STEP_TEMP_BYTES, MemorySetup, evaluate_memory, phase_memory,
                                   usable_gib)
from generator.plan.stages import accounted_stage_sizes, stage_layer_counts, stage_params
from generator.plan.workload import GIB, Workload


def terms(phase):
    return {t.name: t.gib for t in phase.terms}


QWEN2_7B = find_model("qwen2-7b")
G1 = Candidate(tp=2, pp=2, rollout_tp=2, micro_batch_per_gpu=4, log_prob_micro_batch_per_gpu=4,
               gpu_memory_utilization=0.6)
G1_WORK = Workload(gpus=8, gpu_memory_gib=79.6, prompt_len=1024, response_len=1024, per_rank_mini_batch=640)


def report(model, cand, work, headroom=0.0):
    return evaluate_memory(MemorySetup(model, cand, work, headroom))


def test_every_stage_is_evaluated_and_the_all_moe_stage_is_the_heaviest():
    # DeepSeek-V3 TP8 PP16 EP8 on 128 GPUs, last stage 1 layer: stage 0 holds the 3 dense layers
    # and one MoE layer, stages 1..14 four MoE layers each. Expert-DP is 1 (128 / (1·8·16)), so an
    # all-MoE stage carries its whole expert optimizer: heavier than the first or the last stage.
    dsv3 = find_model("deepseek-v3")
    cand = Candidate(tp=8, pp=16, ep=8, etp=1, last_stage_layers=1, rollout_tp=32, use_dynamic_bsz=True,
                     token_budget=11680, recompute=True, gpu_memory_utilization=0.6,
                     offload=Offload(param=True, grad=True, optimizer=True))
    work = Workload(gpus=128, gpu_memory_gib=95.6, prompt_len=2048, response_len=9632, per_rank_mini_batch=256)
    rep = report(dsv3, cand, work)
    assert [s.stage for s in rep.stages] == list(range(16))
    assert [(s.dense_layers, s.moe_layers) for s in rep.stages[:2]] == [(3, 1), (0, 4)]
    middle = rep.stages[1].peak.gib
    assert middle > rep.stages[0].peak.gib and middle > rep.stages[15].peak.gib
    assert rep.peak_stage not in (0, 15)
    assert 0 < rep.peak_stage < 15 and rep.peak_phase == "optimizer_step"
    # The middle stage's optimizer shard by hand: DP = 128 / (8·16) = 1 and EDP 1, 12 B per parameter.
    params = stage_params(dsv3, cand, 1, stage_layer_counts(61, 16, None, 1))
    assert params.experts == pytest.approx(4 * 256 * 3 * 7168 * 2048 / 8)
    step = terms(rep.stages[1].phases[PHASES.index("optimizer_step")])
    assert step["optimizer"] == pytest.approx(12 * (params.dense / 1 + params.experts / 1) / GIB, abs=0.01)


def test_optimizer_step_frees_activations_and_adds_adam_working_copies():
    step = {p.phase: p for p in phase_memory(QWEN2_7B, G1, G1_WORK)}["optimizer_step"]
    t = terms(step)
    stage = stage_params(QWEN2_7B, G1, 0, [14, 14]).total
    assert "activations" not in t and "logits" not in t
    assert t["optimizer"] == pytest.approx(12 * stage / 2 / GIB, abs=0.01)  # DP 2
    assert t["step-temporaries"] == pytest.approx(STEP_TEMP_BYTES * stage / 2 / GIB, abs=0.01)
    # The CPU optimizer runs its fraction of the step on the CPU: no GPU temporaries for it.
    half = replace(G1, offload=Offload(cpu_optimizer=True, cpu_optimizer_fraction=0.5))
    t_half = terms({p.phase: p for p in phase_memory(QWEN2_7B, half, G1_WORK)}["optimizer_step"])
    assert t_half["step-temporaries"] == pytest.approx(t["step-temporaries"] / 2, abs=0.01)
    assert t_half["optimizer"] == pytest.approx(t["optimizer"] / 2, abs=0.01)


def test_cuda_graphs_count_in_every_phase_unless_eager():
    graphs = {p.phase: terms(p).get("cuda-graphs") for p in phase_memory(QWEN2_7B, G1, G1_WORK)}
    assert set(graphs) == set(PHASES) and set(graphs.values()) == {CUDA_GRAPH_GIB}
    eager = {p.phase: p for p in phase_memory(QWEN2_7B, replace(G1, enforce_eager=True), G1_WORK)}
    lazy = {p.phase: p for p in phase_memory(QWEN2_7B, G1, G1_WORK)}
    for name in PHASES:
        assert lazy[name].gib - eager[name].gib == pytest.approx(CUDA_GRAPH_GIB, abs=0.02)


def test_rollout_overhead_leaves_out_what_the_engine_claim_holds():
    rollout = terms({p.phase: p for p in phase_memory(QWEN2_7B, G1, G1_WORK)}["rollout"])
    assert rollout["overhead"] == OVERHEAD_GIB - ENGINE_COUNTED_OVERHEAD_GIB


def test_weight_sync_holds_actor_and_rollout_weights_together():
    offloaded = replace(G1, offload=Offload(param=True, grad=True, optimizer=True))
    sync = terms({p.phase: p for p in phase_memory(QWEN2_7B, offloaded, G1_WORK)}["weight_sync"])
    stage = stage_params(QWEN2_7B, G1, 1, [14, 14]).total  # the last stage holds the output layer too
    assert sync["actor-weights"] == pytest.approx(2 * stage / GIB, abs=0.01)
    assert sync["rollout-weights"] == pytest.approx(2 * total_params(QWEN2_7B) / 2 / GIB, abs=0.01)  # rollout TP 2
    assert sync["sync-bucket"] == pytest.approx(G1_WORK.sync_bucket_mib / 1024, abs=0.01)  # the workload's bucket
    bigger = {p.phase: p for p in phase_memory(QWEN2_7B, offloaded, replace(G1_WORK, sync_bucket_mib=2048))}
    assert terms(bigger["weight_sync"])["sync-bucket"] == pytest.approx(2.0, abs=0.01)  # 0.9.1's default
    assert sync["grads"] == 0 and sync["optimizer"] == 0


def test_host_ram_per_node_by_hand():
    # Qwen2-7B on 8 GPUs (one node), TP2 PP2 → DP 2; param + optimizer offload, GRPO (with a ref).
    cand = replace(G1, offload=Offload(param=True, grad=True, optimizer=True))
    rep = report(QWEN2_7B, cand, G1_WORK)
    stages = [stage_params(QWEN2_7B, cand, s, [14, 14]).total for s in (0, 1)]
    weights = sum(2 * 2 * p * 4 for p in stages)  # actor + ref, 4 GPUs per stage
    optimizer = sum(12 * p / 2 * 4 for p in stages)
    host = dict((t.name, t.gib) for t in rep.host_terms)
    assert host["offloaded-weights"] == pytest.approx(weights / GIB, abs=0.01)
    assert host["offloaded-optimizer"] == pytest.approx(optimizer / GIB, abs=0.01)
    assert host["cpu-optimizer"] == 0
    assert rep.host_ram_per_node_gib == pytest.approx((weights + optimizer) / GIB, abs=0.1)
    assert report(QWEN2_7B, G1, G1_WORK).host_ram_per_node_gib == 0  # nothing offloaded


def test_headroom_lowers_the_usable_limit():
    assert usable_gib(79.6) == pytest.approx(79.6 * FIT_FRACTION, abs=0.01)
    assert usable_gib(79.6, 5) == pytest.approx(79.6 * FIT_FRACTION - 5, abs=0.01)
    tight = report(QWEN2_7B, G1, G1_WORK)
    assert tight.fits
    assert not report(QWEN2_7B, G1, G1_WORK, headroom=tight.usable_gib - tight.peak_gib + 0.1).fits


def test_accounted_split_gives_the_first_and_last_stage_one_layer_less():
    assert accounted_stage_sizes(94, 8, embedding=True, loss=True) == (11, 11)  # Qwen3-235B in verl
    assert accounted_stage_sizes(63, 16, embedding=False, loss=True) == (None, 3)  # (63 + 1) / 16 = 4 slots
    assert accounted_stage_sizes(28, 1, embedding=True, loss=True) == (None, None)
    assert accounted_stage_sizes(28, 4, embedding=False, loss=False) == (None, None)
    first, last = accounted_stage_sizes(94, 8, embedding=True, loss=True)
    assert stage_layer_counts(94, 8, first, last) == [11] + [12] * 6 + [11]


_MODELS = ("qwen2-7b", "qwen3-30b-a3b", "deepseek-v3", "llama3.1-8b")


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(_MODELS), tp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2, 4, 8]),
       micro=st.integers(1, 8), param=st.booleans(), optimizer=st.booleans(), fraction=st.sampled_from([0, 0.5, 1]),
       recompute=st.booleans(), eager=st.booleans(), gmu=st.sampled_from([0.3, 0.5, 0.7]),
       response=st.sampled_from([512, 2048, 8192]))
def test_verdict_is_the_maximum_over_every_stage_and_phase(model, tp, pp, micro, param, optimizer, fraction,
                                                           recompute, eager, gmu, response):
    facts = find_model(model)
    ep = 8 if facts.is_moe else 1
    gpus = max(tp * pp * 8, ep * pp)
    cand = Candidate(tp=tp, pp=pp, ep=ep, etp=1 if facts.is_moe else None, rollout_tp=tp, micro_batch_per_gpu=micro,
                     offload=Offload(param=param, grad=param, optimizer=optimizer, cpu_optimizer=fraction > 0,
                                     cpu_optimizer_fraction=fraction),
                     recompute=recompute, enforce_eager=eager, gpu_memory_utilization=gmu)
    work = Workload(gpus=gpus, gpu_memory_gib=79.6, prompt_len=1024, response_len=response, per_rank_mini_batch=64)
    rep = report(facts, cand, work)
    every = [p.gib for s in rep.stages for p in s.phases]
    assert len(rep.stages) == pp and all(len(s.phases) == len(PHASES) for s in rep.stages)
    assert rep.peak_gib == max(every)
    assert rep.fits == (max(every) <= rep.usable_gib)
    # The search's per-phase view agrees with the every-stage report.
    worst = {p.phase: p.gib for p in phase_memory(facts, cand, work, detail=False)}
    assert worst == {p.phase: p.gib for p in rep.worst_phases()}


def _planned(prefix):
    from generator.library.store import load_library

    return [r for r in load_library().sorted() if r.name.startswith(prefix)]


def test_every_planned_recipe_fits_on_every_stage_and_phase():
    from generator.library.convert import recipe_memory_setup

    recipes = _planned("planned-")
    assert len(recipes) >= 40
    for recipe in recipes:
        rep = evaluate_memory(recipe_memory_setup(recipe))
        assert rep.fits, f"{recipe.name}: {rep.peak_phase} on stage {rep.peak_stage} {rep.peak_gib} > {rep.usable_gib}"
        assert len(rep.stages) == recipe_memory_setup(recipe).candidate.pp


@pytest.mark.parametrize("model, gpus, gpu", [("deepseek-v3", 256, "h100"), ("qwen3-235b-a22b", 64, "h20")])
def test_large_moe_plans_report_and_fit_every_stage(model, gpus, gpu):
    from generator.layout.hardware import gpu_spec
    from generator.plan import plan_layout

    plan = plan_layout(find_model(model), gpus, nodes=gpus // 8, gpu=gpu_spec(gpu), top=3)
    assert plan.candidates
    for cand in plan.candidates:
        if not cand.fits:
            continue
        dp = gpus // cand.model_parallel_size
        work = Workload(gpus=gpus, gpu_memory_gib=gpu_spec(gpu).memory_gib, prompt_len=plan.prompt_len,
                        response_len=plan.response_len,
                        per_rank_mini_batch=(cand.ppo_mini_batch_size or plan.ppo_mini_batch_size) * plan.n // dp,
                        max_num_batched_tokens=max(8192, plan.prompt_len + plan.response_len))
        rep = evaluate_memory(MemorySetup(find_model(model), cand, work))
        assert len(rep.stages) == cand.pp
        assert rep.fits, (cand, rep.peak_phase, rep.peak_stage, rep.peak_gib)
