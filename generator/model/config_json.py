"""Model facts from any Hugging Face config.json (a file, or a directory holding one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generator.base import boundary
from generator.base.errors import InputError
from generator.model.facts import ModelFacts
from generator.base.files import DATA_LIMIT, read_text_input

_QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})
_QK_NORM_TYPES = frozenset({"qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_moe", "qwen3_next", "olmo2", "gemma3"})

# What the memory model describes (docs/memory-model.md): a decoder-only transformer whose every
# layer is attention (full, grouped or latent; sliding windows too) plus a dense or mixture-of-experts
# MLP. A config.json of another kind is refused by name, not misread: a state-space or linear-attention
# layer has no KV cache of the attention formula, and an encoder-decoder has two stacks.
_ATTENTION_LAYER_TYPES = frozenset({"attention", "full_attention", "sliding_attention", "chunked_attention"})
_HYBRID_LAYER_KEYS = ("layer_types", "layers_block_type")  # Qwen3-Next, Jamba, Nemotron-H: a type per layer
_NOT_TRANSFORMER_TYPES = frozenset({"mamba", "mamba2", "falcon_mamba", "rwkv", "rwkv5", "rwkv6", "xlstm",
                                    "recurrent_gemma", "jamba", "zamba", "zamba2", "bamba", "nemotron_h",
                                    "falcon_h1", "granitemoehybrid", "lfm2", "qwen3_next", "minimax"})
DESCRIBES = "decoder-only transformers, attention plus dense or mixture-of-experts layers"


# Sizes beyond any model that exists (or could be planned on a GPU): a field past its bound is a broken
# or hostile file, refused as one line before any arithmetic runs on it (10**12 layers would hang a plan).
_MAX = {"hidden_size": 1 << 20, "num_attention_heads": 1 << 16, "num_hidden_layers": 10_000,
        "num_key_value_heads": 1 << 16, "vocab_size": 10**8, "intermediate_size": 1 << 22,
        "max_position_embeddings": 1 << 26, "head_dim": 1 << 16, "qk_rope_head_dim": 1 << 16,
        "qk_nope_head_dim": 1 << 16, "v_head_dim": 1 << 16, "kv_lora_rank": 1 << 20, "q_lora_rank": 1 << 20,
        "num_experts": 1 << 16, "n_routed_experts": 1 << 16, "num_local_experts": 1 << 16,
        "moe_intermediate_size": 1 << 22, "shared_expert_intermediate_size": 1 << 22,
        "n_shared_experts": 1 << 10, "first_k_dense_replace": 10_000, "num_experts_per_tok": 1 << 16}


def _int(cfg: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    """A positive whole number within the field's bound (bools, floats, strings, NaN refused)."""
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        if value is None:
            raise InputError(f"{where}: missing '{key}'; is this a Hugging Face config.json?")
        # A number is shown; of anything else only its kind: the file may lie outside the project
        # (a model folder named by a script), and its text is never printed.
        kind = "a string" if isinstance(value, str) else "a list" if isinstance(value, list) else "not a number"
        got = f"{value!r:.40}" if isinstance(value, (int, float)) else kind
        raise InputError(f"{where}: '{key}' must be a positive integer, got {got}")
    if value > _MAX.get(key, 1 << 30):
        # Named by its digits: a 401-digit int has no float form (`:.3g` raised OverflowError).
        shown = f"{value:.3g}" if value < 10**300 else f"a {len(str(value)) if value < 10**4000 else 'many'}-digit number"
        raise InputError(f"{where}: '{key}' is {shown}, larger than any model (at most {_MAX.get(key, 1 << 30)})")
    return value


def _opt_int(cfg: dict[str, Any], key: str, where: str) -> int | None:
    """An optional field: absent, null or 0 means not set; anything else must be a valid size."""
    value = cfg.get(key)
    if value is None or (value == 0 and not isinstance(value, bool) and isinstance(value, int)):
        return None
    return _int(cfg, key, where)


