"""A small, fast stand-in for Hydra's defaults-list composition over a config directory.

Used by `tools/build_schemas.py` (configs without a `_generated_*.yaml`) and by
`generator.config` for recipe configs next to a script. It handles what verl's config trees
use: `group@package: option`, relative groups (`../optim@optim: megatron`), config entries
(`- actor`, `- ppo_megatron_trainer`), `_self_` (implicitly last), `optional`/`override`
prefixes, and `null` options. It does not run Hydra (that costs ~250 ms per call).

Group selections as Hydra makes them (`compose(dir, name, choices={"model_engine": "megatron"})`):
a choice replaces the option of the defaults entry with that override key (`model_engine`,
`actor@actor_rollout_ref.actor`) wherever it is in the tree; an `override group: option` entry
does the same for the config that lists it (`ppo_megatron_trainer.yaml` since 0.8.0); options
interpolated from other groups (`${model_engine}_actor`) follow the choices; `+group` keys
append `group/option` at the end of the primary config. A choice nothing in the tree takes,
or an option with no file, raises ComposeError with Hydra's words.

Values stay nested dicts here; `flatten` turns them into the dotted form the schema uses.

Bounded: one composition loads at most MAX_LOADS config files (a defaults list that fans out,
10 entries per level over 5 levels, would otherwise load 100,000 and take minutes); past it,
an InputError (one line, exit 2), as for a YAML file that is too large or an alias bomb.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Callable, NamedTuple

from generator.base.errors import InputError
from generator.schema.yamlload import load_yaml_file
from generator.base.files import DATA_LIMIT, probe_file, read_text_input

# verl's ppo_megatron_trainer loads about 30 files; recipes a few more.
MAX_LOADS = 500
# Bytes of YAML all those loads add up to (a file loaded twice counts twice: each load is
# copied and merged). verl's Megatron trainer composes ~200 KB; 400 defaults entries over one
# 800 KB file took > 300 s while MAX_LOADS only counted files (issue 21). The cap equals one
# data file's (generator.base.files.DATA_LIMIT): each copy and merge costs ~0.3 s per MB.
MAX_LOAD_BYTES = 4 * 1024 * 1024
# Bytes of YAML all the compositions of one run add up to: every call of a script checked (a
# run of `gen check` starts it again for each script, so a script's verdict does not depend on
# the scripts before it), or one command (`gen show A B`). 64 calls that each name their own
# config over one 4 MB group file took 4 min and 1.1 GB, as each composition stayed under
# MAX_LOAD_BYTES (issue 35: calls x configs). Compositions a run reuses are not counted again.
MAX_RUN_LOAD_BYTES = 2 * MAX_LOAD_BYTES
_RUN_BYTES = [0]


def start_run() -> None:
    """A new run: the calls x configs budget (MAX_RUN_LOAD_BYTES) starts again."""
    _RUN_BYTES[0] = 0

# Called with a config name ("ppo_megatron_trainer") that is not in the directory; returns
# the nested config to use instead, or None when it is unknown too.
Fallback = Callable[[str], "dict[str, Any] | None"]


class ComposeError(Exception):
    pass


_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][\w/.-]*)\}")


class _Choices:
    """The group selections of one composition: the caller's (which win, as Hydra's command line
    does), then each `override` entry met on the way down; and which of them the tree took."""

    def __init__(self, given: dict[str, str] | None) -> None:
        self.given = dict(given or {})
        self.chosen: dict[str, str | None] = {}  # override key -> option, as composed
        self.used: set[str] = set()
        self.caller: set[str] = set(self.given)  # the caller's own keys (the rest are `override` entries)

    def option_for(self, key: str, written: str | None, local: dict[str, str]) -> str | None:
        if key in self.given:
            self.used.add(key)
            return self.given[key]
        return local.get(key, written)

    def below(self, local: dict[str, str]) -> _Choices:
        """The choices for the configs a defaults list includes: its own `override` entries under
        the caller's. Records go to the same place."""
        if not local:
            return self
        child = _Choices(None)
        child.given = {**local, **self.given}
        child.chosen, child.used = self.chosen, self.used
        child.caller = self.caller
        return child


