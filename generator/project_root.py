"""Which project a script belongs to, and entering it: the root of the project boundary
(generator.boundary holds the boundary in force and checks every read against it).

The root is the nearest folder above the script holding `.git`; outside a repository, the folder
given on the command line, the working directory or the folder holding a vendored verl (see
project_root). The installed verl package is readable from every project. It asks
generator.verl_places where verl is (which reads through generator.files), so it sits above
them; generator.boundary, which generator.files asks on every read, stays at the bottom.
"""

from __future__ import annotations

import os
from pathlib import Path

from generator import boundary
from generator.boundary import Boundary, real_path
from generator.folder_memo import holds_git, remembered
from generator.verl_places import MAX_LEVELS, find_project_verl, installed_verl


def project_root(path: str | os.PathLike[str]) -> Path:
    """The project a script (or folder) belongs to: the nearest ancestor holding `.git`. Outside
    a repository, the outermost of: the folder given on the command line that holds it, the
    working directory when it holds it (`cd project && gen check scripts/run.sh`), the folder
    holding the project's vendored verl; else the script's own folder."""
    name = os.path.abspath(os.fspath(path))
    try:
        cwd_key: str | None = os.getcwd()
    except OSError:
        cwd_key = None
    # The folder holding the script (a link's own folder, not its target's): the repository
    # that ships a link owns it. Scripts in one folder share its answer (generator.folder_memo).
    folder = name if os.path.isdir(name) else os.path.dirname(name)
    return remembered(("project_root", folder, tuple(boundary.given_folders()), cwd_key),
                      lambda: _project_root(real_path(folder)))


def _project_root(here: Path) -> Path:
    for folder in [here, *here.parents][:MAX_LEVELS]:
        if holds_git(folder):
            return folder
    candidates = [g for g in boundary.given_folders() if here == g or g in here.parents]
    try:
        cwd = Path(os.getcwd()).resolve()
    except OSError:
        cwd = None
    if cwd is not None and cwd != Path(cwd.anchor) and (here == cwd or cwd in here.parents):
        candidates.append(cwd)
    vendored = _vendored_verl_folder(here)
    if vendored is not None:
        candidates.append(vendored)
    return min(candidates, key=lambda p: len(p.parts)) if candidates else here


def _vendored_verl_folder(here: Path) -> Path | None:
    """The folder above `here` whose `verl/` (or `src/verl/`…) holds verl's config tree."""
    package = find_project_verl(str(here / "_"))
    if package is None:
        return None
    top = real_path(package).parent
    while top != here and top not in here.parents and top.parent != top:  # src/verl, verl/verl
        top = top.parent
    return top


def _installed_verl() -> Path | None:
    found = installed_verl()
    return real_path(found[1]) if found is not None else None


_VERL: list[Path | None] = []


def enter(script: str | os.PathLike[str]) -> Boundary:
    """Judge `script` from now on: reads are bounded to its project (and the trusted places)."""
    if not _VERL:
        _VERL.append(_installed_verl())
    return boundary.bound_to(project_root(script), _VERL[0])
