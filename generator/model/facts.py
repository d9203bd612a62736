"""Architecture facts of a model, as the rules and the planner need them.

Filled from the packaged registry (`generator.model.registry`) or from any Hugging Face config.json
(`generator.model.config_json`).
"""

from __future__ import annotations

from typing import NamedTuple


class ModelFacts(NamedTuple):
    name: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_hidden_size: int  # dense MLP width (unused by pure-MoE layers)
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    # MoE (None / 0 for dense models)
    num_experts: int | None = None
    experts_per_token: int | None = None
    expert_ffn_hidden_size: int | None = None
    shared_expert_ffn_hidden_size: int = 0
    first_k_dense_layers: int = 0
    # MLA (DeepSeek-V3, Moonlight); None for ordinary attention
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    hf_ids: tuple[str, ...] = ()
    # Added by the planner (additive): details the parameter count needs.
    model_type: str = ""
    shared_expert_gate: bool = False  # Qwen2-MoE: a sigmoid scalar gate (h params) on the shared expert
    router_bias: bool = False  # DeepSeek-V3/Moonlight: one bias per routed expert
    vision_params: int = 0  # VL models: vision tower parameters (kept on the first pipeline stage)
    # What running the model needs beyond its architecture (generated scripts and recipes).
    trust_remote_code: bool = False  # its Hugging Face repository ships its own modelling code
    checkpoint_notes: tuple[str, ...] = ()  # what to do with the published checkpoint first
    # True for the packaged registry's facts (the published config.json), False for a config.json
    # that was read: a user's copy may differ in the keys people edit (max_position_embeddings).
    from_registry: bool = False

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None
