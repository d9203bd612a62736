"""Build-time only: what each Hydra config-group selection changes in one of verl's PPO configs.

verl composes its trainer config with Hydra, and a launch line may pick another option of a config
group (`model_engine=megatron`, `critic=megatron_critic`, `+profiler=...`). Since 0.8.0 the
Megatron examples all run `ppo_trainer model_engine=megatron` (ppo_megatron_trainer.yaml is a shim
that composes exactly that), so the keys a call may set depend on its group selections.

For every config group in the config's defaults tree and every option of it, this composes the
config with real Hydra (`hydra.compose`, the same call verl's `@hydra.main` makes) with that one
selection, and records the difference from the config without it:

    {"choices": {override_key: {"group": "actor", "default": "dp_actor",
                                "options": {"megatron_actor": {"set": {flat_key: value, ...},
                                                               "unset": [flat_key, ...],
                                                               "implies": {override_key: option},
                                                               "choices": {...}},    # nested groups
                                            "bad": {"error": "Hydra's one-line refusal"}}}},
     "appends": {group: {option: {"set": ..., "unset": ...}}},   # `+group=option`
     "dirs": [every config group path]}

Nested groups that appear only under one selection (the Megatron actor's `../engine@...megatron`)
are recorded under that option, relative to the config composed with it. Deltas are exact for
one selection per level; the run-time side (generator.schema.groups) applies them in Hydra's order.
Nothing here is imported at run time.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from generator.schema.compose import flatten

# Hydra's own groups (hydra/launcher ...) are not part of the job config.
_HYDRA = "hydra"
MAX_DEPTH = 2


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


class _Composer:
    def __init__(self, config_dir: Path) -> None:
        from hydra import initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra

        GlobalHydra.instance().clear()
        self._context = initialize_config_dir(config_dir=str(config_dir), version_base=None)
        self._context.__enter__()
        self.loader = GlobalHydra.instance().config_loader()
        self._cache: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}

    def close(self) -> None:
        self._context.__exit__(None, None, None)

    def flat(self, name: str, overrides: tuple[str, ...]) -> dict[str, Any]:
        from hydra import compose
        from omegaconf import OmegaConf

        key = (name, overrides)
        if key not in self._cache:
            cfg = compose(config_name=name, overrides=list(overrides))
            tree = OmegaConf.to_container(cfg, resolve=False)
            assert isinstance(tree, dict)
            tree.pop(_HYDRA, None)
            self._cache[key] = flatten({str(k): v for k, v in tree.items()})
        return dict(self._cache[key])

    def selections(self, name: str, overrides: tuple[str, ...]) -> dict[str, tuple[str, str | None]]:
        """override key -> (group path, chosen option) for every group default in the tree."""
        from hydra.core.default_element import GroupDefault
        from hydra.types import RunMode

        tree = self.loader.compute_defaults_list(name, list(overrides), RunMode.RUN).defaults_tree
        found: dict[str, tuple[str, str | None]] = {}

        def walk(node: Any) -> None:
            element = getattr(node, "node", node)
            if isinstance(element, GroupDefault):
                key = element.get_override_key()
                group = posixpath.normpath(element.get_group_path())
                if not group.startswith(_HYDRA):
                    found[key] = (group, element.get_name())
            for child in getattr(node, "children", None) or []:
                walk(child)

        walk(tree)
        return found

    def options(self, group: str) -> list[str]:
        return sorted(self.loader.get_group_options(group))

    def groups(self) -> list[str]:
        out: list[str] = []

        def walk(parent: str) -> None:
            for child in sorted(self.loader.list_groups(parent)):
                path = f"{parent}/{child}" if parent else child
                if path.startswith(_HYDRA):
                    continue
                out.append(path)
                walk(path)

        walk("")
        return out


def _delta(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    return {"set": {k: v for k, v in other.items() if k not in base or base[k] != v},
            "unset": sorted(k for k in base if k not in other)}


def _choices(composer: _Composer, name: str, applied: tuple[str, ...], known: set[str],
             depth: int) -> dict[str, Any]:
    base = composer.flat(name, applied)
    out: dict[str, Any] = {}
    for key, (group, current) in composer.selections(name, applied).items():
        if key in known or ".." in key:
            continue  # `actor/../optim@...` cannot be written on a command line: Hydra's lexer refuses `..`
        options: dict[str, Any] = {}
        for option in composer.options(group):
            if option == current:
                continue
            override = f"{key}={option}"
            try:
                selected = composer.flat(name, (*applied, override))
            except Exception as exc:  # Hydra's refusal is a fact to keep, not a build failure
                options[option] = {"error": _one_line(exc)}
                continue
            entry = _delta(base, selected)
            # Other groups this selection re-chooses (model_engine=megatron picks megatron_critic
            # through `${model_engine}_critic`): a later choice of those is relative to this one.
            before = composer.selections(name, applied)
            after = composer.selections(name, (*applied, override))
            implied = {k: v[1] for k, v in after.items() if k != key and k in before and before[k] != v}
            if implied:
                entry["implies"] = implied
            if depth < MAX_DEPTH:
                nested = _choices(composer, name, (*applied, override),
                                  known | set(composer.selections(name, applied)), depth + 1)
                if nested:
                    entry["choices"] = nested
            options[option] = entry
        out[key] = {"group": group, "default": current, "options": options}
    return out


def group_document(config_dir: Path, name: str) -> dict[str, Any]:
    """The "groups" entry of one config of a packaged schema (see the module docstring)."""
    composer = _Composer(config_dir)
    try:
        choices = _choices(composer, name, (), set(), 1)
        in_tree = {key.partition("@")[0] for key in composer.selections(name, ())}
        base = composer.flat(name, ())
        appends: dict[str, Any] = {}
        dirs = composer.groups()
        for group in dirs:
            if group in in_tree or "/" in group:
                continue
            for option in composer.options(group):
                try:
                    added = composer.flat(name, (f"+{group}={option}",))
                except Exception as exc:
                    appends.setdefault(group, {})[option] = {"error": _one_line(exc)}
                    continue
                appends.setdefault(group, {})[option] = _delta(base, added)
        return {"choices": choices, "appends": appends, "dirs": dirs}
    finally:
        composer.close()


def hydra_tree(config_dir: Path, name: str) -> dict[str, Any]:
    """The config Hydra composes for `name` with no overrides, interpolations kept as text."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        tree = OmegaConf.to_container(compose(config_name=name, overrides=[]), resolve=False)
    assert isinstance(tree, dict)
    tree.pop(_HYDRA, None)
    return {str(k): v for k, v in tree.items()}
