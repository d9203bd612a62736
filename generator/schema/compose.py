"""A small, fast stand-in for Hydra's defaults-list composition over a config directory.

Used by `tools/build_schemas.py` (configs without a `_generated_*.yaml`) and by
`generator.config` for recipe configs next to a script. It handles what verl's config trees
use: `group@package: option`, relative groups (`../optim@optim: megatron`), config entries
(`- actor`, `- ppo_megatron_trainer`), `_self_` (implicitly last), `optional`/`override`
prefixes, and `null` options. It does not run Hydra (that costs ~250 ms per call).

Values stay nested dicts here; `flatten` turns them into the dotted form the schema uses.

Bounded: one composition loads at most MAX_LOADS config files (a defaults list that fans out,
10 entries per level over 5 levels, would otherwise load 100,000 and take minutes); past it,
an InputError (one line, exit 2), as for a YAML file that is too large or an alias bomb.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

from generator.errors import InputError
from generator.schema.yamlload import load_yaml_file

# verl's ppo_megatron_trainer loads about 30 files; recipes a few more.
MAX_LOADS = 500
# Bytes of YAML all those loads add up to (a file loaded twice counts twice: each load is
# copied and merged). verl's Megatron trainer composes ~200 KB; 400 defaults entries over one
# 800 KB file took > 300 s while MAX_LOADS only counted files (issue 21).
MAX_LOAD_BYTES = 16 * 1024 * 1024

# Called with a config name ("ppo_megatron_trainer") that is not in the directory; returns
# the nested config to use instead, or None when it is unknown too.
Fallback = Callable[[str], "dict[str, Any] | None"]


class ComposeError(Exception):
    pass


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
        if path not in self.parsed:
            data = load_yaml_file(path)
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
            self.parsed[path] = (data, size)
        data, size = self.parsed[path]
        self.bytes += size
        if self.bytes > MAX_LOAD_BYTES:
            raise InputError(f"{self.root}: the defaults lists load more than {MAX_LOAD_BYTES // (1024 * 1024)} MB "
                             "of YAML (refused; Hydra would compose every byte)")
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


def compose(config_dir: str | Path, config_name: str, fallback: Fallback | None = None) -> dict[str, Any]:
    """The nested config Hydra would compose for `config_name` in `config_dir` (no overrides)."""
    root = Path(config_dir)
    name = config_name[:-5] if config_name.endswith(".yaml") else config_name
    return _load(root, "", name, "", fallback, _Budget(root), depth=0, primary=True)


def _find(root: Path, group: str, name: str) -> Path | None:
    for candidate in (root / group / f"{name}.yaml", root / group / f"{name}.yml"):
        if candidate.is_file():
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
) -> dict[str, Any]:
    if depth > 20:
        raise ComposeError(f"defaults list nests too deeply at {group}/{name}")
    path = _find(root, group, name)
    if path is None:
        if fallback is not None and not group:
            found = fallback(name)
            if found is not None:
                return _place(package, copy.deepcopy(found))
        raise ComposeError(f"config '{(group + '/' if group else '') + name}' not found in {root}")
    data = budget.load(path) or {}
    if not isinstance(data, dict):
        raise ComposeError(f"{path} is not a mapping")
    defaults = data.pop("defaults", None) or []
    data.pop("hydra", None) if primary else None
    if "_self_" not in defaults:
        defaults = [*defaults, "_self_"]
    result: dict[str, Any] = {}
    for entry in defaults:
        if entry == "_self_":
            merge(result, _place(package, data))
            continue
        if isinstance(entry, str):
            written, _, pkg = entry.partition("@")
            optional = False
            target_group, _, target_name = _norm_group(group, written).rpartition("/")
            child_package = _join_package(package, pkg) if pkg else package
        elif isinstance(entry, dict) and len(entry) == 1:
            (head, option), = entry.items()
            words = str(head).split()
            optional = "optional" in words[:-1]
            written, _, pkg = words[-1].partition("@")
            if option is None:
                continue
            target_group = _norm_group(group, written)
            target_name = str(option)
            child_package = _join_package(package, pkg if pkg else written.replace("/", "."))
        else:
            raise ComposeError(f"unsupported defaults entry {entry!r} in {path}")
        if optional and _find(root, target_group, target_name) is None:
            continue
        merge(result, _load(root, target_group, target_name, child_package, fallback, budget, depth + 1))
    return result
