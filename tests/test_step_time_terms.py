"""Each step-time term that moves with the layout, moving the right way (issue 32 part 3).

Every test compares two layouts (or knobs) that differ in one thing and checks the term's
direction and, where it is simple, its size by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from generator.layout.candidate import Candidate
from generator.layout.hardware import GpuSpec
from generator.model import ModelFacts
from generator.plan.step_time import (BF16, COLLECTIVE_EFFICIENCY, FP32, StepConstants, bubble_fraction,
                                      decode_step_s, dp_grad_sync_s, estimate_step_time, forward_s, gemm_efficiency,
                                      group_link_gb_s, micro_batch_rows, stage_imbalance, tokens_per_local_expert,
                                      training_comm_s)
from generator.plan.workload import Workload

TOY = ModelFacts(name="Toy-1B", hidden_size=2048, num_layers=16, num_attention_heads=16, num_kv_heads=4,
                 head_dim=128, ffn_hidden_size=8192, vocab_size=32000, max_position_embeddings=4096)
MOE = TOY._replace(name="Toy-MoE", num_experts=64, experts_per_token=4, expert_ffn_hidden_size=1024)
GPU = GpuSpec("toy", 80.0, peak_tflops=100.0, hbm_tb_s=1.0, host_gb_s=10.0, peer_gb_s=100.0, net_gb_s=10.0)
WORK = Workload(gpus=16, gpu_memory_gib=80.0, prompt_len=1000, response_len=1000, per_rank_mini_batch=16,
                has_ref=False, responses_per_step=256)
# The mean prompt and response are the maxima: 2000 tokens per response.
K = StepConstants(train_mfu=0.5, moe_efficiency=0.5, decode_mfu=0.5, decode_tp_sync_s=1e-4, decode_step_overhead_s=1e-3,
                  static_pad_share=0.0, mean_response_share=1.0, mean_prompt_share=1.0, gemm_half_dim=256.0,
                  expert_half_rows=512.0, cross_node_sync_s=1e-3)


def dyn(**knobs: object) -> Candidate:
    return Candidate(**{"tp": 1, "pp": 1, "rollout_tp": 1, "use_dynamic_bsz": True, "token_budget": 8000,
                        "log_prob_token_budget": 16000, **knobs})  # type: ignore[arg-type]


def test_gemm_efficiency_falls_with_small_rows_and_narrow_columns():
    assert gemm_efficiency(256, 1e12, 256) == pytest.approx(0.5, rel=1e-6)  # half speed at the half dimension
    assert gemm_efficiency(1000, 1000, 0) == 1.0
    assert gemm_efficiency(512, 4096, 256) < gemm_efficiency(8192, 4096, 256)  # smaller micro-batch
    assert gemm_efficiency(8192, 2048 / 8, 256) < gemm_efficiency(8192, 2048, 256)  # TP8 narrows the columns


def test_micro_batch_rows_follow_the_budget_and_cp():
    # 16 responses of 2000 tokens per rank under an 8000-token budget: 4 micro-batches of 8000.
    assert micro_batch_rows(16, 2000, dyn(), log_prob=False) == pytest.approx(8000)
    # CP2 packs 2 × the budget per micro-batch and splits it over two ranks: rows stay 8000 per GPU.
    assert micro_batch_rows(16, 2000, dyn(cp=2), log_prob=False) == pytest.approx(8000)
    # A fixed micro-batch of 1 sequence holds 2000 tokens.
    static = Candidate(tp=1, pp=1, micro_batch_per_gpu=1, log_prob_micro_batch_per_gpu=2)
    assert micro_batch_rows(16, 2000, static, log_prob=False) == pytest.approx(2000)
    assert micro_batch_rows(16, 2000, static, log_prob=True) == pytest.approx(4000)


def test_a_small_token_budget_slows_the_update():
    small = estimate_step_time(dyn(token_budget=2000), TOY, GPU, WORK, constants=K)
    large = estimate_step_time(dyn(token_budget=16000), TOY, GPU, WORK, constants=K)
    assert small.update_s > large.update_s
    # By hand: rows 2000 vs 16000 at columns 2048.
    ratio = gemm_efficiency(16000, 2048, 256) / gemm_efficiency(2000, 2048, 256)
    assert small.update_s / large.update_s == pytest.approx(ratio)
    assert small.log_prob_s == pytest.approx(large.log_prob_s)  # the log-prob budget did not change


def test_wider_tp_loses_gemm_efficiency_on_the_same_tokens():
    tp1 = forward_s(1e6, 8000, dyn(), TOY, GPU, WORK, K)
    tp8 = forward_s(1e6, 8000, dyn(tp=8), TOY, GPU, WORK, K)
    assert tp8 / tp1 == pytest.approx(gemm_efficiency(8000, 2048, 256) / gemm_efficiency(8000, 256, 256))
    assert tp8 > tp1


def test_expert_parallelism_raises_tokens_per_local_expert_and_speeds_the_experts():
    # 8000 rows, top-4 of 64 experts: EP1 gives each expert 500 rows, EP8 4000.
    assert tokens_per_local_expert(8000, MOE, dyn()) == pytest.approx(500)
    assert tokens_per_local_expert(8000, MOE, dyn(ep=8, etp=1)) == pytest.approx(4000)
    # TP4 with ETP1: each GPU routes its sequence-parallel quarter; ETP4 gathers it back.
    assert tokens_per_local_expert(8000, MOE, dyn(tp=4, ep=8, etp=1)) == pytest.approx(1000)
    assert tokens_per_local_expert(8000, MOE, dyn(tp=4, ep=8, etp=4)) == pytest.approx(4000)
    assert tokens_per_local_expert(8000, TOY, dyn()) == 0.0
    ep1 = forward_s(1e6, 8000, dyn(), MOE, GPU, WORK, K)
    ep8 = forward_s(1e6, 8000, dyn(ep=8, etp=1), MOE, GPU, WORK, K)
    assert ep8 < ep1
    # A dense model's forward does not depend on EP.
    assert forward_s(1e6, 8000, dyn(ep=8, etp=1), TOY, GPU, WORK, K) == forward_s(1e6, 8000, dyn(), TOY, GPU, WORK, K)


def test_more_micro_batches_and_vpp_shrink_the_bubble():
    assert bubble_fraction(8, None, 4) > bubble_fraction(8, None, 32) > bubble_fraction(8, 2, 32) > 0
    base = dyn(pp=4)
    few = estimate_step_time(replace(base, token_budget=32000), TOY, GPU, WORK, constants=replace(K, gemm_half_dim=0))
    many = estimate_step_time(replace(base, token_budget=4000), TOY, GPU, WORK, constants=replace(K, gemm_half_dim=0))
    interleaved = estimate_step_time(replace(base, token_budget=32000, vpp=2), TOY, GPU, WORK,
                                     constants=replace(K, gemm_half_dim=0))
    # Update: 16·2000 tokens per rank in 1 micro-batch of 32000 vs 8 of 4000; idle = compute·3/M.
    assert few.bubble_s > interleaved.bubble_s
    assert few.bubble_s > many.bubble_s


def test_tp_and_cp_collectives_leave_the_node_when_the_group_does():
    assert group_link_gb_s(8, 8, GPU) == 100.0 and group_link_gb_s(16, 8, GPU) == 10.0
    work = replace(WORK, gpus=32)
    in_node = training_comm_s(dyn(tp=8), TOY, GPU, work, 1e5, 1)
    spanning = training_comm_s(dyn(tp=16), TOY, GPU, work, 1e5, 1)
    assert spanning > in_node * 5  # 10x slower link, slightly more ranks, half the DP
    # CP2 on TP4 stays in the node; CP4 on TP4 spans two nodes. The TP part is the same for both
    # (a TP group's tokens are W/TP of the whole either way), so the difference is the CP ring's.
    tp_only = training_comm_s(dyn(tp=4), TOY, GPU, work, 1e5, 1)
    cp_in = training_comm_s(dyn(tp=4, cp=2), TOY, GPU, work, 1e5, 1) - tp_only
    cp_out = training_comm_s(dyn(tp=4, cp=4), TOY, GPU, work, 1e5, 1) - tp_only
    # CP4 sends 3 shares of K,V where CP2 sends 1, over a 10x slower link.
    assert cp_out == pytest.approx(cp_in * 3 * 10)


def test_ep_all_to_all_is_charged_by_bytes_routed_and_grows_across_nodes():
    work = replace(WORK, gpus=32)
    in_node = training_comm_s(dyn(ep=8, etp=1), MOE, GPU, work, 1e5, 1)
    spanning = training_comm_s(dyn(ep=32, etp=1), MOE, GPU, work, 1e5, 1)
    assert spanning > in_node > 0
    more_experts = MOE._replace(experts_per_token=8)  # twice the copies routed
    assert training_comm_s(dyn(ep=8, etp=1), more_experts, GPU, work, 1e5, 1) == pytest.approx(2 * in_node)


def test_dp_gradient_sync_by_hand_and_across_nodes():
    # TOY on 16 GPUs TP1 PP1: DP16 spans two 8-GPU nodes, so the ring runs at the network's speed;
    # reduce-scatter of fp32 grads + all-gather of bf16 weights = 15/16 · 6 bytes per parameter.
    from generator.model import total_params

    n = total_params(TOY)
    sync = dp_grad_sync_s(dyn(), TOY, GPU, WORK)
    assert sync == pytest.approx(15 / 16 * (FP32 + BF16) * n / (10e9 * COLLECTIVE_EFFICIENCY), rel=1e-3)
    # PP2 halves the parameters per GPU and keeps the 8 DP ranks of a stage in one node.
    assert dp_grad_sync_s(dyn(pp=2), TOY, GPU, WORK) < sync / 10
    # Smaller mini-batches mean more optimizer steps, each with its sync.
    few = estimate_step_time(dyn(), TOY, GPU, WORK, constants=K)
    many = estimate_step_time(dyn(), TOY, GPU, replace(WORK, per_rank_mini_batch=4), constants=K)
    assert many.comm_s - few.comm_s == pytest.approx(3 * sync)


def test_a_rollout_replica_spanning_nodes_pays_the_network_latency():
    in_node = decode_step_s(TOY, GPU, 8, 64, 1000, K, gpus_per_node=8)
    spanning = decode_step_s(TOY, GPU, 16, 64, 1000, K, gpus_per_node=8)
    without_latency = decode_step_s(TOY, GPU, 16, 64, 1000, replace(K, cross_node_sync_s=0.0), gpus_per_node=8)
    assert spanning > without_latency > in_node
    # Two all-reduces per layer, each waiting cross_node_sync_s more.
    assert spanning - without_latency == pytest.approx(2 * 16 * 1e-3)


def test_the_last_stage_carries_the_output_layer_and_the_pipeline_waits_for_it():
    from generator.model.params import dense_layer_params

    layer = dense_layer_params(TOY)
    per_layer = layer.tp_sharded + layer.replicated
    head = TOY.hidden_size * TOY.vocab_size
    assert stage_imbalance(TOY, dyn(), 0.5) == 1.0  # no pipeline
    # PP2: 8 layers per stage, the last one with the head too.
    assert stage_imbalance(TOY, dyn(pp=2), 0.5) == pytest.approx((8 * per_layer + head) / (8 * per_layer + head / 2))
    # PP16: one layer per stage; the head doubles the last stage's work on this toy.
    deep = stage_imbalance(TOY, dyn(pp=16), 0.5)
    assert deep > stage_imbalance(TOY, dyn(pp=2), 0.5)
    # Moving layers off the last stage evens it out (Megatron's num_layers_in_last_pipeline_stage).
    assert stage_imbalance(TOY, dyn(pp=4, first_stage_layers=5, last_stage_layers=3), 0.5) < \
        stage_imbalance(TOY, dyn(pp=4), 0.5)
    # The other stages' idle time shows in the bubble: a deeper pipeline idles more.
    k = replace(K, gemm_half_dim=0.0, expert_half_rows=0.0)
    shallow = estimate_step_time(dyn(pp=2), TOY, GPU, WORK, constants=k)
    deeper = estimate_step_time(dyn(pp=16), TOY, GPU, WORK, constants=k)
    assert deeper.bubble_s > shallow.bubble_s
    assert deeper.update_s == pytest.approx(shallow.update_s)  # the compute itself does not change