def load_model_config(path: str | Path) -> ModelFacts:
    """Facts from any Hugging Face config.json (a file, or a directory holding one)."""
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / "config.json"
    where = str(path)
    raw = _read_json_object(path, where)
    model_type = str(raw.get("model_type", ""))
    cfg = _language_fields(raw)
    _check_describable(raw, cfg, where)
    # Fields are checked in this order, so a file with several bad ones names the same first one.
    hidden = _int(cfg, "hidden_size", where)
    heads = _int(cfg, "num_attention_heads", where)
    layers = _int(cfg, "num_hidden_layers", where)
    kv_heads = _kv_heads(cfg, where, heads)
    vocab = _int(cfg, "vocab_size", where)
    ffn = _int(cfg, "intermediate_size", where)
    max_pos = _int(cfg, "max_position_embeddings", where, default=4096)
    experts, expert_ffn, shared_ffn, first_dense = _experts(cfg, where, ffn, layers)
    mla = cfg.get("kv_lora_rank") is not None
    head_dim, kv_rank, rope, nope, v_dim = _attention_dims(cfg, where, mla, hidden, heads)
    per_token = _opt_int(cfg, "num_experts_per_tok", where) if experts else None
    # The name the file gives itself is text: shown only for a file of the project (or one the
    # user named); a model folder outside it, named by the script, is called by its folder.
    bounds = boundary.current()
    inside = bounds is None or bounds.allows(path)
    written = str(raw.get("_name_or_path") or "") if inside else ""
    fallback = _name_from_path(path) if inside else path.parent.name or "model"
    name = written.rstrip("/").split("/")[-1] or fallback
    return ModelFacts(
        name=name,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        ffn_hidden_size=ffn,
        vocab_size=vocab,
        max_position_embeddings=max_pos,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=bool(cfg.get("attention_bias", False)) or model_type in _QKV_BIAS_TYPES,
        qk_norm=model_type in _QK_NORM_TYPES,
        num_experts=experts or None,
        experts_per_token=per_token,
        expert_ffn_hidden_size=expert_ffn if experts else None,
        shared_expert_ffn_hidden_size=int(shared_ffn or 0),
        first_k_dense_layers=first_dense,
        q_lora_rank=_opt_int(cfg, "q_lora_rank", where) if mla else None,
        kv_lora_rank=kv_rank,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=nope,
        v_head_dim=v_dim,
        model_type=model_type,
        shared_expert_gate=bool(experts) and model_type == "qwen2_moe",
        router_bias=bool(experts) and model_type in ("deepseek_v3", "kimi_k2"),
    )


def _name_from_path(path: Path) -> str:
    """A model's name when its config.json states none: the folder a config.json sits in (model
    folders are named after the model), else the file's own name (`gemma-2-9b.json`)."""
    if path.name != "config.json":
        return path.stem or "model"
    try:
        return path.resolve().parent.name or "model"
    except OSError:
        return path.parent.name or "model"


def _read_json_object(path: Path, where: str) -> dict[str, Any]:
    """The file's JSON object; anything else (unreadable, not JSON, not an object) one line."""
    try:
        # Regular files only, the size cap checked before reading (a FIFO or a 2 GB file is refused).
        # Trusted: a model folder usually lives outside the project (/models/...), and only the
        # numbers of the fields below are ever shown, never the file's text.
        raw = json.loads(read_text_input(path, limit=DATA_LIMIT, what="config.json", trusted=True))
    except InputError as err:
        raise InputError(f"{where}: {err}") from None
    except RecursionError:
        raise InputError(f"{where}: nests too deeply to be a config.json") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: not valid JSON (line {err.lineno}: {err.msg})") from None
    except ValueError as err:  # e.g. an integer of more digits than Python converts
        raise InputError(f"{where}: not a usable config.json ({str(err)[:80]})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a JSON object")
    return raw


def _architecture(raw: dict[str, Any]) -> str:
    """How the file names its model: 'Qwen2ForCausalLM (qwen2)', '' when it names none."""
    archs = raw.get("architectures")
    arch = str(archs[0])[:60] if isinstance(archs, list) and archs else ""
    model_type = str(raw.get("model_type") or "")[:40]
    return f"{arch} ({model_type})" if arch and model_type else arch or model_type


