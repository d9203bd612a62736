"""Which file of a verl config folder holds a config's keys: the primary YAML Hydra composes
(`ppo_trainer.yaml` and its defaults list), or verl's flattened `_generated_ppo_trainer.yaml`.

verl regenerates `_generated_*.yaml` in its own CI; forks that add keys to `ppo_trainer.yaml`
usually do not, so their generated file is stale and misses every key they added. The
generated file is used only when it agrees with the primary (the same keys), or when the primary
cannot be composed here (an interpolated defaults entry such as `actor/${model_engine}_actor`,
which the generated file has already resolved). On verl's own trees (0.5.0-0.7.0, HEAD) the two
agree key for key and value for value, so for them nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from generator.schema.compose import ComposeError, compose, flatten
from generator.schema.yamlload import load_yaml_file


@dataclass(frozen=True, slots=True)
class ChosenConfig:
    flat: dict[str, Any]
    file: str  # the file the keys come from
    note: str | None  # why the generated file was not used, when it was there


def read_config(config_dir: Path, name: str) -> ChosenConfig | None:
    """The flat keys of config `name` in `config_dir`; None when neither file is there. Raises
    what the loaders raise (OSError, ValueError, ComposeError, InputError) when the only file
    there cannot be read."""
    primary = config_dir / f"{name}.yaml"
    generated = config_dir / f"_generated_{name}.yaml"
    if not generated.is_file():
        return ChosenConfig(flatten(compose(config_dir, name)), primary.name, None) if primary.is_file() else None
    flat_generated = flatten(load_yaml_file(generated) or {})
    if not primary.is_file():
        return ChosenConfig(flat_generated, generated.name, None)
    try:
        composed = flatten(compose(config_dir, name))
    except (ComposeError, ValueError) as err:
        # The generated file has the defaults resolved, but a fork that added a section to the
        # primary's own body and never regenerated it lacks that section: the body is read too,
        # and its keys win (it is what Hydra would merge last, `_self_`).
        own = _own_keys(primary)
        if not own.keys() - flat_generated.keys():
            return ChosenConfig(flat_generated, generated.name, None)
        return ChosenConfig({**flat_generated, **own}, generated.name,
                            f"{name}.yaml cannot be composed here ({err}); {generated.name} is read with the "
                            f"keys {name}.yaml sets itself over it")
    why = _difference(generated.name, name, composed, flat_generated)
    if why is None:
        return ChosenConfig(flat_generated, generated.name, None)
    return ChosenConfig(composed, primary.name, why)


def _own_keys(primary: Path) -> dict[str, Any]:
    """The keys a config file sets in its own body (its defaults list left out); none when it
    cannot be read."""
    try:
        body = load_yaml_file(primary) or {}
    except (OSError, ValueError):
        return {}
    if not isinstance(body, dict):
        return {}
    return flatten({key: value for key, value in body.items() if key != "defaults"})


def _difference(generated_name: str, name: str, composed: dict[str, Any], flat_generated: dict[str, Any]) -> str | None:
    missing = sorted(set(composed) - set(flat_generated))
    extra = sorted(set(flat_generated) - set(composed))
    if not missing and not extra:
        return None
    shown = ", ".join(missing[:3]) + (f" (+{len(missing) - 3} more)" if len(missing) > 3 else "")
    why = (f"{generated_name} is stale: it lacks {len(missing)} key(s) {name}.yaml has ({shown})" if missing
           else f"{generated_name} is stale: it has {len(extra)} key(s) {name}.yaml does not")
    return f"{why}; {name}.yaml is what Hydra composes"
