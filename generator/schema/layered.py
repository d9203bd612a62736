"""A project entry whose config layers verl's PPO config: its call's keys are verl's keys.

`python -m pkg.recipe.main_ppo --config-name=x_trainer` with `x_trainer.yaml` starting
`defaults: [ppo_trainer, _self_]` (verl's config found by a `hydra.searchpath` into a verl
submodule or the installed verl) trains with verl's PPO config plus a few keys of the project's
own. When that verl is absent from the checkout (a submodule not cloned, a `pkg://` searchpath
with no verl installed) the config cannot be composed, so the guess of the release
(generator.schema.guess) had no evidence and took the newest packaged release. The call's own
plain `key=value` overrides are still keys of verl's PPO config: they are the evidence, weighed
against that PPO config (a key of the project's own only lowers the count of every release
alike).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.base.errors import InputError
from generator.schema.yamlload import load_yaml_file
from generator.verl.constants import PPO_CONFIGS, config_stem


def layered_ppo_config(config_dir: Path, config_name: str) -> str | None:
    """The verl PPO config (`ppo_trainer`, `ppo_megatron_trainer`) the project config
    `config_dir/config_name.yaml` names first in its defaults list; None when it names none
    (or the file cannot be read)."""
    path = config_dir / f"{config_stem(config_name)}.yaml"
    try:
        data = load_yaml_file(path)
    except (InputError, OSError, ValueError):
        return None
    defaults = data.get("defaults") if isinstance(data, dict) else None
    if not isinstance(defaults, list):
        return None
    for item in defaults:
        name = _default_name(item)
        if name is not None and config_stem(name) in PPO_CONFIGS:
            return config_stem(name)
    return None


def _default_name(item: Any) -> str | None:
    """`ppo_trainer` in a defaults list is a plain entry (not `group: option`, nor `_self_`)."""
    if isinstance(item, str) and item != "_self_":
        return item.rsplit("/", 1)[-1].removeprefix("optional ").strip()
    return None
