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

from typing import Any, Iterable, NamedTuple

from generator.config.flat import (
    BROKEN,
    FlatConfig,
    change_problem,
    list_index,
    select,
    structure_problem,
)
from generator.config.defaults_interp import DefaultsResolution, changed_keys
from generator.config.history import migration_issue, suggest
from generator.config.interp import Resolver, Unresolvable
from generator.config.types import Backend, Config, KeyIssue
from generator.reading.launch_script import UNKNOWN_OPEN, Override
from generator.schema.release_schema import inner_nodes
from generator.schema.groups import GroupSelections
from generator.verl.constants import OPEN_MAPPINGS, PPO_ENTRY
from generator.reading.overrides import parse_override
from generator.schema.migrations import bad_value

# Keys that interpolations pointing at mappings may add to one config, all copies together
# (verl's largest config has ~1,500 keys; a few `${actor_rollout_ref.actor}` copies stay far below).
MAX_COPIED_KEYS = 20_000


class ParsedOverride(NamedTuple):
    """One override as Hydra reads it. `value` is what the checks compare; `stored` is what
    the config keeps (the marked text when the value depends on an unknown)."""

    key: str
    op: str
    value: Any
    stored: Any
    error: str | None
    value_known: bool


def parse(override: Override) -> ParsedOverride:
    """Parse one override's text with Hydra's grammar."""
    text = override.text
    if override.unknowns or UNKNOWN_OPEN in text:
        # The value is partly unknown: check the grammar of the key and operator with a
        # neutral stand-in, keep the marked text as the value.
        stand_in = replace_markers(text)
        parsed = parse_override(stand_in)
        stored = override.value if override.value is not None else parsed.value_text
        return ParsedOverride(parsed.key or override.key, parsed.op, parsed.value, stored, parsed.error, False)
    parsed = parse_override(text)
    return ParsedOverride(parsed.key or override.key, parsed.op, parsed.value, parsed.value, parsed.error, True)


def replace_markers(text: str) -> str:
    """`text` with each `<?...>` unknown marker replaced by a neutral word Hydra accepts."""
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


