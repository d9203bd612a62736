"""The Schema object: flat dotted defaults of verl's PPO configs for one release."""

from __future__ import annotations

import json
import os
from pathlib import Path
from functools import lru_cache, wraps
from typing import Any, Callable, Iterable, TypeVar

from generator.base.errors import InputError
from generator.verl.constants import PPO_CONFIGS, PPO_MEGATRON_CONFIG
from generator.verl.versions import parse
from generator.schema.compose import ComposeError
from generator.base.session import approx_size, current_part, kept

DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_CONFIG = PPO_MEGATRON_CONFIG
MANDATORY = "???"

# Packaged schemas, read once per process (package data: the same for every run).
_CACHE: dict[str, "Schema"] = {}


class _Registered:
    """Config folders registered as schemas in this command (the user's installed verl when its
    release is not packaged, a project's own config tree), and what was read from them: held by
    the command's session (generator.base.session), so no command's folders answer for the next."""

    __slots__ = ("dirs", "project_ids", "schemas", "sources", "unlisted")

    def __init__(self) -> None:
        self.dirs: dict[str, Path] = {}  # id -> folder
        self.schemas: dict[str, Schema] = {}  # id -> the schema read from its folder
        self.sources: dict[str, str] = {}  # id -> where the folder came from, in words
        self.unlisted: set[str] = set()  # ids kept out of available()
        self.project_ids: dict[Path, str] = {}  # a project's config folder -> its id (generator.schema.resolution)


def registered() -> _Registered:
    """The folders registered as schemas in the command running now."""
    return current_part("schema.registered", _Registered)


# How a schema file writes a float JSON has no literal for (inf, nan): {"__float__": "inf"}.
_FLOAT_TAG = "__float__"


