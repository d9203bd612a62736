"""Configs made without a script: from override text or {key: value} (recipes, the library,
rule examples, tests), with the prefix (`+` or none) each key needs in a release.
"""

from __future__ import annotations

from typing import Any

from generator.config.apply import apply_overrides, under_open_mapping
from generator.config.engine_group import apply_engine_selection
from generator.config.flat import FlatConfig
from generator.config.interp import MISSING
from generator.config.types import Config
from generator.reading.launch_script import Override, Provenance, Span
from generator.verl.constants import PPO_ENTRY, PPO_MEGATRON_CONFIG
from generator.reading.overrides import format_value, parse_override
from generator.schema import load
from generator.schema.groups import select_groups


def synthetic(text: str, key: str, op: str, value: str | None, index: int) -> Override:
    span = Span(0, 0, index + 1)
    return Override(text=text, key=key, op=op, value=value, line=index + 1, word=span,  # type: ignore[arg-type]
                    provenance=Provenance(source="literal", span=None))


def needed_op(key: str, *, version: str, config_name: str = PPO_MEGATRON_CONFIG) -> str:
    """The prefix a script must write to set `key` to a scalar: "" when the key exists, "+"
    when it must be added."""
    return "" if load(version).has(key, config_name) else "+"


def overrides_from_dict(values: dict[str, Any], *, version: str, config_name: str) -> list[Override]:
    """Override objects for {key: python value}: `key=v` when the key exists, `+key=v` when it
    does not but may be added (under a free-form mapping, or below a null/{} leaf)."""
    schema = load(version)
    defaults = schema.configs.get(config_name, {})
    flat = FlatConfig(defaults, schema.nodes(config_name) if config_name in schema.configs else ())
    out: list[Override] = []
    for index, (key, value) in enumerate(values.items()):
        text_value = format_value(value)
        op = ""
        if not flat.exists(key):
            blocked = flat.blocking_leaf(key)
            open_parent = under_open_mapping(key)
            if blocked is not None and defaults.get(blocked) in (None, {}):
                op = "+"
            elif open_parent:
                op = "+"
        text = f"{op}{key}={text_value}"
        out.append(synthetic(text, key, op or "=", text_value, index))
    return out


def config_from_overrides(
    overrides: list[str] | dict[str, Any],
    *,
    version: str,
    config_name: str = PPO_MEGATRON_CONFIG,
    entry: str = PPO_ENTRY,
) -> Config:
    """The effective config for generated configs and tests: `["a.b=1", "+c=2"]` as Hydra
    override text, or `{"a.b": 1}` as Python values."""
    schema = load(version)
    if isinstance(overrides, dict):
        items = overrides_from_dict(overrides, version=version, config_name=config_name)
    else:
        items = []
        for index, text in enumerate(overrides):
            parsed = parse_override(text)
            items.append(synthetic(text, parsed.key, parsed.op, parsed.value_text, index))
    config_name, items = apply_engine_selection(config_name, items, version)

    defaults = schema.configs[config_name] if config_name in schema.configs else schema.defaults(config_name)
    # Any other group selection (`critic=...`, `+group=...`) composes into the defaults first, as in Hydra.
    selections = select_groups(schema.groups_of(config_name), defaults, items)
    changed = any(selections.consumed.values())
    return apply_overrides(
        selections.defaults,
        items,
        version=version,
        config_name=config_name,
        nodes=None if changed else schema.nodes(config_name),
        entry=entry,
        selections=selections,
    )


def missing_mandatory(config: Config) -> list[str]:
    """Keys still `???` after the overrides: verl stops when it reads them (e.g.
    actor_rollout_ref.rollout.name from 0.6.0 on). Not a Hydra compose error."""
    return sorted(k for k, v in config.values.items() if v == MISSING and k not in config.unknown)
