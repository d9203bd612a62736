"""Model and GPU facts: the packaged registry, Hugging Face config.json loading, name matching.

Names are matched the way users type them: case-insensitive, with or without the vendor
(`Qwen/`), with or without `-Instruct`/`-Chat`/`-Base`/date suffixes, and with `.`, `_`, `-`
treated alike — except between two digits, where a separator is kept so that `Qwen2.5-7B`
(`qwen2-5-7b`) and `Qwen2-57B` (`qwen2-57b`) stay different models.

A path (a model directory holding `config.json`, or a config.json file) is read when it
exists; otherwise its last component is matched against the registry, so
`/models/Qwen2.5-7B-Instruct` works on a machine that has no such directory.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from generator.errors import InputError
from generator.models_types import ModelFacts

# Trailing name parts that do not change the architecture.
_NEUTRAL_SUFFIXES = frozenset(
    {"instruct", "chat", "base", "2507", "0324", "0528", "hf", "fp8", "awq", "gptq", "int4", "int8",
     "bf16", "it", "thinking"}
)
_VERSION_SUFFIX = re.compile(r"[-_. ]v\d+(?:[._]\d+)*$")  # Mixtral-8x7B-Instruct-v0.1
_HF_CACHE_DIR = re.compile(r"^models--[^-]+(?:-[^-]+)*?--")  # models--Qwen--Qwen2-7B


def _tokens(name: str) -> list[str]:
    base = name.strip().rstrip("/").replace("\\", "/").split("/")[-1].lower()
    base = _HF_CACHE_DIR.sub("", base)
    base = _VERSION_SUFFIX.sub("", base)
    parts = [p for p in re.split(r"[-_.\s]+", base) if p]
    while len(parts) > 1 and parts[-1] in _NEUTRAL_SUFFIXES:
        parts.pop()
    if len(parts) > 1 and parts[0] == "meta" and parts[1].startswith("llama"):
        parts.pop(0)
    return parts


def name_key(name: str) -> str:
    """The form two names are compared in (see the module docstring)."""
    out = ""
    for part in _tokens(name):
        if out and out[-1].isdigit() and part[0].isdigit():
            out += "-"
        out += part
    return out


def _flavour(name: str) -> str | None:
    """'instruct' / 'base' when the typed name says which config it means, else None."""
    lowered = name.lower()
    if "instruct" in lowered or "chat" in lowered or re.search(r"(^|[-_])it($|[-_])", lowered):
        return "instruct"
    if re.search(r"(^|[-_/])base($|[-_])", lowered):
        return "base"
    return None


# ---------------------------------------------------------------------------------------------
# Registry


@dataclass(frozen=True, slots=True)
class _Entry:
    facts: ModelFacts
    max_position: dict[str, int]  # flavour -> max_position_embeddings
    keys: tuple[str, ...]


def _load_yaml(path: Path) -> dict:
    import yaml  # PyYAML (a dependency of omegaconf); the C loader keeps start-up fast

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)


def _entry_from_yaml(raw: dict) -> _Entry:
    moe = raw.get("moe") or {}
    mla = raw.get("mla") or {}
    max_pos = raw["max_position_embeddings"]
    max_position = dict(max_pos) if isinstance(max_pos, dict) else {"any": int(max_pos)}
    if "chat" in max_position and "instruct" not in max_position:
        max_position["instruct"] = max_position["chat"]
    facts = ModelFacts(
        name=raw["name"],
        hidden_size=raw["hidden_size"],
        num_layers=raw["num_layers"],
        num_attention_heads=raw["num_attention_heads"],
        num_kv_heads=raw["num_kv_heads"],
        head_dim=raw["head_dim"],
        ffn_hidden_size=raw["ffn_hidden_size"],
        vocab_size=raw["vocab_size"],
        # Conservative when the typed name does not say base or instruct.
        max_position_embeddings=min(max_position.values()),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        qkv_bias=bool(raw.get("qkv_bias", False)),
        qk_norm=bool(raw.get("qk_norm", False)),
        num_experts=moe.get("num_experts"),
        experts_per_token=moe.get("experts_per_token"),
        expert_ffn_hidden_size=moe.get("expert_ffn_hidden_size"),
        shared_expert_ffn_hidden_size=moe.get("shared_expert_ffn_hidden_size", 0) or 0,
        first_k_dense_layers=moe.get("first_k_dense_layers", 0) or 0,
        q_lora_rank=mla.get("q_lora_rank"),
        kv_lora_rank=mla.get("kv_lora_rank"),
        qk_rope_head_dim=mla.get("qk_rope_head_dim"),
        qk_nope_head_dim=mla.get("qk_nope_head_dim"),
        v_head_dim=mla.get("v_head_dim"),
        hf_ids=tuple(raw.get("hf_ids", ())),
        model_type=raw.get("model_type", ""),
        shared_expert_gate=bool(moe.get("shared_expert_gate", False)),
        router_bias=bool(moe.get("router_bias", False)),
        vision_params=int(raw.get("vision_params", 0) or 0),
    )
    names = [raw["name"], *raw.get("hf_ids", ()), *raw.get("aliases", ())]
    keys = tuple(dict.fromkeys(name_key(n) for n in names))
    return _Entry(facts, max_position, keys)


@lru_cache(maxsize=1)
def _registry() -> tuple[_Entry, ...]:
    from generator.resources import data_dir

    raw = _load_yaml(data_dir() / "models.yaml")
    return tuple(_entry_from_yaml(item) for item in raw["models"])


@lru_cache(maxsize=1)
def _by_key() -> dict[str, _Entry]:
    table: dict[str, _Entry] = {}
    for entry in _registry():
        for key in entry.keys:
            table.setdefault(key, entry)
    return table


def list_models() -> list[ModelFacts]:
    return [entry.facts for entry in _registry()]


def model_slug(facts: ModelFacts) -> str:
    """File-name form in verl's style: `Qwen2.5-7B` -> `qwen2_5-7b`."""
    slug = facts.name.split("/")[-1].lower().replace(".", "_")
    return re.sub(r"[^a-z0-9_-]+", "-", slug).strip("-") or "model"


