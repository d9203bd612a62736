"""The config being composed, as Hydra sees it: flat dotted leaves plus the inner mappings they
imply, with OmegaConf's ways to set, delete and select a key, and the structural checks Hydra
makes before it changes one (is the key there, may a list replace a mapping...).
"""

from __future__ import annotations

from typing import Any, Iterable

from generator.config.interp import MISSING, BrokenReference, Resolver, Unresolvable, has_interpolation
from generator.reading.launch_script import UNKNOWN_OPEN


class FlatConfig:
    """The config being composed: leaves plus the inner nodes they imply."""

    def __init__(self, values: dict[str, Any], nodes: Iterable[str]) -> None:
        self.values = values
        self.nodes = set(nodes)
        # Every leaf key its methods set, replaced or deleted since it was made: a key not in it
        # still holds the value (the same object) it was made with, or is still absent.
        self.touched: set[str] = set()
        # Bumped whenever a key appears or disappears, so that an index built over the keys
        # (history's "did you mean") knows when it is stale. Values changing do not bump it.
        self.generation = 0

    # --- structure ------------------------------------------------------------------------

    def is_node(self, key: str) -> bool:
        return key in self.nodes

    def is_leaf(self, key: str) -> bool:
        return key in self.values

    def exists(self, key: str) -> bool:
        return key in self.values or key in self.nodes

    def blocking_leaf(self, key: str) -> str | None:
        """The nearest proper prefix of `key` that is a leaf (so `key` cannot exist below it)."""
        cut = key.find(".")
        while cut > 0:
            prefix = key[:cut]
            if prefix in self.values:
                return prefix
            if prefix not in self.nodes:
                return None
            cut = key.find(".", cut + 1)
        return None

    def children(self, key: str) -> list[str]:
        prefix = key + "."
        return [k for k in self.values if k.startswith(prefix)]

    def _drop_subtree(self, key: str) -> None:
        prefix = key + "."
        for k in [k for k in self.values if k.startswith(prefix)]:
            del self.values[k]
            self.touched.add(k)
        self.nodes = {n for n in self.nodes if not (n == key or n.startswith(prefix))}
        self.generation += 1

    def _add_prefixes(self, key: str) -> None:
        cut = key.rfind(".")
        while cut > 0:
            prefix = key[:cut]
            if prefix in self.values:  # a leaf (null, {}, scalar) becomes a mapping
                del self.values[prefix]
                self.touched.add(prefix)
                self.generation += 1
            if prefix not in self.nodes:
                self.nodes.add(prefix)
                self.generation += 1
            cut = prefix.rfind(".")

    def set(self, key: str, value: Any) -> list[str]:
        """Set `key` the way OmegaConf.update(merge=True) does; returns the leaves written."""
        if key not in self.values and key not in self.nodes:
            index = list_index(self, key)
            if index is not None and index[1] < len(self.values[index[0]]):
                items = list(self.values[index[0]])
                items[index[1]] = value
                self.values[index[0]] = items
                self.touched.add(index[0])
                return [index[0]]
        if isinstance(value, dict) and value:
            if key in self.values:
                del self.values[key]
                self.touched.add(key)
            written: list[str] = []
            for sub, sub_value in value.items():
                written += self.set(f"{key}.{sub}", sub_value)
            return written
        if isinstance(value, dict):  # {} onto a mapping keeps the mapping
            if key in self.nodes:
                return []
        elif key in self.nodes:
            self._drop_subtree(key)
        self._add_prefixes(key)
        if key not in self.values:
            self.generation += 1
        self.values[key] = value
        self.touched.add(key)
        return [key]

    def expand(self, key: str, leaves: Iterable[tuple[str, Any]]) -> None:
        """Replace the leaf `key` by the flat `leaves` below it (a mapping it turned out to hold)."""
        del self.values[key]
        self.touched.add(key)
        for sub, sub_value in leaves:
            self.values[sub] = sub_value
            self.touched.add(sub)
        self.generation += 1

    def delete(self, key: str) -> None:
        self.generation += 1
        if key in self.values:
            del self.values[key]
            self.touched.add(key)
        else:
            self._drop_subtree(key)
        # A mapping whose last key was deleted stays, empty.
        parent = key.rpartition(".")[0]
        if parent and parent in self.nodes and not any(k.startswith(parent + ".") for k in self.values):
            self.nodes = {n for n in self.nodes if not (n == parent or n.startswith(parent + "."))}
            self.values[parent] = {}
            self.touched.add(parent)


