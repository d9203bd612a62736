"""Which config a project's own verl trainer entry composes: `verl/trainer/main_ppo.py`'s
`@hydra.main(config_path, config_name)`, read with `ast` (never imported).

verl's own entry composes `config/ppo_trainer.yaml`. A fork may point it at a config of its own
(`config_name='grpo_trainer'`, `'lengthy_ppo_trainer'`): every key the fork adds lives there,
and a call of `python -m verl.trainer.main_ppo` without `--config-name` loads that file.
"""

from __future__ import annotations

from typing import NamedTuple
from pathlib import Path

from generator.base.errors import InputError
from generator.base.files import SCRIPT_LIMIT, read_input
from generator.reading.python.hydra_main import read_hydra_main
from generator.verl.constants import PPO_CONFIG


class EntryDefault(NamedTuple):
    config_dir: Path
    config_name: str
    reason: str


def ppo_entry_config(package: Path) -> EntryDefault | None:
    """The config the fork's `trainer/main_ppo.py` composes when it is not verl's `ppo_trainer`
    in `trainer/config/`; None for verl's default, a file that is absent or unreadable, or a
    config that is not there."""
    entry = package / "trainer" / "main_ppo.py"
    if not entry.is_file():
        return None
    try:
        found = read_hydra_main(read_input(entry, limit=SCRIPT_LIMIT, what="Python entry module"), str(entry))
    except (InputError, OSError):
        return None
    if found is None or not found.config_name:
        return None
    name = found.config_name[:-5] if found.config_name.endswith(".yaml") else found.config_name
    raw = (found.config_path or "").removeprefix("file://")
    if raw.startswith("pkg://"):
        return None
    folder = (entry.parent / raw).resolve() if raw and not raw.startswith("/") else Path(raw) if raw else entry.parent
    default_folder = (package / "trainer" / "config").resolve()
    if name == PPO_CONFIG and folder.resolve() == default_folder:
        return None
    if not (folder / f"{name}.yaml").is_file():
        return None
    where = f"{entry.relative_to(package.parent)}:{found.line}"
    return EntryDefault(folder, name, f"its trainer entry composes {name}.yaml (@hydra.main at {where})")
