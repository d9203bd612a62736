"""Which `verl` package Python would import for a script's trainer calls, found without running
anything: the folders on the import path the way Python builds it, then the verl forks a
checkout vendors anywhere below its root.

The import path of a call, first match wins (as in Python):

  1. the folders its PYTHONPATH names (exported by the script or given on the call). A folder
     written with a placeholder or an unknown head (`{the_path_of_your_verl}/src/verl`,
     `$ROOT/verl_fork`) is matched by its known tail against the checkout;
  2. for `python -m X` the working directory (the checkout root, after the script's `cd`s when
     they are known); for `python path/x.py` the script file's folder;
  3. the project's own package folders: `package_dir={"": "src"}` in setup.py,
     `[tool.setuptools] package-dir` / `packages.find.where` in pyproject.toml, and
     `pip install -e <folder>` in the README or the project's shell scripts.

When none of these holds a verl, the forks vendored anywhere in the checkout (a `verl/`
package with `trainer/config/`, at most MAX_DEPTH folders down) are the candidates: the only
one is taken; of several, the one nearest the script, and the reason names the others.

Every file read goes through generator.base.files (bounded); folders are listed with a budget, so
a checkout with 100,000 folders costs at most MAX_DIRS listings.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, NamedTuple

from generator.base.errors import InputError
from generator.base.files import read_text_input
from generator.base.folder_memo import project_chain, remembered
from generator.reading.launch_script import UNKNOWN_OPEN, Invocation
from generator.verl.constants import CONFIG_SUBDIR, PPO_CONFIGS, PPO_ENTRY
from generator.base import boundary

# How deep below the checkout root a vendored fork is looked for (`ARPO/verl_arpo_entropy/verl`
# is 3 deep, `Tool_Star_RL/src/verl/verl` 4) and how many folders are listed at most.
MAX_DEPTH = 5
MAX_DIRS = 4000
# Folders that never hold the project's importable code.
_SKIP = frozenset({".git", ".hg", "node_modules", "__pycache__", ".venv", "venv", "site-packages", "outputs",
                   "wandb", "data", "datasets", "checkpoints", "ckpts", "logs", "docs", "tests"})
_TEXT_LIMIT = 1 << 20
_PIP_EDITABLE = re.compile(r"pip3?\s+install\s+(?:[^\n#]*?\s)?(?:-e|--editable)\s+['\"]?([\w./-]+)")
_PACKAGE_DIR = re.compile(r"package_dir\s*=\s*\{\s*['\"]{2}\s*:\s*['\"]([\w./-]+)['\"]")
_PYPROJECT_DIR = re.compile(r"(?:package-dir\s*=\s*\{\s*['\"]{2}\s*=\s*['\"]([\w./-]+)['\"]"
                            r"|where\s*=\s*\[\s*['\"]([\w./-]+)['\"])")


class ImportedVerl(NamedTuple):
    """The verl package a call would import, and why it is that one."""

    package: Path  # the `verl/` folder (it holds trainer/config/)
    reason: str


def has_verl_config(package: Path) -> bool:
    folder = package.joinpath(*CONFIG_SUBDIR)
    return any((folder / f"{prefix}{name}.yaml").is_file() for name in PPO_CONFIGS for prefix in ("", "_generated_"))


def checkout_root(script_path: str, cwd: str | None = None, max_up: int = 12) -> Path:
    """The root of the checkout a script belongs to: the deeper of its project's top (`.git`,
    else the nearest project marker, else its own folder) and the working directory when that
    lies between the script and the top (`gen check` runs from the checkout's root, as the
    script does; a working directory above the project is not the project). Never above the
    project boundary's root."""
    # Asked three times per script: keyed by the text (and the working directory a relative one
    # starts from), the Paths are made once; the walk up is made once per folder of scripts.
    here_cwd = os.getcwd()
    return remembered(("checkout_root", script_path, cwd, here_cwd, max_up), lambda: _folder_checkout_root(
        Path(script_path).absolute().parent, Path(cwd or here_cwd).absolute(), max_up))


