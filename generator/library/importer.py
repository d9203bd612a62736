"""`gen import SCRIPT --name NAME`: turn a legacy launch script into a recipe.

The script is read statically (never run) and its first live trainer call becomes an
effective Config. The recipe's structured fields come from that Config; every other key the
script sets explicitly, and that the renderer would not produce the same way, is kept verbatim
in `config.overrides` so re-rendering the recipe reproduces the script's training setup.
Paths and names that belong to one run (data files, logger project, checkpoint folders) and
values that depend on something unknown are left out, each with a note.
"""

from __future__ import annotations

import datetime as _dt
import io
import re
from pathlib import Path
from typing import Any

from generator.config.types import Config
from generator.errors import InputError
from generator.files import write_atomic
from generator.verl import PPO_ENTRY

ACTOR = "actor_rollout_ref.actor."
ROLLOUT = "actor_rollout_ref.rollout."
REF = "actor_rollout_ref.ref."
MEGATRON = ACTOR + "megatron."
TRANSFORMER = MEGATRON + "override_transformer_config."
OPTIM_OVERRIDE = ACTOR + "optim.override_optimizer_config."

# Per-run values: a recipe is a setup, not one person's run.
_RUN_SPECIFIC_PREFIXES = ("data.train_files", "data.val_files", "trainer.project_name", "trainer.experiment_name",
                          "trainer.default_local_dir", "trainer.logger", "trainer.val_before_train",
                          "trainer.save_freq", "trainer.test_freq", "trainer.total_epochs",
                          "trainer.total_training_steps", "trainer.n_gpus_per_node", "trainer.nnodes",
                          "actor_rollout_ref.model.path", "critic.model.path", "trainer.resume_mode",
                          "trainer.log_val_generations", "hydra.", "ray_kwargs.", "ray_init.")

def _int(config: Config, key: str) -> int | None:
    from generator.config.reader import as_int

    return None if key in config.unknown else as_int(config.values.get(key))


def _bool(config: Config, key: str) -> bool:
    from generator.config.reader import as_bool

    return bool(as_bool(config.values.get(key))) if key not in config.unknown else False


def _float(config: Config, key: str) -> float | None:
    from generator.config.reader import as_float

    return None if key in config.unknown else as_float(config.values.get(key))


def _need(value: Any, what: str, where: str) -> Any:
    if value is None:
        raise InputError(f"{where}: cannot import: {what} is not known statically")
    return value


