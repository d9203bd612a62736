"""Settings verl's own large and model-specific scripts use, each with the reason and the
script it follows (cited in the generated script's header).

Each setting is written only where the target release's config has the key (or, for a `+`
key, where the mapping it extends is open to new keys).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.render.spec import RecipeSpec, Setting, schema_has
from generator.verl.constants import critic_trains

OTC = "actor_rollout_ref.actor.megatron.override_transformer_config."
LONG_CONTEXT_TOKENS = 16384  # prompt+response from which a MoE rollout runs without CUDA graphs
LARGE_RUN_NODES = 4  # nodes from which collectives may wait longer than NCCL's default timeout
NCCL_TIMEOUT_S = 14400


@dataclass(frozen=True, slots=True)
class ScaleSetting:
    setting: Setting
    why: str  # the reason and the verl script that sets it


def scale_settings(spec: RecipeSpec) -> list[ScaleSetting]:
    """The settings this spec's model, layout and size call for (see the module doc)."""
    model, c, version = spec.model, spec.layout, spec.version
    out: list[ScaleSetting] = []

    def add(key: str, value: object, why: str, *, plus: bool = False) -> None:
        if plus or schema_has(version, key):
            out.append(ScaleSetting(Setting(key, value, add=plus), why))

    if model.trust_remote_code:
        why = (f"{model.name}'s Hugging Face repository ships its own model and tokenizer code "
               "(verl v0.4.1 examples/grpo_trainer/run_moonlight16b_math_megatron.sh)")
        add("data.trust_remote_code", True, why)
        add("actor_rollout_ref.model.trust_remote_code", True, why)
        if critic_trains(spec.algo):
            add("critic.model.trust_remote_code", True, why)
    if c.use_fused_kernels:
        add("actor_rollout_ref.model.use_fused_kernels", True,
            "fused log-prob kernels never hold the [tokens x vocab] logits (verl v0.7.0 "
            "examples/router_replay/run_qwen30_a3b_megatron_vllm.sh)")
    if model.model_type == "qwen3_moe":
        why = ("Qwen3-MoE routes in fp32, with fused token permutation "
               "(verl v0.7.0 examples/router_replay/run_qwen30_a3b_megatron_vllm.sh)")
        add(OTC + "moe_router_dtype", "fp32", why, plus=True)
        add(OTC + "moe_permute_fusion", True, why, plus=True)
    if c.enforce_eager or (model.is_moe and spec.prompt_len + spec.response_len >= LONG_CONTEXT_TOKENS):
        add("actor_rollout_ref.rollout.enforce_eager", True,
            "vLLM's CUDA graphs take memory outside gpu_memory_utilization that a long-context MoE rollout "
            "needs (verl v0.7.0 recipe/dapo/run_dapo_qwen3_moe_30b_megatron_npu.sh)")
    if spec.nodes >= LARGE_RUN_NODES:
        add("actor_rollout_ref.nccl_timeout", NCCL_TIMEOUT_S,
            f"on {spec.nodes} nodes a checkpoint save or weight sync can outlast NCCL's default 600 s "
            "(verl v0.7.0 recipe/dapo/run_dapo_qwen3_moe_30b_megatron_npu.sh sets 14400)")
    return out
