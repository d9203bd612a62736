"""The packaged model registry and name matching; a path to a config.json is read instead.

Names are matched the way users type them: case-insensitive, with or without the vendor
(`Qwen/`), with or without `-Instruct`/`-Chat`/`-Base`/date suffixes, and with `.`, `_`, `-`
treated alike — except between two digits, where a separator is kept so that `Qwen2.5-7B`
(`qwen2-5-7b`) and `Qwen2-57B` (`qwen2-57b`) stay different models.

A path (a model directory holding `config.json`, or a config.json file) is read when it
exists; otherwise its last component is matched against the registry, so
`/models/Qwen2.5-7B-Instruct` works on a machine that has no such directory.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from generator.base import boundary
from generator.base.errors import InputError
from generator.base.folder_memo import remembered
from generator.model.config_json import load_model_config
from generator.model.facts import ModelFacts
from generator.model.names import base_name
from generator.base.files import read_text_input
from generator.base.resources import data_dir, load_data_yaml

# Trailing name parts that do not change the architecture.
_NEUTRAL_SUFFIXES = frozenset(
    {"instruct", "chat", "base", "2507", "0324", "0528", "hf", "fp8", "awq", "gptq", "int4", "int8",
     "bf16", "it", "thinking"}
)
_VERSION_SUFFIX = re.compile(r"[-_. ]v\d+(?:[._]\d+)*$")  # Mixtral-8x7B-Instruct-v0.1


def _tokens(name: str) -> list[str]:
    base = base_name(name)
    unversioned = _VERSION_SUFFIX.sub("", base)
    if re.search(r"[-_.\s]", unversioned):  # `Mixtral-8x7B-Instruct-v0.1`; but `DeepSeek-V2` is not `DeepSeek-V3`
        base = unversioned
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


class _Entry(NamedTuple):
    facts: ModelFacts
    max_position: dict[str, int]  # flavour -> max_position_embeddings
    keys: tuple[str, ...]


def _load_yaml(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = load_data_yaml(path)
    return loaded


def _entry_from_yaml(raw: dict[str, Any]) -> _Entry:
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
        trust_remote_code=bool(raw.get("trust_remote_code", False)),
        checkpoint_notes=tuple(str(note) for note in raw.get("checkpoint_notes", ())),
        from_registry=True,
    )
    names = [raw["name"], *raw.get("hf_ids", ()), *raw.get("aliases", ())]
    keys = tuple(dict.fromkeys(name_key(n) for n in names))
    return _Entry(facts, max_position, keys)


def _looks_like_registry(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("models"), list)
            and all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in data["models"]))


@lru_cache(maxsize=1)
def _registry() -> tuple[_Entry, ...]:
    from generator.base.cache import cached_parse  # lazy: the packaged registry needs no cache (issue 22)
    path = data_dir() / "models.yaml"
    # The parse is cached by the file's stamp (generator/base/cache.py): `gen check` need not import PyYAML.
    raw = cached_parse(path, _load_yaml, _looks_like_registry)
    try:
        return tuple(_entry_from_yaml(item) for item in raw["models"])
    except (KeyError, TypeError, ValueError):  # an entry that passed the shape test but not this
        return tuple(_entry_from_yaml(item) for item in _load_yaml(path)["models"])


@lru_cache(maxsize=1)
def _by_key() -> dict[str, _Entry]:
    table: dict[str, _Entry] = {}
    for entry in _registry():
        for key in entry.keys:
            table.setdefault(key, entry)
    return table


def list_models() -> list[ModelFacts]:
    return [entry.facts for entry in _registry()]


def registry_model(name: str) -> ModelFacts | None:
    """The packaged model a name, alias or hub id names (never a local folder); None if none."""
    return _registry_match(name)


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
        return entry.facts._replace(max_position_embeddings=entry.max_position[flavour])
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


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def hub_cache_roots() -> list[Path]:
    """Where the Hugging Face hub keeps downloads on this machine, in the order huggingface_hub
    reads its settings: HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME or ~/.cache, /huggingface/hub."""
    import os

    if os.environ.get("HF_HUB_CACHE"):
        return [Path(os.environ["HF_HUB_CACHE"]).expanduser()]
    if os.environ.get("HF_HOME"):
        return [Path(os.environ["HF_HOME"]).expanduser() / "hub"]
    cache = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return [Path(cache).expanduser() / "huggingface" / "hub"]


def hub_cache_config(hub_id: str) -> Path | None:
    """The config.json of a hub id (`Qwen/Qwen2.5-7B`) in the local hub cache, never the network:
    the snapshot refs/main names, else the newest snapshot that has one. This is the one read
    outside the project boundary the tool makes (docs/memory-model.md#where-the-model-comes-from):
    a model's config.json, through the bounded reader, for its architecture numbers only."""
    if not _HUB_ID.match(hub_id.strip()):
        return None
    org, name = hub_id.strip().split("/")
    for root in hub_cache_roots():
        folder = root / f"models--{org}--{name}"
        try:
            if not folder.is_dir():
                continue
            ref = folder / "refs" / "main"
            if ref.is_file():
                snapshot = folder / "snapshots" / read_text_input(ref, limit=256, what="hub ref", trusted=True).strip()
                if (snapshot / "config.json").is_file():
                    return snapshot / "config.json"
            found = sorted((p for p in (folder / "snapshots").glob("*/config.json") if p.is_file()),
                           key=lambda p: p.stat().st_mtime, reverse=True)
        except (OSError, InputError):
            continue
        if found:
            return found[0]
    return None


def locate_model(name_or_path: str) -> tuple[ModelFacts | None, str]:
    """Facts for a name, hub id, model directory or config.json, and which config gave them: a
    local config.json (a path, or the hub cache for an id), else the packaged registry."""
    if not name_or_path or not name_or_path.strip():
        return None, ""
    for config, where in ((_config_path(name_or_path), "config.json at"),
                          (hub_cache_config(name_or_path), "the Hugging Face cache's")):
        if config is None:
            continue
        try:
            facts = load_model_config(config)
        except InputError:
            continue  # an unreadable local config: fall back to the name
        if where.startswith("the Hugging Face"):
            facts = facts._replace(name=name_or_path.strip().split("/")[-1])  # not the snapshot's hash
        return facts, f"{where} {config}"
    matched = _registry_match(name_or_path)
    return matched, (f"the packaged registry ({matched.name})" if matched is not None else "")


def find_model(name_or_path: str) -> ModelFacts | None:
    """Facts for a name, hub id, model directory or config.json; None when nothing matches.
    The scripts of a corpus name the same few models: each is looked up once per run (a
    relative path from the working directory, a config.json read under the boundary in force)."""
    return remembered(("model", name_or_path, os.getcwd(), boundary.current()),
                      lambda: locate_model(name_or_path)[0])


def known_tail(value: str) -> str | None:
    """The last path component of a model path whose earlier part is unknown
    (`<?unset:HOME>/models/Qwen2.5-7B` -> `Qwen2.5-7B`), for a match by name; None when the tail
    itself is unknown."""
    tail = value.rstrip("/").rsplit("/", 1)[-1]
    return None if (not tail or "<?" in tail or "?>" in tail) else tail


def _looks_like_path(value: str) -> bool:
    return value.startswith(("/", "./", "../", "~")) or value.endswith(("/", ".json")) or value in (".", "..")


def _refuse_a_path(value: str, how: str) -> None:
    """InputError naming what is wrong with a --model that is a file or folder (or is written as
    one) and matched no known model by its last part: a folder without config.json, a file that is
    not one, a path that does not exist. A bare name or hub id is left to the suggestions."""
    path = Path(value).expanduser()
    try:
        is_dir, exists = path.is_dir(), path.exists()
    except OSError:
        return
    if is_dir:
        raise InputError(f"{value}: a folder without config.json; {how}")
    if exists:
        raise InputError(f"{value}: not a model's config.json (a .json file) nor a model name; {how}")
    if _looks_like_path(value):
        raise InputError(f"{value}: no such file or folder, and its last part names no known model (`gen models`); "
                         f"{how}")


def resolve_model(name_or_path: str) -> ModelFacts:
    """Like find_model, but an unknown name is an InputError naming similar models (model/suggest.py)."""
    config = _config_path(name_or_path) or hub_cache_config(name_or_path)
    if config is not None:
        return load_model_config(config)
    facts = _registry_match(name_or_path)
    if facts is not None:
        return facts
    from generator.model.suggest import similar_models  # only for a name that matches nothing

    known = [e.facts for e in _registry()]
    how = "point --model at the model's folder (holding config.json) or at its config.json"
    _refuse_a_path(name_or_path, how)
    names, why = similar_models(name_or_path, known)
    if _HUB_ID.match(name_or_path.strip()) and not Path(name_or_path).expanduser().exists():
        # An id: the hub cache is read too (never the network), so fetching its config.json is a way.
        how += f", or fetch it into the Hugging Face cache: hf download {name_or_path.strip()} config.json"
    if names:
        raise InputError(f"unknown model '{name_or_path}'; similar known models ({why}): {', '.join(names)}; "
                         f"for another model, {how}")
    raise InputError(f"unknown model '{name_or_path}': none of the {len(known)} known models (`gen models`) is "
                     f"of its family or size; {how}")
