"""The project configuration: settings a project keeps beside its launch scripts, so that every
`gen` command judges them the same way without repeating options.

Where it is found: going up from the script's folder, the first folder that holds a
`.verl-gen.toml`, or a `pyproject.toml` with a `[tool.verl-gen]` table (a `.verl-gen.toml`
wins in the same folder; a `pyproject.toml` without the table is passed over).

Format (`[tool.verl-gen]` in pyproject.toml; in .verl-gen.toml the same keys at the top level):

    [tool.verl-gen]
    verl-version = "0.4.1"               # the verl release the project runs
    config-dirs = ["configs"]            # folders of the project's own verl config YAML
                                         # (relative to this file): the first with a
                                         # ppo_trainer.yaml is the schema (before verl/), and
                                         # all are searched for a call's --config-name
    select = ["VB", "VK601"]             # only these rule codes or prefixes
    ignore = ["VX9"]                     # never these
    gpu = "h100"                         # GPU name for memory checks
    args = ["--train_batch_size", "32"]  # the scripts' positional arguments ($1 $2 ...)
    exclude = ["legacy/*", "*_old.sh"]   # scripts never checked or fixed (globs, see below)

    [tool.verl-gen.env]                  # environment the scripts are assumed to run with
    MODEL_PATH = "Qwen/Qwen2.5-7B"

    [tool.verl-gen.per-file-ignores]     # codes ignored in the scripts a glob matches
    "examples/*.sh" = ["VS716", "VX9"]

A glob (fnmatch: `*` also crosses `/`) matches a script's path relative to the project file's
folder; one without a `/` also matches the file name alone (ruff's habit). `exclude` applies to
named files and to those found in folders alike, so a pre-commit hook that names every changed
file skips them too. Per-file ignores add to `ignore` (the project's or the command line's).

Every key is optional; an unknown key or a value of the wrong type is an InputError naming the
file and the key (exit 2). Options given on the command line win over these settings.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

from generator.base.boundary import OutsideProject
from generator.base.errors import InputError
from generator.base.files import read_text_input
from generator.base.folder_memo import MAX_LEVELS, real_parent, remembered
from generator.base.glob_set import Glob, GlobSet, PatternBudget
from generator.project.root import enter, project_root
from generator.base.session import approx_size, kept
from generator.base import boundary


PROJECT_FILE = ".verl-gen.toml"
PYPROJECT = "pyproject.toml"
TABLE = ("tool", "verl-gen")
# A project file is a few lines; anything larger is not one (and is not read whole).
MAX_BYTES = 1 << 20

_STRING_LISTS = ("config-dirs", "select", "ignore", "args", "exclude")
_STRINGS = ("verl-version", "gpu")
# `calibration`: the entries `gen calibrate --save` writes, read by generator.calibrate.saved.
_KNOWN = (*_STRINGS, *_STRING_LISTS, "env", "per-file-ignores", "calibration")


class ProjectSettings(NamedTuple):
    """The settings of one project file; `path` None means no file was found (all defaults)."""

    path: Path | None = None
    verl_version: str | None = None
    config_dirs: tuple[Path, ...] = ()
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    gpu: str | None = None
    args: tuple[str, ...] = ()
    env_items: tuple[tuple[str, str], ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, codes)

    @property
    def env(self) -> dict[str, str]:
        return dict(self.env_items)

    def _relative(self, path: str | Path) -> str:
        """The script's path relative to the project file's folder (`/`-separated), resolved once."""
        target = Path(path).resolve()
        root = self.root
        if root is not None:
            try:
                return target.relative_to(root.resolve()).as_posix()
            except ValueError:
                pass
        return target.as_posix()

    def excludes(self, path: str | Path) -> bool:
        """Whether `exclude` names this script (it is then neither checked nor fixed)."""
        return str(path) != "-" and bool(self.exclude) and bool(_glob_set(self.exclude).matching(self._relative(path)))

    def ignores_for(self, path: str | Path) -> tuple[str, ...]:
        """The per-file-ignores codes of every glob that matches this script."""
        if str(path) == "-" or not self.per_file_ignores:
            return ()
        globs = tuple(pattern for pattern, _codes in self.per_file_ignores)
        return tuple(code for index in _glob_set(globs).matching(self._relative(path))
                     for code in self.per_file_ignores[index][1])

    @property
    def root(self) -> Path | None:
        """The folder of the project file (relative settings are relative to it)."""
        return self.path.parent if self.path is not None else None

    def describe(self) -> str:
        """How a report names the file: '[tool.verl-gen] in /p/pyproject.toml' or the path."""
        if self.path is None:
            return "no project configuration"
        if self.path.name == PYPROJECT:
            return f"[tool.verl-gen] in {self.path}"
        return str(self.path)


NO_PROJECT = ProjectSettings()


def _glob_set(patterns: tuple[str, ...]) -> _PatternIndex:
    """The project's patterns compiled once per command and kept in its session (they come from a
    user's file: no module keeps them); bounded in bytes as every kept result is."""
    return kept(("project.glob_set", patterns), lambda: (_compiled(patterns), (), approx_size(patterns)))