class _Composition:
    """Applies overrides one at a time to a FlatConfig, collecting the issues Hydra (or verl)
    would raise, the provenance of each leaf and the leaves that depend on unknowns.

    strict=False: the defaults only stand in for a config we could not read, so a key they lack
    is set without an issue (and `~` on it is ignored)."""

    def __init__(self, defaults: dict[str, Any], nodes: Iterable[str], config: Config, strict: bool,
                 selections: GroupSelections | None = None) -> None:
        self.defaults = defaults
        self.nodes = nodes
        # Group selections (`model_engine=megatron`) were composed into the defaults before any
        # value override, as Hydra does; each one only records which keys it chose.
        self.selected = selections.consumed if selections is not None else {}
        self.flat = flat = FlatConfig(dict(defaults), nodes)
        self.config = config
        self.version = config.version
        self.strict = strict
        self.unknown: dict[str, str] = {}
        self.unchecked = 0
        # `flat`, not `self.flat`: a lambda holding self would make the composition a reference cycle
        self.resolver = Resolver(flat.values, nodes=lambda: flat.nodes, unknown_of=self.unknown.get)

    def _refuse(self, override: Override, kind: str, detail: str, suggestion: str | None = None) -> None:
        self.config.key_issues.append(KeyIssue(override, kind, detail, suggestion))

    def apply(self, override: Override) -> None:
        if id(override) in self.selected:
            for leaf in self.selected[id(override)]:
                self.config.set_by[leaf] = override
            return
        parsed = parse(override)
        if parsed.error is not None:
            self._refuse(override, "grammar", parsed.error)
            return
        key = parsed.key
        if not key:
            self._refuse(override, "grammar", "no key")
            return
        if key == "hydra" or key.startswith("hydra."):
            return  # Hydra's own settings (hydra.run.dir ...), not part of the job config
        if parsed.op == "~":
            self._delete(override, parsed)
            return
        issue = self._refusal(override, parsed)
        if issue is not None:
            self.config.key_issues.append(issue)
            return
        self._store(override, parsed)

    # --- `~key` ---------------------------------------------------------------------------

    def _delete(self, override: Override, parsed: ParsedOverride) -> None:
        flat, key, value = self.flat, parsed.key, parsed.value
        known, current = select(flat, self.resolver, key)
        if not self.strict and not flat.exists(key):
            self.unchecked += 1
            return
        if known and current is None:
            self._refuse(override, "delete-missing", f"'{key}' does not exist (or is null)")
            return
        if current is BROKEN:
            self._refuse(override, "delete-missing", f"'{key}' is a broken interpolation")
            return
        if not flat.exists(key) and list_index(flat, key) is not None:
            self._refuse(override, "bad-structure", f"cannot delete list element '{key}'")
            return
        if value is not None and parsed.value_known and known and value != current and not flat.is_node(key):
            self._refuse(override, "delete-missing", f"the value of '{key}' is {current!r}, not {value!r}")
            return
        flat.delete(key)
        for k in [k for k in self.config.set_by if k == key or k.startswith(key + ".")]:
            del self.config.set_by[k]
        for k in [k for k in self.unknown if k == key or k.startswith(key + ".")]:
            del self.unknown[k]

    # --- `key=v`, `+key=v`, `++key=v` ---------------------------------------------------------

    def _refusal(self, override: Override, parsed: ParsedOverride) -> KeyIssue | None:
        """Why Hydra refuses to set the key, or None."""
        flat, key, value = self.flat, parsed.key, parsed.value
        if parsed.op == "=":
            problem = change_problem(flat, key, value)
            if problem is not None and not self.strict and problem.startswith("missing"):
                self.unchecked += 1
                problem = None
            if problem is None:
                return None
            if problem.startswith("missing"):
                return self._missing_key_issue(override, problem.partition(":")[2] or key)
            return KeyIssue(override, "bad-structure", f"cannot set '{key}': {problem}")
        problem = structure_problem(flat, key, value)
        if problem is not None:
            return KeyIssue(override, "bad-structure", f"cannot set '{key}': {problem}")
        if parsed.op == "+":
            known, current = select(flat, self.resolver, key)
            if (current is BROKEN or not isinstance(value, (dict, list))) and known and current is not None:
                shown = ("a mapping" if flat.is_node(key) else "a broken interpolation" if current is BROKEN
                         else repr(current))
                return KeyIssue(override, "plus-on-existing", f"'{key}' already has a value ({shown}); drop the '+'",
                                key)
        return None

    def _missing_key_issue(self, override: Override, missing_key: str) -> KeyIssue:
        issue = migration_issue(override, missing_key, self.version)
        if issue is not None:
            return issue
        flat = self.flat
        blocked = flat.blocking_leaf(missing_key)
        if blocked is not None:
            current = flat.values[blocked]
            hint = "use +" if current in (None, {}) or isinstance(current, str) else "it is a value"
            detail = f"'{missing_key}' is not in the config: '{blocked}' is {current!r} ({hint})"
        else:
            detail = f"'{missing_key}' is not in verl {self.version} {self.config.schema}"
        return KeyIssue(override, "unknown-key", detail, suggest(missing_key, flat))

    def _store(self, override: Override, parsed: ParsedOverride) -> None:
        key, op, value = parsed.key, parsed.op, parsed.value
        reason = "; ".join(override.unknowns) if override.unknowns else "value depends on an unknown"
        written = self.flat.set(key, value if parsed.value_known else parsed.stored)
        for leaf in written:
            self.config.set_by[leaf] = override
            self.unknown.pop(leaf, None)
            if not parsed.value_known:
                self.unknown[leaf] = reason
        if parsed.value_known and op in ("=", "+", "++"):
            change = bad_value(key, value, self.version)
            if change is not None:
                detail = f"{key}={value} is not accepted from verl {change.since}: {change.note}"
                self._refuse(override, "bad-value", detail, str(change.new_value))
        # A removed key added with + or ++ is accepted by Hydra but ignored by verl.
        if (self.strict and op in ("+", "++") and not any(leaf in self.defaults for leaf in written)
                and not under_open_mapping(key)):
            issue = migration_issue(override, key, self.version)
            if issue is not None and issue.kind in ("renamed", "removed"):
                self.config.key_issues.append(issue)

    # --- after the last override ------------------------------------------------------------

    def finish(self) -> Config:
        """Resolve interpolations over the final config and fill in the Config."""
        if self.unchecked:
            self.config.notes.append(f"{self.unchecked} override(s) name keys the stand-in defaults lack; not checked")
        flat, unknown = self.flat, self.unknown
        self.resolver.invalidate()
        resolved: dict[str, Any] = {}
        # The defaults' own interpolations that read nothing this call changed are resolved once
        # for every call (generator.config.defaults_interp); the rest are resolved here.
        kept = DefaultsResolution.of(self.defaults, self.nodes)
        stale = (kept.stale(changed_keys(self.defaults, flat.values, flat.touched, unknown)) if kept is not None
                 else set())
        for key, raw in flat.values.items():
            # has_interpolation, written out: this runs for each of the ~800 keys of every call
            if isinstance(raw, str) and "${" in raw and key not in unknown:
                reused = kept.reusable(key, stale) if kept is not None else None
                if reused is not None:
                    value, error, cost = reused
                    self.resolver.charge(cost)
                    if error is None:
                        resolved[key] = value
                    else:
                        unknown[key] = str(error)
                    continue
                try:
                    resolved[key] = self.resolver.resolve(key)
                except Unresolvable as err:
                    unknown[key] = str(err)
        copied = 0
        for key, value in resolved.items():
            if isinstance(value, dict) and value:
                # An interpolation that points at a mapping: keep the config flat. Each copy adds
                # the mapping's keys to the config; past MAX_COPIED_KEYS in all (3,000 `${x.b}`
                # over a 3,000-key x.b made 9 million keys, minutes of checking) it stays unknown.
                leaves = _flatten_value(value, key + ".") if copied <= MAX_COPIED_KEYS else []
                copied += len(leaves)
                if copied > MAX_COPIED_KEYS:
                    unknown[key] = (f"the interpolation copies a mapping, and all such copies add more than "
                                    f"{MAX_COPIED_KEYS:,} keys (too large); not followed")
                    continue
                flat.expand(key, leaves)
            else:
                flat.values[key] = value
        self.config.values = flat.values
        self.config.unknown = unknown
        self.config.backend = backend_of(self.config.schema, flat.values)
        return self.config


