"""Parameter counts of a model, split the way Megatron shards them (Hugging Face layout), and the
rollout engine's KV cache per token (docs/memory-model.md#terms)."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from generator.model.facts import ModelFacts

class LayerParams(NamedTuple):
    """Parameters of one decoder layer, split by how Megatron shards them."""

    tp_sharded: int  # attention projections, dense MLP, shared expert: divided by TP
    replicated: int  # norms, router, shared-expert gate: whole on every TP rank
    experts: int  # routed experts: divided by EP·ETP


def attention_params(m: ModelFacts) -> tuple[int, int]:
    """(TP-sharded, replicated) parameters of one attention block, norms excluded."""
    h = m.hidden_size
    if m.is_mla:
        heads, rope = m.num_attention_heads, m.qk_rope_head_dim or 0
        nope, v = m.qk_nope_head_dim or 0, m.v_head_dim or 0
        q_lora = m.q_lora_rank
        q = (h * q_lora + q_lora * heads * (nope + rope)) if q_lora else h * heads * (nope + rope)
        kv = h * ((m.kv_lora_rank or 0) + rope) + (m.kv_lora_rank or 0) * heads * (nope + v)
        o = heads * v * h
        norms = (q_lora or 0) + (m.kv_lora_rank or 0)  # q_a / kv_a layernorms
        return q + kv + o, norms
    q_width = m.num_attention_heads * m.head_dim
    kv_width = m.num_kv_heads * m.head_dim
    sharded = h * q_width + 2 * h * kv_width + q_width * h
    if m.qkv_bias:
        sharded += q_width + 2 * kv_width
    replicated = 2 * m.head_dim if m.qk_norm else 0
    return sharded, replicated


def dense_layer_params(m: ModelFacts) -> LayerParams:
    attn, attn_rep = attention_params(m)
    return LayerParams(attn + 3 * m.hidden_size * m.ffn_hidden_size, attn_rep + 2 * m.hidden_size, 0)


def moe_layer_params(m: ModelFacts) -> LayerParams:
    h, experts = m.hidden_size, m.num_experts or 0
    attn, attn_rep = attention_params(m)
    shared = 3 * h * m.shared_expert_ffn_hidden_size
    router = h * experts + (experts if m.router_bias else 0) + (h if m.shared_expert_gate else 0)
    routed = experts * 3 * h * (m.expert_ffn_hidden_size or 0)
    return LayerParams(attn + shared, attn_rep + router + 2 * h, routed)


def is_moe_layer(m: ModelFacts, index: int) -> bool:
    return m.is_moe and index >= m.first_k_dense_layers


def total_params(m: ModelFacts, *, active: bool = False) -> int:
    """All parameters (HF layout, vision tower included); `active` counts k experts, not E."""
    embed = m.vocab_size * m.hidden_size * (1 if m.tie_word_embeddings else 2)
    total = embed + m.hidden_size + m.vision_params
    dense, moe = dense_layer_params(m), (moe_layer_params(m) if m.is_moe else None)
    for index in range(m.num_layers):
        layer = moe if (moe is not None and is_moe_layer(m, index)) else dense
        experts = layer.experts
        if active and m.num_experts:
            experts = experts // m.num_experts * (m.experts_per_token or 0)
        total += layer.tp_sharded + layer.replicated + experts
    return total


@lru_cache(maxsize=256)
def megatron_lora_share(m: ModelFacts, rank: int) -> tuple[float, float]:
    """LoRA adapter parameters per base parameter, (dense and shared, routed experts), for verl's
    Megatron LoRA (Megatron-Bridge PEFT; verl v0.7.0 `workers/config/megatron_peft.py`: default
    targets linear_qkv, linear_proj, linear_fc1, linear_fc2, routed experts' linears included).
    An adapter on a linear of in x out adds rank x (in + out). MLA attention has no linear_qkv:
    only its linear_proj is counted. The share spreads the adapters over the GPUs in proportion to
    the base parameters they adapt (the embedding counted in the dense base: a slight under-count)."""
    if rank <= 0:
        return 0.0, 0.0
    h = m.hidden_size
    if m.is_mla:
        attention = (m.num_attention_heads * (m.v_head_dim or 0) + h)
    else:
        q, kv = m.num_attention_heads * m.head_dim, m.num_kv_heads * m.head_dim
        attention = (h + q + 2 * kv) + (q + h)

    def mlp(ffn: int) -> int:  # linear_fc1 (gate and up, fused) and linear_fc2
        return (h + 2 * ffn) + (ffn + h) if ffn else 0

    dense = experts = 0
    for index in range(m.num_layers):
        if is_moe_layer(m, index):
            dense += attention + mlp(m.shared_expert_ffn_hidden_size)
            experts += (m.num_experts or 0) * mlp(m.expert_ffn_hidden_size or 0)
        else:
            dense += attention + mlp(m.ffn_hidden_size)
    base_experts = sum(moe_layer_params(m).experts for i in range(m.num_layers) if is_moe_layer(m, i)) \
        if m.is_moe else 0
    base_dense = total_params(m) - base_experts
    return rank * dense / base_dense, (rank * experts / base_experts if base_experts else 0.0)


def kv_cache_bytes_per_token(m: ModelFacts, rollout_tp: int = 1) -> float:
    """vLLM KV cache per token on one rollout rank (bf16)."""
    if m.is_mla:  # latent cache, replicated on every TP rank
        return m.num_layers * ((m.kv_lora_rank or 0) + (m.qk_rope_head_dim or 0)) * 2
    heads_per_rank = max(m.num_kv_heads / rollout_tp, 1)  # vLLM replicates KV heads beyond g
    return 2 * m.num_layers * heads_per_rank * m.head_dim * 2