def _compiled(patterns: tuple[str, ...]) -> _PatternIndex:
    """The project's globs compiled once (generator.base.glob_set): a glob (fnmatch: `*` crosses `/`)
    matches the relative path, the path below a folder it names, or, without a `/`, the name."""
    globs: list[Glob] = []
    owner: list[int] = []
    for index, raw in enumerate(patterns):
        pattern = raw.strip()
        pattern = pattern[2:] if pattern.startswith("./") else pattern
        shapes = [Glob(pattern, "path", True), Glob(pattern.rstrip("/") + "/*", "path", True)]
        if "/" not in pattern:
            shapes.append(Glob(pattern, "name", True))
        globs += shapes
        owner += [index] * len(shapes)
    return _PatternIndex(GlobSet(globs), owner)


class _PatternIndex(NamedTuple):
    globs: GlobSet
    owner: list[int]  # the project pattern each compiled glob comes from

    def matching(self, relative: str) -> list[int]:
        return sorted({self.owner[i] for i in self.globs.matching(relative)})


def find_project_file(start: str | Path) -> Path | None:
    """The project file that applies to a script in folder `start` (or to the file `start`):
    searched up to the project root (generator.project.root), never above it — a file in a folder
    above the repository is not the project's and must not change its verdicts."""
    import os


    # The real folder (what Path.resolve() gives): a script's is resolved once for its folder.
    where = os.path.realpath(start) if os.path.isdir(start) else str(real_parent(os.fspath(start)))
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    # project_root depends on the folders named on the command line and the working directory too
    return remembered(("project_file", where, tuple(boundary.given_folders()), cwd),
                      lambda: _find_project_file(where))


def _find_project_file(start_folder: str) -> Path | None:
    here = Path(start_folder)
    top = project_root(here)
    chain = [here, *here.parents][:MAX_LEVELS]
    for folder in chain[:chain.index(top) + 1] if top in chain else [here]:
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
        candidate = folder / PYPROJECT
        if candidate.is_file() and _table(candidate, _read_toml(candidate)) is not None:
            return candidate
    return None


def load_project(start: str | Path) -> ProjectSettings:
    """The settings that apply to a script in folder `start`; NO_PROJECT when there is no file."""
    enter(start)  # the script's project bounds what it makes gen read from here on
    path = find_project_file(start)
    if path is None:
        return NO_PROJECT

    found = path
    return remembered(("project_settings", found, boundary.current()),
                      lambda: settings_from_table(found, _table(found, _read_toml(found)) or {}))


def settings_at(path: Path) -> ProjectSettings:
    """The settings of the project file at `path` (found by find_project_file), without entering
    its project (generator.project.root.enter): for a command that only reads a setting."""
    return settings_from_table(path, _table(path, _read_toml(path)) or {})


def settings_from_table(path: Path, table: Mapping[str, object]) -> ProjectSettings:
    """Validate one `[tool.verl-gen]` table read from `path`."""
    where = f"{path}"
    # Checked in this order, so a table with several bad settings names the same first one.
    _refuse_unknown_keys(table, where)
    strings = _strings(table, where)
    lists = _string_lists(table, where)
    env_items = _env_items(table, where)
    per_file = _per_file_ignores(table, where)
    base = path.parent
    return ProjectSettings(
        path=path,
        verl_version=strings["verl-version"],
        config_dirs=tuple((base / d).resolve() for d in lists["config-dirs"]),
        select=_codes(lists["select"]),
        ignore=_codes(lists["ignore"]),
        gpu=strings["gpu"],
        args=lists["args"],
        env_items=env_items,
        exclude=_bounded(tuple(p for p in lists["exclude"] if p.strip()), len(per_file), where),
        per_file_ignores=tuple((str(glob), _codes(codes)) for glob, codes in per_file.items()),
    )


