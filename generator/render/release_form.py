"""How a verl release wants a Megatron run written: which config the trainer call names, and
the group selection that picks the Megatron engine. One home for that choice, so the template,
the checks before writing and the tests agree.

- <= 0.7.x: `--config-name=ppo_megatron_trainer` (the only Megatron composition; `model_engine`
  has no megatron option, verl/trainer/config/model_engine/@v0.7.1).
- >= 0.8.0: no `--config-name` (main_ppo's default `ppo_trainer`) and `model_engine=megatron`, as
  verl's own Megatron examples are written from v0.8.0 on (e.g. examples/grpo_trainer/
  run_qwen3_5_35b_megatron.sh@v0.9.0); `ppo_megatron_trainer` is a deprecated shim there
  (generator.config.engine_group).
"""

from __future__ import annotations

from generator.config.engine_group import ENGINE_GROUP, MEGATRON_ENGINE, selects_megatron_engine
from generator.render.spec import Setting
from generator.verl.constants import PPO_CONFIG, PPO_MEGATRON_CONFIG


def written_config_name(version: str) -> str | None:
    """The `--config-name` a script for `version` writes; None: none (the entry's default)."""
    return None if selects_megatron_engine(version) else PPO_MEGATRON_CONFIG


def composed_config_name(version: str) -> str:
    """The config the trainer call composes before its overrides (what Hydra starts from)."""
    return written_config_name(version) or PPO_CONFIG


def engine_settings(version: str) -> list[Setting]:
    """The group selection a script for `version` writes before its keys ([] before 0.8.0)."""
    return [Setting(ENGINE_GROUP, MEGATRON_ENGINE)] if selects_megatron_engine(version) else []
