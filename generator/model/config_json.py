"""Model facts from any Hugging Face config.json (a file, or a directory holding one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generator.errors import InputError
from generator.model.facts import ModelFacts

_QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})
_QK_NORM_TYPES = frozenset({"qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_moe", "qwen3_next", "olmo2", "gemma3"})


def _int(cfg: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        if value is None:
            raise InputError(f"{where}: missing '{key}'; is this a Hugging Face config.json?")
        raise InputError(f"{where}: '{key}' must be a positive integer, got {value!r}")
    return value


def load_model_config(path: str | Path) -> ModelFacts:
    """Facts from any Hugging Face config.json (a file, or a directory holding one)."""
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / "config.json"
    where = str(path)
    from generator.files import DATA_LIMIT, read_text_input

    try:
        # Regular files only, the size cap checked before reading (a FIFO or a 2 GB file is refused).
        raw = json.loads(read_text_input(path, limit=DATA_LIMIT, what="config.json"))
    except InputError as err:
        raise InputError(f"{where}: {err}") from None
    except RecursionError:
        raise InputError(f"{where}: nests too deeply to be a config.json") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: not valid JSON (line {err.lineno}: {err.msg})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a JSON object")
    model_type = str(raw.get("model_type", ""))
    # VL models nest the language model's fields under text_config.
    cfg = dict(raw)
    if isinstance(raw.get("text_config"), dict) and "hidden_size" in raw["text_config"]:
        cfg = {**raw, **raw["text_config"]}
    hidden = _int(cfg, "hidden_size", where)
    heads = _int(cfg, "num_attention_heads", where)
    layers = _int(cfg, "num_hidden_layers", where)
    kv_heads = _int(cfg, "num_key_value_heads", where, default=heads)
    vocab = _int(cfg, "vocab_size", where)
    ffn = _int(cfg, "intermediate_size", where)
    max_pos = _int(cfg, "max_position_embeddings", where, default=4096)

    experts = cfg.get("num_experts") or cfg.get("n_routed_experts") or cfg.get("num_local_experts")
    expert_ffn: int | None = None
    shared_ffn: int | None = None
    first_dense = 0
    if experts:
        experts = _int(cfg, "num_experts" if "num_experts" in cfg else
                       ("n_routed_experts" if "n_routed_experts" in cfg else "num_local_experts"), where)
        expert_ffn = int(cfg.get("moe_intermediate_size") or ffn)  # Mixtral: experts are intermediate_size wide
        if cfg.get("shared_expert_intermediate_size"):
            shared_ffn = int(cfg["shared_expert_intermediate_size"])
        elif cfg.get("n_shared_experts"):
            shared_ffn = int(cfg["n_shared_experts"]) * expert_ffn
        first_dense = int(cfg.get("first_k_dense_replace") or 0)

    mla = cfg.get("kv_lora_rank") is not None
    if mla:
        rope = _int(cfg, "qk_rope_head_dim", where)
        nope = _int(cfg, "qk_nope_head_dim", where)
        head_dim = rope + nope
    else:
        head_dim = cfg.get("head_dim") or hidden // heads
    name = str(raw.get("_name_or_path") or "").rstrip("/").split("/")[-1] or path.parent.name or "model"
    return ModelFacts(
        name=name,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=int(head_dim),
        ffn_hidden_size=ffn,
        vocab_size=vocab,
        max_position_embeddings=max_pos,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=bool(cfg.get("attention_bias", False)) or model_type in _QKV_BIAS_TYPES,
        qk_norm=model_type in _QK_NORM_TYPES,
        num_experts=experts or None,
        experts_per_token=int(cfg.get("num_experts_per_tok") or 0) or None if experts else None,
        expert_ffn_hidden_size=expert_ffn if experts else None,
        shared_expert_ffn_hidden_size=int(shared_ffn or 0),
        first_k_dense_layers=first_dense,
        q_lora_rank=cfg.get("q_lora_rank") if mla else None,
        kv_lora_rank=int(cfg["kv_lora_rank"]) if mla else None,
        qk_rope_head_dim=int(cfg["qk_rope_head_dim"]) if mla else None,
        qk_nope_head_dim=int(cfg["qk_nope_head_dim"]) if mla else None,
        v_head_dim=int(cfg.get("v_head_dim") or cfg["qk_nope_head_dim"]) if mla else None,
        model_type=model_type,
        shared_expert_gate=bool(experts) and model_type == "qwen2_moe",
        router_bias=bool(experts) and model_type in ("deepseek_v3", "kimi_k2"),
    )