def _check_describable(raw: dict[str, Any], cfg: dict[str, Any], where: str) -> None:
    """InputError (one line) for a Hugging Face config.json of an architecture the memory model
    cannot describe; a file that names no architecture is left to the field checks."""
    named = _architecture(raw)
    if not named:
        return
    why = ""
    if raw.get("is_encoder_decoder") is True:
        why = "an encoder-decoder"
    elif str(raw.get("model_type") or "") in _NOT_TRANSFORMER_TYPES:
        why = "state-space or linear-attention layers"
    else:
        for key in _HYBRID_LAYER_KEYS:
            kinds = cfg.get(key)
            if isinstance(kinds, list) and any(str(k) not in _ATTENTION_LAYER_TYPES for k in kinds):
                other = next(str(k) for k in kinds if str(k) not in _ATTENTION_LAYER_TYPES)
                why = f"'{other[:30]}' layers ({key})"
                break
        else:
            missing = [k for k in ("hidden_size", "num_attention_heads", "num_hidden_layers") if k not in cfg]
            if missing:
                why = f"no '{missing[0]}'"
    if why:
        raise InputError(f"{where}: {named} is not an architecture the memory model can describe ({why}); "
                         f"it describes {DESCRIBES} (gen doc memory-model#where-the-model-comes-from)")


def _language_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """The fields that size the language model: VL models nest them under text_config."""
    if isinstance(raw.get("text_config"), dict) and "hidden_size" in raw["text_config"]:
        return {**raw, **raw["text_config"]}
    return dict(raw)


def _kv_heads(cfg: dict[str, Any], where: str, heads: int) -> int:
    """num_key_value_heads (default: one per attention head), a whole divisor of `heads`."""
    kv_heads = _int(cfg, "num_key_value_heads", where, default=heads)
    if kv_heads > heads or heads % kv_heads:
        # Grouped-query attention shares each KV head among heads/kv_heads query heads: more KV
        # heads than heads (or a ratio that is not whole) is no model HF could build.
        raise InputError(f"{where}: 'num_key_value_heads' {kv_heads} must divide num_attention_heads {heads}")
    return kv_heads


def _experts(cfg: dict[str, Any], where: str, ffn: int, layers: int
             ) -> tuple[Any, int | None, int | None, int]:
    """(experts, expert FFN width, shared-expert FFN width, leading dense layers) of a MoE
    model; for a dense one, (its falsy expert field, None, None, 0)."""
    experts = cfg.get("num_experts") or cfg.get("n_routed_experts") or cfg.get("num_local_experts")
    if not experts:
        return experts, None, None, 0
    experts = _int(cfg, "num_experts" if "num_experts" in cfg else
                   ("n_routed_experts" if "n_routed_experts" in cfg else "num_local_experts"), where)
    expert_ffn = _opt_int(cfg, "moe_intermediate_size", where) or ffn  # Mixtral: intermediate_size wide
    shared_width = _opt_int(cfg, "shared_expert_intermediate_size", where)
    shared_count = _opt_int(cfg, "n_shared_experts", where)
    shared_ffn: int | None = None
    if shared_width:
        shared_ffn = shared_width
    elif shared_count:
        shared_ffn = shared_count * expert_ffn
    first_dense = _opt_int(cfg, "first_k_dense_replace", where) or 0
    if first_dense > layers:
        raise InputError(f"{where}: 'first_k_dense_replace' {first_dense} exceeds num_hidden_layers {layers}")
    return experts, expert_ffn, shared_ffn, first_dense


def _attention_dims(cfg: dict[str, Any], where: str, mla: bool, hidden: int, heads: int
                    ) -> tuple[int, int | None, int | None, int | None, int | None]:
    """(head dim, kv LoRA rank, rope dim, nope dim, value dim): multi-head latent attention
    (DeepSeek) sizes its heads from the LoRA fields; the others only the head dim."""
    if mla:
        kv_rank = _int(cfg, "kv_lora_rank", where)
        rope = _int(cfg, "qk_rope_head_dim", where)
        nope = _int(cfg, "qk_nope_head_dim", where)
        v_dim = _opt_int(cfg, "v_head_dim", where) or nope
        return rope + nope, kv_rank, rope, nope, v_dim
    head_dim = _opt_int(cfg, "head_dim", where) or hidden // heads
    if head_dim <= 0:
        raise InputError(f"{where}: hidden_size {hidden} is smaller than num_attention_heads {heads}")
    return head_dim, None, None, None, None
