"""`gen migrate`: move a script from one verl release's keys to another's with minimal edits.

- a renamed key is renamed where it is written (in the command-line word, the array element or
  the string piece), with its op adjusted to the target schema (`+` added when the key is not in
  the target's config, dropped when the target has it with a value);
- a key removed without replacement is dropped only with `unsafe` (otherwise reported), unless
  it now lives under a free-form mapping of the target config, where `+key=` still works;
- a removed value (e.g. `rollout.mode=sync` on >= 0.7.0) is replaced where the value is defined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from generator.fix.splice import apply_edits, select_compatible
from generator.fix.place import insertion_edit, merge_insertions, value_edit
from generator.reading.launch_script import Invocation, LaunchScript, Override, written_elsewhere
from generator.reading.edit_kinds import TextEdit
from generator.verl.constants import packaged_config_of
from generator.verl.versions import parse

if TYPE_CHECKING:
    from generator.schema.migrations import Rename, ValueChange

_KEY_CHAR = re.compile(r"[\w.\-@/]")


@dataclass(frozen=True, slots=True)
class Step:
    """One migration of one override."""

    line: int
    key: str
    description: str
    edits: tuple[TextEdit, ...]
    unsafe: bool = False


@dataclass(frozen=True, slots=True)
class Refusal:
    line: int
    key: str
    reason: str


@dataclass(slots=True)
class MigrateResult:
    path: str | None
    original: bytes
    fixed: bytes
    from_version: str
    to_version: str
    applied: list[Step] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    # (line, what) for each default that changed between the releases under a key the call does
    # not set: the run behaves otherwise on the target with the same script (issue 34)
    changed_defaults: list[tuple[int, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def schema_name(invocation: Invocation) -> str:
    """The packaged schema a call's keys are checked against (recipe configs extend the PPO one).
    ppo_trainer with `model_engine=megatron` composes as the ppo_megatron_trainer shim (0.8.0 on)."""
    name = packaged_config_of(invocation.config_name)
    if name == "ppo_trainer" and _selects_megatron_engine(invocation):
        return SHIM_CONFIG
    return name


def _selects_megatron_engine(invocation: Invocation) -> bool:
    chosen = [o.value for o in invocation.overrides if o.key == "model_engine" and o.op in ("=", "++")]
    return bool(chosen) and chosen[-1] == "megatron"


def migration_table(from_version: str, to_version: str) -> list[Rename | StaleRename]:
    """Renames from `from_version` to `to_version`, plus the moves of keys that were already
    stale in `from_version` (a script written against an older release: a key gone before its
    own release is still migrated when the target knows where it went)."""
    from generator import schema
    from generator.schema.migrations import history

    table: list[Rename | StaleRename] = list(schema.renames(from_version, to_version))
    table = [r for r in table if r.old_key not in _LEGACY_REWARD_KEYS]
    table.extend(legacy_reward_renames(to_version))
    known = {r.old_key for r in table}
    for old_key, rename in history(schema.resolve_version(to_version)[0]).items():
        if old_key not in known:
            table.append(StaleRename(rename.old_key, rename.new_key, rename.since, rename.note,
                                     getattr(rename, "backend", None)))
    return table


def legacy_reward_renames(to_version: str) -> list[Rename]:
    """`reward_model.*` / `custom_reward_function.*` / `sandbox_fusion.*` → `reward.*` for a target
    with the reward group (0.7.1 on). The old keys still compose there (null stubs), so the schema
    diff never reports them; 0.7.1 and 0.8.0 migrate them at start (deprecated), 0.9.0's main_ppo
    ignores them (generator.schema.reward_moves). A prefix move covers every key below it."""
    from generator.schema.migrations import Rename
    from generator.schema.reward_moves import MOVES, NOT_MIGRATED_SINCE, REWARD_GROUP_SINCE, has_reward_group

    if not has_reward_group(to_version):
        return []
    ignored = parse(to_version) >= parse(NOT_MIGRATED_SINCE)
    note = (f"main_ppo stopped reading the legacy reward keys in {NOT_MIGRATED_SINCE}" if ignored else
            f"the legacy reward keys are deprecated since {REWARD_GROUP_SINCE}; reward.* is what verl reads")
    return [Rename(move.old, move.new, NOT_MIGRATED_SINCE if ignored else REWARD_GROUP_SINCE, note)
            for move in MOVES]


def _legacy_reward_keys() -> frozenset[str]:
    from generator.schema.reward_moves import MOVES

    return frozenset(m.old for m in MOVES)


_LEGACY_REWARD_KEYS = _legacy_reward_keys()


@dataclass(frozen=True, slots=True)
class StaleRename:
    """A move from a release older than the script's: applied only where the script's own
    release does not have the key in the call's config (there it was already stale)."""

    old_key: str
    new_key: str | None
    since: str
    note: str = ""
    backend: str | None = None
    stale: bool = True