class _Budget:
    """Config files loaded so far in one composition, and each file's parsed YAML (a file used
    by several defaults entries is read and parsed once)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.loads = 0
        self.bytes = 0
        self.parsed: dict[Path, tuple[Any, int]] = {}

    def load(self, path: Path) -> Any:
        self.loads += 1
        if self.loads > MAX_LOADS:
            raise InputError(f"{self.root}: the defaults lists expand to more than {MAX_LOADS} config loads "
                             "(refused; Hydra would compose every one)")
        cached = self.parsed.get(path)
        if cached is None:
            try:
                size = path.stat().st_size  # charged before the file is parsed (the costly part)
            except OSError:
                size = 0
        else:
            size = cached[1]
        self.bytes += size
        _RUN_BYTES[0] += size
        if _RUN_BYTES[0] > MAX_RUN_LOAD_BYTES:
            raise InputError(f"{self.root}: the calls compose more than {MAX_RUN_LOAD_BYTES // (1024 * 1024)} MB "
                             "of YAML in all (refused; the run's config budget, calls x configs)")
        if self.bytes > MAX_LOAD_BYTES:
            raise InputError(f"{self.root}: the defaults lists load more than {MAX_LOAD_BYTES // (1024 * 1024)} MB "
                             "of YAML (refused; Hydra would compose every byte)")
        if cached is None:
            cached = self.parsed[path] = (load_yaml_file(path), size)
        data = cached[0]
        return copy.deepcopy(data)


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dict -> {dotted key: leaf}. Empty mappings stay as `{}` leaves (Hydra needs
    `+` to add keys under them), lists are leaves."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = root
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        last = parts[-1]
        if isinstance(value, dict) and isinstance(node.get(last), dict):
            continue
        node[last] = copy.deepcopy(value) if isinstance(value, (dict, list)) else value
    return root


def merge(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """OmegaConf-style merge of `other` into `base` (in place): mappings merge key by key,
    anything else replaces. Merging `{}` onto a mapping keeps the mapping."""
    for key, value in other.items():
        current = base.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merge(current, value)
        else:
            base[key] = copy.deepcopy(value) if isinstance(value, (dict, list)) else value
    return base


def _place(package: str, tree: dict[str, Any]) -> dict[str, Any]:
    if not package:
        return tree
    for part in reversed(package.split(".")):
        tree = {part: tree}
    return tree


def _join_package(parent: str, child: str) -> str:
    if child.startswith("_global_"):
        return child[len("_global_"):].lstrip(".")
    return ".".join(p for p in (parent, child) if p)


def _norm_group(current_group: str, written: str) -> str:
    """Resolve `../optim` against the group of the config that wrote it."""
    parts = [p for p in current_group.split("/") if p]
    for piece in written.split("/"):
        if piece == "..":
            if parts:
                parts.pop()
        elif piece and piece != ".":
            parts.append(piece)
    return "/".join(parts)


def compose(config_dir: str | Path, config_name: str, fallback: Fallback | None = None,
            choices: dict[str, str] | None = None) -> dict[str, Any]:
    """The nested config Hydra would compose for `config_name` in `config_dir` with the group
    selections `choices` (override key -> option; a key starting with '+' appends a group)."""
    root = Path(config_dir)
    name = config_name[:-5] if config_name.endswith(".yaml") else config_name
    selections = _Choices({k: v for k, v in (choices or {}).items() if not k.startswith("+")})
    tree = _load(root, "", name, "", fallback, _Budget(root), depth=0, primary=True, choices=selections)
    for key, option in (choices or {}).items():
        if not key.startswith("+"):
            continue
        group = key[1:].partition("@")[0]
        package = key.partition("@")[2] or group.replace("/", ".")
        if _find(root, group, option) is None:
            raise ComposeError(f"Could not find '{group}/{option}'")
        merge(tree, _load(root, group, option, package, None, _Budget(root), depth=1))
    unused = sorted(selections.caller - selections.used)
    if unused:
        raise ComposeError(f"Could not override '{unused[0]}'. No match in the defaults list.")
    return tree


def selections(config_dir: str | Path, config_name: str, choices: dict[str, str] | None = None
               ) -> dict[str, str | None]:
    """override key -> option of every group entry in the composed tree."""
    root = Path(config_dir)
    name = config_name[:-5] if config_name.endswith(".yaml") else config_name
    found = _Choices(choices)
    _load(root, "", name, "", None, _Budget(root), depth=0, primary=True, choices=found)
    return found.chosen


def _find(root: Path, group: str, name: str) -> Path | None:
    for candidate in (root / group / f"{name}.yaml", root / group / f"{name}.yml"):
        if probe_file(candidate):  # an absent file is noted: one created later changes the composition
            return candidate
    return None


def _load(
    root: Path,
    group: str,
    name: str,
    package: str,
    fallback: Fallback | None,
    budget: _Budget,
    depth: int,
    primary: bool = False,
    choices: _Choices | None = None,
    use_header: bool = False,
) -> dict[str, Any]:
    """The tree config `group/name` composes under `package`: its defaults list in order, each
    entry loaded the same way and merged, its own keys where `_self_` stands (last when the
    list does not name it), as Hydra composes."""
    if depth > 20:
        raise ComposeError(f"defaults list nests too deeply at {group}/{name}")
    path = _find(root, group, name)
    if path is None:
        return _from_fallback(root, group, name, package, fallback)
    data, package = _read_node(path, budget, package, use_header)
    defaults = data.pop("defaults", None) or []
    data.pop("hydra", None) if primary else None
    if "_self_" not in defaults:
        defaults = [*defaults, "_self_"]
    choices = choices if choices is not None else _Choices(None)
    local = _local_overrides(defaults, group, package)
    choices = choices.below(local)
    # The option each group of this list ends up with, for `${group}` in other entries.
    picked: dict[str, str] = {}
    result: dict[str, Any] = {}
    for entry in defaults:
        if entry == "_self_":
            merge(result, _place(package, data))
            continue
        target = _entry_target(entry, root, group, package, path, choices, local, picked)
        if target is None:
            continue
        if target.optional and _find(root, target.group, target.name) is None:
            continue
        merge(result, _load(root, target.group, target.name, target.package, fallback, budget, depth + 1,
                            choices=choices, use_header=target.use_header))
    return result


def _from_fallback(root: Path, group: str, name: str, package: str,
                   fallback: Fallback | None) -> dict[str, Any]:
    """A top-level config not in `root`, from the caller's fallback (e.g. the packaged
    schema) placed at `package`; else the error naming it."""
    if fallback is not None and not group:
        found = fallback(name)
        if found is not None:
            return _place(package, copy.deepcopy(found))
    raise ComposeError(f"config '{(group + '/' if group else '') + name}' not found in {root}")


def _read_node(path: Path, budget: _Budget, package: str, use_header: bool
               ) -> tuple[dict[Any, Any], str]:
    """(the file's mapping, the package it goes to: its `# @package` header where asked)."""
    data = budget.load(path) or {}
    if use_header:  # read only after the file itself was read (bounded, inside the project)
        header = _package_header(path)
        if header is not None:
            package = header
    if not isinstance(data, dict):
        raise ComposeError(f"{path} is not a mapping")
    return data, package


def _local_overrides(defaults: Any, group: str, package: str) -> dict[str, str]:
    """override key -> option of the list's `override group: option` entries."""
    # They choose for the configs this one includes (Hydra applies them to the whole
    # subtree); the caller's choices still win.
    local: dict[str, str] = {}
    for entry in defaults:
        if isinstance(entry, dict) and len(entry) == 1:
            (head, option), = entry.items()
            words = str(head).split()
            if "override" in words[:-1] and option is not None:
                local[_override_key(group, words[-1], package)] = str(option)
    return local


class _Target(NamedTuple):
    """The config one defaults entry includes, and how."""

    group: str
    name: str
    package: str
    use_header: bool
    optional: bool


def _entry_target(entry: Any, root: Path, group: str, package: str, path: Path, choices: _Choices,
                  local: dict[str, str], picked: dict[str, str]) -> _Target | None:
    """The config a defaults entry (other than `_self_`) includes, or None for one that
    includes nothing (an `override`, taken before; a group chosen as null)."""
    if isinstance(entry, str):
        written, _, pkg = entry.partition("@")
        target_group, _, target_name = _norm_group(group, written).rpartition("/")
        child_package = _join_package(package, pkg) if pkg else package
        return _Target(target_group, target_name, child_package, use_header=False, optional=False)
    if isinstance(entry, dict) and len(entry) == 1:
        return _group_target(entry, root, group, package, choices, local, picked)
    raise ComposeError(f"unsupported defaults entry {entry!r} in {path}")


def _group_target(entry: dict[Any, Any], root: Path, group: str, package: str, choices: _Choices,
                  local: dict[str, str], picked: dict[str, str]) -> _Target | None:
    """The option a `[optional] group[@pkg]: option` entry includes, after the choices made
    above it and `${group}` interpolation; recorded in `choices.chosen` and `picked`."""
    (head, option), = entry.items()
    words = str(head).split()
    if "override" in words[:-1]:
        return None  # taken above: it changes the option of an entry of an included config
    optional = "optional" in words[:-1]
    written, _, pkg = words[-1].partition("@")
    key = _override_key(group, words[-1], package)
    option = choices.option_for(key, None if option is None else str(option), local)
    if isinstance(option, str) and "${" in option:
        option = _INTERPOLATION.sub(lambda m: picked.get(m.group(1), m.group(0)), option)
        if "${" in option:
            raise ComposeError(f"cannot resolve the defaults entry {head}: {option}")
    choices.chosen[key] = option
    if option is None:
        return None
    picked[written] = str(option)
    target_group = _norm_group(group, written)
    target_name = str(option)
    child_package = _join_package(package, pkg if pkg else written.replace("/", "."))
    option_file = _find(root, target_group, target_name)
    if not optional and option_file is None:
        raise ComposeError(f"Could not find '{target_group}/{target_name}'")
    return _Target(target_group, target_name, child_package, use_header=not pkg, optional=optional)


_PACKAGE_HEADER = re.compile(r"#\s*@package\s+(\S+)")


def _package_header(path: Path) -> str | None:
    """The absolute package a `# @package X` line at the top of the file asks for (`_global_` ->
    the root), or None."""
    try:  # the same bounded, project-confined read as the file's YAML (it is loaded next)
        head = read_text_input(path, limit=DATA_LIMIT, what="YAML config")[:2048]
    except (InputError, OSError):
        return None
    for line in head.splitlines():
        text = line.strip()
        if not text:
            continue
        if not text.startswith("#"):
            return None
        found = _PACKAGE_HEADER.match(text)
        if found:
            value = found.group(1)
            return _join_package("", value) if value.startswith("_global_") else value
    return None


def _override_key(group: str, written: str, package: str) -> str:
    """The key a command line names a defaults entry by, as Hydra forms it (get_override_key):
    the group path as written (under the listing config's group), and `@` the absolute package
    when the entry moves it from the default one (`actor@actor_rollout_ref.actor`; `critic@critic`
    is just `critic`)."""
    path, _, pkg = written.partition("@")
    full = f"{group}/{path}" if group else path
    if not pkg:
        return full
    final = _join_package(package, pkg)
    default = _join_package(package, path.replace("/", "."))
    return full if final == default else f"{full}@{final}"
