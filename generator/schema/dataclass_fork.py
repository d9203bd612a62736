"""A project's verl that configures its trainer with Python dataclasses, not Hydra YAML.

EasyR1 and the forks built on it (VLM and GUI RL projects) ship a `verl/` package whose
`trainer/main.py` merges `OmegaConf.structured(PPOConfig())` with a `config=x.yaml` file and the
command line, and whose keys (`worker.actor.model.model_path`) live in `trainer/config.py`
dataclasses; there is no `trainer/config/ppo_trainer.yaml`. Judging such a call against a packaged
verl release makes up both the keys and the defaults, so the resolution says where the fork is
and that its schema is unknown: a stand-in release is named for the report, the rules that read
keys or defaults stand down (as for any config that cannot be read), and the fork's trainer code
is still read statically (generator.reading.fork_code) for the keys it uses.

Recognised statically, nothing imported: a `verl` package (the places of
resolution._PACKAGE_PLACES) going up from the script to the checkout root, whose
`trainer/config.py` defines a dataclass and which has no ppo YAML folder.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

from generator.base import boundary
from generator.base.errors import InputError
from generator.base.folder_memo import project_chain, remembered

# Where a verl package sits in a project folder (as generator.schema.resolution looks).
_PLACES = (("verl",), ("src", "verl"))
_MAX_BYTES = 512 * 1024
_DATACLASS = re.compile(rb"^@dataclass\b", re.MULTILINE)


def dataclass_config(package: Path) -> Path | None:
    """`package/trainer/config.py` when it holds the trainer's dataclass config, else None."""
    config = package / "trainer" / "config.py"
    if (package / "trainer" / "config").is_dir() or not (package / "trainer" / "main.py").is_file():
        return None
    try:
        boundary.check(config)  # read only for a regex, but never a file outside the project
        with open(config, "rb") as handle:
            head = handle.read(_MAX_BYTES)
    except (OSError, InputError):
        return None
    return config if _DATACLASS.search(head) else None


def find_dataclass_verl(script_path: str) -> tuple[Path, Path] | None:
    """(package, its trainer/config.py) of the dataclass-configured verl the script's project
    holds, going up from the script's folder to the folder with `.git`; None when there is none."""
    here = Path(script_path).absolute().parent
    return remembered(("dataclass_verl", here), lambda: _dataclass_verl_above(here))


def _dataclass_verl_above(here: Path) -> tuple[Path, Path] | None:
    for folder in project_chain(here):  # up to the project's top, as the vendored verl is found
        # The scripts' folders share their ancestors: each folder is looked into once per run.
        found = remembered(("dataclass_verl_in", folder), partial(_dataclass_verl_in, folder))
        if found is not None:
            return found
    return None


def _dataclass_verl_in(folder: Path) -> tuple[Path, Path] | None:
    for place in _PLACES:
        package = folder.joinpath(*place)
        config = dataclass_config(package) if package.is_dir() else None
        if config is not None:
            return package, config
    return None


__all__ = ["dataclass_config", "find_dataclass_verl"]
