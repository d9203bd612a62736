"""The `model_engine=megatron` group selection, read as the config it selects.

From verl 0.8.0 on, `ppo_megatron_trainer.yaml` is a deprecated shim: its defaults list is
`[ppo_trainer, override model_engine: megatron, _self_]` (verl/trainer/config/ppo_megatron_trainer.yaml
@v0.8.0), so `ppo_trainer` with `model_engine=megatron` composes exactly like `ppo_megatron_trainer`
(NEW-SNAPSHOTS.md, item 2: identical compositions in v0.8.0, v0.9.0 and main of 2026-08). verl's own
Megatron examples from 0.8.0 on are written that way. Before 0.8.0 there is no `model_engine/megatron`
option (Hydra refuses the override), so the selection is left to the key checks there.

generator.schema.groups replays the same selection to the same defaults from the packaged record
(tests/test_schema_groups.py checks that both agree on every packaged release); this module stays
because it states a different fact, that the selection *is* verl's `ppo_megatron_trainer`
composition, so a call keeps that config's name, node tree and Megatron backend, and the writer
(render/release_form) knows from which release to write the selection at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from generator.verl.constants import PPO_CONFIG, PPO_MEGATRON_CONFIG
from generator.verl.versions import parse

ENGINE_GROUP = "model_engine"
MEGATRON_ENGINE = "megatron"
# verl/trainer/config/model_engine/megatron.yaml first exists at v0.8.0 (v0.7.1 has dp, torchtitan, veomni)
ENGINE_GROUP_MEGATRON_SINCE = "0.8.0"


def selects_megatron_engine(version: str) -> bool:
    """Whether `model_engine=megatron` is a valid group selection in this release (schema id)."""
    try:
        return parse(version) >= parse(ENGINE_GROUP_MEGATRON_SINCE)
    except ValueError:
        return False


OverrideT = TypeVar("OverrideT")


def _is_megatron_selection(override: object) -> bool:
    key = getattr(override, "key", None)
    op = getattr(override, "op", None)
    value = getattr(override, "value", None)
    return key == ENGINE_GROUP and op == "=" and value is not None and value.strip("'\"") == MEGATRON_ENGINE


def apply_engine_selection(config_name: str, overrides: Sequence[OverrideT], version: str) -> tuple[str, list[OverrideT]]:
    """(config to compose, overrides to apply) for a call of `config_name` in `version`: on
    `ppo_trainer` (or the `ppo_megatron_trainer` shim) from 0.8.0 on, `model_engine=megatron`
    selects the Megatron composition and is not itself a key to set. Anything else is returned
    unchanged."""
    items = list(overrides)
    # on the shim itself the selection repeats what its defaults list already chose
    if config_name not in (PPO_CONFIG, PPO_MEGATRON_CONFIG) or not selects_megatron_engine(version):
        return config_name, items
    kept = [o for o in items if not _is_megatron_selection(o)]
    if len(kept) == len(items):
        return config_name, items
    return PPO_MEGATRON_CONFIG, kept
