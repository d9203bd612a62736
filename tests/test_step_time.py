"""The planner's step-time estimate (its ranking score): parts against hand-computed numbers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.hardware import GpuSpec, gpu_spec
from generator.model import ModelFacts, find_model, total_params
from generator.model.params import kv_cache_bytes_per_token
from generator.plan.candidate import Candidate, Offload
from generator.plan.step_time import (ADAM_STATE, DECODE_MFU, HOST_LINK_EFFICIENCY, TRAIN_MFU, bubble_fraction,
                                      estimate_step_time, micro_batches)
from generator.plan.workload import Workload

TOY = ModelFacts(name="Toy-1B", hidden_size=2048, num_layers=16, num_attention_heads=16, num_kv_heads=4,
                 head_dim=128, ffn_hidden_size=8192, vocab_size=32000, max_position_embeddings=4096)
# Round speeds so the parts can be checked by hand.
GPU = GpuSpec("toy", 80.0, peak_tflops=100.0, hbm_tb_s=1.0, host_gb_s=10.0, peer_gb_s=100.0)
WORK = Workload(gpus=2, gpu_memory_gib=80.0, prompt_len=100, response_len=100, per_rank_mini_batch=5,
                has_ref=True, responses_per_step=10)


def test_parts_of_a_small_dense_step_by_hand():
    n = total_params(TOY)
    step = estimate_step_time(Candidate(tp=1, pp=1, rollout_tp=1, micro_batch_per_gpu=5), TOY, GPU, WORK)
    tokens = 10 * 200
    forward = 2 * n * tokens / (2 * 100e12 * TRAIN_MFU)
    assert step.log_prob_s == pytest.approx(2 * forward)  # old + ref log-prob
    assert step.update_s == pytest.approx(3 * forward)  # 6·N per token
    assert step.bubble_s == 0 and step.offload_s == 0
    # Two replicas of 5 responses, all resident: 100 decode steps, each reading 2·N bytes and the
    # KV cache of 5 sequences at a mean context of 150 tokens; plus prefill of 10·100 tokens.
    read = 2 * n / 1e12 + 5 * 150 * kv_cache_bytes_per_token(TOY, 1) / 1e12
    prefill = 2 * n * 10 * 100 / (2 * 100e12 * DECODE_MFU)
    assert step.rollout_s == pytest.approx(100 * read + prefill)
    assert step.weight_sync_s == pytest.approx(2 * n / 100e9)
    assert step.total_s == pytest.approx(step.rollout_s + step.log_prob_s + step.update_s + step.weight_sync_s)


def test_recompute_costs_a_third_more_update_and_kv_waves_multiply_decode():
    base = Candidate(tp=1, pp=1, rollout_tp=1, micro_batch_per_gpu=5)
    plain = estimate_step_time(base, TOY, GPU, WORK)
    recomputed = estimate_step_time(Candidate(tp=1, pp=1, rollout_tp=1, micro_batch_per_gpu=5, recompute=True),
                                    TOY, GPU, WORK)
    assert recomputed.update_s == pytest.approx(plain.update_s * 4 / 3)
    halves = estimate_step_time(base, TOY, GPU, WORK, kv_resident_fraction=0.5)
    assert halves.rollout_s < 2 * plain.rollout_s and halves.rollout_s > 1.5 * plain.rollout_s


def test_bubble_term():
    assert bubble_fraction(1, None, 8) == 0
    assert bubble_fraction(4, None, 5) == pytest.approx(3 / 8)  # (PP−1)/(M+PP−1)
    assert bubble_fraction(4, 2, 5) == pytest.approx(3 / 13)  # interleaving divides the idle slots
    cand = Candidate(tp=1, pp=2, rollout_tp=1, micro_batch_per_gpu=1, log_prob_micro_batch_per_gpu=5)
    work = Workload(gpus=4, gpu_memory_gib=80.0, prompt_len=100, response_len=100, per_rank_mini_batch=4,
                    has_ref=False, responses_per_step=20)
    step = estimate_step_time(cand, TOY, GPU, work)
    # DP 2: log-prob runs 10 responses in M=2 micro-batches, the update 4 in M=4;
    # idle = compute·(PP−1)/M.
    assert micro_batches(10, 200, cand, log_prob=True) == 2 and micro_batches(4, 200, cand, log_prob=False) == 4
    assert step.bubble_s == pytest.approx(step.log_prob_s / 2 + step.update_s / 4)


def test_offload_moves_state_over_the_host_link():
    off = Offload(param=False, optimizer=True)
    step = estimate_step_time(Candidate(tp=1, pp=1, rollout_tp=1, offload=off), TOY, GPU, WORK)
    # Optimizer state of one rank (sharded over DP 2) in and out once per step.
    assert step.offload_s == pytest.approx(2 * ADAM_STATE * total_params(TOY) / 2 / (10e9 * HOST_LINK_EFFICIENCY),
                                           rel=1e-3)


def test_named_gpus_carry_their_speeds():
    assert gpu_spec("h20").peak_tflops < gpu_spec("h100").peak_tflops
    assert gpu_spec("h20").hbm_tb_s > gpu_spec("h100").hbm_tb_s


def test_plan_json_carries_the_score_parts_for_every_candidate():
    result = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--format", "json"])
    assert result.exit_code == 0, result.output
    candidates = json.loads(result.stdout)["candidates"]
    assert len(candidates) > 1
    for c in candidates:
        score = c["score"]
        parts = sum(score[k] for k in ("rollout_s", "log_prob_s", "update_s", "offload_s", "bubble_s",
                                       "weight_sync_s"))
        assert score["total_s"] == pytest.approx(parts, abs=0.05) and score["update_s"] > 0
    text = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8"]).stdout
    assert "step ~" in text and all(len(line) <= 80 for line in text.splitlines())


def test_each_alternative_names_the_criterion_the_first_beats_it_on():
    from generator.plan import plan_layout
    from generator.plan.search import RANK_CRITERIA, deciding_criterion, rank_key

    model = find_model("qwen2-7b")
    plan = plan_layout(model, 8, gpu=gpu_spec("h100"))
    assert len(plan.candidates) > 1 and plan.rank_reasons[0] is None
    keys = [rank_key(c, plan.prompt_len + plan.response_len, model.is_moe, 8) for c in plan.candidates]
    assert len(keys[0]) == len(RANK_CRITERIA)
    for key, reason in zip(keys[1:], plan.rank_reasons[1:]):
        position = next(i for i, (a, b) in enumerate(zip(keys[0], key)) if a != b)
        assert keys[0][position] < key[position] and reason == RANK_CRITERIA[position]
    assert deciding_criterion(keys[0], keys[0]) is None
    document = json.loads(CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--format",
                                                   "json"]).stdout)
    assert [c["ranked_below_first_by"] for c in document["candidates"]] == plan.rank_reasons