def _bounded(exclude: tuple[str, ...], more: int, where: str) -> tuple[str, ...]:
    """`exclude` and the per-file-ignores globs together within MAX_PATTERNS (60,000 patterns took
    8 s a script when each was matched in turn): past it, an InputError naming the limit."""
    PatternBudget().charge(len(exclude) + more, where, "exclude and per-file-ignores patterns")
    return exclude


def _refuse_unknown_keys(table: Mapping[str, object], where: str) -> None:
    """A setting gen does not know is refused (a typo would otherwise be silently ignored)."""
    for key in table:
        if key not in _KNOWN:
            raise InputError(f"{where}: unknown setting '{key}'; known: {', '.join(_KNOWN)}")


def _strings(table: Mapping[str, object], where: str) -> dict[str, str | None]:
    """The string settings, stripped; absent or blank -> None."""
    strings: dict[str, str | None] = {}
    for key in _STRINGS:
        value = table.get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{where}: '{key}' must be a string, got {type(value).__name__}")
        strings[key] = value.strip() if isinstance(value, str) and value.strip() else None
    return strings


def _string_lists(table: Mapping[str, object], where: str) -> dict[str, tuple[str, ...]]:
    """The list-of-strings settings; absent -> empty."""
    lists: dict[str, tuple[str, ...]] = {}
    for key in _STRING_LISTS:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f"{where}: '{key}' must be a list of strings")
        lists[key] = tuple(value)
    return lists


def _env_items(table: Mapping[str, object], where: str) -> tuple[tuple[str, str], ...]:
    """(NAME, value text) of the `env` table; its values are strings, numbers or booleans."""
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, (str, int, float, bool)) for v in env.values()):
        raise InputError(f"{where}: 'env' must be a table of NAME = \"value\"")
    return tuple((str(k), _env_text(v)) for k, v in env.items())


def _per_file_ignores(table: Mapping[str, object], where: str) -> dict[Any, Any]:
    """The `per-file-ignores` table: "glob" = ["CODE", ...]."""
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict) or not all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in per_file.values()):
        raise InputError(f"{where}: 'per-file-ignores' must be a table of \"glob\" = [\"CODE\", ...]")
    return per_file


def _codes(codes: Iterable[str]) -> tuple[str, ...]:
    """Rule codes as written, upper-cased; blank ones dropped."""
    return tuple(c.strip().upper() for c in codes if c.strip())


def _env_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _read_toml(path: Path) -> dict[str, object]:
    """The parsed project file, kept in the command's session while the file stays as it was
    (checking many scripts of one project reads its pyproject.toml once)."""
    return kept(("project.toml", path), lambda: _parsed_toml(path))


def _parsed_toml(path: Path) -> tuple[dict[str, object], list[Path], int]:
    try:
        text = read_text_input(path, limit=MAX_BYTES, what="project file")
    except OutsideProject:  # a link out of the repository: names the path already
        raise
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    if sys.version_info >= (3, 11):  # imported here: most scripts have no project file to read
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: not valid TOML ({err})") from None
    except RecursionError:  # `x = [[[[…` thousands deep
        raise InputError(f"{path}: the TOML nests too deeply to read") from None
    return document, [path], approx_size(document)


def _table(path: Path, document: dict[str, object]) -> dict[str, object] | None:
    """The verl-gen settings of a parsed file: `[tool.verl-gen]` of a pyproject.toml (None when
    absent); the whole document of a .verl-gen.toml (a `[tool.verl-gen]` table there too)."""
    node: object = document
    for part in TABLE:
        node = node.get(part) if isinstance(node, dict) else None
    if node is not None and not isinstance(node, dict):
        raise InputError(f"{path}: [tool.verl-gen] must be a table")
    if path.name == PYPROJECT:
        return node
    if node is not None:
        return node
    return document
