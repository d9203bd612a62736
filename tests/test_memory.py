"""Memory terms against numbers computed by hand from the models' config facts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from generator.model import find_model
from generator.plan.activations import MOE_ACTIVATION_FACTOR, dense_layer_activation_bytes, moe_layer_activation_bytes
from generator.layout.parallelism import Offload
from generator.layout.candidate import Candidate
from generator.plan.memory import OVERHEAD_GIB, phase_memory
from generator.plan.stages import stage_layer_counts, stage_params
from generator.plan.workload import GIB, Workload


def terms(phase):
    return {t.name: t.gib for t in phase.terms}


def phases(model, cand, work):
    return {p.phase: p for p in phase_memory(model, cand, work)}


# --- per-token activation bytes (memory-model.md §2.2 table: 155, 136, 143, ~564 KiB) -----------

def test_dense_activation_bytes_by_hand():
    # Qwen2-7B: 4h + 4q + 4kv + 4h + 6f with h=q=3584, kv=4·128, f=18944
    assert dense_layer_activation_bytes(find_model("qwen2-7b")) == 4 * 3584 + 4 * 3584 + 4 * 512 + 4 * 3584 + 6 * 18944
    # Llama-3.1-8B: h=q=4096, kv=1024, f=14336 -> 139264 B = 136 KiB
    assert dense_layer_activation_bytes(find_model("llama3.1-8b")) == 139264


def test_moe_activation_bytes_by_hand():
    qwen3 = find_model("qwen3-30b-a3b")  # h 2048, q 4096, kv 512, qk-norm, E 128, k 8, f_e 768
    non_expert, routed = moe_layer_activation_bytes(qwen3, moe_factor=1.0)
    assert non_expert == 4 * 2048 + 4 * 4096 + 4 * 512 + 2 * 4096 + 2 * 512 + 4 * 2048 + 8 * 128
    # each of the top-8 routed copies: fc1 input 2h, SwiGLU input 4f, fc2 input 2f, fp32 prob 4
    assert routed == 8 * (2 * 2048 + 6 * 768 + 4)
    assert (non_expert + routed) / 1024 == pytest.approx(112, abs=1.5)
    assert MOE_ACTIVATION_FACTOR == 1.0 and moe_layer_activation_bytes(qwen3)[1] == routed  # no discount
    dsv3 = find_model("deepseek-v3")  # MLA: Q,K 128·192, V,O 128·128; latent 1536+512+64; shared 2048
    non_expert, routed = moe_layer_activation_bytes(dsv3, moe_factor=1.0)
    assert non_expert == 4 * 7168 + 2 * (2 * 128 * 192 + 2 * 128 * 128) + 4 * (1536 + 512 + 64) + 4 * 7168 \
        + 6 * 2048 + 8 * 256
    assert routed == 8 * (2 * 7168 + 6 * 2048 + 4)
    assert (non_expert + routed) / 1024 == pytest.approx(446, rel=0.02)


# --- parameters per pipeline stage ------------------------------------------------------------

def test_dense_stage_params_by_hand():
    qwen = find_model("qwen2-7b")
    cand = Candidate(tp=2, pp=2)
    counts = stage_layer_counts(28, 2)
    attn = 3584 * 3584 * 2 + 2 * 3584 * 512 + 3584 + 2 * 512  # q, o, k, v + qkv bias
    mlp = 3 * 3584 * 18944
    layer_on_rank = (attn + mlp) / 2 + 2 * 3584  # TP-sharded / 2, norms replicated
    embedding_on_rank = 152064 * 3584 / 2
    first = stage_params(qwen, cand, 0, counts)
    last = stage_params(qwen, cand, 1, counts)
    assert first.dense == 14 * layer_on_rank + embedding_on_rank
    assert last.dense == 14 * layer_on_rank + embedding_on_rank + 3584  # output layer + final norm
    assert first.total / 1e9 == pytest.approx(1.90, abs=0.01)  # the notes' P/GPU for G1


def test_moe_stage_params_by_hand():
    qwen3 = find_model("qwen3-30b-a3b")
    p = stage_params(qwen3, Candidate(tp=1, pp=1, ep=8, etp=1), 0, [48])
    experts_per_layer = 128 * 3 * 2048 * 768 / 8
    dense_per_layer = (2048 * 4096 * 2 + 2 * 2048 * 512) + (2 * 128 + 2048 * 128 + 2 * 2048)
    assert p.experts == 48 * experts_per_layer
    assert p.dense == 48 * dense_per_layer + 2 * 151936 * 2048 + 2048
    assert p.total / 1e9 == pytest.approx(5.16, abs=0.01)  # the notes' P/GPU for G12


def test_uneven_stages_and_first_dense_layers():
    assert stage_layer_counts(61, 12, None, 6) == [5] * 11 + [6]
    assert stage_layer_counts(61, 16, 4, 1) == [4] * 15 + [1]
    dsv3 = find_model("deepseek-v3")
    counts = stage_layer_counts(61, 16, None, 1)
    first = stage_params(dsv3, Candidate(tp=8, pp=16, ep=8, etp=1), 0, counts)
    assert (first.dense_layers, first.moe_layers) == (3, 1)  # first_k_dense_replace = 3


# --- phases -----------------------------------------------------------------------------------

G1 = Candidate(tp=2, pp=2, rollout_tp=2, micro_batch_per_gpu=4, log_prob_micro_batch_per_gpu=4,
               gpu_memory_utilization=0.6)
G1_WORK = Workload(gpus=8, gpu_memory_gib=79.6, prompt_len=1024, response_len=1024, per_rank_mini_batch=640)


def test_update_phase_terms_by_hand():
    qwen = find_model("qwen2-7b")
    update = phases(qwen, G1, G1_WORK)["update"]
    t = terms(update)
    stage0 = stage_params(qwen, G1, 0, [14, 14]).total
    # Stage 0 is the worst: two micro-batches of 4·2048 tokens in flight over 14 layers, ÷TP 2.
    activations = 2 * 4 * 2048 * 14 * dense_layer_activation_bytes(qwen) / 2
    assert t["weights"] == pytest.approx(2 * stage0 / GIB, abs=0.01)
    assert t["grads"] == pytest.approx(4 * stage0 / GIB, abs=0.01)
    assert t["optimizer"] == pytest.approx(12 * stage0 / 2 / GIB, abs=0.01)  # DP 2
    assert t["activations"] == pytest.approx(activations / GIB, abs=0.01)
    assert t["activations"] == pytest.approx(17.0, abs=0.1)  # the notes' §2.8 row
    assert t["ref-weights"] == t["weights"]
    assert t["overhead"] == OVERHEAD_GIB
    assert update.gib == pytest.approx(sum(t.values()), abs=0.02)


def test_offload_frees_rollout_memory_but_not_the_update_peak():
    qwen = find_model("qwen2-7b")
    resident = phases(qwen, G1, G1_WORK)
    offloaded = phases(qwen, replace(G1, offload=Offload(param=True, grad=True, optimizer=True)), G1_WORK)
    assert terms(offloaded["rollout"])["grads"] == 0 and terms(offloaded["rollout"])["optimizer"] == 0
    assert terms(offloaded["rollout"])["actor-weights"] == 0
    assert resident["rollout"].gib - offloaded["rollout"].gib == pytest.approx(
        sum(terms(resident["rollout"])[k] for k in ("actor-weights", "grads", "optimizer", "ref-weights")), abs=0.05)
    # verl reloads everything for update_actor: offload only removes the reference weights there.
    assert offloaded["update"].gib == pytest.approx(resident["update"].gib - terms(resident["update"])["ref-weights"],
                                                    abs=0.02)
    # grad offload alone frees nothing
    grad_only = phases(qwen, replace(G1, offload=Offload(grad=True)), G1_WORK)
    assert grad_only["rollout"].gib == resident["rollout"].gib


def test_cpu_optimizer_lowers_the_update_peak_by_its_fraction():
    qwen = find_model("qwen2-7b")
    base = terms(phases(qwen, G1, G1_WORK)["update"])["optimizer"]
    half = replace(G1, offload=Offload(param=True, optimizer=True, cpu_optimizer=True, cpu_optimizer_fraction=0.5))
    assert terms(phases(qwen, half, G1_WORK)["update"])["optimizer"] == pytest.approx(base / 2, abs=0.01)


def test_recompute_vpp_and_logits():
    qwen = find_model("qwen2-7b")
    plain = terms(phases(qwen, G1, G1_WORK)["update"])["activations"]
    recompute = terms(phases(qwen, replace(G1, recompute=True), G1_WORK)["update"])["activations"]
    # With recompute the last stage (logits) is the worst: 1 micro-batch in flight × 8192 tokens ×
    # 14 layer inputs of 2h/TP bytes, plus one layer's working set.
    expected = (1 * 8192 * 14 * 2 * 3584 / 2 + 8192 * dense_layer_activation_bytes(qwen) / 2) / GIB
    assert recompute == pytest.approx(expected, abs=0.01) and recompute < plain / 10
    vpp = terms(phases(qwen, replace(G1, vpp=2), G1_WORK)["update"])["activations"]
    assert vpp == pytest.approx(plain * (1 + 1 / 4), abs=0.01)  # 1 + (p-1)/(p·v)
    lp = terms(phases(qwen, G1, G1_WORK)["log_prob"])
    assert lp["logits"] == pytest.approx(12 * 8192 * 152064 / 2 / GIB, abs=0.01)  # entropy on, last stage
    # the update without entropy: bf16 logits (2 B) and the fp32 softmax the cross entropy keeps (4 B)
    with_recompute = terms(phases(qwen, replace(G1, recompute=True), G1_WORK)["update"])
    assert with_recompute["logits"] == pytest.approx(6 * 8192 * 152064 / 2 / GIB, abs=0.01)
    fused = terms(phases(qwen, replace(G1, use_fused_kernels=True), G1_WORK)["log_prob"])
    assert fused["logits"] == 0


def test_rollout_is_resident_state_plus_the_engine_claim():
    qwen = find_model("qwen2-7b")
    rollout = phases(qwen, G1, G1_WORK)["rollout"]
    t = terms(rollout)
    # the engine's claim, split into its weights (2·N/rollout TP), profiling peak and KV cache
    assert t["rollout-weights"] + t["rollout-activations"] + t["kv-cache"] == pytest.approx(0.6 * 79.6, abs=0.03)
    assert t["rollout-weights"] == pytest.approx(2 * 7615616512 / 2 / GIB, abs=0.01)
    assert t["kv-cache"] > 0
    # the notes' §2.8: 24.8 GiB resident for G1 (actor W+G+O and the reference weights)
    assert t["actor-weights"] + t["grads"] + t["optimizer"] + t["ref-weights"] == pytest.approx(24.8, abs=0.2)


def test_moe_optimizer_shards_experts_over_expert_dp():
    qwen3 = find_model("qwen3-30b-a3b")
    cand = Candidate(tp=1, pp=1, ep=8, etp=1, rollout_tp=4, use_dynamic_bsz=True, token_budget=10240,
                     log_prob_token_budget=10240, gpu_memory_utilization=0.7)
    work = Workload(gpus=16, gpu_memory_gib=95.6, prompt_len=2048, response_len=8192, per_rank_mini_batch=128)
    p = stage_params(qwen3, cand, 0, [48])
    # DP 16 for dense state, EDP = 16 / (1·8·1) = 2 for experts
    expected = 12 * (p.dense / 16 + p.experts / 2) / GIB
    assert terms(phases(qwen3, cand, work)["update"])["optimizer"] == pytest.approx(expected, abs=0.01)


def test_ppo_critic_stays_resident_unless_offloaded():
    qwen = find_model("qwen2-7b")
    work = replace(G1_WORK, has_ref=False, has_critic=True)
    t = terms(phases(qwen, G1, work)["rollout"])
    assert t["critic"] == pytest.approx(t["actor-weights"] + t["grads"] + t["optimizer"], abs=0.02)
    assert "ref-weights" not in t


def test_engine_without_room_for_kv_cache_is_visible():
    qwen = find_model("qwen2.5-72b")
    cand = Candidate(tp=8, pp=1, rollout_tp=1, micro_batch_per_gpu=1, gpu_memory_utilization=0.5)
    work = Workload(gpus=8, gpu_memory_gib=79.6, prompt_len=1024, response_len=1024, per_rank_mini_batch=640)
    t = terms(phases(qwen, cand, work)["rollout"])
    assert t["rollout-weights"] == pytest.approx(2 * 72706203648 / GIB, abs=0.01)  # 135 GiB at rollout TP 1
    assert t["kv-cache"] == 0


def test_llama_stage_params_by_hand():
    llama = find_model("llama3.1-8b")  # h 4096, 32 heads, 8 KV heads of 128, f 14336, V 128256, untied
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    mlp = 3 * 4096 * 14336
    whole = stage_params(llama, Candidate(tp=1, pp=1), 0, [32])
    assert whole.total == 32 * (attn + mlp + 2 * 4096) + 2 * 128256 * 4096 + 4096 == 8030261248
    tp8 = stage_params(llama, Candidate(tp=8, pp=1), 0, [32])
    assert tp8.total == 32 * ((attn + mlp) / 8 + 2 * 4096) + 2 * 128256 * 4096 / 8 + 4096
    t = terms(phases(llama, Candidate(tp=8, pp=1, micro_batch_per_gpu=2, gpu_memory_utilization=0.5),
                     Workload(gpus=8, gpu_memory_gib=79.6, prompt_len=1024, response_len=1024,
                              per_rank_mini_batch=1280))["update"])
    assert t["optimizer"] == pytest.approx(12 * tp8.total / 1 / GIB, abs=0.01)  # DP 1: no sharding


def test_mla_attention_params_by_hand():
    from generator.model import attention_params

    dsv3 = find_model("deepseek-v3")  # q_lora 1536, kv_lora 512, rope 64, nope 128, v 128, 128 heads
    q = 7168 * 1536 + 1536 * 128 * (128 + 64)
    kv = 7168 * (512 + 64) + 512 * 128 * (128 + 128)
    o = 128 * 128 * 7168
    assert attention_params(dsv3) == (q + kv + o, 1536 + 512)


def test_roles_follow_the_algorithm():
    from generator.plan.workload import algo_roles

    assert algo_roles("grpo") == (True, False)
    assert algo_roles("ppo") == (False, True)
    assert algo_roles("dapo") == (False, False)  # no KL term, so verl builds no reference model