def infer_from_version(script: LaunchScript, *, has: Callable[[str, str, str], bool],
                       releases: Sequence[str] | None = None) -> str | None:
    """The smallest release whose schema has every key the script sets with plain `key=`
    (among `releases`, by default every packaged one)."""
    from generator.schema.resolution import oldest_release_with

    wanted = [(o.key, schema_name(inv)) for inv in script.invocations for o in inv.overrides
              if o.key and o.op == "=" and inv.branch != "dead"]
    return oldest_release_with(wanted, releases, has)


def _key_position(word_text: str, key: str) -> int | None:
    """Offset of `key` written literally in the word, followed by `=` or the word's end."""
    hits = []
    start = 0
    while True:
        at = word_text.find(key, start)
        if at < 0:
            break
        before = word_text[at - 1] if at > 0 else ""
        after = word_text[at + len(key): at + len(key) + 1]
        if not _KEY_CHAR.match(before or " ") and after in ("=", "", "'", '"'):
            hits.append(at)
        start = at + 1
    return hits[0] if len(hits) == 1 else None


def _word_text(script: LaunchScript, override: Override) -> str:
    return script.source[override.word.start:override.word.end].decode("utf-8", "replace")


def _key_edit(script: LaunchScript, override: Override, new_key: str, new_op: str) -> TextEdit | None:
    """Replace op+key in the override's word; None when the key is not written literally."""
    word_text = _word_text(script, override)
    at = _key_position(word_text, override.key)
    if at is None:
        return None
    prefix = "" if override.op == "=" else override.op
    op_start = at - len(prefix)
    if op_start < 0 or word_text[op_start:at] != prefix:
        return None
    start = override.word.start + len(word_text[:op_start].encode())
    end = override.word.start + len(word_text[:at + len(override.key)].encode())
    op_text = "" if new_op == "=" else new_op
    return TextEdit(start, end, f"{op_text}{new_key}")


def delete_word_edit(script: LaunchScript, override: Override) -> TextEdit | None:
    """Remove an override word: its whole line when it is alone on a continued line, else the word
    and the whitespace before it. Never leaves a backslash continuing into the next command."""
    source = script.source
    start, end = override.word.start, override.word.end
    if override.provenance.quoting.startswith("py:"):
        return _delete_list_element(source, start, end)
    line_start = source.rfind(b"\n", 0, start) + 1
    line_end = source.find(b"\n", end)
    line_end = len(source) if line_end < 0 else line_end
    before = source[line_start:start]
    after = source[end:line_end]
    if not before.strip() and after.strip() == b"\\" and after.endswith(b"\\") and line_end < len(source):
        return TextEdit(line_start, line_end + 1, "")
    cut = start
    while cut > line_start and source[cut - 1:cut] in (b" ", b"\t"):
        cut -= 1
    if cut == line_start and not after.strip():
        # The word is alone on the command's last line: keep the line (now empty) so the
        # previous line's backslash still ends the command at this newline.
        return TextEdit(start, end, "")
    return TextEdit(cut, end, "")


def _delete_list_element(source: bytes, start: int, end: int) -> TextEdit:
    """Remove one string element of a Python list with its comma (and its line when it is
    alone there), keeping the list valid Python."""
    after = end
    while after < len(source) and source[after:after + 1] in (b" ", b"\t"):
        after += 1
    if source[after:after + 1] == b",":
        end = after + 1
    else:  # the last element without a trailing comma: take the comma before it
        before = start
        while before > 0 and source[before - 1:before] in (b" ", b"\t", b"\n"):
            before -= 1
        if source[before - 1:before] == b",":
            start = before - 1
    line_start = source.rfind(b"\n", 0, start) + 1
    line_end = source.find(b"\n", end)
    line_end = len(source) if line_end < 0 else line_end
    if not source[line_start:start].strip() and not source[end:line_end].strip() and line_end < len(source):
        return TextEdit(line_start, line_end + 1, "")
    while end < len(source) and source[end:end + 1] == b" " and source[start - 1:start] in (b"[", b" "):
        end += 1
    return TextEdit(start, end, "")


