"""Keys and values that moved or disappeared between verl releases, as data + pure functions.

Two sources, merged:
  * derived: a key present in the older packaged schema and absent from the newer one;
  * hand-written moves (`MOVES`, facts from verl's release history, docs/rules/keys.md#where-the-keys-come-from):
    where the key went. Prefix moves end in "." and map every key below them.
A move is only reported with its new key when that key exists in the target release; else the
key is reported as removed, with the move's note.
`gen migrate` (a later module) turns these into edits; `generator.config` uses them to explain
unknown keys.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from generator.verl.versions import parse
from generator.schema.release_schema import available, load, normalize, release_cache


class Rename(NamedTuple):
    """`old_key` (present in the older release) is `new_key` in the newer one, or gone (None)."""

    old_key: str
    new_key: str | None
    since: str  # first release (schema id) without old_key, or with the new meaning
    note: str = ""
    backend: str | None = None  # "megatron" when the move only concerns that backend


class ValueChange(NamedTuple):
    """A value of `key` that stopped working in `since`; `new_value` is what to write instead
    (None: no automatic replacement)."""

    key: str
    old_value: Any
    new_value: Any
    since: str
    note: str = ""


class _Move(NamedTuple):
    old: str
    new: str | None
    since: str
    note: str = ""
    backend: str | None = None


_ARR = "actor_rollout_ref."
_RECOMPUTE = (
    "Megatron recompute moved to override_transformer_config (recompute_granularity=full, "
    "recompute_method=uniform, recompute_num_layers=N); the old model.* keys are not read by the "
    "Megatron workers"
)

MOVES: tuple[_Move, ...] = (
    # v0.5.0: Megatron activation checkpointing
    _Move(_ARR + "model.enable_gradient_checkpointing",
          _ARR + "actor.megatron.override_transformer_config.recompute_granularity", "0.5.0", _RECOMPUTE, "megatron"),
    _Move(_ARR + "model.gradient_checkpointing_kwargs.activations_checkpoint_granularity",
          _ARR + "actor.megatron.override_transformer_config.recompute_granularity", "0.5.0", _RECOMPUTE, "megatron"),
    _Move(_ARR + "model.gradient_checkpointing_kwargs.activations_checkpoint_method",
          _ARR + "actor.megatron.override_transformer_config.recompute_method", "0.5.0", _RECOMPUTE, "megatron"),
    _Move(_ARR + "model.gradient_checkpointing_kwargs.activations_checkpoint_num_layers",
          _ARR + "actor.megatron.override_transformer_config.recompute_num_layers", "0.5.0", _RECOMPUTE, "megatron"),
    _Move("critic.model.enable_gradient_checkpointing",
          "critic.megatron.override_transformer_config.recompute_granularity", "0.5.0", _RECOMPUTE, "megatron"),
    _Move("critic.model.gradient_checkpointing_kwargs.activations_checkpoint_granularity",
          "critic.megatron.override_transformer_config.recompute_granularity", "0.5.0", _RECOMPUTE, "megatron"),
    _Move("critic.model.gradient_checkpointing_kwargs.activations_checkpoint_method",
          "critic.megatron.override_transformer_config.recompute_method", "0.5.0", _RECOMPUTE, "megatron"),
    _Move("critic.model.gradient_checkpointing_kwargs.activations_checkpoint_num_layers",
          "critic.megatron.override_transformer_config.recompute_num_layers", "0.5.0", _RECOMPUTE, "megatron"),
    _Move("critic.kl_ctrl.", None, "0.5.0", "critic.kl_ctrl was never read; the KL controller is algorithm.kl_ctrl"),
    # v0.6.0: ray settings and profiler
    _Move("ray_init.num_cpus", "ray_kwargs.ray_init.num_cpus", "0.6.0"),
    _Move("ray_init.timeline_json_file", "ray_kwargs.timeline_json_file", "0.6.0"),
    _Move(_ARR + "actor.profile.use_profile", _ARR + "actor.profiler.enable", "0.6.0", "profiler settings moved"),
    _Move(_ARR + "actor.profile.profile_ranks", _ARR + "actor.profiler.ranks", "0.6.0", "profiler settings moved"),
    _Move(_ARR + "actor.profile.save_path", _ARR + "actor.profiler.save_path", "0.6.0", "profiler settings moved"),
    _Move(_ARR + "actor.profile.step_start", _ARR + "actor.profiler.tool_config.torch.step_start", "0.6.0"),
    _Move(_ARR + "actor.profile.step_end", _ARR + "actor.profiler.tool_config.torch.step_end", "0.6.0"),
    _Move(_ARR + "ref.profile.use_profile", _ARR + "ref.profiler.enable", "0.6.0", "profiler settings moved"),
    _Move(_ARR + "ref.profile.profile_ranks", _ARR + "ref.profiler.ranks", "0.6.0", "profiler settings moved"),
    _Move(_ARR + "ref.profile.save_path", _ARR + "ref.profiler.save_path", "0.6.0", "profiler settings moved"),
    _Move(_ARR + "ref.profile.step_start", _ARR + "ref.profiler.tool_config.torch.step_start", "0.6.0"),
    _Move(_ARR + "ref.profile.step_end", _ARR + "ref.profiler.tool_config.torch.step_end", "0.6.0"),
    _Move("trainer.profile_steps", "global_profiler.steps", "0.6.0", "profiler settings moved"),
    _Move("trainer.controller_nsight_options.", "global_profiler.global_tool_config.nsys.controller_nsight_options.", "0.6.0"),
    _Move("trainer.worker_nsight_options.", "global_profiler.global_tool_config.nsys.worker_nsight_options.", "0.6.0"),
    # v0.6.1: rollout importance sampling became rollout_correction
    _Move("algorithm.rollout_is", "algorithm.rollout_correction.rollout_is", "0.6.1",
          "rollout_is now takes the aggregation level ('token' or 'sequence'; null disables) instead of True/False"),
    _Move("algorithm.rollout_is_level", "algorithm.rollout_correction.rollout_is", "0.6.1",
          "the level is now the value of rollout_correction.rollout_is"),
    _Move("algorithm.rollout_is_threshold", "algorithm.rollout_correction.rollout_is_threshold", "0.6.1"),
    _Move("algorithm.rollout_is_veto_threshold", "algorithm.rollout_correction.rollout_token_veto_threshold", "0.6.1"),
    # after v0.7.0 (verl b178a3c and 0.7.1)
    _Move(_ARR + "rollout.update_weights_bucket_megabytes",
          _ARR + "rollout.checkpoint_engine.update_weights_bucket_megabytes", "0.7.1",
          "the weight-sync bucket moved under checkpoint_engine (its default is 2048, was 512)"),
    _Move("reward_manager.", "reward.reward_manager.", "0.7.1", "reward settings moved under reward."),
    _Move("reward_model.sandbox_fusion.", "reward.sandbox_fusion.", "0.7.1", "reward settings moved under reward."),
    _Move("reward_model.rollout.", "reward.reward_model.rollout.", "0.7.1", "reward settings moved under reward."),
    _Move("reward_model.", "reward.reward_model.", "0.7.1", "reward settings moved under reward."),
    _Move("critic.model.fsdp_config.", "critic.fsdp.", "0.8.0", "the critic's FSDP engine config moved"),
    _Move("trainer.use_legacy_worker_impl", None, "0.8.0",
          "0.8.0 removed the legacy workers; the engine workers (what 'disable' chose) are the only path"),
    _Move(_ARR + "rollout.skip_rollout", _ARR + "rollout.skip.enable", "0.8.0"),
    _Move(_ARR + "rollout.skip_dump_dir", _ARR + "rollout.skip.dump_dir", "0.8.0"),
    _Move(_ARR + "rollout.skip.", "skip.rollout.", "0.9.0", "rollout skipping moved to the top-level skip."),
    _Move(_ARR + "actor.router_replay.", _ARR + "actor.megatron.router_replay.", "0.9.1"),
    _Move(_ARR + "ref.router_replay.", _ARR + "ref.megatron.router_replay.", "0.9.1"),
    _Move(_ARR + "actor.megatron.grad_offload", None, "0.9.1",
          "it was never used: gradient buffers follow param_offload"),
    _Move(_ARR + "ref.megatron.grad_offload", None, "0.9.1", "it was never used"),
    _Move("critic.megatron.grad_offload", None, "0.9.1", "it was never used: gradient buffers follow param_offload"),
)

# Removed keys whose value, when it is this one, chose what the target release always does: the
# override is dropped without --unsafe (nothing changes for the run). Any other value changes
# behaviour, so it stays an --unsafe drop. "*": any value (a key verl never read).
SAME_AS_REMOVAL: dict[str, str] = {
    # 0.7.x: 'disable' ran the engine workers, the only workers from 0.8.0
    # (verl/trainer/main_ppo.py@v0.7.1 vs @v0.8.0)
    "trainer.use_legacy_worker_impl": "disable",
    # never read by the Megatron workers (grad buffers follow param_offload); 0.9.1 removed the key
    _ARR + "actor.megatron.grad_offload": "*",
    _ARR + "ref.megatron.grad_offload": "*",
    "critic.megatron.grad_offload": "*",
}

VALUE_CHANGES: tuple[ValueChange, ...] = (
    ValueChange(_ARR + "rollout.mode", "sync", "async", "0.7.0",
                "synchronous rollout was removed; async is the only rollout mode"),
    ValueChange(_ARR + "rollout.load_format", "dummy_megatron", "dummy", "0.6.0",
                "dummy_megatron was folded into dummy"),
    ValueChange("reward_model.rollout.load_format", "dummy_megatron", "dummy", "0.6.0",
                "dummy_megatron was folded into dummy"),
)


def removed_values(version: str | None = None) -> list[ValueChange]:
    """Value-level migrations; with `version`, only those in force there (since <= version)."""
    if version is None:
        return list(VALUE_CHANGES)
    v = parse(version)
    return [c for c in VALUE_CHANGES if parse(c.since) <= v]


_VALUE_CHANGE_KEYS = frozenset(change.key for change in VALUE_CHANGES)


def bad_value(key: str, value: object, version: str) -> ValueChange | None:
    """The value change that makes `key=value` invalid in `version`, if any."""
    if key not in _VALUE_CHANGE_KEYS:
        return None  # asked of every override of every call: most keys never changed values
    for change in removed_values(version):
        if change.key == key and isinstance(value, str) and value == change.old_value:
            return change
    return None


@lru_cache(maxsize=8192)  # pure on the key (MOVES is fixed); asked for every key of every release
def _move_for(key: str) -> tuple[_Move, str | None] | None:
    """The most specific hand-written move covering `key`, and the mapped new key."""
    best: tuple[_Move, str | None] | None = None
    best_len = -1
    for move in MOVES:
        if move.old.endswith("."):
            if key.startswith(move.old) and len(move.old) > best_len:
                new = None if move.new is None else move.new + key[len(move.old):]
                best, best_len = (move, new), len(move.old)
        elif key == move.old and len(move.old) > best_len:
            best, best_len = (move, move.new), len(move.old)
    return best


def _follow(target: str | None, new_keys: set[str], to_version: str) -> str | None:
    """A key that moved again (rollout.skip_rollout -> rollout.skip.enable in 0.8.0 -> skip.rollout.enable
    in 0.9.0): follow the later moves, up to `to_version`, until the key exists there."""
    seen: set[str] = set()
    while target is not None and target not in new_keys and target not in seen:
        seen.add(target)
        found = _move_for(target)
        if found is None or parse(found[0].since) > parse(to_version) or found[1] is None:
            break
        target = found[1]
    return target


def _sequence(from_version: str, to_version: str) -> list[str]:
    lo, hi = sorted((from_version, to_version), key=parse)
    ids = [v for v in available() if parse(lo) <= parse(v) <= parse(hi)]
    # `0.7.0+b178a3c` sorts after 0.7.0 (same tuple); keep the endpoints exact.
    return ids


def _first_missing(key: str, later: list[str], to_version: str) -> str:
    """The first schema id of `later` (the ids after the from-version, up to to_version) that
    lacks `key`."""
    for version in later:
        if not load(version).has(key) and not load(version).has_anywhere(key):
            return version
    return to_version


@release_cache(64, 0, 1)
def _renames_cached(from_version: str, to_version: str) -> tuple[Rename, ...]:
    old = load(from_version)
    new = load(to_version)
    new_keys = new.all_keys()
    out: list[Rename] = []
    forward = parse(from_version) <= parse(to_version)
    listed: list[list[str]] = []

    def first_missing(key: str) -> str:
        # The releases after from_version are listed once (when a gone key first asks), not once per key.
        if not listed:
            listed.append([version for version in _sequence(from_version, to_version) if version != from_version])
        return _first_missing(key, listed[0], to_version)

    for key in sorted(old.all_keys()):
        gone = not new.has_anywhere(key)
        found = _move_for(key) if forward else None
        if found is not None:
            move, target = found
            in_window = parse(from_version) < parse(move.since) <= parse(to_version)
            if not gone and not (move.backend and in_window):
                continue
            # `since`: the first packaged schema without the key (HEAD-like ids included);
            # the table's release when the key stays but changed meaning (backend moves).
            since = first_missing(key) if gone else move.since
            target = _follow(target, new_keys, to_version)
            if target is not None and target in new_keys:
                out.append(Rename(key, target, since, move.note, move.backend))
                continue
            if move.new is None:
                out.append(Rename(key, None, since, move.note or f"removed in verl {since}", move.backend))
                continue
            if not gone:
                continue
        if gone:
            since = first_missing(key) if forward else from_version
            out.append(Rename(key, None, since, f"removed in verl {since}"))
    return tuple(out)


def renames(from_version: str, to_version: str) -> list[Rename]:
    """Keys of `from_version`'s PPO configs that are renamed or gone in `to_version`."""
    return list(_renames_cached(normalize(from_version), normalize(to_version)))


@release_cache(16, 0, every_release=True)
def history(version: str) -> dict[str, Rename]:
    """Every key of an older packaged release that is renamed or gone in `version`
    (old key -> Rename; the newest older release wins for its `since`)."""
    target = parse(version)
    out: dict[str, Rename] = {}
    for older in available():
        if older == version or parse(older) > target or (parse(older) == target and "+" in older):
            continue
        for item in renames(older, version):
            out.setdefault(item.old_key, item)
    return out


@release_cache(16, 0, every_release=True)
def added_later(version: str) -> dict[str, str]:
    """Keys absent from `version` that a newer packaged release has: key -> first release."""
    here = load(version).all_keys()
    out: dict[str, str] = {}
    for newer in available():
        if parse(newer) <= parse(version):
            continue
        for key in load(newer).all_keys() - here:
            out.setdefault(key, newer)
    return out