def _restore(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and _FLOAT_TAG in value:
            return float(value[_FLOAT_TAG])
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    return value


def inner_nodes(keys: Iterable[str]) -> frozenset[str]:
    """The inner (mapping) nodes of a flat dotted config: every proper prefix of its keys."""
    found: set[str] = set()
    for key in keys:
        cut = key.rfind(".")
        while cut > 0:
            prefix = key[:cut]
            if prefix in found:
                break
            found.add(prefix)
            cut = prefix.rfind(".")
    return frozenset(found)


class Schema:
    """Defaults of each config (`ppo_trainer`, `ppo_megatron_trainer`) as {dotted_key: value}.

    Leaves are scalars, lists, or `{}` (an empty mapping: keys below it need `+`). A key with
    value "???" is mandatory. Interpolations are kept as text, e.g. "${oc.select:a.b,null}".
    """

    # A plain class with __slots__, not a dataclass: a check's start imports no dataclasses.
    __slots__ = ("version", "source", "configs", "mandatory_by_config", "notes", "groups", "config_dir",
                 "_nodes_cache", "_anywhere")
    version: str
    source: str
    configs: dict[str, dict[str, Any]]
    mandatory_by_config: dict[str, list[str]]
    # Why a file of the config folder was passed over (a stale _generated_*.yaml), for the report.
    notes: list[str]
    # Per config: what each Hydra config-group selection changes (tools/schema_groups.py builds
    # it; generator.schema.groups replays it). Empty for a folder read at run time.
    groups: dict[str, dict[str, Any]]
    # The config folder a schema read at run time comes from: its group selections are composed
    # from it (generator.schema.groups.select_groups_in_dir). None for a packaged schema.
    config_dir: Path | None
    _nodes_cache: dict[str, frozenset[str]]  # config name -> its inner nodes, made when first asked
    _anywhere: frozenset[str] | None  # every leaf and inner node of every config, made when first asked

    def __init__(self, version: str, source: str, configs: dict[str, dict[str, Any]],
                 mandatory_by_config: dict[str, list[str]] | None = None, notes: list[str] | None = None,
                 groups: dict[str, dict[str, Any]] | None = None, config_dir: Path | None = None) -> None:
        self.version = version
        self.source = source
        self.configs = configs
        self.mandatory_by_config = {} if mandatory_by_config is None else mandatory_by_config
        self.notes = [] if notes is None else notes
        self.groups = {} if groups is None else groups
        self.config_dir = config_dir
        self._nodes_cache = {}
        self._anywhere = None

    def groups_of(self, config_name: str) -> dict[str, Any]:
        """The config's group selections ({} when not recorded)."""
        return self.groups.get(config_name, {})

    def config_names(self) -> list[str]:
        return list(self.configs)

    def _config(self, config_name: str) -> dict[str, Any]:
        try:
            return self.configs[config_name]
        except KeyError:
            known = ", ".join(self.configs)
            raise InputError(f"verl {self.version} has no config '{config_name}' (known: {known})") from None

    def defaults(self, config_name: str = DEFAULT_CONFIG) -> dict[str, Any]:
        """A fresh copy of the flat defaults (lists and `{}` leaves are shared: do not mutate them)."""
        return dict(self._config(config_name))

    def keys(self, config_name: str = DEFAULT_CONFIG) -> Iterable[str]:
        return self._config(config_name).keys()

    def has(self, key: str, config_name: str = DEFAULT_CONFIG) -> bool:
        """True for a leaf and for an inner node (`actor_rollout_ref.actor.megatron`)."""
        return key in self._config(config_name) or key in self.nodes(config_name)

    def nodes(self, config_name: str = DEFAULT_CONFIG) -> frozenset[str]:
        """Every inner (mapping) node: the proper prefixes of the leaves."""
        cache = self._nodes_cache
        if config_name not in cache:
            cache[config_name] = inner_nodes(self._config(config_name))
        return cache[config_name]

    def has_anywhere(self, key: str) -> bool:
        """True for a leaf or an inner node of any config of this release. Asked for every key
        of every older release by the migrations (~21,000 times a corpus check): the set is
        made once."""
        if self._anywhere is None:
            every: set[str] = set()
            for name in self.configs:
                every.update(self.configs[name])
                every.update(self.nodes(name))
            self._anywhere = frozenset(every)
        return key in self._anywhere

    @property
    def mandatory(self) -> frozenset[str]:
        """Keys that must be set (`???` in verl's YAML), in any of the configs."""
        return frozenset(k for keys in self.mandatory_by_config.values() for k in keys)

    def all_keys(self) -> set[str]:
        """Leaves of every config of this release."""
        out: set[str] = set()
        for values in self.configs.values():
            out.update(values)
        return out


_LISTED: dict[int, list[str]] = {}  # the data folder's mtime -> its schema ids


def _packaged_ids() -> list[str]:
    """The ids of the packaged schema files. Asked thousands of times in a corpus check: the
    folder is listed again only when its mtime changes (a file added or removed)."""
    try:
        stamp = os.stat(DATA_DIR).st_mtime_ns
    except OSError:
        stamp = -1
    if stamp not in _LISTED:
        _LISTED.clear()
        _LISTED[stamp] = [p.stem for p in DATA_DIR.glob("*.json")]
    return list(_LISTED[stamp])


def _sort_key(version: str) -> tuple[tuple[int, ...], bool, str]:
    try:
        return (parse(version), "+" in version, version)
    except ValueError:
        return ((999,), False, version)


def is_packaged(version: str) -> bool:
    """A schema shipped with verl-gen (not one registered from a folder at run time)."""
    return version in _packaged_ids() and version not in registered().dirs


def available() -> list[str]:
    """Schema ids packaged with verl-gen (plus any registered from a directory and listed),
    oldest first. A project's own config tree is registered unlisted: it is not a release
    other releases are compared with (migrations, --verl-version), only the schema of its
    project's scripts."""
    folders = registered()
    return sorted(set(_packaged_ids()) | (set(folders.dirs) - folders.unlisted), key=_sort_key)


def normalize(version: str) -> str:
    text = version.strip()
    return text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text


def register_dir(version: str, config_dir: str | Path, source: str | None = None, *, listed: bool = True) -> None:
    """Make `load(version)` read verl's YAML from `config_dir` (e.g. an installed verl);
    `listed=False` keeps it out of `available()`. Registering the same folder again keeps
    what was already read from it."""
    folders = registered()
    if not listed:
        folders.unlisted.add(version)
    if folders.dirs.get(version) == Path(config_dir):
        return
    folders.dirs[version] = Path(config_dir)
    folders.schemas.pop(version, None)
    if source:
        folders.sources[version] = source


# A schema id for a project's own config tree: `<release>+project` (`+project2`... when one run
# meets several projects of the same release). Version-gated rules read the release before it.
PROJECT_MARK = "+project"


def project_base(version: str) -> str | None:
    """The release of a project schema id ('0.4.1' for '0.4.1+project'); None for other ids."""
    head, mark, _tail = version.partition(PROJECT_MARK)
    return head if mark else None


class UnreadableConfig(InputError):
    """A config folder whose YAML could not be read or composed (not YAML, a defaults entry
    this composer does not handle...). Bounds on hostile input stay plain InputErrors."""


def _from_dir(version: str, config_dir: Path) -> Schema:
    """The schema of a config folder: from the cache when its YAML is unchanged (generator/base/cache.py),
    else composed and then cached."""
    # lazy: a packaged schema needs neither the cache (hashlib) nor the YAML composer: `gen check FILE` (issue 22)
    from generator.base import cache
    from generator.base.files import digest_of, recording_reads

    key = cache.content_key(config_dir)
    hit = cache.load_entry(key, config_dir, digest_of) if key is not None else None
    if hit is not None:
        configs, mandatory, notes = hit
        return Schema(version, registered().sources.get(version, str(config_dir)), configs, mandatory, notes,
                      config_dir=config_dir)
    with recording_reads() as reads:  # every file the result depends on keys the entry (issue 35)
        schema = _compose_dir(version, config_dir)
    if key is not None:
        cache.store_entry(key, schema.configs, schema.mandatory_by_config, schema.notes,
                          cache.relative_deps(config_dir, reads))
    return schema


def _compose_dir(version: str, config_dir: Path) -> Schema:
    from generator.schema.generated import read_config  # lazy: see _from_dir

    configs: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for name in PPO_CONFIGS:
        try:
            chosen = read_config(config_dir, name)
        except (OSError, ValueError, ComposeError) as err:
            raise UnreadableConfig(f"cannot read verl config {name} in {config_dir}: {err}") from None
        if chosen is not None:
            configs[name] = chosen.flat
            if chosen.note:
                notes.append(chosen.note)
    if not configs:
        raise UnreadableConfig(f"no verl PPO config found in {config_dir}")
    mandatory = {n: sorted(k for k, v in c.items() if v == MANDATORY) for n, c in configs.items()}
    return Schema(version, registered().sources.get(version, str(config_dir)), configs, mandatory, notes,
                  config_dir=config_dir)


def load(version: str) -> Schema:
    """The schema for a release id from `available()`; InputError (one line) otherwise."""
    key = normalize(version)
    folders = registered()
    if key in folders.dirs:
        found = folders.schemas.get(key)
        if found is None:
            found = folders.schemas[key] = _from_dir(key, folders.dirs[key])
        return found
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    path = DATA_DIR / f"{key}.json"
    if not key or "/" in key or not path.is_file():
        raise InputError(f"no schema for verl '{version}'; known: {', '.join(available())}")
    try:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
    except (OSError, ValueError) as err:
        raise InputError(f"packaged schema {path.name} is unreadable: {err}") from None
    if _FLOAT_TAG in text:
        configs = {name: {k: _restore(v) if isinstance(v, (dict, list)) else v for k, v in values.items()}
                   for name, values in doc["configs"].items()}
        groups = {name: _restore(entry) for name, entry in doc.get("groups", {}).items()}
    else:  # nothing to restore (no packaged schema has one today): json.loads' fresh values as they are
        configs, groups = doc["configs"], doc.get("groups", {})
    schema = Schema(doc["version"], doc.get("source", ""), configs, doc.get("mandatory", {}), groups=groups)
    _CACHE[key] = schema
    return schema


# --- answers about releases, cached by where they come from ---------------------------------
Answer = TypeVar("Answer")


def release_cache(maxsize: int, *positions: int,
                  every_release: bool = False) -> Callable[[Callable[..., Answer]], Callable[..., Answer]]:
    """Cache a function of release ids (its arguments at `positions`; `every_release`: it also
    reads every release `available()` lists). An answer about packaged schemas is package data,
    the same for every run: kept at module level (functools.lru_cache of `maxsize`). An answer
    that reads a schema registered from a user's folder at run time is kept in the command's
    session instead (generator.base.session.kept, bounded in bytes), keyed by the Schema objects it
    read: a folder registered again under the same id is read again, never answered for by
    what another project's folder said."""
    def wrap(function: Callable[..., Answer]) -> Callable[..., Answer]:
        pure = lru_cache(maxsize=maxsize)(function)

        @wraps(function)
        def answer(*args: Any) -> Answer:
            folders = registered()
            if not folders.dirs:  # no folder registered in this command: package data only
                return pure(*args)
            ids = [normalize(args[i]) for i in positions if i < len(args) and isinstance(args[i], str)]
            if every_release:
                ids += sorted(set(folders.dirs) - folders.unlisted)
            user = [schema_id for schema_id in ids if schema_id in folders.dirs]
            if not user:
                return pure(*args)
            key = ("release_cache", function.__module__, function.__qualname__, args,
                   tuple((schema_id, folders.dirs[schema_id], _loaded(schema_id)) for schema_id in user))

            def compute() -> tuple[Answer, tuple[()], int]:
                value = function(*args)
                return value, (), approx_size(value)

            return kept(key, compute)

        answer.cache_clear = pure.cache_clear  # type: ignore[attr-defined]
        return answer

    return wrap


def _loaded(schema_id: str) -> Schema | None:
    """The schema registered under `schema_id` as it is read now; None when it cannot be."""
    try:
        return load(schema_id)
    except (InputError, ComposeError, OSError, ValueError):
        return None