def recipe_mapping_from_config(config: Config, *, name: str, where: str,
                               entry: str = PPO_ENTRY) -> tuple[dict[str, Any], list[str]]:
    """The structured recipe mapping for one effective Config (overrides not yet filled in)."""
    from generator.model import find_model

    notes: list[str] = []
    if config.backend != "megatron":
        raise InputError(f"{where}: cannot import: only Megatron launches become recipes "
                         f"(this call uses the {config.backend} backend)")
    model_path = config.values.get("actor_rollout_ref.model.path")
    if not isinstance(model_path, str):
        raise InputError(f"{where}: cannot import: actor_rollout_ref.model.path is not known statically")
    if "actor_rollout_ref.model.path" in config.unknown:
        # `$HOME/models/Qwen2-7B-Instruct`: the folder name still says which model it is
        known_tail = re.sub(r"<\?[^>]*>", "", model_path).rstrip("/").rsplit("/", 1)[-1]
        facts = find_model(known_tail) if known_tail else None
        if facts is None:
            raise InputError(f"{where}: cannot import: actor_rollout_ref.model.path is not known statically")
        notes.append(f"model path '{model_path}' depends on the environment; the recipe uses "
                     f"{facts.name}'s Hugging Face id (render with --model-path to change it)")
        model_path = None
    else:
        facts = find_model(model_path)
    if facts is None:
        raise InputError(f"{where}: cannot import: model '{model_path}' is not in the registry "
                         "(pass a path to a folder with config.json, or a known model name)")
    per_node = _need(_int(config, "trainer.n_gpus_per_node"), "trainer.n_gpus_per_node", where)
    nodes = _need(_int(config, "trainer.nnodes"), "trainer.nnodes", where)
    from generator.script.algorithms import algorithm_of

    algo = algorithm_of(config, entry)
    if algo is None:
        estimator = config.values.get("algorithm.adv_estimator")
        raise InputError(f"{where}: cannot import: algorithm.adv_estimator '{estimator}' has no recipe algorithm")
    layout: dict[str, Any] = {}
    for field_name, key in (("tp", "tensor_model_parallel_size"), ("pp", "pipeline_model_parallel_size"),
                            ("cp", "context_parallel_size"), ("ep", "expert_model_parallel_size")):
        layout[field_name] = _int(config, MEGATRON + key) or 1
    for field_name, key in (("etp", MEGATRON + "expert_tensor_parallel_size"),
                            ("vpp", MEGATRON + "virtual_pipeline_model_parallel_size"),
                            ("first_stage_layers", TRANSFORMER + "num_layers_in_first_pipeline_stage"),
                            ("last_stage_layers", TRANSFORMER + "num_layers_in_last_pipeline_stage")):
        value = _int(config, key)
        if value is not None:
            layout[field_name] = value
    dynamic = _bool(config, ACTOR + "use_dynamic_bsz")
    batch: dict[str, Any] = {
        "train_batch_size": _need(_int(config, "data.train_batch_size"), "data.train_batch_size", where),
        "ppo_mini_batch_size": _need(_int(config, ACTOR + "ppo_mini_batch_size"),
                                     ACTOR + "ppo_mini_batch_size", where),
        "micro_batch_per_gpu": _int(config, ACTOR + "ppo_micro_batch_size_per_gpu") or 1,
    }
    log_prob_micro = _int(config, ROLLOUT + "log_prob_micro_batch_size_per_gpu")
    if log_prob_micro is not None:
        batch["log_prob_micro_batch_per_gpu"] = log_prob_micro
    batch["use_dynamic_bsz"] = dynamic
    if dynamic:
        batch["token_budget"] = _need(_int(config, ACTOR + "ppo_max_token_len_per_gpu"),
                                      ACTOR + "ppo_max_token_len_per_gpu", where)
        log_prob_cap = _int(config, ROLLOUT + "log_prob_max_token_len_per_gpu")
        if log_prob_cap is not None:
            batch["log_prob_token_budget"] = log_prob_cap
    cpu_optimizer = _bool(config, OPTIM_OVERRIDE + "optimizer_cpu_offload")
    offload: dict[str, Any] = {
        "param": _bool(config, MEGATRON + "param_offload"),
        "grad": _bool(config, MEGATRON + "grad_offload"),
        "optimizer": _bool(config, MEGATRON + "optimizer_offload"),
        "cpu_optimizer": cpu_optimizer,
    }
    if cpu_optimizer:
        offload["cpu_optimizer_fraction"] = _float(config, OPTIM_OVERRIDE + "optimizer_offload_fraction") or 1.0
    granularity = config.values.get(TRANSFORMER + "recompute_granularity")
    rollout_name = str(config.values.get(ROLLOUT + "name") or "vllm")
    if rollout_name not in ("vllm", "sglang"):
        notes.append(f"rollout engine '{rollout_name}' is not one a recipe renders; using vllm")
        rollout_name = "vllm"
    gmu = _float(config, ROLLOUT + "gpu_memory_utilization") or 0.5
    mapping: dict[str, Any] = {
        "name": name,
        "model": facts.name,
        "algorithm": algo,
        "gpus": per_node * nodes,
        "nodes": nodes,
        "gpu": "h100",
        "backend": "megatron",
        "verl_versions": [config.version],
        "tags": ["imported"],
        "description": f"{facts.name} {algo.upper()} on {per_node * nodes} GPUs, imported from a launch script",
        "provenance": "",
        **({"model_path": model_path} if model_path else {}),
        "config": {
            "layout": layout,
            "rollout": {"name": rollout_name,
                        "tp": _int(config, ROLLOUT + "tensor_model_parallel_size") or layout["tp"],
                        "gpu_memory_utilization": gmu, "n": _int(config, ROLLOUT + "n") or 1},
            "batch": batch,
            "lengths": {"prompt": _need(_int(config, "data.max_prompt_length"), "data.max_prompt_length", where),
                        "response": _need(_int(config, "data.max_response_length"),
                                          "data.max_response_length", where)},
            "offload": offload,
            "recompute": granularity == "full",
        },
    }
    notes.append("gpu type is not written in a launch script; 'h100' assumed (edit the recipe's 'gpu' field)")
    return mapping, notes