def _target_op(op: str, key: str, target_defaults: dict[str, Any], target_nodes: frozenset[str]) -> str:
    if op == "++":
        return op
    if key in target_defaults:
        return "+" if op == "+" and target_defaults[key] is None else "="
    if key in target_nodes:
        return "="  # a mapping node itself
    return "+"


def _under_free_mapping(key: str, target_defaults: dict[str, Any]) -> bool:
    """The key sits under a mapping leaf of the target config that takes arbitrary keys
    (e.g. `override_transformer_config`, `engine_kwargs.vllm`), so `+key=` is accepted."""
    parts = key.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:cut])
        if parent in target_defaults:
            return isinstance(target_defaults[parent], dict)
    return False


def plan_steps(script: LaunchScript, *, from_version: str, to_version: str,
               renames: Sequence[Rename | StaleRename], value_changes: Sequence[ValueChange],
               target_defaults: Callable[[str], dict[str, Any]],
               target_nodes: Callable[[str], frozenset[str]] = lambda name: frozenset(),
               source_has: Callable[[str, str], bool] | None = None,
               unsafe: bool = False) -> tuple[list[Step], list[Refusal]]:
    steps: list[Step] = []
    refused: list[Refusal] = []
    by_old = {r.old_key: r for r in renames}
    # Every value the target refuses, whatever the release the script is said to come from: a
    # script that sets rollout.mode=sync "from 0.7.0" still sets a value 0.9.1 refuses (issue 34).
    hi = parse(to_version)
    changes = [c for c in value_changes if parse(c.since) <= hi]
    for invocation in script.invocations:
        if invocation.branch == "dead" or written_elsewhere(script.path, invocation):
            continue  # (a call in a script this one runs is migrated in its own file)
        name = schema_name(invocation)
        backend = invocation_backend(invocation)
        defaults = target_defaults(name)
        nodes = target_nodes(name)
        for override in invocation.overrides:
            if not override.key:
                continue
            rename, rest = _rename_for(override.key, by_old, backend, name, source_has)
            if rename is not None:
                steps_or_refusal = _rename_step(script, override, rename, rest, defaults, nodes, unsafe)
                if isinstance(steps_or_refusal, Refusal):
                    refused.append(steps_or_refusal)
                elif steps_or_refusal is not None:
                    steps.append(steps_or_refusal)
                continue
            # Recipe and example configs extend the PPO config, so a key it has with a value
            # is there for them too.
            if (override.op == "+" and override.key in defaults
                    and defaults[override.key] is not None):
                # `+key=` on a key the target config has with a value: Hydra refuses to append;
                # without the `+` it sets the same key to the same value.
                edit = _key_edit(script, override, override.key, "=")
                if edit is not None:
                    steps.append(Step(override.line, override.key,
                                      f"+{override.key} → {override.key} (the key exists in {to_version} "
                                      f"with a value, so '+' would be refused)", (edit,)))
                continue
            _value_change_steps(script, override, changes, steps, refused)
    return steps, refused


def _rename_for(key: str, by_old: dict[str, Rename | StaleRename], backend: str, name: str,
                source_has: Callable[[str, str], bool] | None) -> tuple[Rename | StaleRename | None, str]:
    """The rename that moves `key` (itself or a parent of it) in this migration, and the part of
    the key below the renamed one (`""` for the key itself); `None` when none applies."""
    rename = by_old.get(key)
    rest = ""
    if rename is None:
        for old, candidate in by_old.items():
            if key.startswith(old + "."):
                rename, rest = candidate, key[len(old):]
                break
    if rename is not None and getattr(rename, "backend", None) not in (None, backend):
        rename = None  # a move that concerns another backend (e.g. Megatron recompute)
    if (rename is not None and getattr(rename, "stale", False)
            and (source_has is None or source_has(key, name))):
        rename = None  # valid in the script's own release: not this migration's business
    return rename, rest


def _value_change_steps(script: LaunchScript, override: Override, changes: Sequence[ValueChange],
                        steps: list[Step], refused: list[Refusal]) -> None:
    """Adds to `steps` (or `refused`) the edits for the value changes that apply to `override`:
    its key, and the old value the change retires."""
    for change in changes:
        if change.key != override.key or override.value is None:
            continue
        from generator.reading.overrides import parse_override

        parsed = parse_override(override.text)
        if parsed.error is not None or parsed.value != change.old_value:
            continue
        edit, reason = value_edit(script, override, change.new_value)
        if reason is not None:
            refused.append(Refusal(override.line, override.key, reason))
        elif edit is not None:
            from generator.fix.place import other_references

            also = other_references(script, override, {override.key: change.new_value})
            where = (f"; {override.provenance.variable} is also used on line "
                     f"{', '.join(map(str, also[:5]))}: check those" if also else "")
            steps.append(Step(override.line, override.key,
                              f"{override.key}: {change.old_value!r} → {change.new_value!r} "
                              f"({change.note or 'removed in ' + change.since}{where})", (edit,)))


