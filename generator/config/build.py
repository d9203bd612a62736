"""The effective config of one trainer call read from a script: choose the config it names
(verl's PPO config of the release, or a config found next to the script and composed over it),
then apply the call's overrides (generator.config.apply).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from generator.config.apply import apply_overrides
from generator.base.boundary import OutsideProject
from generator.config.engine_group import apply_engine_selection
from generator.config.locate import find_config_dir, relative_config_path_status, strip_yaml
from generator.config.types import Config
from generator.reading.launch_script import UNKNOWN_OPEN, Invocation, Override
from generator.schema.groups import GroupSelections, select_groups, select_groups_in_dir
from generator.verl.constants import PPO_CONFIG, PPO_CONFIGS, PPO_ENTRY, ppo_config_for
from generator.reading.python.hydra_main import entry_config
from generator.schema import load
from generator.schema.compose import compose, flatten, unflatten, ComposeError
from generator.schema.layered import layered_ppo_config
from generator.base.session import approx_size, kept


def _compose_recipe(directory: Path, name: str, version: str) -> tuple[dict[str, Any], str]:
    """Flat defaults of a config found next to the script, its defaults list resolved
    against the packaged PPO schema (which stands for `pkg://verl.trainer.config` in its
    `hydra.searchpath`) and the checkout folders its searchpath names; and the PPO config it
    builds on. Kept in the command's session, keyed by every file the composition read or
    looked for (generator.base.session.kept)."""
    key = ("config.build.recipe", str(directory), name, version, os.getcwd())
    flat, base = kept(key, lambda: _recipe_kept(directory, name, version))
    return dict(flat), base


def _recipe_kept(directory: Path, name: str,
                 version: str) -> tuple[tuple[dict[str, Any], str], list[str | os.PathLike[str]], int]:
    from generator.base.files import recording_reads

    path = directory / f"{name}.yaml"
    with recording_reads() as reads:
        flat, base, searched = _compose_recipe_now(directory, path, name, version)
    return (flat, base), [path, directory, *searched, *reads], approx_size(flat)


def _compose_recipe_now(directory: Path, path: Path, name: str, version: str) -> tuple[dict[str, Any], str, list[Path]]:
    from generator.schema.searchpath import searchpath_dirs  # lazy: only a recipe folder's config has a searchpath

    schema = load(version)
    used: list[str] = []
    searched = searchpath_dirs(path, [Path.cwd(), directory.parent, directory.parent.parent])

    def fallback(config: str) -> dict[str, Any] | None:
        for folder in searched:
            if (folder / f"{config}.yaml").is_file():
                return compose(folder, config, fallback=from_schema)
        return from_schema(config)

    def from_schema(config: str) -> dict[str, Any] | None:
        if config in schema.configs:
            used.append(config)
            return unflatten(schema.configs[config])
        return None

    flat = flatten(compose(directory, name, fallback=fallback))
    base = used[0] if used else ppo_config_for(name)
    return flat, base, list(searched)


def build_config(
    invocation: Invocation,
    *,
    version: str,
    script_dir: str | None = None,
    config_root: str | None = None,
    entry_config: tuple[str | None, str | None] | None = None,
    stand_in: str | None = None,
    search_dirs: tuple[Path, ...] = (),
    ppo_entry: tuple[str, str] | None = None,
) -> Config:
    """The effective config of one trainer call under verl `version` (a schema id).

    script_dir:   the script's directory; relative and `<?PWD>/...` `--config-path`s are looked
                  up from it and its ancestors
    config_root:  one more base for those paths (e.g. the repository root)
    entry_config: (config dir, config name) from the entry module's `@hydra.main`, when the
                  caller found it (generator.reading.python.entry_config); used when the call gives
                  no `--config-path` / `--config-name`

    When the call's config cannot be found, the PPO defaults stand in and keys they lack are
    not reported (the real config may define them); `Config.notes` says so. `stand_in` (why)
    says the same of the whole release: `version` only stands in for a config that could not
    be read, so every call is approximate. `search_dirs` (a project's config-dirs) are where a
    recipe config named by --config-name is looked up when the call does not say where.
    `ppo_entry`: (config dir, config name) the project's own verl trainer entry composes by
    default (Resolution.ppo_entry), for verl's trainer calls that name no config.
    """
    schema = load(version)
    notes: list[str] = []
    raw_name, name, entry_dir = _named_config(invocation, entry_config, script_dir, config_root,
                                              ppo_entry, notes)
    directory = _recipe_dir(invocation, name, script_dir, config_root, entry_dir, search_dirs)
    schema_name = name or PPO_CONFIG
    overrides = list(invocation.overrides)
    if directory is None and name in PPO_CONFIGS and stand_in is None:
        name, overrides = apply_engine_selection(name, overrides, version)
        schema_name = name
    defaults, nodes, selections, composed_from = _chosen_defaults(
        schema, invocation, version, raw_name, name, directory, stand_in, overrides, notes)
    strict = True
    if selections is not None:
        if any(selections.consumed.values()) and defaults is not None:
            defaults, nodes = selections.defaults, None
        if not selections.exact:
            strict = False
    if defaults is None:
        strict = False
        defaults, nodes = _ppo_stand_in(schema, name, version, notes)
    config = apply_overrides(
        defaults,
        overrides,
        version=version,
        config_name=schema_name,
        nodes=nodes,
        entry=invocation.entry,
        passes_args=invocation.passes_args,
        strict=strict,
        selections=selections,
    )
    config.notes[:0] = notes
    config.approximate = not strict
    config.config_dir = str(composed_from) if composed_from is not None else None
    status = relative_config_path_status(invocation, name, script_dir, config_root)
    if status is not None:
        config.relative_config_path = (invocation.config_path or "", *status)
    return config


def _named_config(invocation: Invocation, entry_config: tuple[str | None, str | None] | None,
                  script_dir: str | None, config_root: str | None, ppo_entry: tuple[str, str] | None,
                  notes: list[str]) -> tuple[str | None, str | None, str | None]:
    """(raw name, name, entry dir) of the config the call composes: its `--config-name`, else
    the entry module's `@hydra.main` one, else verl's PPO config for verl's own trainer. The raw
    name is "?" for an unknown `--config-name` (then name is None and `notes` says so)."""
    raw_name = invocation.config_name
    if raw_name and UNKNOWN_OPEN in raw_name:
        notes.append(f"--config-name {raw_name} is unknown; checked against the PPO defaults")
        raw_name = "?"
    entry_config = _entry_of(invocation, entry_config, script_dir, config_root, ppo_entry)
    entry_dir, entry_name = entry_config if entry_config else (None, None)
    if raw_name is None:
        raw_name = entry_name
    if raw_name is None and invocation.entry == PPO_ENTRY:
        raw_name = PPO_CONFIG
    name = strip_yaml(raw_name) if raw_name and raw_name != "?" else None
    return raw_name, name, entry_dir


def _entry_of(invocation: Invocation, entry_config: tuple[str | None, str | None] | None,
              script_dir: str | None, config_root: str | None, ppo_entry: tuple[str, str] | None
              ) -> tuple[str | None, str | None] | None:
    """The entry's (config dir, config name) when the caller did not give it: another entry's
    `@hydra.main`, found next to the script; for verl's trainer with no `--config-path`, the
    project's own verl entry (it composes that by default)."""
    if entry_config is None and invocation.entry != PPO_ENTRY and script_dir is not None:
        entry_config = _entry_default_config(invocation.entry, script_dir, config_root)
    if entry_config is None and invocation.entry == PPO_ENTRY and ppo_entry is not None \
            and invocation.config_path is None:
        entry_config = ppo_entry
    return entry_config


def _recipe_dir(invocation: Invocation, name: str | None, script_dir: str | None,
                config_root: str | None, entry_dir: str | None,
                search_dirs: tuple[Path, ...]) -> Path | None:
    """The folder holding the call's own `name.yaml`, or None to use the packaged config."""
    if not name:
        return None
    directory = _own_config_dir(invocation, name, script_dir, config_root, entry_dir)
    if directory is None and name not in PPO_CONFIGS:
        # The project's config folders (its project file's config-dirs) hold recipe configs too.
        directory = next((d for d in search_dirs if (d / f"{name}.yaml").is_file()), None)
    return directory


_Chosen = tuple[dict[str, Any] | None, Any, GroupSelections | None, Path | None]


def _chosen_defaults(schema: Any, invocation: Invocation, version: str, raw_name: str | None,
                     name: str | None, directory: Path | None, stand_in: str | None,
                     overrides: list[Override], notes: list[str]) -> _Chosen:
    """(defaults, nodes, selections, folder composed from) of the named config: verl's packaged
    PPO config, or a recipe config composed from its folder. All None where neither can be
    read (a stand-in release, a config not found or not composable); `notes` says why."""
    if stand_in is not None and (directory is None or (name is not None and layered_ppo_config(directory, name))):
        # a project config over verl's PPO config stands on the unknown verl too (schema.layered)
        notes.append(f"checked against verl {version} defaults standing in for {stand_in}")
    elif directory is None and name in PPO_CONFIGS and name in schema.configs:
        assert name is not None  # PPO_CONFIGS holds names only
        defaults = schema.configs[name]
        return defaults, schema.nodes(name), _selections(schema, name, defaults, overrides), None
    elif name is not None:
        if directory is not None:
            return _composed_recipe(schema, directory, name, version, overrides, notes)
        notes.append(f"config {name} was not found next to the script")
    elif raw_name is None:
        notes.append(f"{invocation.entry}: its default config is not known")
    return None, None, None, None


def _composed_recipe(schema: Any, directory: Path, name: str, version: str,
                     overrides: list[Override], notes: list[str]) -> _Chosen:
    """A recipe config's defaults and group selections, composed from `directory`; a config
    that cannot be composed is named in `notes`, not read."""
    defaults: dict[str, Any] | None = None
    selections: GroupSelections | None = None
    composed_from: Path | None = None
    try:
        defaults, base = _compose_recipe(directory, name, version)
        composed_from = directory
        selections = _recipe_selections(schema, base, defaults, overrides)
    except (ComposeError, OutsideProject, OSError, ValueError) as err:  # outside: not read, named
        notes.append(f"config {name}: {' '.join(str(err).split())}")
    return defaults, None, selections, composed_from


def _ppo_stand_in(schema: Any, name: str | None, version: str,
                  notes: list[str]) -> tuple[dict[str, Any], Any]:
    """(defaults, nodes) of the PPO config standing in for a config that could not be read."""
    fallback_name = ppo_config_for(name)
    if fallback_name not in schema.configs:  # a fork's config tree may have only one of the two
        fallback_name = next(iter(schema.configs))
    defaults, nodes = schema.configs[fallback_name], schema.nodes(fallback_name)
    notes.append(f"checked against verl {version} {fallback_name} defaults; keys they lack were not checked")
    return defaults, nodes


def _selections(schema: Any, name: str, defaults: dict[str, Any], overrides: list[Override]) -> GroupSelections:
    """The call's config-group selections on verl's PPO config `name`: from the packaged record
    of the release, or composed again from the config folder a run-time schema was read from."""
    if schema.config_dir is not None:
        return select_groups_in_dir(schema.config_dir, name, defaults, overrides)
    return select_groups(schema.groups_of(name), defaults, overrides)


def _recipe_selections(schema: Any, base: str, composed: dict[str, Any],
                       overrides: list[Override]) -> GroupSelections | None:
    """Group selections on a call of a recipe config built on verl's PPO config `base`: the
    selection's keys replace the PPO defaults, except where the recipe's own YAML set a key
    (its `_self_` merges after the groups of the config it builds on)."""
    if base not in schema.configs:
        return None
    ppo = schema.configs[base]
    selections = _selections(schema, base, ppo, overrides)
    if not any(selections.consumed.values()):
        return selections
    merged = dict(selections.defaults)
    for key, value in composed.items():
        if key not in ppo or ppo[key] != value:
            merged[key] = value  # the recipe's own value (or a key the PPO config lacks)
    for key in ppo:
        if key not in composed and key in merged and merged[key] == ppo[key]:
            merged.pop(key)  # the recipe deleted it
    selections.defaults = merged
    return selections


def _own_config_dir(invocation: Invocation, name: str, script_dir: str | None, config_root: str | None,
                    entry_dir: str | None) -> Path | None:
    """The folder holding the call's own `name.yaml`, as Hydra finds it: its `--config-path`,
    else the entry module's `@hydra.main(config_path=...)`. A project that points there at its
    own `ppo_trainer.yaml` is judged by that file, not by the packaged one of the same name."""
    directory = find_config_dir(invocation, name, script_dir, config_root)
    if directory is None and invocation.config_path is None and entry_dir:
        candidate = Path(entry_dir)
        if (candidate / f"{name}.yaml").is_file():
            directory = candidate
    return directory


def _entry_default_config(entry: str, script_dir: str, config_root: str | None
                          ) -> tuple[str | None, str | None] | None:
    """(config dir, config name) of the entry module's `@hydra.main`, found next to the script."""
    found = entry_config(entry, Path(script_dir) / "_", repo_root=config_root)
    if found is None:
        return None
    return (str(found.config_dir) if found.config_dir else None, found.config_name)