def _same(a: Any, b: Any) -> bool:
    from generator.diffing import same_value

    return same_value(a, b)


def _extra_overrides(config: Config, rendered: Config) -> tuple[dict[str, Any], list[str]]:
    """Keys the script sets explicitly that the rendered recipe does not reproduce."""
    extra: dict[str, Any] = {}
    notes: list[str] = []
    for key, override in config.set_by.items():
        if any(key == p or key.startswith(p) for p in _RUN_SPECIFIC_PREFIXES):
            continue
        if key in config.unknown:
            notes.append(f"left out {key}: its value depends on something unknown ({config.unknown[key]})")
            continue
        value = config.values.get(key)
        if key in rendered.values and _same(rendered.values[key], value):
            continue
        word_key = key if key in rendered.values or override.op == "=" else "+" + key
        for flat_key, flat_value in _flatten(word_key, value):
            extra[flat_key] = flat_value
    return extra, notes


def _flatten(key: str, value: Any):
    """A mapping value becomes one dotted key per leaf (recipes hold scalars and lists)."""
    if isinstance(value, dict) and value:
        for sub, inner in value.items():
            yield from _flatten(f"{key}.{sub}", inner)
    else:
        yield key, value


def import_script(script: str, *, name: str, library: str | None = None, version: str | None = None,
                  force: bool = False, gpu: str | None = None) -> tuple[Path, list[str]]:
    """Write `<library>/<name>.yaml` from the script; return its path and notes for the user."""
    from generator.config import build_config
    from generator.library.convert import to_config
    from generator.library.recipe import recipe_from_mapping
    from generator.library.store import user_library_dir
    from generator.schema import resolve_version
    from generator.shell import read_launch

    chosen, _how = resolve_version(version)
    parsed = read_launch(script)
    calls = [inv for inv in parsed.invocations if inv.branch != "dead"]
    if not calls:
        raise InputError(f"{script}: cannot import: no trainer call found")
    invocation = calls[0]
    notes = [f"{script}: {len(calls)} trainer calls; imported the one at line {invocation.line}"] if len(calls) > 1 else []
    config = build_config(invocation, version=chosen, script_dir=str(Path(script).resolve().parent))
    mapping, more = recipe_mapping_from_config(config, name=name, where=script, entry=invocation.entry)
    if gpu is not None:
        from generator.hardware import gpu_spec

        mapping["gpu"] = gpu_spec(gpu).name
        more = [note for note in more if not note.startswith("gpu type")]
    notes += more
    mapping["provenance"] = f"imported by gen import from {Path(script).name} (verl {chosen}) on " \
                            f"{_dt.date.today().isoformat()}"
    target_dir = user_library_dir(library)
    target = target_dir / f"{name}.yaml"
    # Validate the structure first (one-line errors name the field), then add the extras.
    try:
        recipe = recipe_from_mapping(mapping, where=str(target), path=target, origin="user")
    except InputError as err:  # name the script the value came from, not a file not yet written
        detail = str(err).split(": ", 1)[-1]
        if detail.startswith("field 'name'"):
            raise
        raise InputError(f"{script}: cannot import: the recipe would be invalid: {detail}") from None
    rendered = to_config(recipe, chosen)
    extra, more = _extra_overrides(config, rendered)
    notes += more
    carried = {k.lstrip("+") for k in extra}
    for issue in config.key_issues:  # what the script writes but verl `chosen` would refuse
        if issue.override.key not in carried:
            notes.append(f"left out {issue.override.text}: {issue.kind} in verl {chosen}")
    if extra:
        mapping["config"]["overrides"] = extra
    notes += _keep_what_verl_accepts(mapping, target, chosen, script)
    if target.exists() and not force:
        raise InputError(f"{target}: a recipe with this name exists; pass --force to replace it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"{target.parent}: cannot write the recipe: {err.strerror or err}") from None
    write_atomic(target, dump_recipe_yaml(mapping, header=f"Imported from {script}"), replace=force)
    return target, notes


def _keep_what_verl_accepts(mapping: dict[str, Any], target: Path, version: str, script: str) -> list[str]:
    """The recipe must render: carried-over keys that verl `version` refuses (keys of another
    trainer's config, removed values) are dropped with a note; a setup that still fails the
    checks (e.g. a layout Megatron cannot build) is refused, nothing written."""
    from generator.library.convert import recipe_model, to_config
    from generator.library.recipe import recipe_from_mapping
    from generator.rules import check_config

    notes: list[str] = []
    extra: dict[str, Any] = mapping["config"].get("overrides", {})
    for _round in range(3):
        recipe = recipe_from_mapping(mapping, where=str(target), path=target, origin="user")
        config = to_config(recipe, version)
        refused: dict[str, str] = {}
        for issue in config.key_issues:
            refused[issue.override.key] = f"{issue.kind} in verl {version}"
        loud = [f for f in check_config(config, model=recipe_model(recipe)) if f.severity in ("error", "warning")]
        for finding in loud:
            if finding.key:
                refused.setdefault(finding.key, f"{finding.code}: {finding.message}")
        droppable = {k for k in extra if k.lstrip("+") in refused}
        if not droppable:
            problems = [f"{f.code} {f.message}" for f in loud if f.severity == "error"]
            problems += [f"{k}: {why}" for k, why in refused.items() if k not in {x.lstrip('+') for x in extra}
                         and "in verl" in why]
            if problems:
                raise InputError(f"{script}: cannot import: the setup does not pass the checks for verl {version}: "
                                 + "; ".join(problems[:3]) + " (gen check / gen fix / gen migrate first)")
            return notes
        for key in sorted(droppable):
            notes.append(f"left out {key}={extra[key]!r}: {refused[key.lstrip('+')]}")
            del extra[key]
        if not extra:
            mapping["config"].pop("overrides", None)
    return notes


def dump_recipe_yaml(mapping: dict[str, Any], *, header: str | None = None) -> str:
    """Recipe YAML in the packaged style: block mappings, flow style for the short ones."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    def commented(value: Any, flow: bool = False) -> Any:
        if isinstance(value, dict):
            out = CommentedMap()
            for k, v in value.items():
                if k == "verl_versions":  # "0.10" must not become the float 0.1
                    v = [DoubleQuotedScalarString(str(x)) for x in v]
                out[k] = commented(v, flow=k in ("layout", "rollout", "lengths", "offload"))
            if flow:
                out.fa.set_flow_style()
            return out
        if isinstance(value, (list, tuple)):
            seq = CommentedSeq(commented(v) for v in value)
            seq.fa.set_flow_style()
            return seq
        return value

    data = commented(mapping)
    if header:
        data.yaml_set_start_comment(header)
    yaml = YAML()
    yaml.width = 120
    yaml.indent(mapping=2, sequence=4, offset=2)
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return buffer.getvalue()