def invocation_backend(invocation: Invocation) -> str:
    """megatron | fsdp, from the config name or an explicit actor strategy (last one wins)."""
    backend = ("megatron" if "megatron" in (invocation.config_name or "") or _selects_megatron_engine(invocation)
               else "fsdp")
    for override in invocation.overrides:
        if override.key == "actor_rollout_ref.actor.strategy" and override.value:
            backend = "megatron" if "megatron" in override.value else "fsdp"
    return backend


# Old boolean switches whose new key takes a word: how each old value is written there. None
# means "drop the override": the new key's default already means the same.
_SWITCH_VALUES: dict[str, dict[Any, Any]] = {
    "override_transformer_config.recompute_granularity": {True: "full", False: None},
}


def _switch_map(old_key: str, new_key: str) -> dict[Any, Any] | None:
    if not old_key.endswith("enable_gradient_checkpointing"):
        return None
    for suffix, mapping in _SWITCH_VALUES.items():
        if new_key.endswith(suffix):
            return mapping
    return None


# Megatron-core refuses recompute_granularity=full unless recompute_method and
# recompute_num_layers are set too (TransformerConfig.__post_init__); verl's own scripts pair it
# with uniform / 1, which is what the old enable_gradient_checkpointing=True did by default.
_FULL_RECOMPUTE_COMPANIONS = (("recompute_method", "activations_checkpoint_method", "uniform"),
                              ("recompute_num_layers", "activations_checkpoint_num_layers", 1))


def _full_recompute_companions(script: LaunchScript, override: Override, granularity_key: str,
                               defaults: dict[str, Any], nodes: frozenset[str]) -> tuple[TextEdit, ...] | Refusal:
    invocation = next((inv for inv in script.invocations if override in inv.overrides), None)
    if invocation is None:
        return ()
    written = {o.key.rsplit(".", 1)[-1] for o in invocation.overrides if o.op != "~"}
    prefix = granularity_key.rsplit(".", 1)[0]
    edits: list[TextEdit] = []
    for name, old_name, value in _FULL_RECOMPUTE_COMPANIONS:
        if name in written or old_name in written:
            continue
        key = f"{prefix}.{name}"
        op = _target_op("=", key, defaults, nodes)
        text = f"{'' if op == '=' else op}{key}={value}"
        insertion, reason = insertion_edit(script, invocation, text)
        if insertion is None:
            return Refusal(override.line, override.key,
                           f"{override.key}: recompute_granularity=full also needs {name}; {reason or 'add it by hand'}")
        edits.append(insertion)
    return tuple(merge_insertions(edits))


