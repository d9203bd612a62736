"""`gen diff A B`: what differs between two launches, as verl would see them.

Each side becomes the effective Config of the verl release it runs (release defaults applied,
values as Hydra parses them — so `['a','b']` and `'["a","b"]'` are the same list and never reported).
Only differing keys are shown, grouped (batch, parallel, offload, rollout, data, other), followed
by the derived numbers that change (DP, per-rank mini batch, updates per step, ...) and, for
each, the changed inputs that caused it: "per-rank mini batch 320 → 640 (DP 4 → 2)".

A side is a launch script (its first live trainer call) or a recipe name from the library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from generator.config.chain_numbers import derived_numbers
from generator.config.parsed_values import MISSING, same_value
from generator.config.types import Config
from generator.base.errors import InputError
from generator.verl.constants import MEGATRON, ROLLOUT
from generator.config import build_config
from generator.library.convert import to_config
from generator.library.store import load_library
from generator.reading.overrides import parse_override
from generator.project.settings import load_project
from generator.schema import resolve_version
from generator.schema.resolution import check_explicit, resolve, resolve_script
from generator.script.extract import trainer_call
from generator.reading.shell import read_launch

GROUPS = ("batch", "parallel", "offload", "rollout", "data", "other")




# --------------------------------------------------------------------------- grouping

_BATCH_WORDS = ("batch_size", "micro_batch", "mini_batch", "use_dynamic_bsz", "max_token_len",
                "ppo_epochs", "log_prob_max_token_len", "forward_max_token_len", "shuffle")
_PARALLEL_WORDS = ("parallel_size", "n_gpus_per_node", "nnodes", "num_layers_in_first_pipeline_stage",
                   "num_layers_in_last_pipeline_stage", "pipeline_split", "sequence_parallel")


def group_of(key: str) -> str:
    """Which section of the diff a key belongs to (the first rule that matches wins)."""
    leaf = key.rsplit(".", 1)[-1]
    if key == ROLLOUT + "n" or leaf == "rollout_n" or key in ("data.train_batch_size", "data.gen_batch_size",
                                                               "data.val_batch_size"):
        return "batch"
    if "offload" in leaf or leaf in ("optimizer_cpu_offload", "use_precision_aware_optimizer"):
        return "offload"
    if any(word in leaf for word in _PARALLEL_WORDS):
        return "parallel"
    if any(word in leaf for word in _BATCH_WORDS):
        return "batch"
    if key.startswith(ROLLOUT):
        return "rollout"
    if key.startswith("data."):
        return "data"
    return "other"


# --------------------------------------------------------------------------- values


def show_value(value: object) -> str:
    if value is MISSING:
        return "(unset)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return value if value and value.strip() == value and "," not in value else repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show_value(v) for v in value) + "]"
    return str(value)


def json_value(value: object) -> object:
    if value is MISSING:
        return None
    if isinstance(value, tuple):
        return [json_value(v) for v in value]
    if isinstance(value, list):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return value


# --------------------------------------------------------------------------- sides


@dataclass(frozen=True, slots=True)
class Side:
    label: str  # what the user typed (path or recipe name)
    kind: str  # "script" | "recipe"
    config: Config
    values: dict[str, object]
    notes: list[str] = field(default_factory=list)


def _script_side(path: str, version: str, *, env: dict[str, str] | None,
                 args: list[str] | None) -> Side:
    script = read_launch(path, env=env, args=args)
    broken = [hazard.line for hazard in script.hazards if hazard.kind == "parse-error"]
    if broken:  # its overrides are what a broken parse left: a difference in them would mislead
        raise InputError(f"{path}: bash syntax error at line {broken[0]}; `gen check {path}` shows it")
    call = trainer_call(script)
    if call is None:
        raise InputError(f"{path}: no trainer call found (nothing to compare)")
    invocation = call.invocation
    notes = []
    if call.live_calls > 1:
        notes.append(f"{path}: {call.live_calls} trainer calls; comparing the one at line {invocation.line}")
    config = build_config(invocation, version=version, script_dir=str(Path(path).resolve().parent))
    values = dict(config.values)
    # Keys this release does not know still differ between the scripts: keep what was written.
    for override in invocation.overrides:
        if override.op != "~" and override.key and override.key not in values:
            values[override.key] = _parsed(override.text, override.value)
    for issue in config.key_issues:
        key = issue.override.key
        detail = f" ({issue.detail})" if issue.detail else ""
        hint = f"; use {issue.suggestion}" if issue.suggestion else ""
        notes.append(f"{path}:{issue.override.line}: {key}: {issue.kind} in verl {version}{detail}{hint}")
    return Side(label=path, kind="script", config=config, values=values, notes=notes)


def _parsed(text: str, fallback: object) -> object:
    parsed = parse_override(text)
    return fallback if parsed.error else parsed.value


def _recipe_side(name: str, version: str, library: str | None) -> Side:
    recipe = load_library(library).get(name)
    config = to_config(recipe, version)
    return Side(label=name, kind="recipe", config=config, values=dict(config.values))


def load_side(arg: str, *, version: str, library: str | None = None, env: dict[str, str] | None = None,
              args: list[str] | None = None) -> Side:
    """A script path when such a file exists (or the argument looks like a path), else a recipe."""
    if is_script_argument(arg):
        return _script_side(arg, version, env=env, args=args)
    return _recipe_side(arg, version, library)


# --------------------------------------------------------------------------- derived numbers


@dataclass(frozen=True, slots=True)
class Change:
    key: str
    a: object  # the parsed config value on each side (MISSING when unset)
    b: object
    group: str
    implied: bool = False  # neither side sets it: it follows from a default or an interpolation


@dataclass(frozen=True, slots=True)
class DerivedChange:
    name: str
    a: object  # the derived number on each side (None: not derivable)
    b: object
    because: tuple[str, ...]  # "DP 4 → 2", "ppo_mini_batch_size 256 → 128"


@dataclass(slots=True)
class DiffResult:
    a: Side
    b: Side
    version: str
    changes: list[Change]
    derived: list[DerivedChange]
    version_how: str = ""
    releases: tuple[str, str] | None = None  # (A's, B's) when each side was judged on its own

    @property
    def notes(self) -> list[str]:
        return self.a.notes + self.b.notes

    def to_json(self) -> dict[str, object]:
        return {
            "a": self.a.label, "b": self.b.label, "verl_version": self.version, "version_from": self.version_how,
            "a_verl_version": self.releases[0] if self.releases else self.version,
            "b_verl_version": self.releases[1] if self.releases else self.version,
            "changes": [{"key": c.key, "a": json_value(c.a), "b": json_value(c.b), "group": c.group,
                         "a_set": c.a is not MISSING, "b_set": c.b is not MISSING, "implied": c.implied}
                        for c in self.changes],
            "derived": [{"name": d.name, "a": json_value(d.a), "b": json_value(d.b),
                         "because": list(d.because)} for d in self.derived],
            "notes": self.notes,
        }


_NOISE_KEYS = ("trainer.project_name", "trainer.experiment_name")


def compare(a: Side, b: Side, version: str) -> DiffResult:
    changes = []
    for key in sorted(set(a.values) | set(b.values)):
        va, vb = a.values.get(key, MISSING), b.values.get(key, MISSING)
        if not same_value(va, vb):
            implied = key not in a.config.set_by and key not in b.config.set_by and key in a.config.values \
                and key in b.config.values
            changes.append(Change(key, va, vb, group_of(key), implied))
    changes.sort(key=lambda c: (GROUPS.index(c.group), c.key))
    da, db = derived_numbers(a.config), derived_numbers(b.config)
    changed_keys = {c.key: c for c in changes}
    derived: list[DerivedChange] = []
    changed_derived: dict[str, DerivedChange] = {}
    for name, left in da.items():
        right = db.get(name)
        if right is None or same_value(left.value, right.value):
            continue
        because = []
        for source in left.inputs:
            if source in changed_derived:
                d = changed_derived[source]
                because.append(f"{d.name} {derived_text(d.a)} → {derived_text(d.b)}")
            elif source in changed_keys:
                c = changed_keys[source]
                because.append(f"{_short_key(source)} {show_value(c.a)} → {show_value(c.b)}")
        change = DerivedChange(name, left.value, right.value, tuple(because))
        changed_derived[name] = change
        derived.append(change)
    return DiffResult(a=a, b=b, version=version, changes=changes, derived=derived)


def derived_text(value: object) -> str:
    return "n/a" if value is None else show_value(value)


def _short_key(key: str) -> str:
    short = {MEGATRON + "tensor_model_parallel_size": "TP", MEGATRON + "pipeline_model_parallel_size": "PP",
             MEGATRON + "context_parallel_size": "CP", MEGATRON + "expert_model_parallel_size": "EP",
             MEGATRON + "expert_tensor_parallel_size": "ETP", ROLLOUT + "n": "rollout.n",
             ROLLOUT + "tensor_model_parallel_size": "rollout TP"}
    return short.get(key, key.rsplit(".", 1)[-1])


def is_script_argument(arg: str) -> bool:
    """A path to an existing file, or something that looks like one; anything else names a recipe."""
    return Path(arg).exists() or "/" in arg or arg.endswith(".sh")


def choose_version(explicit: str | None, arguments: tuple[str, ...], library: str | None,
                   env: dict[str, str] | None = None, args: list[str] | None = None,
                   config_dir: str | None = None) -> tuple[str, str]:
    """--config-dir (with --verl-version as its release); else --verl-version; else the verl the
    first script argument runs, as `gen check` resolves it (its project file, its project's verl,
    the installed verl); else the release the first recipe targets; else the first script's
    release inferred from its keys."""
    check_explicit(explicit, config_dir)
    scripts = [a for a in arguments if is_script_argument(a)]
    if config_dir:  # the folder is the schema for both sides, whichever script comes first
        script = read_launch(scripts[0], env=env, args=args) if scripts else None
        found = (resolve_script(script, scripts[0], version=explicit, config_dir=config_dir) if script is not None
                 else resolve(None, version=explicit, config_dir=config_dir))
        return found.release, found.summary()
    if explicit is not None and explicit.strip():
        return resolve_version(explicit)
    recipes = [a for a in arguments if not is_script_argument(a)]
    if scripts:
        resolution = resolve_script(read_launch(scripts[0], env=env, args=args), scripts[0],
                                    project=load_project(scripts[0]))
        if not (resolution.inferred and recipes):
            return resolution.release, resolution.summary()
    if recipes:
        target = load_library(library).get(recipes[0]).target_version
        return resolve_version(target)[0], f"the release recipe '{recipes[0]}' targets"
    return resolve_version(None)


def diff(arg_a: str, arg_b: str, *, version: str | None = None, library: str | None = None,
         env: dict[str, str] | None = None, args: list[str] | None = None,
         config_dir: str | None = None) -> DiffResult:
    """Each side is judged against its own release (as `gen check` judges it, or the release its
    recipe targets), so `diff A B` and `diff B A` give the same numbers, mirrored. --verl-version
    or --config-dir names one release for both."""
    chosen_a, how_a = choose_version(version, (arg_a,), library, env, args, config_dir)
    chosen_b, how_b = choose_version(version, (arg_b,), library, env, args, config_dir)
    side_a = load_side(arg_a, version=chosen_a, library=library, env=env, args=args)
    side_b = load_side(arg_b, version=chosen_b, library=library, env=env, args=args)
    same = chosen_a == chosen_b
    result = compare(side_a, side_b, chosen_a if same else f"{chosen_a} (A), {chosen_b} (B)")
    result.version_how = how_a if same and how_a == how_b else f"A: {how_a}; B: {how_b}"
    result.releases = (chosen_a, chosen_b)
    return result