def _folder_checkout_root(here: Path, base: Path, max_up: int) -> Path:
    return remembered(("folder_checkout_root", here, base, max_up), lambda: _checkout_root(here, base, max_up))


def _checkout_root(here: Path, base: Path, max_up: int) -> Path:
    # The project's top (`.git`, else the nearest project marker, else the script's folder:
    # generator.base.folder_memo.project_chain); the working directory only when it lies between the
    # script and that top. A working directory above the project (`cd ~`) is not the checkout,
    # so a `verl/` beside the project is never the one the script imports (issue 34).
    top = project_chain(here)[:max_up][-1]
    candidates = [top]
    if (base == here or base in here.parents) and (base == top or top in base.parents):
        candidates.append(base)
    return max(candidates, key=lambda p: len(p.parts))


def _read(path: Path) -> str:
    try:
        return read_text_input(path, limit=_TEXT_LIMIT, what="project file") if path.is_file() else ""
    except (InputError, OSError, UnicodeDecodeError):
        return ""


def project_package_dirs(root: Path) -> list[tuple[Path, str]]:
    """Folders the project installs as import roots: setup.py / pyproject.toml package dirs and
    `pip install -e <folder>` in its README and top-level shell scripts (each also checked for a
    `src/` layout of its own)."""
    return list(remembered(("package_dirs", root, boundary.current()), lambda: _package_dirs(root)))


def _package_dirs(root: Path) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    for match in _PACKAGE_DIR.finditer(_read(root / "setup.py")):
        found.append((root / match.group(1), "setup.py package_dir"))
    for match in _PYPROJECT_DIR.finditer(_read(root / "pyproject.toml")):
        found.append((root / (match.group(1) or match.group(2)), "pyproject.toml package dir"))
    texts = [(p.name, _read(p)) for p in sorted(root.glob("README*"))[:4]]
    texts += [(p.name, _read(p)) for p in sorted(root.glob("*.sh"))[:40]]
    for name, text in texts:
        for match in _PIP_EDITABLE.finditer(text):
            folder = (root / match.group(1)).resolve()
            if folder.is_dir() and (folder == root or root in folder.parents):
                found.append((folder, f"`pip install -e {match.group(1)}` in {name}"))
                for sub, why in project_package_dirs(folder) if folder != root else []:
                    found.append((sub, why))
    return found


def _tail_matches(text: str, bases: Iterable[Path]) -> list[Path]:
    """Folders a PYTHONPATH entry with an unknown or placeholder head stands for: its known tail
    (the longest that exists) under each base."""
    parts = [p for p in text.replace("\\", "/").split("/") if p]
    for start in range(1, len(parts)):
        tail = parts[start:]
        if any(UNKNOWN_OPEN in p or "$" in p for p in tail):
            continue
        hits = [base.joinpath(*tail) for base in bases if base.joinpath(*tail).is_dir()]
        if hits:
            return hits
    return []


def pythonpath_dirs(text: str | None, start: Path, bases: list[Path]) -> list[tuple[Path, str]]:
    """The folders of a PYTHONPATH text: plain ones as written (relative to `start`), the others by
    their known tail under `bases`."""
    out: list[tuple[Path, str]] = []
    for entry in (text or "").split(":"):
        entry = entry.strip().strip("'\"")
        if not entry or entry.startswith(UNKNOWN_OPEN + "unset:"):
            continue
        plain = UNKNOWN_OPEN not in entry and "{" not in entry and "<" not in entry and "$" not in entry
        if plain:
            folder = Path(entry) if entry.startswith("/") else start / entry
            if folder.is_dir():
                out.append((folder.resolve(), f"PYTHONPATH {entry}"))
                continue
        for folder in _tail_matches(entry, bases):
            out.append((folder.resolve(), f"PYTHONPATH {entry} (its known tail)"))
    return out


def vendored_forks(root: Path) -> list[Path]:
    """Every `verl/` package with a trainer config below `root`, breadth first, bounded (listed
    once per root in a run, a folder answer of the command's session: `gen check` of a folder of
    scripts walks the checkout once)."""
    return list(remembered(("vendored_forks", root), lambda: tuple(_walk_forks(root))))