def _rename_step(script: LaunchScript, override: Override, rename: Rename | StaleRename, rest: str,
                 defaults: dict[str, Any], nodes: frozenset[str], unsafe: bool) -> Step | Refusal | None:
    note = f" ({rename.note})" if getattr(rename, "note", "") else ""
    if rename.new_key is None:
        if _under_free_mapping(override.key, defaults):
            if override.op != "=":
                return None  # already added with + and still accepted that way
            edit = _key_edit(script, override, override.key, "+")
            if edit is None:
                return Refusal(override.line, override.key,
                               f"{override.key}: the key is built by shell expansion; add '+' by hand")
            return Step(override.line, override.key,
                        f"{override.key} left the schema in {rename.since} but its parent takes any key; "
                        f"kept as +{override.key}{note}", (edit,))
        from generator.schema.migrations import SAME_AS_REMOVAL

        same = SAME_AS_REMOVAL.get(override.key)
        written = (override.value or "").strip("'\"")
        if same is not None and (same == "*" or written == same):
            edit = delete_word_edit(script, override)
            if edit is not None:
                what = "nothing read it" if same == "*" else f"{same} is what the release always does"
                return Step(override.line, override.key, f"dropped {override.key}={written}: removed in "
                            f"{rename.since}, and {what}{note}", (edit,))
        if not unsafe:
            return Refusal(override.line, override.key,
                           f"{override.key} was removed in {rename.since} without replacement{note}; "
                           "drop it with --unsafe")
        edit = delete_word_edit(script, override)
        if edit is None:
            return Refusal(override.line, override.key, f"{override.key}: cannot find its word to delete")
        return Step(override.line, override.key, f"dropped {override.key}: removed in {rename.since}{note}",
                    (edit,), unsafe=True)
    new_key = rename.new_key + rest
    op = _target_op(override.op, new_key, defaults, nodes)
    edit = _key_edit(script, override, new_key, op)
    if edit is None:
        return Refusal(override.line, override.key,
                       f"{override.key} → {new_key}: the key is built by shell expansion; rename it by hand")
    edits: tuple[TextEdit, ...] = (edit,)
    mapping = _switch_map(override.key, new_key)
    if mapping is not None:
        from generator.reading.overrides import parse_override

        parsed = parse_override(override.text)
        if parsed.error is not None or parsed.value not in mapping:
            return Refusal(override.line, override.key,
                           f"{override.key}={override.value}: no automatic value for {new_key}{note}")
        new_value = mapping[parsed.value]
        if new_value is None:
            drop = delete_word_edit(script, override)
            if drop is None:
                return Refusal(override.line, override.key, f"{override.key}: cannot find its word to delete")
            return Step(override.line, override.key,
                        f"dropped {override.key}={override.value}: off is the default of {new_key}{note}", (drop,))
        value, reason = value_edit(script, override, new_value)
        if reason is not None:
            return Refusal(override.line, override.key, reason)
        if value is not None:
            edits = (edit, value)
        if new_value == "full":
            companions = _full_recompute_companions(script, override, new_key, defaults, nodes)
            if isinstance(companions, Refusal):
                return companions
            edits += companions
        new_key = f"{new_key}={new_value}"
    return Step(override.line, override.key, f"{override.key} → {'' if op == '=' else op}{new_key} "
                f"(since {rename.since}){note}", edits)


def migrate_source(source: bytes, path: str | None, *, read: Callable[[bytes, str | None], LaunchScript],
                   from_version: str, to_version: str, renames: Sequence[Rename | StaleRename],
                   value_changes: Sequence[ValueChange], target_defaults: Callable[[str], dict[str, Any]],
                   target_nodes: Callable[[str], frozenset[str]] = lambda name: frozenset(),
                   source_has: Callable[[str, str], bool] | None = None,
                   unsafe: bool = False, max_rounds: int = 3,
                   source_defaults: Callable[[str], dict[str, Any]] | None = None) -> MigrateResult:
    result = MigrateResult(path, source, source, from_version, to_version)
    script = read(source, path)
    refused: dict[tuple[int, str], Refusal] = {}
    for _ in range(max_rounds):
        steps, refusals = plan_steps(script, from_version=from_version, to_version=to_version,
                                     renames=renames, value_changes=value_changes,
                                     target_defaults=target_defaults, target_nodes=target_nodes,
                                     source_has=source_has, unsafe=unsafe)
        for r in refusals:
            refused[(r.line, r.key)] = r
        if not steps:
            break
        taken, _ = select_compatible([s.edits for s in steps])
        new_source = apply_edits(script.source, [e for i in taken for e in steps[i].edits])
        if new_source == script.source:
            break
        result.applied.extend(steps[i] for i in taken)
        script = read(new_source, path)
    if parse(to_version) >= ENGINE_GROUP_SINCE:
        # last, so the renames above still judge the call by the config it names
        steps, refusals = engine_group_steps(script)
        refused.update({(r.line, r.key): r for r in refusals})
        if steps:
            taken, _ = select_compatible([s.edits for s in steps])
            result.applied.extend(steps[i] for i in taken)
            script = read(apply_edits(script.source, [e for i in taken for e in steps[i].edits]), path)
    result.fixed = script.source
    result.refused = list(refused.values())
    if source_defaults is not None:
        from generator.fix.changed_defaults import changed_defaults

        result.changed_defaults = changed_defaults(script, source_defaults, target_defaults, schema_name)
    return result


# From 0.8.0 ppo_megatron_trainer.yaml is a deprecated shim (`defaults: [ppo_trainer, override
# model_engine: megatron, _self_]`, verl/trainer/config/ppo_megatron_trainer.yaml @v0.8.0), and
# verl's own Megatron examples call the default ppo_trainer with `model_engine=megatron` (22 of
# the 27 main_ppo Megatron examples @v0.8.0, e.g. examples/grpo_trainer/run_deepseek_v3_671b_megatron.sh).
ENGINE_GROUP_SINCE = (0, 8, 0)
SHIM_CONFIG = "ppo_megatron_trainer"
_CONFIG_NAME_WORD = re.compile(rb"--config-name(?:=|[ \t]+)(['\"]?)(ppo_megatron_trainer)(?:\.yaml)?\1(?=[\s;|&)\\]|$)")


