"""Which files a directory argument stands for: `gen check examples/` like `ruff check .`.

A directory is walked (sorted, symlinked folders not followed) for shell scripts (`*.sh`,
`*.bash`) and Python files (`*.py`) that launch a verl trainer — a file whose text names one
(`main_ppo`, `verl.trainer`, a `recipe.….main…` module). Helper scripts in the same folders
(data preparation, installs) are passed over rather than reported as "no trainer call"; a file
named explicitly on the command line is always checked. Skipped: `.gitignore`d paths (the
patterns of every `.gitignore` from the walked directory down: `*`, `**`, `?`, `[…]`, a leading
or inner `/` anchoring to the file's folder, a trailing `/` for folders, `!` to re-include),
version-control and environment folders (`.git`, `.venv`, `venv`, `node_modules`, `__pycache__`,
`.tox`), and anything that is not a regular file. `-` (stdin) and plain files pass through.
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple
from pathlib import Path

from generator.base.errors import InputError
from generator.base.files import SCRIPT_LIMIT, read_input
from generator.reading.recognize import names_trainer, scripts_run
from generator.base.glob_set import Glob, GlobSet, PatternBudget
from generator.base import boundary
from generator.base.boundary import real_path
from generator.project.root import project_root
from generator.reading.foreign_paths import checkout_copy

SUFFIXES = (".sh", ".bash", ".py")
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox",
                       ".mypy_cache", ".pytest_cache"})
# A directory argument must not turn into an unbounded run: at most MAX_FILES launch scripts
# (the files that name a trainer, not every file), and a walk that stops after looking at
# MAX_ENTRIES files and folders or reading MAX_EXAMINED shell and Python files, whichever
# comes first. Reading is the cost (~1-3 ms a file): `gen check /tmp` read every .py under it for
# 1 min 50 s before refusing; now it stops within seconds and says where it was.
MAX_FILES = 10_000
MAX_EXAMINED = 10_000
MAX_ENTRIES = 100_000


class _Rule(NamedTuple):
    negate: bool
    dir_only: bool


class _Ignore(NamedTuple):
    """The rules of one `.gitignore`, compiled once (generator.base.glob_set) for every path below it."""

    base: str  # the folder of the .gitignore, relative to the walk root ('' at the root)
    rules: list[_Rule]
    globs: GlobSet


def _inside(path: Path, root: Path) -> bool:
    """Whether `path`, its links followed, lies inside the project at `root` (a real path)."""
    real = real_path(path)
    return real == root or root in real.parents


def _read_gitignore(folder: Path, base: str, budget: PatternBudget) -> list[_Ignore]:
    name = folder / ".gitignore"
    try:
        if not _inside(name, project_root(folder)):  # a .gitignore linked to a file elsewhere
            return []
        text = read_input(name, limit=SCRIPT_LIMIT, what=".gitignore", trusted=True).decode("utf-8", "replace")
    except (InputError, OSError, ValueError):  # absent, a FIFO, too large: no patterns from it
        return []
    rules, globs = [], []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        line = line[1:] if negate else line
        if line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        rules.append(_Rule(negate, dir_only))
        # `a/b` or `/a` is matched against the path from the .gitignore's folder, `a` against any tail
        globs.append(Glob(line.lstrip("/"), "path" if anchored else "tail", crosses=False))
        if len(rules) % 1000 == 0:
            budget.charge(1000, folder / ".gitignore", "ignore patterns")
    budget.charge(len(rules) % 1000, folder / ".gitignore", "ignore patterns")
    return [_Ignore(base, rules, GlobSet(globs))] if rules else []


def _ignored(levels: list[_Ignore], rel: str, is_dir: bool) -> bool:
    """The last matching pattern decides, as in git: a deeper .gitignore's rules come last."""
    for level in reversed(levels):
        if level.base and not rel.startswith(level.base + "/"):
            continue
        below = rel[len(level.base) + 1:] if level.base else rel
        for index in reversed(level.globs.matching(below)):
            rule = level.rules[index]
            if rule.dir_only and not is_dir:
                continue
            return not rule.negate
    return False


def _launches(path: Path) -> bool:
    try:
        # Trusted: the user named the folder; only whether the file names a trainer is used.
        source = read_input(path, trusted=True)
    except InputError as err:
        return "too large" in str(err)  # kept, so that checking it says so instead of skipping it
    return names_trainer(source) or _runs_a_launcher(path, source)


def _runs_a_launcher(path: Path, source: bytes) -> bool:
    """A wrapper (`export BS=64; bash examples/run_x.sh`): it runs a script, found beside it or
    from where gen runs (the checkout root, as the wrapper's own `bash` would), that names a trainer."""
    root = project_root(path)
    for written in scripts_run(source):
        for base in (path.parent, Path.cwd()):
            if os.path.isabs(written):  # as written, else this checkout's copy of another machine's path
                copy = checkout_copy(written, str(path.parent))
                callee = Path(copy) if copy is not None else Path(written)
            else:
                callee = base / written
            try:
                # Only a callee inside the wrapper's project is read (issue 35: nothing outside).
                if callee.is_file() and _inside(callee, root) and callee.resolve() != path.resolve() and names_trainer(
                        read_input(callee, trusted=True)):
                    return True
            except (InputError, OSError):
                continue
    return False


def _too_large(root: Path, what: str, found: int) -> InputError:
    return InputError(f"{root}: stopped after {what} ({found:,} launch script{'s' if found != 1 else ''} so far); "
                      "name a smaller folder or the scripts themselves")


def _walk(root: Path) -> list[str]:
    found: list[str] = []
    entries_seen = examined = 0
    budget = PatternBudget()
    stack: list[tuple[Path, str, list[_Ignore]]] = [(root, "", _read_gitignore(root, "", budget))]
    while stack:
        folder, rel_folder, rules = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subfolders = []
        entries_seen += len(entries)
        if entries_seen > MAX_ENTRIES:
            raise _too_large(root, f"looking at {MAX_ENTRIES:,} files and folders", len(found))
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if entry.name not in SKIP_DIRS and not _ignored(rules, rel, True):
                    subfolders.append((Path(entry.path), rel))
            elif stat.S_ISREG(mode) and entry.name.endswith(SUFFIXES) and not _ignored(rules, rel, False):
                examined += 1
                if examined > MAX_EXAMINED:
                    raise _too_large(root, f"reading {MAX_EXAMINED:,} shell and Python files", len(found))
                if not _launches(Path(entry.path)):
                    continue
                found.append(os.path.normpath(entry.path))
                if len(found) > MAX_FILES:
                    raise _too_large(root, f"finding more than {MAX_FILES:,} launch scripts", MAX_FILES)
        for path, rel in reversed(subfolders):
            stack.append((path, rel, rules + _read_gitignore(path, rel, budget)))
    return found


def expand_paths(paths: list[str]) -> list[str]:
    """The paths with every directory replaced by the launch scripts inside it (in path order);
    files, `-` and paths that do not exist pass through (the reader reports those)."""
    out: list[str] = []
    for path in paths:
        if path != "-" and os.path.isdir(path):
            boundary.given_folder(path)  # without a repository, the folder given is the project
            found = _walk(Path(path))
            if not found:
                raise InputError(f"{path}: no launch scripts found (shell or Python files that name a verl trainer)")
            out.extend(found)
        else:
            out.append(path)
    return out


__all__ = ["MAX_ENTRIES", "MAX_EXAMINED", "MAX_FILES", "SKIP_DIRS", "expand_paths"]
