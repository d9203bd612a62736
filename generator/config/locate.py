"""Where a trainer call's config lives: the folder Hydra resolves a relative `--config-path`
against (the entry module's, not the working directory), the candidate folders for the path as
written (an absolute one written on another machine: this checkout's copy at its tail), and whether the config named by `--config-name` is there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from generator.base.folder_memo import remembered
from generator.reading.foreign_paths import checkout_copy
from generator.reading.launch_script import UNKNOWN_OPEN, Invocation
from generator.verl.constants import PPO_ENTRY
from generator.reading.python.hydra_main import find_entry_file
from generator.base.session import kept


def strip_yaml(name: str) -> str:
    return name[:-5] if name.endswith(".yaml") else name[:-4] if name.endswith(".yml") else name


def _plain_path(config_path: str) -> str:
    """The path as Hydra reads it; a head the user is meant to fill in (`<your_path_to_X>/cfg`,
    `{your_root}/cfg`) becomes an unknown `<?...>` head, like a variable the reader could not see."""
    text = config_path[len("file://"):] if config_path.startswith("file://") else config_path
    head = _PLACEHOLDER_HEAD.match(text)
    return f"{UNKNOWN_OPEN}{head.group(1)}>{text[head.end():]}" if head else text


# `<your_path>/...`, `{the_path_of_your_verl}/...`: a placeholder standing for an absolute folder.
_PLACEHOLDER_HEAD = re.compile(r"[<{]([A-Za-z_][\w.-]*)[>}](?=/|$)")


def is_relative_config_path(config_path: str | None) -> bool:
    """A `--config-path` Hydra resolves against the entry file's folder: not absolute, and not
    starting with a value the reader could not see (`$PWD/...`, which is absolute at run time)."""
    if not config_path:
        return False
    text = _plain_path(config_path)
    return UNKNOWN_OPEN not in text and not text.startswith("/")


def entry_dir(entry: str, script_dir: str | None, config_root: str | None) -> Path | None:
    found = _entry_dir(entry, script_dir, config_root)
    return found[0] if found is not None else None


def _entry_dir(entry: str, script_dir: str | None, config_root: str | None) -> tuple[Path, bool] | None:
    """The folder Hydra resolves a relative `--config-path` against: the directory of the file
    holding `@hydra.main` (for `python -m a.b.main` and `python a/b/main.py` alike), NOT the
    working directory. Found as the entry file next to the script or under `config_root`; else,
    for a module entry, its package folder there (config trees keep the folders without the
    Python files); else, for verl's own trainer, the installed verl's `verl/trainer/`.
    (folder, sure): `sure` is False when only a package folder stood in for a file that was not
    seen (it may live elsewhere); verl's own verl/trainer/ is always sure. None when unknown.
    Every call asks twice (its config folder, its relative --config-path), and the calls of a
    folder's scripts share it: answered once per run (a relative folder is the working
    directory's, which is part of the question)."""
    if not entry or UNKNOWN_OPEN in entry:
        return None
    return remembered(("entry_dir", entry, script_dir, config_root, os.getcwd()),
                      lambda: _find_entry_dir(entry, script_dir, config_root))


def _find_entry_dir(entry: str, script_dir: str | None, config_root: str | None) -> tuple[Path, bool] | None:
    script_path = Path(script_dir) / "_" if script_dir else None
    found = find_entry_file(entry, script_path, repo_root=config_root)
    if found is not None:
        return found.parent, True
    if entry.endswith(".py") or "." not in entry:
        return None
    package = Path(*entry.split(".")[:-1])
    bases: list[Path] = [Path(config_root)] if config_root else []
    if script_dir:
        here = Path(script_dir).resolve()
        bases += [here, *list(here.parents)[:6]]
    for base in bases:
        if (base / package).is_dir():
            return base / package, entry == PPO_ENTRY
    if entry == PPO_ENTRY:
        installed = _installed_verl_trainer()
        return (installed, True) if installed is not None else None
    return None


def _installed_verl_trainer() -> Path | None:
    """`verl/trainer/` of the verl importable here, found without importing verl; kept in the
    command's session while the folders looked at stay as they were."""
    return kept(("config.locate.installed_verl_trainer",), _find_installed_verl_trainer)


def _find_installed_verl_trainer() -> tuple[Path | None, list[Path], int]:
    import importlib.util

    try:
        spec = importlib.util.find_spec("verl")
    except (ImportError, ValueError):
        spec = None
    looked: list[Path] = []
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        looked.append(Path(location) / "trainer")
        if looked[-1].is_dir():
            return looked[-1], looked, 0
    return None, looked, 0


def _candidate_dirs(config_path: str, script_dir: str | None, config_root: str | None,
                    entry: str | None = None) -> list[Path]:
    """Where `--config-path` points: absolute; relative = against the entry file's folder (as
    Hydra does; nothing when that folder is unknown); or, for paths that start with an unknown
    like `<?PWD>`, relative to the script's ancestors or `config_root`."""
    text = _plain_path(config_path)
    if UNKNOWN_OPEN in text and not text.startswith(UNKNOWN_OPEN):
        return []
    if text.startswith(UNKNOWN_OPEN):
        end = text.find(">")
        relative = Path(text[end + 1:].lstrip("/") if end > 0 else text)
        bases: list[Path] = []
        if config_root:
            bases.append(Path(config_root))
        if script_dir:
            here = Path(script_dir).resolve()
            bases += [here, *here.parents]
        return [base / relative for base in bases]
    if text.startswith("/"):
        return [Path(text)]
    where = entry_dir(entry or "", script_dir, config_root)
    return [Path(os.path.normpath(where / text))] if where is not None else []


def find_config_dir(invocation: Invocation, name: str, script_dir: str | None, config_root: str | None) -> Path | None:
    if not invocation.config_path:
        return None
    for directory in _candidate_dirs(invocation.config_path, script_dir, config_root, invocation.entry):
        if _holds(directory, name):
            return directory
    text = _plain_path(invocation.config_path)
    if text.startswith("/") and script_dir:
        # Written on another machine (`/mnt/<disk>/Proj/pkg/rl/config/`): this checkout's copy of
        # the folder, found by its tail with the named config in it (generator.reading.foreign_paths).
        copy = checkout_copy(text.rstrip("/") + f"/{name}.yaml", script_dir)
        copy = copy or checkout_copy(text.rstrip("/") + f"/{name}.yml", script_dir)
        if copy is not None:
            return Path(copy).parent
    return None


def _holds(directory: Path, name: str) -> bool:
    return (directory / f"{name}.yaml").is_file() or (directory / f"{name}.yml").is_file()


def relative_config_path_status(invocation: Invocation, name: str | None, script_dir: str | None,
                                config_root: str | None) -> tuple[str, str | None, bool] | None:
    """For a relative `--config-path`: ("found" | "missing" | "unknown", the folder (or config
    file) Hydra looks for, whether the entry's folder is sure). None when the call has no
    relative --config-path."""
    if not is_relative_config_path(invocation.config_path):
        return None
    found = _entry_dir(invocation.entry, script_dir, config_root)
    if found is None:
        return ("unknown", None, False)
    where, sure = found
    directory = Path(os.path.normpath(where / _plain_path(invocation.config_path or "")))
    if not directory.is_dir():
        return ("missing", str(directory), sure)
    if name and UNKNOWN_OPEN not in name:
        stem = strip_yaml(name)
        if not ((directory / f"{stem}.yaml").is_file() or (directory / f"{stem}.yml").is_file()):
            return ("missing", str(directory / f"{stem}.yaml"), sure)
    return ("found", str(directory), sure)