def engine_group_steps(script: LaunchScript) -> tuple[list[Step], list[Refusal]]:
    """`--config-name=ppo_megatron_trainer` of a packaged-config main_ppo call becomes
    `model_engine=megatron` in its place (the same composition, in the form of the release's
    examples); with a `model_engine=` of its own, only the name becomes ppo_trainer."""
    steps: list[Step] = []
    refused: list[Refusal] = []
    for invocation in script.invocations:
        own_folder = _verl_config_folder(invocation.config_path)
        if (invocation.branch == "dead" or written_elsewhere(script.path, invocation)
                or invocation.entry != "verl.trainer.main_ppo"
                or (invocation.config_path is not None and not own_folder)
                or (invocation.config_name or "").removesuffix(".yaml") != SHIM_CONFIG):
            continue
        span = script.source[invocation.span.start:invocation.span.end]
        path_edit = _config_path_removal(script, invocation) if invocation.config_path is not None else None
        if invocation.config_path is not None and path_edit is None:
            refused.append(Refusal(invocation.line, "--config-path",
                                   "ppo_megatron_trainer is deprecated since 0.8.0, but --config-path is not written "
                                   "as one word in the command: change both by hand"))
            continue
        found = list(_CONFIG_NAME_WORD.finditer(span))
        if len(found) != 1:
            refused.append(Refusal(invocation.line, "--config-name",
                                   "ppo_megatron_trainer is deprecated since 0.8.0 (ppo_trainer with "
                                   "model_engine=megatron composes the same), but its name is not written "
                                   "as one word in the command: change it by hand"))
            continue
        match = found[0]
        start = invocation.span.start + match.start()
        if any(o.key == "model_engine" for o in invocation.overrides):
            name_start = invocation.span.start + match.start(2)
            edit = TextEdit(name_start, name_start + len(SHIM_CONFIG), "ppo_trainer")
            what = "ppo_megatron_trainer → ppo_trainer (the call selects its model_engine itself)"
        else:
            edit = TextEdit(start, invocation.span.start + match.end(), "model_engine=megatron")
            what = "--config-name=ppo_megatron_trainer → model_engine=megatron"
        edits = (edit,) if path_edit is None else (path_edit, edit)
        if path_edit is not None:
            what += f" (and --config-path={invocation.config_path} dropped: it is verl's own config folder)"
        steps.append(Step(script.line_of(start), "--config-name",
                          f"{what}: the shim is deprecated since 0.8.0 and composes as ppo_trainer with "
                          "model_engine=megatron, the form of verl's own Megatron examples", edits))
    return steps, refused


# `--config-path=config`: Hydra resolves a relative path against the entry's folder, verl/trainer/,
# so verl 0.4-0.7's Megatron examples named verl's own config folder with it (examples/grpo_trainer/
# run_qwen2-7b_math_megatron.sh @v0.4.1): the same config as no --config-path at all.
_CONFIG_PATH_WORD = re.compile(rb"--config-path(?:=|[ \t]+)(['\"]?)(?:\./)?config/?\1(?=[\s;|&)]|$)")


def _verl_config_folder(config_path: str | None) -> bool:
    return config_path is not None and config_path.strip("'\"").removeprefix("./").rstrip("/") == "config"


def _config_path_removal(script: LaunchScript, invocation: Invocation) -> TextEdit | None:
    """The edit that removes the call's `--config-path=config` word: its whole line when the word
    is alone on a continuation line, else the word and the blanks after it."""
    span = script.source[invocation.span.start:invocation.span.end]
    found = list(_CONFIG_PATH_WORD.finditer(span))
    if len(found) != 1:
        return None
    start, end = invocation.span.start + found[0].start(), invocation.span.start + found[0].end()
    source = script.source
    line_start = source.rfind(b"\n", 0, start) + 1
    line_end = source.find(b"\n", end)
    line_end = len(source) if line_end < 0 else line_end
    if not source[line_start:start].strip() and source[end:line_end].strip() == b"\\":
        return TextEdit(line_start, min(line_end + 1, len(source)), "")  # alone on a continuation line
    while end < len(source) and source[end:end + 1] in (b" ", b"\t"):
        end += 1
    return TextEdit(start, end, "")