def apply_overrides(
    defaults: dict[str, Any],
    overrides: list[Override],
    *,
    version: str,
    config_name: str,
    nodes: Iterable[str] | None = None,
    entry: str = PPO_ENTRY,
    passes_args: bool = False,
    strict: bool = True,
    selections: GroupSelections | None = None,
) -> Config:
    """Compose `defaults` (flat) with `overrides` in order; resolve interpolations.

    strict=False: `defaults` only stand in for a config we could not read, so a key they lack
    is set without an issue (and `~` on it is ignored); the rest of the checks still apply.
    selections: the call's config-group selections already composed into `defaults`
    (generator.schema.groups.select_groups); their overrides are not applied again, and what
    Hydra refuses among them becomes a key issue."""
    config = Config(version=version, schema=config_name, entry=entry, passes_args=passes_args)
    config.defaults = defaults
    if selections is not None:
        config.groups = dict(selections.chosen)
        config.notes.extend(selections.notes)
        for refusal in selections.refusals:
            kind = "plus-on-existing" if refusal.override.op == "+" and "append" in refusal.detail else "unknown-key"
            config.key_issues.append(KeyIssue(refusal.override, kind, f"config group selection: {refusal.detail}"))
    composition = _Composition(defaults, nodes if nodes is not None else inner_nodes(defaults), config, strict,
                               selections)
    for override in overrides:
        composition.apply(override)
    return composition.finish()


def under_open_mapping(key: str) -> bool:
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


def backend_of(config_name: str, values: dict[str, Any]) -> Backend:
    engine = values.get("model_engine")
    strategy = values.get("actor_rollout_ref.actor.strategy")
    if engine == "megatron" or strategy == "megatron":
        return "megatron"
    if engine in ("fsdp", "fsdp2", "dp") or strategy in ("fsdp", "fsdp2"):
        return "fsdp"
    if "megatron" in config_name:
        return "megatron"
    return "unknown"


def is_hydra_rejection(issue: KeyIssue) -> bool:
    """True when Hydra itself refuses the override (the run dies while composing the config).
    A renamed/removed key written without `+` is refused as an unknown key."""
    if issue.kind in ("unknown-key", "plus-on-existing", "delete-missing", "grammar", "bad-structure"):
        return True
    if issue.kind in ("renamed", "removed"):
        return issue.override.op == "=" or not issue.override.text.startswith("+")
    return False
