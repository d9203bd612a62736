"""Hydra config-group selections on a launch line (`model_engine=megatron`, `critic=megatron_critic`,
`+profiler=profiler`), applied to a packaged schema's defaults as verl's `@hydra.main` composes them.

Hydra reads an override as a group selection when its key names a config group of the config
folder (`repo.group_exists`), whatever its position on the line, and composes the defaults tree with
every selection before it applies a single value override. The packaged schema records, per config,
what each selection changes (built with real Hydra by tools/schema_groups.py); this module replays
them, and says what Hydra refuses, in Hydra's words:

  group=opt    the group must be in the defaults tree ("Could not override 'g'. No match in the
               defaults list.") and have the option ("Could not find 'g/opt'")
  +group=opt   the group must not be in the tree yet ("Could not append to config. An item is
               already at 'g'.")
  ++group=opt  either

Exact for one selection per group (what launch lines do); a selection of a group another
selection already re-chose (`model_engine=megatron critic=dp_critic`) is approximated and said so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from generator.reading.launch_script import UNKNOWN_OPEN, Override
from generator.reading.overrides import parse_override
from generator.schema.compose import compose, flatten, ComposeError, selections
from generator.base.session import approx_size, kept


class GroupRefusal(NamedTuple):
    override: Override
    detail: str


class GroupSelections:
    """The defaults after the call's group selections, and what was chosen.

    defaults   flat defaults to apply the value overrides to
    consumed   id(override) -> the flat keys its selection set (its provenance)
    chosen     override key -> option, in the order applied
    refusals   selections Hydra refuses (the call dies while composing)
    notes      why a selection could not be replayed exactly (unknown option, added search path)
    exact      False when a selection could not be replayed: keys were not all known
    """

    # A plain class with __slots__, not a dataclass: a check's start imports no dataclasses.
    __slots__ = ("defaults", "consumed", "chosen", "refusals", "notes", "exact")
    defaults: dict[str, Any]
    consumed: dict[int, tuple[str, ...]]
    chosen: dict[str, str]
    refusals: list[GroupRefusal]
    notes: list[str]
    exact: bool

    def __init__(self, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.consumed = {}
        self.chosen = {}
        self.refusals = []
        self.notes = []
        self.exact = True

    def refuse(self, override: Override, detail: str) -> None:
        self.refusals.append(GroupRefusal(override, detail))
        self.consumed[id(override)] = ()  # reported once, as a selection, not again as a key


def _override_key(key: str, package: str | None) -> str:
    return f"{key}@{package}" if package else key


def _apply_delta(flat: dict[str, Any], delta: dict[str, Any]) -> tuple[str, ...]:
    for key in delta.get("unset", ()):
        flat.pop(key, None)
    changed = delta.get("set", {})
    # A leaf that becomes a mapping (or the reverse) loses what was below / above it.
    for key in changed:
        prefix = key + "."
        for old in [k for k in flat if k.startswith(prefix)]:
            if old not in changed:
                flat.pop(old)
    flat.update(changed)
    return tuple(changed)


def _searchpath_added(overrides: list[Override]) -> bool:
    return any(o.key == "hydra.searchpath" or o.key.startswith("hydra.searchpath") for o in overrides)


def _key_text(text: str) -> str:
    """What Hydra reads as the key of an override it accepts: the text between the operator and
    the first `@` (a package) or `=` (its key grammar has no blanks and no other way to end)."""
    rest = text[2:] if text.startswith("++") else text[1:] if text.startswith(("+", "~")) else text
    return rest.split("=", 1)[0].split("@", 1)[0]


def _pending(dirs: set[str], overrides: list[Override], result: GroupSelections
             ) -> list[tuple[Override, str, str, str]]:
    """The group selections among `overrides`: (override, op, override key, option). A selection
    whose option the reader could not see is consumed with a note (its keys are not known)."""
    pending: list[tuple[Override, str, str, str]] = []
    for override in overrides:
        if override.op == "~" or not override.key:
            continue
        text = override.text if UNKNOWN_OPEN not in override.text else override.text.split("=", 1)[0] + "=x"
        if _key_text(text) not in dirs:
            continue  # most overrides: what Hydra would read as the key names no group
        parsed = parse_override(text)
        if parsed.error or parsed.key not in dirs:
            continue
        if override.unknowns or UNKNOWN_OPEN in override.text or not isinstance(parsed.value, str):
            result.consumed[id(override)] = ()
            result.exact = False
            result.notes.append(f"{override.text}: the option of config group '{parsed.key}' is unknown; "
                                "keys it adds were not checked")
            continue
        pending.append((override, parsed.op, _override_key(parsed.key, parsed.package), parsed.value))
    return pending


def select_groups(groups: dict[str, Any] | None, defaults: dict[str, Any],
                  overrides: list[Override]) -> GroupSelections:
    """Apply the group selections among `overrides` to `defaults` (a flat config), from the
    packaged record `groups` (Schema.groups_of; None or {} = nothing known: nothing consumed)."""
    result = GroupSelections(defaults)
    if not groups:
        return result
    searchpath = _searchpath_added(overrides)
    pending = _pending(set(groups.get("dirs", ())), overrides, result)
    if not pending:
        return result
    result.defaults = dict(defaults)  # the caller's defaults are shared: never changed in place

    flat = result.defaults
    level: dict[str, Any] = dict(groups.get("choices", {}))
    implied: dict[str, str] = {}
    progress = True
    while pending and progress:
        progress = False
        for item in list(pending):
            override, op, key, option = item
            if key not in level:
                continue
            pending.remove(item)
            progress = True
            if op == "+":
                result.refuse(override, f"Could not append to config. An item is already at '{key}'")
                continue
            entry = level[key]
            result.consumed[id(override)] = ()
            if key in implied and implied[key] != option:
                result.exact = False
                result.notes.append(f"{override.text}: '{key}' was already re-chosen as {implied[key]} by another "
                                    "selection; its keys are approximate")
            if option == entry.get("default") and key not in implied:
                result.chosen[key] = option
                continue
            delta = entry.get("options", {}).get(option)
            if delta is None:
                _missing_option(result, override, entry["group"], option, entry.get("options", {}),
                                entry.get("default"), searchpath)
                continue
            if "error" in delta:
                result.refuse(override, str(delta["error"]))
                continue
            result.consumed[id(override)] = _apply_delta(flat, delta)
            result.chosen[key] = option
            implied.update(delta.get("implies", {}))
            level.update(delta.get("choices", {}))
    appends = groups.get("appends", {})
    for override, op, key, option in pending:
        group = key.partition("@")[0]
        if op == "=":
            result.refuse(override, f"Could not override '{key}'. No match in the defaults list. "
                          f"To append to your default list use +{override.text}")
            continue
        options = appends.get(group)
        delta = options.get(option) if options else None
        if delta is None or "@" in key:
            if searchpath or "@" in key:
                result.consumed[id(override)] = ()
                result.exact = False
                result.notes.append(f"{override.text}: not replayed (group added with a package or from an "
                                    "added search path); keys it adds were not checked")
            else:
                _missing_option(result, override, group, option, options or {}, None, False)
            continue
        if "error" in delta:
            result.refuse(override, str(delta["error"]))
            continue
        result.consumed[id(override)] = _apply_delta(flat, delta)
        result.chosen[key] = option
    return result


def _missing_option(result: GroupSelections, override: Override, group: str, option: str,
                    options: dict[str, Any], default: str | None, searchpath: bool) -> None:
    if searchpath:
        # The option may live in a folder the call adds to Hydra's search path (a plugin package).
        result.consumed[id(override)] = ()
        result.exact = False
        result.notes.append(f"{override.text}: option '{option}' of group '{group}' is not in this config "
                            "folder (the call adds a search path); keys it adds were not checked")
        return
    known = sorted({*options, *([default] if default else [])})
    result.refuse(override, f"Could not find '{group}/{option}' (options: {', '.join(known) or 'none'})")


def group_dirs(config_dir: Path) -> frozenset[str]:
    """Every config group (folder) under a config folder, as Hydra names them (`rollout`,
    `actor`, `model_engine`); bounded like any read of a user's tree. Kept in the command's
    session while the folder and every group folder stat as they did (a folder added or removed
    changes its parent's stamp)."""
    return kept(("schema.groups.dirs", str(config_dir)), lambda: _group_dirs(config_dir))


def _group_dirs(config_dir: Path) -> tuple[frozenset[str], list[Path], int]:
    found: set[str] = set()
    for count, path in enumerate(sorted(config_dir.rglob("*"))):
        if count > 5000:
            break
        if path.is_dir() and not path.is_symlink():
            found.add(path.relative_to(config_dir).as_posix())
    dirs = frozenset(found)
    return dirs, [config_dir, *(config_dir / name for name in sorted(dirs))], approx_size(dirs)


def _composed(config_dir: Path, name: str, choices: dict[str, str]) -> dict[str, Any]:
    """The config composed with these group choices, flat; kept in the command's session, keyed
    by every file the composition read or looked for."""
    return kept(("schema.groups.composed", str(config_dir), name, tuple(sorted(choices.items()))),
                lambda: _compose_now(config_dir, name, choices))


def _compose_now(config_dir: Path, name: str, choices: dict[str, str]) -> tuple[dict[str, Any], list[str], int]:
    from generator.base.files import recording_reads

    with recording_reads() as reads:
        flat = flatten(compose(config_dir, name, choices=choices))
    return flat, list(reads), approx_size(flat)


def select_groups_in_dir(config_dir: Path, name: str, defaults: dict[str, Any],
                         overrides: list[Override]) -> GroupSelections:
    """The same for a config folder read at run time (a checkout's or the installed verl's):
    the config is composed again with the selections (generator.schema.compose follows Hydra's
    defaults-list rules), and a selection Hydra refuses is refused with its words."""
    result = GroupSelections(defaults)
    pending = _pending(set(group_dirs(config_dir)), overrides, result)
    if not pending:
        return result
    searchpath = _searchpath_added(overrides)
    try:
        in_tree = set(selections(config_dir, name))
    except (ComposeError, OSError, ValueError) as err:
        result.notes.append(f"config groups of {name} could not be read: {err}")
        result.exact = False
        return result
    choices: dict[str, str] = {}
    chosen: list[tuple[Override, str, str]] = []
    for override, op, key, option in pending:
        if op == "+" and key in in_tree:
            result.refuse(override, f"Could not append to config. An item is already at '{key}'")
            continue
        wanted = f"+{key}" if op == "+" or (op == "++" and key not in in_tree) else key
        trial = {**choices, wanted: option}
        try:
            _composed(config_dir, name, trial)
        except (ComposeError, OSError, ValueError) as err:
            if searchpath and "Could not find" in str(err):
                result.consumed[id(override)] = ()
                result.exact = False
                result.notes.append(f"{override.text}: option '{option}' is not in this config folder (the call "
                                    "adds a search path); keys it adds were not checked")
            else:
                hint = (f". To append to your default list use +{override.text}"
                        if "No match in the defaults list" in str(err) else "")
                result.refuse(override, f"{err}{hint}")
            continue
        choices = trial
        chosen.append((override, key, option))
    if not chosen:
        return result
    flat = _composed(config_dir, name, choices)
    changed = [k for k, v in flat.items() if k not in defaults or defaults[k] != v]
    owners = {id(o): [] for o, _k, _opt in chosen}  # type: dict[int, list[str]]
    for leaf in changed:
        owner = next((o for o, key, _opt in chosen if leaf.startswith(_package_of(key) + ".")), chosen[0][0])
        owners[id(owner)].append(leaf)
    for override, key, option in chosen:
        result.consumed[id(override)] = tuple(owners[id(override)])
        result.chosen[key] = option
    result.defaults = dict(flat)
    return result


def _package_of(key: str) -> str:
    group, _, package = key.partition("@")
    return package or group.replace("/", ".")
