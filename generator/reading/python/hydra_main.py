"""Which config a Hydra entry module starts from: its `@hydra.main(config_path, config_name)`.

A recipe entry such as `recipe.dapo.main_dapo` runs with its own default config unless the
call names another one. Reading that decorator is part of reading the launch, so it lives with
the Python launcher reader, below the shell reader and `config/`. The module is parsed with the
standard library's `ast` (fast, no import of the user's code, nothing executed); the override
lists of a Python launcher, which need a concrete syntax tree, are reading/python/override_lists.py.
"""

from __future__ import annotations

import os
from typing import NamedTuple, TYPE_CHECKING
from functools import partial
from pathlib import Path

from generator.base.errors import InputError
from generator.base.files import SCRIPT_LIMIT, read_input
from generator.base.folder_memo import remembered
from generator.base.folder_memo import real_parent

if TYPE_CHECKING:
    import ast  # imported where a module is read: a check of a shell script never reads one (~1.5 ms, issue 22)


class HydraMain(NamedTuple):
    """What `@hydra.main(...)` says; None for an argument that is absent or not a literal."""

    function: str
    line: int
    config_path: str | None
    config_name: str | None
    version_base: str | None = None


class EntryConfig(NamedTuple):
    """The default config of an entry module: where its YAML lives and which file is primary."""

    entry_file: Path
    config_dir: Path | None  # None when config_path is absent or a pkg:// path we cannot see
    config_name: str | None
    hydra_main: HydraMain


def _dotted(node: ast.expr) -> str:
    import ast

    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _literal_str(node: ast.expr) -> str | None:
    # Adjacent string literals are already joined by the parser; f-strings are JoinedStr.
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def read_hydra_main(source: bytes | str, path: str | None = None) -> HydraMain | None:
    """The first function decorated with `@hydra.main(...)` (or `@main(...)` imported from hydra)."""
    # Syntax and depth checked by CPython's parser and an iterative count (see chunks.py),
    # imported here: a check outside a checkout only asks where an entry module is.
    import ast

    from generator.reading.python.chunks import checked_tree

    module = checked_tree(source.encode("utf-8") if isinstance(source, str) else source, path)
    main_from_hydra = any(
        isinstance(stmt, ast.ImportFrom) and stmt.module == "hydra"
        and any(alias.name == "main" and alias.asname is None for alias in stmt.names)
        for stmt in module.body
    )
    order = ("config_path", "config_name", "version_base")
    for node in ast.walk(module):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            name = _dotted(decorator.func)
            if name != "hydra.main" and not (name == "main" and main_from_hydra):
                continue
            values: dict[str, str | None] = {}
            for index, arg in enumerate(decorator.args):
                if index < len(order):
                    values[order[index]] = _literal_str(arg)
            for keyword in decorator.keywords:
                if keyword.arg in order:
                    values[keyword.arg] = _literal_str(keyword.value)
            return HydraMain(
                function=node.name,
                line=decorator.lineno,
                config_path=values.get("config_path"),
                config_name=values.get("config_name"),
                version_base=values.get("version_base"),
            )
    return None


def find_entry_file(entry: str, script_path: str | Path | None, *, repo_root: str | Path | None = None,
                    max_up: int = 6) -> Path | None:
    """The file of a Hydra entry: `recipe.dapo.main_dapo` → `recipe/dapo/main_dapo.py`, looked up
    from the script's directory and its parents (scripts run from a repo root or a recipe dir),
    then from `repo_root`. A file entry (`path/main.py`) is resolved from the same places."""
    if not entry or "<?" in entry:
        return None
    # Looked up from the script's real folder: the scripts of one folder share the answer.
    here = real_parent(os.fspath(script_path)) if script_path is not None else None
    key = ("entry_file", entry, here, os.path.abspath(repo_root) if repo_root is not None else None, max_up)
    return remembered(key, lambda: _entry_file(entry, here, repo_root, max_up))


