"""Answers about folders, remembered for the length of one run over many files.

`gen check` of a folder or of many scripts asks the same questions of the same folders for every
script: which folder is the project root above it, where the project's vendored verl is, which
project file applies, which package folders the project installs. Each answer walks up the tree
with a dozen `stat`s, reads setup.py, README and scripts, and builds many Path objects: about a
sixth of the time a corpus check spent. None of them depends on the script's own text, and
nothing writes those folders while a check runs, so inside `one_run()` each answer is computed
once per set of arguments (and of the other inputs it depends on, which the callers put in the
key: the working directory, the folders named on the command line, the boundary in force).

Outside `one_run()` nothing is remembered: a caller that changes the tree between two calls (a
test, `gen fix --write`) sees the tree as it is. A forked worker process (generator.base.pool) starts
with what the parent had remembered, which is still true of the same run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from generator.base import session

Value = TypeVar("Value")

@contextmanager
def one_run() -> Iterator[None]:
    """Remember folder answers until the block ends (nested blocks share the outer memo); they
    live in the command's session (generator.base.session), so a new command starts with none."""
    state = session.current()
    outer = state.memo
    if outer is None:
        state.memo = {}
    try:
        yield
    finally:
        state.memo = outer


def remembered(key: Hashable, compute: Callable[[], Value]) -> Value:
    """compute(), or inside one_run() the value computed before for the same key. An exception
    is not remembered (the next call tries again, and fails the same way)."""
    memo = session.current().memo
    if memo is None:
        return compute()
    try:
        return memo[key]  # type: ignore[return-value]
    except KeyError:
        pass
    value = compute()
    memo[key] = value
    return value


def active() -> bool:
    return session.current().memo is not None


# How many folders above a script are searched for the project's marks (`.git`, a project file,
# a vendored verl): a checkout is rarely deeper.
MAX_LEVELS = 12
# Files that mark a Python project's top folder when there is no `.git` (a tarball, a download,
# a copy): where its packaging and requirements live. Nothing else widens a project.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")


def holds_git(folder: Path) -> bool:
    """Whether `folder/.git` exists: the mark of a checkout's root that every walk up from a
    script (project root, checkout root, vendored verl) stops at. The scripts of a corpus share
    a few ancestors, so each is asked once per run."""
    return remembered(("holds_git", folder), lambda: (folder / ".git").exists())


def holds_marker(folder: Path) -> bool:
    """Whether `folder` holds one of PROJECT_MARKERS (a regular file or a link to one)."""
    return remembered(("holds_marker", folder),
                      lambda: any(os.path.isfile(folder / name) for name in PROJECT_MARKERS))


def project_chain(here: Path) -> list[Path]:
    """The folders from `here` (absolute, as written: links not resolved) up to its project's
    top, nearest first: up to the first folder holding `.git` within MAX_LEVELS; without one, up
    to the nearest folder holding a project marker (PROJECT_MARKERS); without either, `here`
    alone. A mark seen through a linked folder between the script and it does not count (_marked). Never the working directory or any other folder: a `verl/` or a secret in a folder
    beside the project is not the project's (issues 34 and 35)."""
    return list(remembered(("project_chain", here), lambda: tuple(_project_chain(here))))


def _project_chain(here: Path) -> list[Path]:
    chain = [here, *here.parents][:MAX_LEVELS]
    top = _marked(chain, holds_git)
    if top is None:
        top = _marked(chain, holds_marker)
    return [here] if top is None else chain[:top + 1]


def _marked(chain: list[Path], has_mark: Callable[[Path], bool]) -> int | None:
    """The index of the nearest folder of `chain` with the mark, seen without a link: a mark in
    a linked folder, or above one between it and the script, is the link target's (a committed
    `examples -> ../other` where `other` holds `.git`, or `dot -> ~` with a dotfiles repository,
    must not make `other` the root of `examples/x.sh`); the search goes on above the link. A link
    above the mark (a home folder reached through a link) is the user's own layout."""
    start = 0
    while True:
        found = next((index for index in range(start, len(chain)) if has_mark(chain[index])), None)
        if found is None:
            return None
        linked = [index for index in range(start, found + 1) if os.path.islink(chain[index])]
        if not linked:
            return found
        start = linked[-1] + 1


def real_path(path: str) -> str:
    """`os.path.realpath(path)`. Resolving walks every component with an lstat; the folder part
    is resolved once per run for all the files in it, and only the file itself is asked
    whether it is a link."""
    real_folder = _real_folder(path)
    return os.path.realpath(path) if real_folder is None else os.path.join(real_folder, os.path.basename(path))


def real_parent(path: str) -> Path:
    """`Path(path).resolve().parent`: the real folder holding the file `path` (a link is
    followed to its target's folder), as real_path resolves it."""
    folder = _real_folder(path)
    if folder is None:
        return Path(os.path.realpath(path)).parent
    return remembered(("real_folder_path", folder), lambda: Path(folder))


def _real_folder(path: str) -> str | None:
    """The real folder of `path`'s folder part; None when `path` itself must be resolved (a
    link, a name such as `..` that is not a file in its folder, or a path os.path.realpath
    refuses with ValueError, as it must go on doing)."""
    folder, name = os.path.split(path)
    if name in ("", ".", "..") or "\0" in path or os.path.islink(path):
        return None
    # A relative folder is relative to the working directory, which is part of the question.
    where = None if os.path.isabs(folder) else os.getcwd()
    return remembered(("real_folder", folder, where), lambda: os.path.realpath(folder))


__all__ = ["MAX_LEVELS", "PROJECT_MARKERS", "active", "holds_git", "holds_marker", "project_chain", "one_run", "real_parent", "real_path", "remembered"]
