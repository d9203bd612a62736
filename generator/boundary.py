"""The project boundary: the folders a launch script may make `gen` read (issue 21).

A script is judged inside its project. The project root is the nearest folder above the script
holding `.git` (a repository's root); without one, the folder given on the command line
(`gen check DIR`) or else the script's own folder. Everything the script's content makes `gen`
read — `source`d files, `--config-path` trees and their `defaults:` entries, the project's
vendored verl and its version file, the project configuration — must lie inside that root, or
inside the installed verl package, after symlinks are resolved. A path the user named on the
command line (`--config-dir`, `--model-config`) is trusted as given.

A read that would leave the boundary is not made: `generator.files.read_input` raises
OutsideProject (an InputError naming the path, never its content), and each caller keeps the
value unknown with a finding that names the path. The boundary is per process and follows the
script being judged: `enter(script)` is called as each script is read.

Why: a CI job that checks pull requests from strangers prints its report in a public log; a
script (or a symlinked config file) pointing at `/etc/passwd` or a key file must not put that
file's content there.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from generator.errors import InputError
from generator.folder_memo import remembered

# How many folders above a script are searched for `.git` (a checkout is rarely deeper).
MAX_LEVELS = 12
_HERE = Path(__file__).resolve().parent  # the generator package: its own data is always readable


class OutsideProject(InputError):
    """A read refused because the path resolves outside the project; the message names the
    path and the project root, never the file's content."""

    def __init__(self, path: str, root: Path) -> None:
        super().__init__(f"{path} is outside the project ({root}); not read")
        self.path = path
        self.root = root


@dataclass(frozen=True)
class Boundary:
    """The folders reads may reach: the project root first, then the installed verl package and
    paths the user named."""

    root: Path
    others: tuple[Path, ...] = ()

    def allows(self, path: str | os.PathLike[str]) -> bool:
        try:
            real = Path(os.path.realpath(os.fspath(path)))
        except (OSError, ValueError):
            return False
        return any(real == top or top in real.parents for top in (self.root, *self.others))

    def check(self, path: str | os.PathLike[str]) -> None:
        """OutsideProject when `path` resolves outside the boundary."""
        if not self.allows(path):
            raise OutsideProject(os.fspath(path), self.root)


_CURRENT: ContextVar[Boundary | None] = ContextVar("verl_gen_boundary", default=None)
_TRUSTED: list[Path] = []
_GIVEN: list[Path] = []


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.fspath(path)))


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
    # that ships a link owns it. Scripts in one folder share its answer.
    folder = name if os.path.isdir(name) else os.path.dirname(name)
    return remembered(("project_root", folder, tuple(_GIVEN), cwd_key), lambda: _project_root(_real(folder)))


def _project_root(here: Path) -> Path:
    for folder in [here, *here.parents][:MAX_LEVELS]:
        if (folder / ".git").exists():
            return folder
    candidates = [g for g in _GIVEN if here == g or g in here.parents]
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
    from generator.schema.resolution import find_project_verl

    package = find_project_verl(str(here / "_"))
    if package is None:
        return None
    top = _real(package).parent
    while top != here and top not in here.parents and top.parent != top:  # src/verl, verl/verl
        top = top.parent
    return top


def _installed_verl() -> Path | None:
    from generator.schema.releases import installed_verl

    found = installed_verl()
    return _real(found[1]) if found is not None else None


_VERL: list[Path | None] = []


def enter(script: str | os.PathLike[str]) -> Boundary:
    """Judge `script` from now on: reads are bounded to its project (and the trusted places)."""
    if not _VERL:
        _VERL.append(_installed_verl())
    others = [p for p in (_VERL[0], _HERE, *_TRUSTED) if p is not None]
    found = Boundary(project_root(script), tuple(others))
    _CURRENT.set(found)
    return found


def reset() -> None:
    """A new command: no script judged, nothing trusted (in-process callers run many commands)."""
    _CURRENT.set(None)
    _TRUSTED.clear()
    _GIVEN.clear()


def leave() -> None:
    """No script is being judged: reads are unbounded again (the user's own files)."""
    _CURRENT.set(None)


def current() -> Boundary | None:
    return _CURRENT.get()


def trust(path: str | os.PathLike[str]) -> None:
    """A path the user named on the command line: readable whatever the script's project."""
    real = _real(os.path.expanduser(os.fspath(path)))
    if real not in _TRUSTED:
        _TRUSTED.append(real)
    found = _CURRENT.get()
    if found is not None and real not in found.others:
        _CURRENT.set(Boundary(found.root, (*found.others, real)))


def given_folder(path: str | os.PathLike[str]) -> None:
    """A folder argument (`gen check DIR`): without a repository, it is the project root of the
    scripts found under it."""
    real = _real(path)
    if real not in _GIVEN:
        _GIVEN.append(real)
        _GIVEN.sort(key=lambda p: len(p.parts))


def check(path: str | os.PathLike[str]) -> None:
    """OutsideProject when a script is being judged and `path` leaves its project."""
    found = _CURRENT.get()
    if found is not None:
        found.check(path)


__all__ = ["Boundary", "MAX_LEVELS", "OutsideProject", "check", "current", "enter", "given_folder", "leave",
           "project_root", "reset", "trust"]
