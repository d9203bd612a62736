"""The planner's step-time estimate (its ranking score): parts against hand-computed numbers."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.layout.hardware import GpuSpec, gpu_spec
from generator.model import ModelFacts, find_model, total_params
from generator.model.params import kv_cache_bytes_per_token
from generator.layout.parallelism import Offload
from generator.layout.candidate import Candidate
from generator.plan.step_time import (ADAM_STATE, COLLECTIVE_EFFICIENCY, HOST_LINK_EFFICIENCY, StepConstants,
                                      all_to_all_s, bubble_fraction, calibrated, decode_step_s, dp_grad_sync_s,
                                      estimate_step_time,
                                      expected_lengths, micro_batches, ring_all_reduce_s, training_comm_s)
from generator.plan.workload import Workload

TOY = ModelFacts(name="Toy-1B", hidden_size=2048, num_layers=16, num_attention_heads=16, num_kv_heads=4,
                 head_dim=128, ffn_hidden_size=8192, vocab_size=32000, max_position_embeddings=4096)
# Round speeds so the parts can be checked by hand.
GPU = GpuSpec("toy", 80.0, peak_tflops=100.0, hbm_tb_s=1.0, host_gb_s=10.0, peer_gb_s=100.0, net_gb_s=10.0)
WORK = Workload(gpus=2, gpu_memory_gib=80.0, prompt_len=100, response_len=100, per_rank_mini_batch=5,
                has_ref=True, responses_per_step=10)
# Round constants: the mean response is half the maximum, the mean prompt the whole of it; GEMMs
# of any shape at full speed and no cross-node latency (tests/test_step_time_terms.py turns them on).
K = StepConstants(train_mfu=0.5, moe_efficiency=0.5, decode_mfu=0.5, decode_tp_sync_s=1e-4,
                  decode_step_overhead_s=1e-3, static_pad_share=0.0, mean_response_share=0.5, mean_prompt_share=1.0,
                  gemm_half_dim=0.0, expert_half_rows=0.0, cross_node_sync_s=0.0)


def test_expected_lengths_come_from_the_workload_or_the_share():
    assert expected_lengths(WORK, K) == (100.0, 50.0)
    given = Workload(gpus=2, gpu_memory_gib=80.0, prompt_len=100, response_len=100, mean_response_len=30)
    assert expected_lengths(given, K) == (100.0, 30.0)


def test_parts_of_a_small_dense_step_by_hand():
    n = total_params(TOY)
    step = estimate_step_time(Candidate(tp=1, pp=1, rollout_tp=1, micro_batch_per_gpu=5, use_dynamic_bsz=True),
                              TOY, GPU, WORK, constants=K)
    tokens = 10 * 150  # 10 responses of 100 prompt + 50 expected response tokens
    forward = 2 * n * tokens / (2 * 100e12 * 0.5)
    assert step.log_prob_s == pytest.approx(2 * forward)  # old + ref log-prob
    assert step.update_s == pytest.approx(3 * forward)  # 6·N per token
    assert step.bubble_s == 0 and step.offload_s == 0  # PP1, nothing offloaded
    # TP1 CP1: only the one optimizer step's DP2 gradient reduce-scatter (fp32) and weight all-gather (bf16).
    assert step.comm_s == pytest.approx((2 - 1) / 2 * (4 + 2) * n / (100e9 * COLLECTIVE_EFFICIENCY))
    # Two replicas of 5 responses, all in flight: 5·50/5 = 50 steps at a mean context of 125, then
    # the longest response runs 50 more steps alone at context 150; plus prefill of 5·100 tokens.
    kv = kv_cache_bytes_per_token(TOY, 1)
    busy = max((2 * n + 5 * 125 * kv) / 1e12, 2 * n * 5 / (100e12 * 0.5)) + 1e-3
    alone = max((2 * n + 150 * kv) / 1e12, 2 * n / (100e12 * 0.5)) + 1e-3
    prefill = 2 * n * 5 * 100 / (100e12 * 0.5)
    assert step.rollout_s == pytest.approx(50 * busy + 50 * alone + prefill)
    assert step.weight_sync_s == pytest.approx(2 * n / 100e9)
    assert step.total_s == pytest.approx(step.rollout_s + step.log_prob_s + step.update_s + step.weight_sync_s
                                         + step.comm_s)


def test_static_micro_batches_compute_part_of_the_padding():
    dynamic = estimate_step_time(Candidate(tp=1, pp=1, use_dynamic_bsz=True), TOY, GPU, WORK, constants=K)
    padded = estimate_step_time(Candidate(tp=1, pp=1, micro_batch_per_gpu=5), TOY, GPU, WORK,
                                constants=replace(K, static_pad_share=0.5))
    # 1500 real tokens, 2000 at the maximum length: half the 500 padding tokens are computed.
    assert padded.update_s == pytest.approx(dynamic.update_s * 1750 / 1500)


def test_recompute_is_an_extra_forward_and_a_small_kv_cache_means_more_decode_steps():
    base = Candidate(tp=1, pp=1, rollout_tp=1, use_dynamic_bsz=True)
    plain = estimate_step_time(base, TOY, GPU, WORK, constants=K)
    recomputed = estimate_step_time(replace(base, recompute=True), TOY, GPU, WORK, constants=K)
    assert recomputed.update_s == pytest.approx(plain.update_s * 4 / 3)
    # A KV cache holding 250 tokens keeps 2 sequences (context 125) in flight instead of 5.
    small = estimate_step_time(base, TOY, GPU, WORK, kv_tokens=250, constants=K)
    assert small.rollout_s > plain.rollout_s
    n, kv = total_params(TOY), kv_cache_bytes_per_token(TOY, 1)
    step2 = max((2 * n + 2 * 125 * kv) / 1e12, 2 * n * 2 / (100e12 * 0.5)) + 1e-3
    step5 = max((2 * n + 5 * 125 * kv) / 1e12, 2 * n * 5 / (100e12 * 0.5)) + 1e-3
    assert small.rollout_s - plain.rollout_s == pytest.approx(125 * step2 - 50 * step5)


def test_tp_communication_by_hand():
    # TP2 on 2 GPUs: DP 1; 1500 tokens; per layer per forward 2 all-reduces of 1500·2048·2 bytes,
    # ring cost 2·(2−1)/2 = 1× the bytes over 100 GB/s at COLLECTIVE_EFFICIENCY.
    cand = Candidate(tp=2, pp=1, use_dynamic_bsz=True)
    per_forward = 16 * 2 * 1500 * 2048 * 2 / (100e9 * COLLECTIVE_EFFICIENCY)
    assert ring_all_reduce_s(1500 * 2048 * 2, 2, 100.0) == pytest.approx(1500 * 2048 * 2 / (100e9 * 0.8))
    assert training_comm_s(cand, TOY, GPU, WORK, 1500, 1) == pytest.approx(per_forward)
    step = estimate_step_time(cand, TOY, GPU, WORK, constants=K)
    # old + ref log-prob (2 forwards) + update (forward + backward = 3 forwards' bytes)
    assert step.comm_s == pytest.approx(5 * per_forward)
    assert estimate_step_time(replace(cand, recompute=True), TOY, GPU, WORK, constants=K).comm_s == \
        pytest.approx(6 * per_forward)


def test_cp_and_ep_communication_by_hand():
    work = replace(WORK, gpus=4)
    cand = Candidate(tp=1, pp=1, cp=2, use_dynamic_bsz=True)
    # DP 2, CP 2: a group's 750 tokens split over 2 ranks; each sends its K,V (2·4·128·2 bytes per
    # token per layer) to the other rank: (2−1)·375 tokens... counted as (c−1)·group tokens/c·c.
    sent = 1 * (1500 / 2 / 2) * 2 * 4 * 128 * 2
    assert training_comm_s(cand, TOY, GPU, work, 1500, 1) == pytest.approx(16 * sent / (100e9 * 0.8))
    moe = TOY._replace(num_experts=8, experts_per_token=2, expert_ffn_hidden_size=1024)
    ep = Candidate(tp=1, pp=1, ep=4, etp=1, use_dynamic_bsz=True)
    # 375 tokens per GPU, 2 copies each, 3/4 leave the GPU, dispatch + combine, 16 MoE layers, in node.
    nbytes = 2 * 375 * 2 * 2048 * 2 * 0.75
    assert training_comm_s(ep, moe, GPU, work, 1500, 1) == pytest.approx(16 * nbytes / (100e9 * 0.8))
    # The same group spread over two 2-GPU nodes: of the 4 EP ranks 1 other is in the node (1/4 of
    # the copies over NVLink) and 2 are not (2/4 over the 10 GB/s network); the two run at once.
    across = replace(work, gpus_per_node=2)
    copies = 2 * 375 * 2 * 2048 * 2
    per_layer = max(copies / 4 / (100e9 * 0.8), copies * 2 / 4 / (10e9 * 0.8))
    assert per_layer == copies * 2 / 4 / (10e9 * 0.8)
    assert training_comm_s(ep, moe, GPU, across, 1500, 1) == pytest.approx(16 * per_layer)
    assert all_to_all_s(copies, 4, 1, 2, GPU) == pytest.approx(per_layer)
    # ETP 2 puts 2 GPUs in each expert rank: 2-GPU nodes hold one EP rank, 3/4 of the copies cross.
    assert all_to_all_s(copies, 4, 2, 2, GPU) == pytest.approx(copies * 3 / 4 / (10e9 * 0.8))
    assert all_to_all_s(copies, 1, 1, 8, GPU) == 0.0


def test_ep_all_to_all_backward_moves_a_forwards_bytes():
    # The all-to-all's backward is one all-to-all of the gradient (Megatron's _AllToAll.backward),
    # so an update counts 2 forwards' EP bytes (3 with recompute) where TP counts 3 (4).
    moe = TOY._replace(num_experts=8, experts_per_token=2, expert_ffn_hidden_size=1024)
    work = replace(WORK, gpus=4)
    ep = Candidate(tp=1, pp=1, ep=4, etp=1, use_dynamic_bsz=True)
    prompt, response = expected_lengths(work, K)
    tokens = 10 * (prompt + response)
    one = training_comm_s(ep, moe, GPU, work, tokens, 1)
    # old + ref log-prob (2 forwards) + update (2 forwards' all-to-all bytes), + the DP gradient sync
    sync = dp_grad_sync_s(ep, moe, GPU, work)
    assert estimate_step_time(ep, moe, GPU, work, constants=K).comm_s == pytest.approx(4 * one + sync)
    assert estimate_step_time(replace(ep, recompute=True), moe, GPU, work, constants=K).comm_s == \
        pytest.approx(5 * one + sync)


def test_decode_step_terms_by_hand():
    n, kv = total_params(TOY), kv_cache_bytes_per_token(TOY, 2)
    one = decode_step_s(TOY, GPU, 1, 4, 100, K)
    assert one == pytest.approx(max((2 * n + 4 * 100 * kv_cache_bytes_per_token(TOY, 1)) / 1e12,
                                    2 * n * 4 / (100e12 * 0.5)) + 1e-3)
    two = decode_step_s(TOY, GPU, 2, 4, 100, K, gpus_per_node=8)
    reduce = 2 * 0.5 * 4 * 2048 * 2 / (100e9 * 0.8)
    assert two == pytest.approx(max((2 * n / 2 + 4 * 100 * kv) / 1e12, 2 * n * 4 / (2 * 100e12 * 0.5))
                                + 2 * 16 * (1e-4 + reduce) + 1e-3)
    # A replica spanning nodes all-reduces over the network.
    spanning = decode_step_s(TOY, GPU, 2, 4, 100, K, gpus_per_node=1)
    assert spanning - two == pytest.approx(2 * 16 * (reduce * 10 - reduce))


def test_calibrated_constants_are_inside_their_bounds():
    from generator.plan.step_fit import BOUNDS

    k = calibrated()
    for name, (low, high) in BOUNDS.items():
        assert low <= getattr(k, name) <= high, name
    assert 0 < k.mean_response_share < 1


def test_bubble_term():
    assert bubble_fraction(1, None, 8) == 0
    assert bubble_fraction(4, None, 5) == pytest.approx(3 / 8)  # (PP−1)/(M+PP−1)
    assert bubble_fraction(4, 2, 5) == pytest.approx(3 / 13)  # interleaving divides the idle slots
    cand = Candidate(tp=1, pp=2, rollout_tp=1, micro_batch_per_gpu=1, log_prob_micro_batch_per_gpu=5)
    work = Workload(gpus=4, gpu_memory_gib=80.0, prompt_len=100, response_len=100, per_rank_mini_batch=4,
                    has_ref=False, responses_per_step=20)
    # A vocabulary too small to matter keeps the two stages balanced (the output layer is the
    # last stage's extra: tests/test_step_time_terms.py).
    balanced = TOY._replace(vocab_size=1)
    step = estimate_step_time(cand, balanced, GPU, work, constants=K)
    # DP 2: log-prob runs 10 responses in M=2 micro-batches, the update 4 in M=4;
    # idle = compute·(PP−1)/M.
    assert micro_batches(10, 200, cand, log_prob=True) == 2 and micro_batches(4, 200, cand, log_prob=False) == 4
    assert step.bubble_s == pytest.approx(step.log_prob_s / 2 + step.update_s / 4, rel=1e-4)


def test_offload_moves_state_over_the_host_link():
    off = Offload(param=False, optimizer=True)
    step = estimate_step_time(Candidate(tp=1, pp=1, rollout_tp=1, offload=off), TOY, GPU, WORK, constants=K)
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
                                       "weight_sync_s", "comm_s"))
        assert score["total_s"] == pytest.approx(parts, abs=0.05) and score["update_s"] > 0
    text = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8"]).stdout
    assert "step ~" in text and all(len(line) <= 80 for line in text.splitlines())


def test_each_alternative_names_the_criterion_the_first_beats_it_on():
    from generator.plan import plan_layout
    from generator.plan.published import practice_marks
    from generator.plan.ranking import RANK_CRITERIA, STEP_POSITION, banded, deciding_criterion, rank_key
    from generator.plan.setting import Setting

    model = find_model("qwen2-7b")
    plan = plan_layout(model, 8, gpu=gpu_spec("h100"))
    assert len(plan.candidates) > 1 and plan.rank_reasons[0] is None
    s = Setting(gpus=8, gpus_per_node=8, gpu=gpu_spec("h100"), prompt_len=plan.prompt_len,
                response_len=plan.response_len, n=1, algo=plan.algo, train_batch_size=0, mini=0)

    def key(c):
        violations, published = practice_marks(model, c, s)
        return rank_key(c, plan.prompt_len + plan.response_len, model.is_moe, 8, violations=violations,
                        published=published)

    first = plan.candidates[0]
    # Step times inside the error band of the first's tie (ranking.banded): the later criteria decide.
    keys = [key(first)] + [banded(key(c), c.score.total_s, key(first), first.score.total_s)
                           if key(c)[:STEP_POSITION] == key(first)[:STEP_POSITION] else key(c)
                           for c in plan.candidates[1:]]
    assert len(keys[0]) == len(RANK_CRITERIA)
    for key, reason in zip(keys[1:], plan.rank_reasons[1:]):
        position = next(i for i, (a, b) in enumerate(zip(keys[0], key)) if a != b)
        assert keys[0][position] < key[position] and reason == RANK_CRITERIA[position]
    assert deciding_criterion(keys[0], keys[0]) is None
    document = json.loads(CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--format",
                                                   "json"]).stdout)
    assert [c["ranked_below_first_by"] for c in document["candidates"]] == plan.rank_reasons


def test_mean_response_len_shortens_the_estimate_and_is_checked():
    base = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--format", "json", "--top", "1"])
    short = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--format", "json", "--top", "1",
                                     "--mean-response-len", "64"])
    assert base.exit_code == 0 and short.exit_code == 0, short.output
    first = json.loads(base.stdout)["candidates"][0]
    shorter = json.loads(short.stdout)["candidates"][0]
    assert shorter["score"]["rollout_s"] < first["score"]["rollout_s"]
    assert any("counted at 64 of 1024" in line for line in shorter["why"])
    assert any(f"{calibrated().mean_response_share:.0%} of the maximum" in line for line in first["why"])
    bad = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--mean-response-len", "2000"])
    assert bad.exit_code == 2 and "--mean-response-len must be between 1 and --response-len 1024" in bad.output


def test_a_thin_moe_update_margin_without_recompute_is_noted():
    from generator.plan import plan_layout
    from generator.plan.sizing import MOE_THIN_MARGIN

    plan = plan_layout(find_model("qwen3-30b-a3b"), 8, gpu=gpu_spec("h20"), prompt_len=2048, response_len=8192,
                       n=16, train_batch_size=512, top=3)
    assert plan.candidates
    for cand in plan.candidates:
        update = cand.phase("update")
        assert update is not None
        thin = not cand.recompute and cand.limit_gib - update.gib < MOE_THIN_MARGIN * cand.limit_gib
        assert thin == any("--recompute buys room" in w for w in cand.warnings), (cand.warnings, update.gib)
    assert any("--recompute buys room" in w for c in plan.candidates for w in c.warnings)
