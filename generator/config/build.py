"""Schema defaults + overrides with Hydra's semantics = the effective config of one call.

Mirrors hydra-core 1.3's `_apply_overrides_to_config` on a struct-mode config (checked against
real `hydra.compose` in tests/test_config_hydra.py and tests/test_compose_corpus.py):

  key=v    the key must exist (a leaf, or a mapping; a list index below a list); a mapping
           value merges and every key in it must exist; a list cannot replace a mapping
  +key=v   allowed when the key resolves to nothing (missing, null, `???`, or under a
           non-mapping); a dict/list value is always allowed
  ++key=v  always sets
  ~key     the key must resolve to a non-null value (`~key=v`: and equal v)

Everything is flat: {dotted key: leaf}, with inner mappings implied by the dotted prefixes
(`nodes`). No OmegaConf or Hydra import on this path (budget: a few ms per call).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Iterable

from generator.config.interp import MISSING, BrokenReference, Resolver, Unresolvable, has_interpolation
from generator.config.types import Backend, Config, KeyIssue
from generator.launch import UNKNOWN_OPEN, Invocation, Override, Provenance, Span
from generator.schema.core import inner_nodes

PPO_CONFIGS = ("ppo_trainer", "ppo_megatron_trainer")
PPO_ENTRY = "verl.trainer.main_ppo"
# Keys under these mapping names are free-form in verl (passed through to Megatron, vLLM...):
# a generated config adds unknown sub-keys with `+`.
OPEN_MAPPINGS = (
    "override_transformer_config",
    "override_ddp_config",
    "override_optimizer_config",
    "override_mcore_model_config",
    "override_config",
    "engine_kwargs",
    "apply_chat_template_kwargs",
    "mm_processor_kwargs",
    "ray_kwargs",
    "kwargs",
)


class FlatConfig:
    """The config being composed: leaves plus the inner nodes they imply."""

    def __init__(self, values: dict[str, Any], nodes: Iterable[str]) -> None:
        self.values = values
        self.nodes = set(nodes)

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
        self.nodes = {n for n in self.nodes if not (n == key or n.startswith(prefix))}

    def _add_prefixes(self, key: str) -> None:
        cut = key.rfind(".")
        while cut > 0:
            prefix = key[:cut]
            if prefix in self.values:  # a leaf (null, {}, scalar) becomes a mapping
                del self.values[prefix]
            self.nodes.add(prefix)
            cut = prefix.rfind(".")

    def set(self, key: str, value: Any) -> list[str]:
        """Set `key` the way OmegaConf.update(merge=True) does; returns the leaves written."""
        if key not in self.values and key not in self.nodes:
            index = _list_index(self, key)
            if index is not None and index[1] < len(self.values[index[0]]):
                items = list(self.values[index[0]])
                items[index[1]] = value
                self.values[index[0]] = items
                return [index[0]]
        if isinstance(value, dict) and value:
            if key in self.values:
                del self.values[key]
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
        self.values[key] = value
        return [key]

    def delete(self, key: str) -> None:
        if key in self.values:
            del self.values[key]
        else:
            self._drop_subtree(key)
        # A mapping whose last key was deleted stays, empty.
        parent = key.rpartition(".")[0]
        if parent and parent in self.nodes and not any(k.startswith(parent + ".") for k in self.values):
            self.nodes = {n for n in self.nodes if not (n == parent or n.startswith(parent + "."))}
            self.values[parent] = {}


# --- Hydra checks -----------------------------------------------------------------------------


def _list_index(flat: FlatConfig, key: str) -> tuple[str, int] | None:
    """(`list key`, index) when `key` is `some.list.N` with `some.list` a list leaf."""
    head, _, tail = key.rpartition(".")
    if head and tail.isdigit() and isinstance(flat.values.get(head), list):
        return head, int(tail)
    return None


def _change_problem(flat: FlatConfig, key: str, value: Any) -> str | None:
    """Why Hydra refuses `key=value` (no prefix), or None."""
    if not flat.exists(key):
        index = _list_index(flat, key)
        if index is not None and index[1] < len(flat.values[index[0]]):
            return None
        return "missing"
    if isinstance(value, dict):
        return _merge_problem(flat, key, value)
    if isinstance(value, list) and (flat.is_node(key) or flat.values.get(key) == {}):
        return "a list cannot replace a mapping"
    return None


def _merge_problem(flat: FlatConfig, key: str, value: dict[str, Any]) -> str | None:
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
            problem = _merge_problem(flat, child, sub_value)
            if problem:
                return problem
        elif isinstance(sub_value, list) and (flat.is_node(child) or flat.values.get(child) == {}):
            return "a list cannot replace a mapping"
    return None


def _structure_problem(flat: FlatConfig, key: str, value: Any) -> str | None:
    """`+`/`++` merge too: a list cannot go onto a mapping, nor a mapping onto a list."""
    if isinstance(value, list) and (flat.is_node(key) or flat.values.get(key) == {}):
        return "a list cannot replace a mapping"
    if isinstance(value, dict) and isinstance(flat.values.get(key), list):
        return "a mapping cannot replace a list"
    return None


_BROKEN = "<broken interpolation>"


def _select(flat: FlatConfig, resolver: Resolver, key: str) -> tuple[bool, Any]:
    """Hydra's OmegaConf.select(cfg, key, throw_on_missing=False): (known, value).
    known=False when the value depends on something we cannot see."""
    if flat.is_node(key):
        return True, {"<mapping>": True}
    if not flat.is_leaf(key):
        index = _list_index(flat, key)
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
            return True, _BROKEN  # OmegaConf raises on it: Hydra refuses the override
        except Unresolvable:
            return False, raw
        return True, None if value == MISSING else value
    return True, raw


# --- helpers ---------------------------------------------------------------------------------


def _suggest(key: str, flat: FlatConfig) -> str | None:
    """A "did you mean": the closest key under the same parent, else the one existing key with
    a close leaf name (compared on leaf names only: matching whole dotted keys over ~900 keys
    costs tens of ms)."""
    parent, _, leaf = key.rpartition(".")
    siblings = [k.rpartition(".")[2] for k in flat.values if k.rpartition(".")[0] == parent]
    siblings += [n.rpartition(".")[2] for n in flat.nodes if n.rpartition(".")[0] == parent]
    match = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.75)
    if match:
        return f"{parent}.{match[0]}" if parent else match[0]
    by_leaf: dict[str, list[str]] = {}
    for existing in flat.values:
        by_leaf.setdefault(existing.rpartition(".")[2], []).append(existing)
    for name in difflib.get_close_matches(leaf, list(by_leaf), n=3, cutoff=0.85):
        holders = by_leaf[name]
        if len(holders) == 1:
            return holders[0]
        same_top = [h for h in holders if h.split(".")[0] == key.split(".")[0]]
        if len(same_top) == 1:
            return same_top[0]
    return None


def _migration_issue(override: Override, key: str, version: str) -> KeyIssue | None:
    from generator.schema.migrations import added_later, history

    try:
        moved = history(version).get(key)
    except Exception:  # noqa: BLE001 - explanations are best effort, never fatal
        moved = None
    if moved is not None:
        if moved.new_key:
            detail = f"'{key}' is '{moved.new_key}' since verl {moved.since}"
            if moved.note:
                detail += f": {moved.note}"
            return KeyIssue(override, "renamed", detail, moved.new_key)
        detail = f"'{key}' was removed in verl {moved.since}"
        if moved.note and not moved.note.startswith("removed in"):
            detail += f": {moved.note}"
        return KeyIssue(override, "removed", detail, None)
    if moved is None:
        issue = _hand_move_issue(override, key, version)
        if issue is not None:
            return issue
    try:
        newer = added_later(version).get(key)
    except Exception:  # noqa: BLE001
        newer = None
    if newer is not None:
        return KeyIssue(override, "unknown-key", f"'{key}' is not in verl {version} (added in {newer})", None)
    return None


def _hand_move_issue(override: Override, key: str, version: str) -> KeyIssue | None:
    """A key this config lacks that a hand-written move covers, typically a backend-specific
    move whose old key survives in the other backend's config: still an unknown key here, with
    the move explained (and its target suggested when this release has it)."""
    from generator.schema import load
    from generator.schema.migrations import _move_for
    from generator.versions import parse

    found = _move_for(key)
    if found is None:
        return None
    move, target = found
    if parse(move.since) > parse(version):
        return None
    schema = load(version)
    has_target = target is not None and any(schema.has(target, name) for name in schema.config_names())
    detail = f"'{key}' is not in verl {version} {_backend_hint(move.backend)}"
    detail += f": since {move.since}, " + (move.note or (f"use '{target}'" if has_target else "no replacement"))
    return KeyIssue(override, "unknown-key", detail, target if has_target else None)


def _backend_hint(backend: str | None) -> str:
    return f"for {backend}" if backend else ""


def _parse(override: Override) -> tuple[str, str, Any, Any, str | None, bool]:
    """(key, op, value for the checks, value to store, grammar error, value_known) for one
    override as Hydra reads it."""
    from generator.overrides import parse_override

    text = override.text
    if override.unknowns or UNKNOWN_OPEN in text:
        # The value is partly unknown: check the grammar of the key and operator with a
        # neutral stand-in, keep the marked text as the value.
        stand_in = _replace_markers(text)
        parsed = parse_override(stand_in)
        stored = override.value if override.value is not None else parsed.value_text
        return parsed.key or override.key, parsed.op, parsed.value, stored, parsed.error, False
    parsed = parse_override(text)
    return parsed.key or override.key, parsed.op, parsed.value, parsed.value, parsed.error, True


def _replace_markers(text: str) -> str:
    out, pos = [], 0
    while True:
        start = text.find(UNKNOWN_OPEN, pos)
        if start < 0:
            out.append(text[pos:])
            return "".join(out)
        end = text.find(">", start)
        if end < 0:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:start])
        out.append("unknown")
        pos = end + 1


def _backend(config_name: str, values: dict[str, Any]) -> Backend:
    engine = values.get("model_engine")
    strategy = values.get("actor_rollout_ref.actor.strategy")
    if engine == "megatron" or strategy == "megatron":
        return "megatron"
    if engine in ("fsdp", "fsdp2", "dp") or strategy in ("fsdp", "fsdp2"):
        return "fsdp"
    if "megatron" in config_name:
        return "megatron"
    return "unknown"


# --- the public entry points -------------------------------------------------------------------


def apply_overrides(
    defaults: dict[str, Any],
    overrides: list[Override],
    *,
    version: str,
    config_name: str,
    nodes: Iterable[str] | None = None,
    entry: str = "verl.trainer.main_ppo",
    passes_args: bool = False,
    strict: bool = True,
) -> Config:
    """Compose `defaults` (flat) with `overrides` in order; resolve interpolations.

    strict=False: `defaults` only stand in for a config we could not read, so a key they lack
    is set without an issue (and `~` on it is ignored); the rest of the checks still apply."""
    flat = FlatConfig(dict(defaults), nodes if nodes is not None else inner_nodes(defaults))
    config = Config(version=version, schema=config_name, entry=entry, passes_args=passes_args)
    unknown: dict[str, str] = {}
    resolver = Resolver(flat.values, nodes=lambda: flat.nodes, unknown_of=unknown.get)

    from generator.schema.migrations import bad_value

    unchecked = 0
    for override in overrides:
        key, op, value, stored, error, value_known = _parse(override)
        if error is not None:
            config.key_issues.append(KeyIssue(override, "grammar", error))
            continue
        if not key:
            config.key_issues.append(KeyIssue(override, "grammar", "no key"))
            continue
        if key == "hydra" or key.startswith("hydra."):
            continue  # Hydra's own settings (hydra.run.dir ...), not part of the job config
        reason = "; ".join(override.unknowns) if override.unknowns else "value depends on an unknown"

        if op == "~":
            known, current = _select(flat, resolver, key)
            if not strict and not flat.exists(key):
                unchecked += 1
                continue
            if known and current is None:
                config.key_issues.append(KeyIssue(override, "delete-missing", f"'{key}' does not exist (or is null)"))
                continue
            if current is _BROKEN:
                config.key_issues.append(KeyIssue(override, "delete-missing", f"'{key}' is a broken interpolation"))
                continue
            if not flat.exists(key) and _list_index(flat, key) is not None:
                config.key_issues.append(KeyIssue(override, "bad-structure", f"cannot delete list element '{key}'"))
                continue
            if value is not None and value_known and known and value != current and not flat.is_node(key):
                config.key_issues.append(KeyIssue(
                    override, "delete-missing", f"the value of '{key}' is {current!r}, not {value!r}"))
                continue
            flat.delete(key)
            for k in [k for k in config.set_by if k == key or k.startswith(key + ".")]:
                del config.set_by[k]
            for k in [k for k in unknown if k == key or k.startswith(key + ".")]:
                del unknown[k]
            continue

        if op == "=":
            problem = _change_problem(flat, key, value)
            if problem is not None and not strict and problem.startswith("missing"):
                unchecked += 1
                problem = None
            if problem is not None:
                issue = None
                if problem.startswith("missing"):
                    missing_key = problem.partition(":")[2] or key
                    issue = _migration_issue(override, missing_key, version)
                    if issue is None:
                        blocked = flat.blocking_leaf(missing_key)
                        if blocked is not None:
                            current = flat.values[blocked]
                            hint = ("use +" if current in (None, {}) or isinstance(current, str) else "it is a value")
                            detail = f"'{missing_key}' is not in the config: '{blocked}' is {current!r} ({hint})"
                        else:
                            detail = f"'{missing_key}' is not in verl {version} {config_name}"
                        issue = KeyIssue(override, "unknown-key", detail, _suggest(missing_key, flat))
                else:
                    issue = KeyIssue(override, "bad-structure", f"cannot set '{key}': {problem}")
                config.key_issues.append(issue)
                continue
        else:
            problem = _structure_problem(flat, key, value)
            if problem is not None:
                config.key_issues.append(KeyIssue(override, "bad-structure", f"cannot set '{key}': {problem}"))
                continue
        if op == "+":
            known, current = _select(flat, resolver, key)
            if current is _BROKEN or not isinstance(value, (dict, list)):
                if known and current is not None:
                    shown = "a mapping" if flat.is_node(key) else "a broken interpolation" if current is _BROKEN else repr(current)
                    config.key_issues.append(KeyIssue(
                        override, "plus-on-existing",
                        f"'{key}' already has a value ({shown}); drop the '+'", key))
                    continue

        written = flat.set(key, value if value_known else stored)
        for leaf in written:
            config.set_by[leaf] = override
            unknown.pop(leaf, None)
            if not value_known:
                unknown[leaf] = reason
        if value_known and op in ("=", "+", "++"):
            change = bad_value(key, value, version)
            if change is not None:
                detail = f"{key}={value} is not accepted from verl {change.since}: {change.note}"
                config.key_issues.append(KeyIssue(override, "bad-value", detail, str(change.new_value)))
        # A removed key added with + or ++ is accepted by Hydra but ignored by verl.
        if strict and op in ("+", "++") and not (set(written) & set(defaults)) and not _under_open_mapping(key):
            issue = _migration_issue(override, key, version)
            if issue is not None and issue.kind in ("renamed", "removed"):
                config.key_issues.append(issue)

    if unchecked:
        config.notes.append(f"{unchecked} override(s) name keys the stand-in defaults lack; not checked")
    # Resolve interpolations over the final config.
    resolver.invalidate()
    resolved: dict[str, Any] = {}
    for key, raw in flat.values.items():
        if key in unknown:
            continue
        if has_interpolation(raw):
            try:
                resolved[key] = resolver.resolve(key)
            except Unresolvable as err:
                unknown[key] = str(err)
    for key, value in resolved.items():
        if isinstance(value, dict) and value:
            # An interpolation that points at a mapping: keep the config flat.
            del flat.values[key]
            for sub, sub_value in _flatten_value(value, key + "."):
                flat.values[sub] = sub_value
        else:
            flat.values[key] = value
    config.values = flat.values
    config.unknown = unknown
    config.backend = _backend(config_name, flat.values)
    return config


def _under_open_mapping(key: str) -> bool:
    """Keys below free-form mappings (engine kwargs, Megatron overrides) are passed through to
    another library, so a key verl's YAML dropped may still work there."""
    return any(part in OPEN_MAPPINGS for part in key.split(".")[:-1])