def _registry_match(name: str) -> ModelFacts | None:
    entry = _by_key().get(name_key(name))
    if entry is None:
        return None
    flavour = _flavour(name)
    if flavour and flavour in entry.max_position:
        from dataclasses import replace

        return replace(entry.facts, max_position_embeddings=entry.max_position[flavour])
    return entry.facts


def _config_path(name_or_path: str) -> Path | None:
    path = Path(name_or_path).expanduser()
    try:
        if path.is_dir() and (path / "config.json").is_file():
            return path / "config.json"
        if path.is_file() and path.suffix == ".json":
            return path
    except OSError:
        return None
    return None


def find_model(name_or_path: str) -> ModelFacts | None:
    """Facts for a name, hub id, model directory or config.json; None when nothing matches."""
    if not name_or_path or not name_or_path.strip():
        return None
    config = _config_path(name_or_path)
    if config is not None:
        try:
            return load_model_config(config)
        except InputError:
            pass  # an unreadable local config: fall back to the name
    return _registry_match(name_or_path)


def resolve_model(name_or_path: str) -> ModelFacts:
    """Like find_model, but an unknown name is an InputError that lists close names."""
    config = _config_path(name_or_path)
    if config is not None:
        return load_model_config(config)
    facts = _registry_match(name_or_path)
    if facts is not None:
        return facts
    known = {name_key(e.facts.name): e.facts.name for e in _registry()}
    close = difflib.get_close_matches(name_key(name_or_path), list(known), n=3, cutoff=0.5)
    hint = ", ".join(known[k] for k in close) if close else ", ".join(e.facts.name for e in _registry()[:5]) + ", …"
    raise InputError(f"unknown model '{name_or_path}'; close names: {hint} (or pass a directory with config.json)")


# ---------------------------------------------------------------------------------------------
# Hugging Face config.json

_QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})
_QK_NORM_TYPES = frozenset({"qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_moe", "qwen3_next", "olmo2", "gemma3"})


