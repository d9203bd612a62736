"""The project boundary: the folders a launch script may make `gen` read (issue 21).

A script is judged inside its project. The project root (generator.project.root) is found from
the script's path as written: the nearest folder above it holding `.git`; without one, the
nearest holding a project marker (pyproject.toml, setup.py, setup.cfg, requirements.txt), widened
to a folder given on the command line (`gen check DIR`) that holds it; else the script's own
folder; never the working directory. Everything the script makes `gen` read — the script
itself, `source`d files, `--config-path` trees and their `defaults:` entries, the project's
vendored verl and its version file, the project configuration — must lie inside that root, or
inside the installed verl package, after symlinks are resolved. A path the user named on the
command line (`--config-dir`, `--model-config`) is trusted as given.

A read that would leave the boundary is not made: `generator.base.files.read_input` raises
OutsideProject (an InputError naming the path, never its content), and each caller keeps the
value unknown with a finding that names the path. The boundary belongs to the command's
session (generator.base.session) and follows the script being judged:
`generator.project.root.enter(script)` is called as each script is read.

This module holds the boundary in force and the test every read passes (the bottom of the import
graph: generator.base.files asks it); where a script's project lies is generator.project.root.

Why: a CI job that checks pull requests from strangers prints its report in a public log; a
script (or a symlinked config file) pointing at `/etc/passwd` or a key file must not put that
file's content there.
"""

from __future__ import annotations

import os
from typing import NamedTuple
from pathlib import Path

from generator.base import folder_memo, session
from generator.base.session import Bounds
from generator.base.errors import InputError

_HERE = Path(__file__).resolve().parent.parent  # the generator package: its own data is always readable


class OutsideProject(InputError):
    """A read refused because the path resolves outside the project; the message names the
    path and the project root, never the file's content."""

    def __init__(self, path: str, root: Path, *, named: bool = False) -> None:
        # A file the user named is printed beside the message; its own project's root is found
        # from its path as written, so only a symbolic link can lead it out.
        super().__init__(f"a symbolic link leads it outside its project ({root}); not read" if named
                         else f"{path} is outside the project ({root}); not read")
        self.path = path
        self.root = root


class Boundary(NamedTuple):
    """The folders reads may reach: the project root first, then the installed verl package and
    paths the user named."""

    root: Path
    others: tuple[Path, ...] = ()

    def allows(self, path: str | os.PathLike[str]) -> bool:
        try:
            real = real_path(path)
        except (OSError, ValueError):
            return False
        return any(real == top or top in real.parents for top in (self.root, *self.others))

    def check(self, path: str | os.PathLike[str]) -> None:
        """OutsideProject when `path` resolves outside the boundary."""
        if not self.allows(path):
            raise OutsideProject(os.fspath(path), self.root)


def real_path(path: str | os.PathLike[str]) -> Path:
    """`path` with every link resolved (what the boundary compares)."""
    return Path(folder_memo.real_path(os.fspath(path)))


def bound_to(root: Path, *places: Path | None) -> Boundary:
    """Judge a script of the project at `root` from now on: reads are bounded to it, to `places`
    (the installed verl) and to the trusted paths. (Finding the root is generator.project.root.)"""
    state = session.current()
    others = [p for p in (*places, _HERE, *state.trusted) if p is not None]
    found = Boundary(root, tuple(others))
    state.boundary = found
    return found


def given_folders() -> list[Path]:
    """The folder arguments of this command (see given_folder), shortest first."""
    return list(session.current().given)


def leave() -> None:
    """No script is being judged: reads are unbounded again (the user's own files)."""
    session.current().boundary = None


def current() -> Bounds | None:
    return session.current().boundary


def trust(path: str | os.PathLike[str]) -> None:
    """A path the user named on the command line: readable whatever the script's project."""
    real = real_path(os.path.expanduser(os.fspath(path)))
    state = session.current()
    if real not in state.trusted:
        state.trusted.append(real)
    found = state.boundary
    if found is not None and real not in found.others:
        state.boundary = Boundary(found.root, (*found.others, real))


def given_folder(path: str | os.PathLike[str]) -> None:
    """A folder argument (`gen check DIR`): without a repository, it widens the project root of
    the scripts found under it to itself (kept as written, as the roots are found)."""
    folder = Path(os.path.abspath(os.fspath(path)))
    given = session.current().given
    if folder not in given:
        given.append(folder)
        given.sort(key=lambda p: len(p.parts))


def check(path: str | os.PathLike[str]) -> None:
    """OutsideProject when a script is being judged and `path` leaves its project."""
    found = session.current().boundary
    if found is not None:
        found.check(path)


__all__ = ["Boundary", "OutsideProject", "bound_to", "check", "current", "given_folder", "given_folders", "leave",
           "trust"]