def _walk_forks(root: Path) -> list[Path]:
    found: list[Path] = []
    queue: list[tuple[Path, int]] = [(root, 0)]
    listed = 0
    while queue and listed < MAX_DIRS:
        folder, depth = queue.pop(0)
        listed += 1
        try:
            children = sorted((entry for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False)),
                              key=lambda entry: entry.name)
        except OSError:
            continue
        for child in children:
            name = child.name
            if name.startswith(".") or name in _SKIP:
                continue
            path = Path(child.path)
            if name == "verl" and has_verl_config(path):
                found.append(path)
                continue  # a fork's own subfolders hold no second fork
            if depth + 1 < MAX_DEPTH:
                queue.append((path, depth + 1))
    return found


def _module_root(roots: Iterable[tuple[Path, str]], module: str) -> tuple[Path, str] | None:
    """The first import root holding the module's file (or, for a package, its folder)."""
    relative = Path(*module.split("."))
    for folder, why in roots:  # a folder is a package without `__init__.py` too (a namespace package)
        if (folder / relative).with_suffix(".py").is_file() or (folder / relative).is_dir():
            return folder, why
    return None


def call_roots(inv: Invocation, script_path: str, root: Path) -> list[tuple[Path, str]]:
    """The import path of one call, in Python's order (see the module docstring)."""
    script_dir = Path(script_path).absolute().parent
    key = ("call_roots", script_dir, root, inv.cwd, inv.pythonpath, inv.env.get("PYTHONPATH"), inv.entry_kind,
           inv.entry, boundary.current())
    return list(remembered(key, lambda: _call_roots(inv, script_dir, root)))


def _call_roots(inv: Invocation, script_dir: Path, root: Path) -> list[tuple[Path, str]]:
    start = root
    if inv.cwd:
        start = Path(inv.cwd) if inv.cwd.startswith("/") else root / inv.cwd
    bases = [root, *[p for p in [script_dir, *script_dir.parents] if p == root or root in p.parents]]
    roots = pythonpath_dirs(inv.pythonpath or inv.env.get("PYTHONPATH"), start, bases)
    if inv.entry_kind == "file":
        roots.append(((start / inv.entry).parent if not inv.entry.startswith("/") else Path(inv.entry).parent,
                      f"the folder of {inv.entry}"))
    elif inv.cwd is not None:
        roots.append((start, "the working directory" if start == root else f"the working directory {inv.cwd}"))
    roots.extend(project_package_dirs(root))
    return roots


def imported_verl(invocations: Iterable[Invocation], script_path: str, cwd: str | None = None) -> ImportedVerl | None:
    """The verl the script's live calls would import, or None when no folder of the checkout
    holds one (then the installed verl, if any, is what runs)."""
    root = checkout_root(script_path, cwd)
    live = [inv for inv in invocations if inv.branch != "dead"]
    for inv in live:
        module = "verl" if inv.entry == PPO_ENTRY or inv.entry.startswith("verl.") else None
        if module is None:
            continue
        hit = _module_root(call_roots(inv, script_path, root), "verl")
        if hit is not None and has_verl_config(hit[0] / "verl"):
            return ImportedVerl(hit[0] / "verl", f"Python imports verl from {hit[0]} ({hit[1]})")
    if not live:
        return None
    forks = vendored_forks(root)
    if not forks:
        return None
    script_dir = Path(script_path).absolute().parent
    ranked = sorted(forks, key=lambda p: (-_shared_parts(p, script_dir), len(p.parts), str(p)))
    chosen = ranked[0]
    where = os.path.relpath(chosen, root)
    if len(ranked) == 1:
        return ImportedVerl(chosen, f"the only verl fork in the checkout ({where})")
    others = ", ".join(os.path.relpath(p, root) for p in ranked[1:4])
    more = f" (+{len(ranked) - 4} more)" if len(ranked) > 4 else ""
    return ImportedVerl(chosen, f"the verl fork nearest the script ({where}); also in the checkout: {others}{more}")


def _shared_parts(a: Path, b: Path) -> int:
    count = 0
    for x, y in zip(a.parts, b.parts):
        if x != y:
            break
        count += 1
    return count
