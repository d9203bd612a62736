"""The effective config of one trainer call: one `Config` for every path (read, generated,
library), judged by one rule engine."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, TYPE_CHECKING

from generator.reading.launch_script import Override
from generator.verl.constants import PPO_ENTRY

if TYPE_CHECKING:
    from generator.schema.resolution import Resolution

Backend = Literal["megatron", "fsdp", "unknown"]


class KeyIssue(NamedTuple):
    """An override that Hydra would refuse (or that means something other than it says).

    kind:
      unknown-key       key not in the schema and not added with `+`/`++`
      plus-on-existing  `+key=` where the key already has a non-null value
      delete-missing    `~key` on a key that does not exist
      renamed           key moved in this release; `replacement` is the new key
      removed           key removed in this release without replacement
      grammar           Hydra's override grammar rejects the text; `detail` says why
      bad-value         the value is not allowed for this key (e.g. rollout.mode=sync on >= 0.7)
      bad-structure     Hydra cannot merge the value: a list onto a mapping or the reverse, or
                        a mapping value with keys the config does not have
    `generator.config.apply.is_hydra_rejection(issue)` tells which kinds stop Hydra itself.
    """

    override: Override
    kind: str
    detail: str = ""
    suggestion: str | None = None  # "did you mean" key, or the renamed key


class Config:
    """Flat, dotted, effective values: schema defaults of `version`, then overrides in order.

    values   every leaf the schema has plus keys the script added, interpolations resolved
             (an interpolation that depends on an unknown stays unresolved and is listed in
             `unknown`)
    set_by   the override that last set each key explicitly (provenance for fixes)
    unknown  key -> reason, for values that depend on something the reader could not see;
             `values[key]` then holds the raw text with `<?label>` markers
    """

    # A plain class with __slots__, not a dataclass: a check's start imports no dataclasses.
    __slots__ = ("version", "schema", "entry", "values", "set_by", "unknown", "key_issues", "backend", "passes_args",
                 "notes", "approximate", "relative_config_path", "resolution", "config_dir", "defaults", "groups")
    version: str
    schema: str  # "ppo_megatron_trainer", "ppo_trainer", or a recipe's config name
    entry: str
    values: dict[str, Any]
    set_by: dict[str, Override]
    unknown: dict[str, str]
    key_issues: list[KeyIssue]
    backend: Backend
    passes_args: bool  # "$@" reaches the call: every value may be overridden at launch
    # How the config was chosen when it was not plain (e.g. a recipe config not found next to
    # the script, so the PPO defaults were used); one line each.
    notes: list[str]
    # True when the call's own config could not be found and the PPO defaults stood in:
    # keys those defaults lack were not checked, and rules that read defaults should not decide.
    approximate: bool
    # A relative --config-path as Hydra resolves it (against the entry file's folder, not the
    # working directory): (the path as written, "found" | "missing" | "unknown", the folder or
    # file Hydra looks for or None when unknown, whether the entry's folder is sure rather than
    # inferred from a package folder). None when the call has no relative path.
    relative_config_path: tuple[str, str, str | None, bool] | None
    # Which verl release and config the call was judged against, and why (None for configs
    # built without a script: recipes, library entries, tests).
    resolution: Resolution | None
    # The folder the call's own config was composed from (its --config-path or @hydra.main
    # folder), when it was not the release's PPO config.
    config_dir: str | None
    # The flat defaults the overrides were applied to: the config composed with the call's
    # config-group selections (`model_engine=megatron`); `groups` names them (override key ->
    # option). None when built without a schema config.
    defaults: dict[str, Any] | None
    groups: dict[str, str]

    def __init__(self, version: str, schema: str, entry: str = PPO_ENTRY, values: dict[str, Any] | None = None,
                 set_by: dict[str, Override] | None = None, unknown: dict[str, str] | None = None,
                 key_issues: list[KeyIssue] | None = None, backend: Backend = "unknown", passes_args: bool = False,
                 notes: list[str] | None = None, approximate: bool = False,
                 relative_config_path: tuple[str, str, str | None, bool] | None = None,
                 resolution: Resolution | None = None, config_dir: str | None = None,
                 defaults: dict[str, Any] | None = None, groups: dict[str, str] | None = None) -> None:
        self.version = version
        self.schema = schema
        self.entry = entry
        self.values = {} if values is None else values
        self.set_by = {} if set_by is None else set_by
        self.unknown = {} if unknown is None else unknown
        self.key_issues = [] if key_issues is None else key_issues
        self.backend = backend
        self.passes_args = passes_args
        self.notes = [] if notes is None else notes
        self.approximate = approximate
        self.relative_config_path = relative_config_path
        self.resolution = resolution
        self.config_dir = config_dir
        self.defaults = defaults
        self.groups = {} if groups is None else groups

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def known(self, key: str) -> bool:
        """True when the value is fully known (not depending on an unknown)."""
        return key not in self.unknown

    def line_of(self, key: str) -> int | None:
        override = self.set_by.get(key)
        return override.written_line if override else None