def _int(cfg: dict, key: str, where: str, default: int | None = None) -> int:
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
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{where}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{where}: cannot read: {err}") from None
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
    expert_ffn = shared_ffn = None
    first_dense = 0
    if experts:
        experts = _int(cfg, "num_experts" if "num_experts" in cfg else
                       ("n_routed_experts" if "n_routed_experts" in cfg else "num_local_experts"), where)
        expert_ffn = cfg.get("moe_intermediate_size") or ffn  # Mixtral: experts are intermediate_size wide
        if cfg.get("shared_expert_intermediate_size"):
            shared_ffn = int(cfg["shared_expert_intermediate_size"])
        elif cfg.get("n_shared_experts"):
            shared_ffn = int(cfg["n_shared_experts"]) * int(expert_ffn)
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
        num_experts=int(experts) if experts else None,
        experts_per_token=int(cfg.get("num_experts_per_tok") or 0) or None if experts else None,
        expert_ffn_hidden_size=int(expert_ffn) if experts else None,
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


# ---------------------------------------------------------------------------------------------
# Parameter counts (Hugging Face layout; memory-model.md §1.3)


@dataclass(frozen=True, slots=True)
class LayerParams:
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


def kv_cache_bytes_per_token(m: ModelFacts, rollout_tp: int = 1) -> float:
    """vLLM KV cache per token on one rollout rank (bf16)."""
    if m.is_mla:  # latent cache, replicated on every TP rank
        return m.num_layers * ((m.kv_lora_rank or 0) + (m.qk_rope_head_dim or 0)) * 2
    heads_per_rank = max(m.num_kv_heads / rollout_tp, 1)  # vLLM replicates KV heads beyond g
    return 2 * m.num_layers * heads_per_rank * m.head_dim * 2


# ---------------------------------------------------------------------------------------------
# GPUs


@dataclass(frozen=True, slots=True)
class GpuSpec:
    name: str
    memory_gib: float  # what torch.cuda reports as total memory (nvidia-smi MiB / 1024)
    gpus_per_node: int = 8
    note: str = ""


# nvidia-smi "Total" memory of each part, in MiB.
_GPUS: dict[str, tuple[int, str]] = {
    "h100": (81559, "H100 SXM 80 GB"),
    "h800": (81559, "H800 80 GB"),
    "h100-nvl": (95830, "H100 NVL 94 GB"),
    "h20": (97871, "H20 96 GB"),
    "h200": (143771, "H200 141 GB"),
    "h800-96g": (97871, "96 GB variant"),
    "a100-80g": (81920, "A100 80 GB"),
    "a100-40g": (40960, "A100 40 GB"),
    "a800": (81920, "A800 80 GB"),
    "l40s": (46068, "L40S 48 GB"),
    "l40": (46068, "L40 48 GB"),
    "l20": (46068, "L20 48 GB"),
    "a6000": (49140, "RTX A6000 48 GB"),
    "a10g": (23028, "A10G 24 GB"),
    "rtx4090": (24564, "RTX 4090 24 GB"),
    "b200": (183359, "B200 180 GB"),
    "gb200": (189471, "GB200 186 GB"),
    "mi300x": (196592, "MI300X 192 GB"),
    "mi325x": (262144, "MI325X 256 GB"),
}
_GPU_ALIASES = {"a100": "a100-80g", "h100-80g": "h100", "h100-sxm": "h100", "a800-80g": "a800",
                "h20-96g": "h20", "h200-141g": "h200"}
DEFAULT_GPU = "h100"


def gpu_names() -> list[str]:
    return list(_GPUS)


def gpu_spec(name: str | None, mem_gb: float | None = None) -> GpuSpec:
    """A GPU by name (`h100`, `h20`, `a100-40g`…), optionally with `--gpu-mem` (GiB) overriding its memory."""
    if mem_gb is not None and not (0 < mem_gb < 4096):
        raise InputError(f"--gpu-mem must be a positive number of GiB, got {mem_gb}")
    if name is None:
        if mem_gb is not None:
            return GpuSpec(f"{mem_gb:g}GiB", float(mem_gb), note="custom memory size")
        name = DEFAULT_GPU
    key = re.sub(r"[\s_]+", "-", name.strip().lower()).replace("nvidia-", "")
    key = _GPU_ALIASES.get(key, key)
    if key not in _GPUS:
        close = difflib.get_close_matches(key, list(_GPUS), n=3, cutoff=0.4)
        raise InputError(
            f"unknown GPU '{name}'; known: {', '.join(close or list(_GPUS)[:8])} (or give --gpu-mem GB)"
        )
    mib, note = _GPUS[key]
    memory = float(mem_gb) if mem_gb is not None else round(mib / 1024, 1)
    return GpuSpec(key, memory, note=note)