def list_index(flat: FlatConfig, key: str) -> tuple[str, int] | None:
    """(`list key`, index) when `key` is `some.list.N` with `some.list` a list leaf."""
    head, _, tail = key.rpartition(".")
    if head and tail.isdigit() and isinstance(flat.values.get(head), list):
        return head, int(tail)
    return None


def change_problem(flat: FlatConfig, key: str, value: object) -> str | None:
    """Why Hydra refuses `key=value` (no prefix), or None."""
    if not flat.exists(key):
        index = list_index(flat, key)
        if index is not None and index[1] < len(flat.values[index[0]]):
            return None
        return "missing"
    if isinstance(value, dict):
        return merge_problem(flat, key, value)
    if isinstance(value, list) and (flat.is_node(key) or flat.values.get(key) == {}):
        return "a list cannot replace a mapping"
    return None


def merge_problem(flat: FlatConfig, key: str, value: dict[str, Any]) -> str | None:
    current = flat.values.get(key, None) if flat.is_leaf(key) else None
    if flat.is_leaf(key) and current != {}:
        if isinstance(current, list):
            return "a mapping cannot replace a list"
        return None  # a scalar/null leaf is replaced by the mapping
    for sub, sub_value in value.items():
        child = f"{key}.{sub}"
        if not flat.exists(child):
            return f"missing:{child}"
        if isinstance(sub_value, dict):
            problem = merge_problem(flat, child, sub_value)
            if problem:
                return problem
        elif isinstance(sub_value, list) and (flat.is_node(child) or flat.values.get(child) == {}):
            return "a list cannot replace a mapping"
    return None


def structure_problem(flat: FlatConfig, key: str, value: object) -> str | None:
    """`+`/`++` merge too: a list cannot go onto a mapping, nor a mapping onto a list."""
    if isinstance(value, list) and (flat.is_node(key) or flat.values.get(key) == {}):
        return "a list cannot replace a mapping"
    if isinstance(value, dict) and isinstance(flat.values.get(key), list):
        return "a mapping cannot replace a list"
    parts = key.split(".")
    for cut in range(1, len(parts)):  # a key under a list: OmegaConf indexes lists by integers only
        parent = ".".join(parts[:cut])
        if isinstance(flat.values.get(parent), list) and not parts[cut].isdigit():
            return f"'{parent}' is a list: '{parts[cut]}' is not an index"
    return None


BROKEN = "<broken interpolation>"


def select(flat: FlatConfig, resolver: Resolver, key: str) -> tuple[bool, Any]:
    """Hydra's OmegaConf.select(cfg, key, throw_on_missing=False): (known, value).
    known=False when the value depends on something we cannot see."""
    if flat.is_node(key):
        return True, {"<mapping>": True}
    if not flat.is_leaf(key):
        index = list_index(flat, key)
        if index is not None:
            items = flat.values[index[0]]
            return True, items[index[1]] if index[1] < len(items) else None
        return True, None
    raw = flat.values[key]
    if raw == MISSING:
        return True, None
    if isinstance(raw, str) and UNKNOWN_OPEN in raw:
        return False, raw
    if has_interpolation(raw):
        resolver.invalidate()
        try:
            value = resolver.resolve(key)
        except BrokenReference:
            return True, BROKEN  # OmegaConf raises on it: Hydra refuses the override
        except Unresolvable:
            return False, raw
        return True, None if value == MISSING else value
    return True, raw
