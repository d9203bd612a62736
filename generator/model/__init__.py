"""The LLM being trained: its architecture facts, the packaged registry that names them, and the
parameter counts the rules and the planner derive from them.

Below the rules and the planner: nothing here imports from `generator.rules` or `generator.plan`.
"""

from __future__ import annotations

from generator.model.config_json import load_model_config
from generator.model.facts import ModelFacts
from generator.model.params import (LayerParams, attention_params, dense_layer_params, is_moe_layer,
                                    kv_cache_bytes_per_token, moe_layer_params, total_params)
from generator.model.registry import find_model, list_models, model_slug, name_key, resolve_model

__all__ = ["LayerParams", "ModelFacts", "attention_params", "dense_layer_params", "find_model", "is_moe_layer",
           "kv_cache_bytes_per_token", "list_models", "load_model_config", "model_slug", "moe_layer_params",
           "name_key", "resolve_model", "total_params"]
