"""A defaults entry of a config folder's primary YAML whose file the folder lacks.

Hydra composes `ppo_trainer.yaml` from its defaults list (`- data@data: legacy_data` is
`data/legacy_data.yaml`); when that file is not in the checkout, Hydra stops with "Could not
find 'data/legacy_data'" before verl starts. The usual cause is a project `.gitignore` line
meant for its training data (`data/`) that also kept verl's `trainer/config/data/` out of the
repository: the project's own copy of verl then cannot start as published. This module says
which entry, which file, and (when one does) which `.gitignore` line drops it; the keys the
entry would have supplied are then unknown, not to be judged against a guess.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import NamedTuple

from generator.base.folder_memo import remembered
from generator.schema.yamlload import load_yaml_file

_MAX_UP = 12  # folders walked up from the config folder to the checkout's `.git`


class MissingDefault(NamedTuple):
    config: str  # the primary config's file name (`ppo_trainer.yaml`)
    entry: str  # the defaults entry as written (`data@data: legacy_data`)
    file: str  # the file it needs, relative to the checkout (`verl/trainer/config/data/legacy_data.yaml`)
    package: str  # where its keys go (`data`; "" for the root)
    ignored_by: str | None  # the `.gitignore` line that keeps it out of the repository (`data/`)


def missing_default(folder: str | Path, name: str) -> MissingDefault | None:
    """The first defaults entry of `folder/name.yaml` whose file `folder` lacks; None when every
    entry is there, the list cannot be read, or an entry is one this reader does not judge
    (interpolated, optional, an override, a config that adds search paths)."""
    where, stem = str(Path(folder).absolute()), name[:-5] if name.endswith(".yaml") else name
    # asked once per call: remembered for the run (a folder's files do not change during it)
    return remembered(("missing_default", where, stem), lambda: _missing(where, stem))


def _missing(folder: str, name: str) -> MissingDefault | None:
    root = Path(folder)
    primary = root / f"{name}.yaml"
    try:
        body = load_yaml_file(primary) if primary.is_file() else None
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("defaults"), list):
        return None
    hydra = body.get("hydra")
    if isinstance(hydra, dict) and hydra.get("searchpath"):
        return None  # a group may come from another folder
    for entry in body["defaults"]:
        found = _entry_file(entry)
        if found is None:
            continue
        relative, package, written = found
        if (root / f"{relative}.yaml").is_file() or (root / relative).is_dir():
            continue
        top = _checkout_top(root)
        target = root / f"{relative}.yaml"
        shown = target.relative_to(top).as_posix() if top is not None else target.as_posix()
        return MissingDefault(primary.name, written, shown, package, _ignored_by(top, target) if top else None)
    return None


def _entry_file(entry: object) -> tuple[str, str, str] | None:
    """(file path under the folder without `.yaml`, the package its keys go to, the entry as
    written) of a plain defaults entry; None for `_self_`, optional, override and interpolated ones."""
    if isinstance(entry, str):
        # `- legacy_reward_impl`, `- reward_manager@reward_manager`: the config file of that
        # name beside the primary, its keys at the package after `@` (else at the root)
        if entry == "_self_" or "${" in entry or entry.startswith("/") or " " in entry.strip():
            return None
        name, _, package = entry.strip().partition("@")
        return name, package, entry
    if not isinstance(entry, dict) or len(entry) != 1:
        return None
    (head, option), = entry.items()
    words = str(head).split()
    if len(words) != 1 or not isinstance(option, str) or "${" in option or "${" in words[0] or option == "null":
        return None  # `optional x: y`, `override x: y`, an interpolation, a list of options
    group, _, package = words[0].partition("@")
    if group.startswith("/") or ".." in group.split("/"):
        return None
    return f"{group}/{option}", package or group.replace("/", "."), f"{head}: {option}"


def _checkout_top(folder: Path) -> Path | None:
    here = folder
    for _ in range(_MAX_UP):
        if (here / ".git").exists():
            return here
        if here.parent == here:
            return None
        here = here.parent
    return None


def _ignored_by(top: Path, target: Path) -> str | None:
    """The line of the checkout's top `.gitignore` that matches the file or a folder above it
    (the plain patterns git documents: a name anywhere, `dir/` for folders, a leading or inner
    `/` anchoring at the top, `*`/`?`/`[]` globs; `!` re-includes are honoured in order)."""
    path = top / ".gitignore"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[:2000] if path.is_file() else []
    except OSError:
        return None
    parts = target.relative_to(top).parts
    matched: str | None = None
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        if _matches(pattern, parts):
            matched = None if negate else line
    return matched


def _matches(pattern: str, parts: tuple[str, ...]) -> bool:
    folder_only = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    if not pattern:
        return False
    anchored = "/" in pattern
    pattern = pattern.lstrip("/")
    # A pattern matches a path's prefix: the folder itself (all but the file's own name when
    # `folder_only`), or the file.
    last = len(parts) - 1 if folder_only else len(parts)
    for end in range(1, last + 1):
        prefix = parts[:end]
        if anchored:
            if fnmatch.fnmatchcase("/".join(prefix), pattern):
                return True
        elif fnmatch.fnmatchcase(prefix[-1], pattern):
            return True
    return False
