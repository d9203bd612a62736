"""Where verl's code lives on disk, found without importing it: the package a project keeps
itself (vendored as `verl/`, `src/verl/`, or a git submodule: found by verl's config tree), the
verl installed here, and the release a verl package says it is.

Low in the import graph (files, boundary and generator.verl.constants's names), because both the project
boundary (generator.project.root: a vendored verl's folder belongs to the project, the installed
one is readable) and the release resolution (generator.schema.resolution: a vendored verl's YAML
is the schema) ask it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from functools import partial
from pathlib import Path

from generator.base import boundary
from generator.base.errors import InputError
from generator.base.files import read_input, read_text_input
from generator.base.folder_memo import project_chain, remembered
from generator.verl.constants import CONFIG_SUBDIR, PPO_CONFIGS

# Where a verl package sits in a project folder: vendored (`verl/`), vendored in a `src/` layout
# (`src/verl/`, installed with `package_dir={"": "src"}`, as agent forks of verl 0.2-0.3 do), or a
# git submodule that holds verl's repository (`verl/verl/`, or any submodule path with a `verl/`).
_PACKAGE_PLACES = (("verl",), ("src", "verl"), ("verl", "verl"))
# A package's METADATA holds its README: tens of kilobytes.
METADATA_LIMIT = 1 << 20


def find_project_verl(script_path: str) -> Path | None:
    """The `verl/` package of the project a script belongs to: going up from the script's
    folder, the first folder with a vendored `verl/trainer/config/` (or `src/verl/...`, a submodule's
    `verl/verl/...`, or a `verl` package inside a submodule path of `.gitmodules`). The search
    stops at the project's top (generator.base.folder_memo.project_chain)."""
    here = Path(script_path).absolute().parent
    return remembered(("project_verl", here), lambda: _find_project_verl(here))


def _find_project_verl(here: Path) -> Path | None:
    # Up to the project's top only: without `.git`, a `verl/` in a folder above the nearest
    # project marker (another clone in the home folder, a download) is not this project's (issue 34).
    for folder in project_chain(here):
        # The scripts' folders share their ancestors: each folder is looked into once per run.
        package = remembered(("verl_in", folder), partial(_verl_in, folder))
        if package is not None:
            return package
    return None


def _verl_in(folder: Path) -> Path | None:
    """The verl package `folder` itself holds (vendored, `src/`, or in a git submodule)."""
    for place in _PACKAGE_PLACES:
        package = folder.joinpath(*place)
        if has_ppo_config(package.joinpath(*CONFIG_SUBDIR)):
            return package
    for submodule in _submodule_paths(folder):
        package = folder / submodule / "verl"
        if has_ppo_config(package.joinpath(*CONFIG_SUBDIR)):
            return package
    return None


def has_ppo_config(folder: Path) -> bool:
    """Whether `folder` holds one of verl's PPO trainer configs (or its generated form)."""
    if not os.path.isdir(folder):  # one stat for the common case (no such folder), not one per name
        return False
    return any((folder / f"{prefix}{name}.yaml").is_file() for name in PPO_CONFIGS
               for prefix in ("", "_generated_"))


def _submodule_paths(folder: Path) -> list[str]:
    """Paths of the git submodules declared in `folder/.gitmodules` (read as text, bounded)."""
    modules = folder / ".gitmodules"
    try:
        if not modules.is_file():
            return []
        # Through the door: bounded, and never a `.gitmodules` linked to a file outside the project.
        text = read_input(modules, limit=65536, what=".gitmodules").decode("utf-8", "replace")
    except (OSError, InputError):
        return []
    out = []
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == "path" and value.strip() and ".." not in value:
            out.append(value.strip())
    return out


def installed_verl() -> tuple[str, Path] | None:
    """(version, package dir) of the verl importable here, found without importing it. Every
    script asks: the import path is searched once per run, and the version read once per
    boundary (which decides whether a dist-info beside the package may be read)."""
    package = remembered(("installed_verl", tuple(sys.path)), _installed_package)
    if package is None:
        return None
    version = remembered(("installed_version", package, boundary.current()), partial(read_version, package))
    return (version, package) if version else None


def _installed_package() -> Path | None:
    try:
        spec = importlib.util.find_spec("verl")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if not locations and spec.origin:
        locations = [str(Path(spec.origin).parent)]
    if not locations:
        return None
    return Path(locations[0])


def read_version(package: Path) -> str | None:
    """The release a verl package says it is: its `version/version` file (one short line; a
    file that is not a small regular text file is ignored), else a dist-info beside it."""
    try:
        text = read_text_input(package / "version" / "version", limit=256, what="version file").strip()
        if text and "\n" not in text:
            return text
    except InputError:
        pass
    # A dist-info next to the package: verl-X.dist-info/METADATA
    found = boundary.current()
    allowed = found is None or found.allows(package)
    # Through the bounded reader like every file: a METADATA that is a FIFO or a link to
    # /dev/zero is refused, not waited on or read without end (issue 21).
    for meta in sorted(package.parent.glob("verl-*.dist-info/METADATA"))[:8]:
        try:
            # Beside a package the boundary allows (the installed verl's site-packages, or the project).
            text = read_text_input(meta, limit=METADATA_LIMIT, what="package METADATA", trusted=allowed)
        except InputError:
            continue
        for line in text.splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()[:64]
    return None