def _entry_file(entry: str, here: Path | None, repo_root: str | Path | None, max_up: int) -> Path | None:
    relative = Path(entry) if entry.endswith(".py") else Path(*entry.split(".")).with_suffix(".py")
    starts: list[Path] = []
    if here is not None:
        starts.append(here)
        starts.extend(list(here.parents)[:max_up])
    if repo_root is not None:
        starts.append(Path(repo_root).resolve())
    seen: set[Path] = set()
    for base in starts:
        if base in seen:
            continue
        seen.add(base)
        # The scripts' folders share their ancestors: each is looked into once per run.
        found = remembered(("entry_file_in", entry, base), partial(_entry_file_in, entry, relative, base))
        if found is not None:
            return found
    return None


def _entry_file_in(entry: str, relative: Path, base: Path) -> Path | None:
    """The entry's file (or package's `__main__.py`) right under `base`."""
    candidate = base / relative
    if candidate.is_file():
        return candidate
    if not entry.endswith(".py"):
        package_main = base / Path(*entry.split(".")) / "__main__.py"
        if package_main.is_file():
            return package_main
    return None


def entry_config(entry: str, script_path: str | Path | None, *, repo_root: str | Path | None = None
                 ) -> EntryConfig | None:
    """`@hydra.main` of the entry found next to the script, with config_path made absolute
    (Hydra resolves a relative config_path against the entry file's directory)."""
    entry_file = find_entry_file(entry, script_path, repo_root=repo_root)
    if entry_file is None:
        return None
    try:
        hydra_main = read_hydra_main(read_input(entry_file, limit=SCRIPT_LIMIT, what="Python entry module"),
                                     str(entry_file))
    except (OSError, InputError):
        return None
    if hydra_main is None:
        return None
    config_dir: Path | None = None
    raw = hydra_main.config_path
    if raw is not None and not raw.startswith("pkg://"):
        raw = raw.removeprefix("file://")
        config_dir = (entry_file.parent / raw).resolve() if not Path(raw).is_absolute() else Path(raw)
    return EntryConfig(entry_file, config_dir, hydra_main.config_name, hydra_main)


# The names whose presence in a module means it builds its config with Hydra (a decorator, the
# compose API) or leaves that to one: any of them and the module is not judged to read argv itself.
_HYDRA_NAMES = frozenset({"hydra", "compose", "initialize", "initialize_config_dir", "initialize_config_module"})


def reads_own_command_line(entry: str, script_path: str | Path | None) -> Path | None:
    """The entry's file (found as `find_entry_file` finds it) when it parses its own command line
    and uses no Hydra: it imports argparse or reads sys.argv, names neither hydra nor its compose
    API anywhere (a `@hydra.main` left inside a string does not count: only code is read), and
    imports no other module's `main` (which may parse argv with Hydra). Such an entry (a fork's
    `main_ppo` taking a positional YAML) gets no Hydra overrides. None when the file is absent,
    unreadable, does not parse, or uses Hydra."""
    entry_file = find_entry_file(entry, script_path)
    if entry_file is None:
        return None
    # The scripts of one project share their entry: read once per run.
    return remembered(("own_command_line", str(entry_file)), partial(_reads_own_command_line, entry_file))


def _reads_own_command_line(entry_file: Path) -> Path | None:
    import ast

    from generator.reading.python.chunks import checked_tree

    try:
        module = checked_tree(read_input(entry_file, limit=SCRIPT_LIMIT, what="Python entry module"),
                              str(entry_file))
    except (OSError, InputError):
        return None
    own_argv = False
    for node in ast.walk(module):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [part for alias in node.names for part in alias.name.split(".")]
        elif isinstance(node, ast.ImportFrom):
            names = (node.module or "").split(".") + [alias.name for alias in node.names]
            if any(alias.name == "main" for alias in node.names):
                return None  # it may hand its argv to another entry's main (a Hydra one): not known
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
            if node.attr == "argv" and _dotted(node.value) == "sys":
                own_argv = True
        if any(name in _HYDRA_NAMES for name in names):
            return None
        own_argv = own_argv or "argparse" in names
    return entry_file if own_argv else None
