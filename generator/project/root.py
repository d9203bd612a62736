"""Which project a script belongs to, and entering it: the root of the project boundary
(generator.base.boundary holds the boundary in force and checks every read against it).

The root is found from the script's path as written, not from where its links lead: the nearest
folder above it holding `.git`; without one, the nearest holding a project marker
(generator.base.folder_memo.PROJECT_MARKERS: pyproject.toml, setup.py, setup.cfg, requirements.txt);
without either, the script's own folder. A folder named on the command line (`gen check DIR`)
that holds the script widens a root found without `.git` to it. The working directory is never
the root, and neither is a folder beside the project that happens to hold a `verl/` (issue 34).

Finding the root from the path as written is what keeps a committed link inside the project: for
`examples -> ../other`, `examples/train.sh` belongs to the repository that ships the link, and
the file it resolves to lies outside that repository's root, so it is not read (issue 35). The
installed verl package is readable from every project. It asks generator.verl.places where verl
is (which reads through generator.base.files), so it sits above them; generator.base.boundary, which
generator.base.files asks on every read, stays at the bottom.
"""

from __future__ import annotations

import os
from pathlib import Path

from generator.base import boundary
from generator.base.boundary import Boundary, real_path
from generator.base.folder_memo import holds_git, project_chain, remembered
from generator.base.session import kept
from generator.verl.places import installed_verl


def project_root(path: str | os.PathLike[str]) -> Path:
    """The real path of the project a script (or folder) belongs to (see the module's doc)."""
    name = os.path.abspath(os.fspath(path))
    # The folder holding the script (a link's own folder, not its target's): the repository
    # that ships a link owns it. Scripts in one folder share its answer (generator.base.folder_memo).
    folder = name if os.path.isdir(name) else os.path.dirname(name)
    return remembered(("project_root", folder, tuple(boundary.given_folders())),
                      lambda: _project_root(Path(folder)))


def _project_root(here: Path) -> Path:
    chain = project_chain(here)
    top = chain[-1]
    if not holds_git(top):
        given = [g for g in boundary.given_folders() if here == g or g in here.parents]
        top = min([top, *given], key=lambda p: len(p.parts))
    return real_path(top)


def _installed_verl() -> Path | None:
    found = installed_verl()
    return real_path(found[1]) if found is not None else None


def _installed_verl_kept() -> Path | None:
    """The installed verl's real folder, found once per command (kept in its session while
    that folder stays as it was; where Python imports verl from is the command's environment)."""
    def find() -> tuple[Path | None, list[Path], int]:
        found = _installed_verl()
        return found, [found] if found is not None else [], 0

    return kept(("project_root.installed_verl",), find)


def enter(script: str | os.PathLike[str]) -> Boundary:
    """Judge `script` from now on: reads are bounded to its project (and the trusted places)."""
    return boundary.bound_to(project_root(script), _installed_verl_kept())
