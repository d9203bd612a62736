"""Where a project config's `hydra.searchpath` points, resolved without importing anything.

A project's primary config (RAGEN's `base.yaml`, GRL's) often composes verl's trainer config
from the package: `hydra: {searchpath: [pkg://verl.trainer.config]}` and `- ppo_trainer` in its
defaults list. `pkg://verl.trainer.config` is the config folder of the verl that runs: the
schema's own configs stand for it (the project's verl, else the installed one, else a packaged
release; generator.config.build's fallback). Other entries are folders of the checkout:
`pkg://<package>.<sub>` is `<package>/<sub>` below an import root, `file://<path>` a folder
relative to the working directory (absolute when written so).
"""

from __future__ import annotations

from pathlib import Path

from generator.base.errors import InputError
from generator.schema.yamlload import load_yaml_file

VERL_CONFIG_PACKAGE = "pkg://verl.trainer.config"


def searchpath_entries(primary: Path) -> list[str]:
    """The `hydra.searchpath` list of a primary config file, as written ([] when absent)."""
    try:
        data = load_yaml_file(primary)
    except (InputError, OSError, ValueError):
        return []
    hydra = data.get("hydra") if isinstance(data, dict) else None
    entries = hydra.get("searchpath") if isinstance(hydra, dict) else None
    return [e for e in entries if isinstance(e, str)] if isinstance(entries, list) else []


def searchpath_dirs(primary: Path, roots: list[Path]) -> list[Path]:
    """The checkout folders the searchpath of `primary` names (verl's own package left out: the
    schema stands for it). `roots` are the import roots / working directory to resolve against."""
    out: list[Path] = []
    for entry in searchpath_entries(primary):
        if entry.startswith(VERL_CONFIG_PACKAGE):
            continue
        if entry.startswith("pkg://"):
            relative = Path(*entry[len("pkg://"):].split("."))
            out.extend(root / relative for root in roots if (root / relative).is_dir())
        elif entry.startswith("file://") or "://" not in entry:
            text = entry.removeprefix("file://")
            if text.startswith("/"):
                candidates = [Path(text)]
            else:
                candidates = [root / text for root in roots]
            out.extend(c for c in candidates if c.is_dir())
    return out