def _flatten_value(value: dict[str, Any], prefix: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, sub in value.items():
        if isinstance(sub, dict) and sub:
            out += _flatten_value(sub, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", sub))
    return out


def is_hydra_rejection(issue: KeyIssue) -> bool:
    """True when Hydra itself refuses the override (the run dies while composing the config).
    A renamed/removed key written without `+` is refused as an unknown key."""
    if issue.kind in ("unknown-key", "plus-on-existing", "delete-missing", "grammar", "bad-structure"):
        return True
    if issue.kind in ("renamed", "removed"):
        return issue.override.op == "=" or not issue.override.text.startswith("+")
    return False


# --- config selection --------------------------------------------------------------------------


def _strip_yaml(name: str) -> str:
    return name[:-5] if name.endswith(".yaml") else name[:-4] if name.endswith(".yml") else name


def _plain_path(config_path: str) -> str:
    return config_path[len("file://"):] if config_path.startswith("file://") else config_path


def is_relative_config_path(config_path: str | None) -> bool:
    """A `--config-path` Hydra resolves against the entry file's folder: not absolute, and not
    starting with a value the reader could not see (`$PWD/...`, which is absolute at run time)."""
    if not config_path:
        return False
    text = _plain_path(config_path)
    return UNKNOWN_OPEN not in text and not text.startswith("/")


def entry_dir(entry: str, script_dir: str | None, config_root: str | None) -> Path | None:
    found = _entry_dir(entry, script_dir, config_root)
    return found[0] if found is not None else None


def _entry_dir(entry: str, script_dir: str | None, config_root: str | None) -> tuple[Path, bool] | None:
    """The folder Hydra resolves a relative `--config-path` against: the directory of the file
    holding `@hydra.main` (for `python -m a.b.main` and `python a/b/main.py` alike), NOT the
    working directory. Found as the entry file next to the script or under `config_root`; else,
    for a module entry, its package folder there (config trees keep the folders without the
    Python files); else, for verl's own trainer, the installed verl's `verl/trainer/`.
    (folder, sure): `sure` is False when only a package folder stood in for a file that was not
    seen (it may live elsewhere); verl's own verl/trainer/ is always sure. None when unknown."""
    from generator.shell.pyentry import find_entry_file

    if not entry or UNKNOWN_OPEN in entry:
        return None
    script_path = Path(script_dir) / "_" if script_dir else None
    found = find_entry_file(entry, script_path, repo_root=config_root)
    if found is not None:
        return found.parent, True
    if entry.endswith(".py") or "." not in entry:
        return None
    package = Path(*entry.split(".")[:-1])
    bases: list[Path] = [Path(config_root)] if config_root else []
    if script_dir:
        here = Path(script_dir).resolve()
        bases += [here, *list(here.parents)[:6]]
    for base in bases:
        if (base / package).is_dir():
            return base / package, entry == PPO_ENTRY
    if entry == PPO_ENTRY:
        installed = _installed_verl_trainer()
        return (installed, True) if installed is not None else None
    return None


_INSTALLED: dict[str, Path | None] = {}


def _installed_verl_trainer() -> Path | None:
    """`verl/trainer/` of the verl importable here, found without importing verl."""
    if "verl" not in _INSTALLED:
        import importlib.util

        found = None
        try:
            spec = importlib.util.find_spec("verl")
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            if (Path(location) / "trainer").is_dir():
                found = Path(location) / "trainer"
                break
        _INSTALLED["verl"] = found
    return _INSTALLED["verl"]


def _candidate_dirs(config_path: str, script_dir: str | None, config_root: str | None,
                    entry: str | None = None) -> list[Path]:
    """Where `--config-path` points: absolute; relative = against the entry file's folder (as
    Hydra does; nothing when that folder is unknown); or, for paths that start with an unknown
    like `<?PWD>`, relative to the script's ancestors or `config_root`."""
    text = _plain_path(config_path)
    if UNKNOWN_OPEN in text and not text.startswith(UNKNOWN_OPEN):
        return []
    if text.startswith(UNKNOWN_OPEN):
        end = text.find(">")
        relative = Path(text[end + 1:].lstrip("/") if end > 0 else text)
        bases: list[Path] = []
        if config_root:
            bases.append(Path(config_root))
        if script_dir:
            here = Path(script_dir).resolve()
            bases += [here, *here.parents]
        return [base / relative for base in bases]
    if text.startswith("/"):
        return [Path(text)]
    where = entry_dir(entry or "", script_dir, config_root)
    return [Path(os.path.normpath(where / text))] if where is not None else []


def _find_config_dir(invocation: Invocation, name: str, script_dir: str | None, config_root: str | None) -> Path | None:
    if not invocation.config_path:
        return None
    for directory in _candidate_dirs(invocation.config_path, script_dir, config_root, invocation.entry):
        if (directory / f"{name}.yaml").is_file() or (directory / f"{name}.yml").is_file():
            return directory
    return None


def relative_config_path_status(invocation: Invocation, name: str | None, script_dir: str | None,
                                config_root: str | None) -> tuple[str, str | None, bool] | None:
    """For a relative `--config-path`: ("found" | "missing" | "unknown", the folder (or config
    file) Hydra looks for, whether the entry's folder is sure). None when the call has no
    relative --config-path."""
    if not is_relative_config_path(invocation.config_path):
        return None
    found = _entry_dir(invocation.entry, script_dir, config_root)
    if found is None:
        return ("unknown", None, False)
    where, sure = found
    directory = Path(os.path.normpath(where / _plain_path(invocation.config_path or "")))
    if not directory.is_dir():
        return ("missing", str(directory), sure)
    if name and UNKNOWN_OPEN not in name:
        stem = _strip_yaml(name)
        if not ((directory / f"{stem}.yaml").is_file() or (directory / f"{stem}.yml").is_file()):
            return ("missing", str(directory / f"{stem}.yaml"), sure)
    return ("found", str(directory), sure)


_RECIPE_CACHE: dict[tuple[str, str, str, float], tuple[dict[str, Any], str]] = {}


def _compose_recipe(directory: Path, name: str, version: str) -> tuple[dict[str, Any], str]:
    """Flat defaults of a config found next to the script, its defaults list resolved
    against the packaged PPO schema; and the PPO config it builds on."""
    from generator.schema import load
    from generator.schema.compose import compose, flatten, unflatten

    path = directory / f"{name}.yaml"
    mtime = path.stat().st_mtime if path.exists() else 0.0
    cache_key = (str(directory), name, version, mtime)
    if cache_key in _RECIPE_CACHE:
        cached, base = _RECIPE_CACHE[cache_key]
        return dict(cached), base
    schema = load(version)
    used: list[str] = []

    def fallback(config: str) -> dict[str, Any] | None:
        if config in schema.configs:
            used.append(config)
            return unflatten(schema.configs[config])
        return None

    flat = flatten(compose(directory, name, fallback=fallback))
    base = used[0] if used else ("ppo_megatron_trainer" if "megatron" in name else "ppo_trainer")
    _RECIPE_CACHE[cache_key] = (flat, base)
    return dict(flat), base


def build_config(
    invocation: Invocation,
    *,
    version: str,
    script_dir: str | None = None,
    config_root: str | None = None,
    entry_config: tuple[str | None, str | None] | None = None,
) -> Config:
    """The effective config of one trainer call under verl `version` (a schema id).

    script_dir:   the script's directory; relative and `<?PWD>/...` `--config-path`s are looked
                  up from it and its ancestors
    config_root:  one more base for those paths (e.g. the repository root)
    entry_config: (config dir, config name) from the entry module's `@hydra.main`, when the
                  caller found it (generator.pylaunch.entry_config); used when the call gives
                  no `--config-path` / `--config-name`

    When the call's config cannot be found, the PPO defaults stand in and keys they lack are
    not reported (the real config may define them); `Config.notes` says so.
    """
    from generator.schema import load
    from generator.schema.compose import ComposeError

    schema = load(version)
    notes: list[str] = []
    raw_name = invocation.config_name
    if raw_name and UNKNOWN_OPEN in raw_name:
        notes.append(f"--config-name {raw_name} is unknown; checked against the PPO defaults")
        raw_name = "?"
    if entry_config is None and invocation.entry != PPO_ENTRY and script_dir is not None:
        entry_config = _entry_default_config(invocation.entry, script_dir, config_root)
    entry_dir, entry_name = entry_config if entry_config else (None, None)
    if raw_name is None:
        raw_name = entry_name
    if raw_name is None and invocation.entry == PPO_ENTRY:
        raw_name = "ppo_trainer"
    name = _strip_yaml(raw_name) if raw_name and raw_name != "?" else None

    defaults: dict[str, Any] | None = None
    nodes = None
    schema_name = name or "ppo_trainer"
    strict = True
    if name in PPO_CONFIGS and name in schema.configs:
        defaults = schema.configs[name]
        nodes = schema.nodes(name)
    elif name is not None:
        directory = _find_config_dir(invocation, name, script_dir, config_root)
        if directory is None and invocation.config_path is None and entry_dir:
            candidate = Path(entry_dir)
            if (candidate / f"{name}.yaml").is_file():
                directory = candidate
        if directory is not None:
            try:
                defaults, _base = _compose_recipe(directory, name, version)
            except (ComposeError, OSError, ValueError) as err:
                notes.append(f"config {name}: {' '.join(str(err).split())}")
        else:
            notes.append(f"config {name} was not found next to the script")
    elif raw_name is None:
        notes.append(f"{invocation.entry}: its default config is not known")
    if defaults is None:
        strict = False
        fallback_name = "ppo_megatron_trainer" if name and "megatron" in name else "ppo_trainer"
        defaults = schema.configs[fallback_name]
        nodes = schema.nodes(fallback_name)
        notes.append(f"checked against verl {version} {fallback_name} defaults; keys they lack were not checked")
    config = apply_overrides(
        defaults,
        list(invocation.overrides),
        version=version,
        config_name=schema_name,
        nodes=nodes,
        entry=invocation.entry,
        passes_args=invocation.passes_args,
        strict=strict,
    )
    config.notes[:0] = notes
    config.approximate = not strict
    status = relative_config_path_status(invocation, name, script_dir, config_root)
    if status is not None:
        config.relative_config_path = (invocation.config_path or "", *status)
    return config


def _entry_default_config(entry: str, script_dir: str, config_root: str | None
                          ) -> tuple[str | None, str | None] | None:
    """(config dir, config name) of the entry module's `@hydra.main`, found next to the script."""
    from generator.shell.pyentry import entry_config

    found = entry_config(entry, Path(script_dir) / "_", repo_root=config_root)
    if found is None:
        return None
    return (str(found.config_dir) if found.config_dir else None, found.config_name)


def _synthetic(text: str, key: str, op: str, value: str | None, index: int) -> Override:
    span = Span(0, 0, index + 1)
    return Override(text=text, key=key, op=op, value=value, line=index + 1, word=span,  # type: ignore[arg-type]
                    provenance=Provenance(source="literal", span=None))


def needed_op(key: str, *, version: str, config_name: str = "ppo_megatron_trainer") -> str:
    """The prefix a script must write to set `key` to a scalar: "" when the key exists, "+"
    when it must be added."""
    from generator.schema import load

    return "" if load(version).has(key, config_name) else "+"


def overrides_from_dict(values: dict[str, Any], *, version: str, config_name: str) -> list[Override]:
    """Override objects for {key: python value}: `key=v` when the key exists, `+key=v` when it
    does not but may be added (under a free-form mapping, or below a null/{} leaf)."""
    from generator.overrides import format_value
    from generator.schema import load

    schema = load(version)
    defaults = schema.configs.get(config_name, {})
    flat = FlatConfig(defaults, schema.nodes(config_name) if config_name in schema.configs else ())
    out: list[Override] = []
    for index, (key, value) in enumerate(values.items()):
        text_value = format_value(value)
        op = ""
        if not flat.exists(key):
            blocked = flat.blocking_leaf(key)
            open_parent = _under_open_mapping(key)
            if blocked is not None and defaults.get(blocked) in (None, {}):
                op = "+"
            elif open_parent:
                op = "+"
        text = f"{op}{key}={text_value}"
        out.append(_synthetic(text, key, op or "=", text_value, index))
    return out


def config_from_overrides(
    overrides: list[str] | dict[str, Any],
    *,
    version: str,
    config_name: str = "ppo_megatron_trainer",
    entry: str = "verl.trainer.main_ppo",
) -> Config:
    """The effective config for generated configs and tests: `["a.b=1", "+c=2"]` as Hydra
    override text, or `{"a.b": 1}` as Python values."""
    from generator.overrides import parse_override
    from generator.schema import load

    schema = load(version)
    if isinstance(overrides, dict):
        items = overrides_from_dict(overrides, version=version, config_name=config_name)
    else:
        items = []
        for index, text in enumerate(overrides):
            parsed = parse_override(text)
            items.append(_synthetic(text, parsed.key, parsed.op, parsed.value_text, index))
    return apply_overrides(
        schema.configs[config_name] if config_name in schema.configs else schema.defaults(config_name),
        items,
        version=version,
        config_name=config_name,
        nodes=schema.nodes(config_name),
        entry=entry,
    )


def missing_mandatory(config: Config) -> list[str]:
    """Keys still `???` after the overrides: verl stops when it reads them (e.g.
    actor_rollout_ref.rollout.name from 0.6.0 on). Not a Hydra compose error."""
    return sorted(k for k, v in config.values.items() if v == MISSING and k not in config.unknown)
