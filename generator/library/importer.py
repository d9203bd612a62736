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
from pathlib import Path
from typing import Any, Iterator

from generator.config.types import Config
from generator.base.errors import InputError
from generator.base.files import write_atomic
from generator.library.recipe_format import layout_mapping
from generator.verl.constants import ACTOR, PPO_ENTRY, ROLLOUT_ENGINES

# Per-run values: a recipe is a setup, not one person's run.
_RUN_SPECIFIC_PREFIXES = ("data.train_files", "data.val_files", "trainer.project_name", "trainer.experiment_name",
                          "trainer.default_local_dir", "trainer.logger", "trainer.val_before_train",
                          "trainer.save_freq", "trainer.test_freq", "trainer.total_epochs",
                          "trainer.total_training_steps", "trainer.n_gpus_per_node", "trainer.nnodes",
                          "actor_rollout_ref.model.path", "critic.model.path", "trainer.resume_mode",
                          "trainer.log_val_generations", "hydra.", "ray_kwargs.", "ray_init.")

def _need(value: Any, what: str, where: str) -> Any:
    if value is None:
        raise InputError(f"{where}: cannot import: {what} is not known statically")
    return value


def recipe_mapping_from_config(config: Config, *, name: str, where: str,
                               entry: str = PPO_ENTRY) -> tuple[dict[str, Any], list[str]]:
    """The structured recipe mapping for one effective Config (overrides not yet filled in)."""
    from generator.model import find_model
    from generator.script.extract import find_setup_model, setup_from_config

    notes: list[str] = []
    if config.backend != "megatron":
        raise InputError(f"{where}: cannot import: only Megatron launches become recipes "
                         f"(this call uses the {config.backend} backend)")
    setup = setup_from_config(config, entry=entry)
    model_path = setup.model_path
    if model_path is None:
        raise InputError(f"{where}: cannot import: actor_rollout_ref.model.path is not known statically")
    if not setup.model_path_known:
        # `$HOME/models/Qwen2-7B-Instruct`: the folder name still says which model it is
        facts = find_setup_model(setup)
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
    per_node = _need(setup.per_node, "trainer.n_gpus_per_node", where)
    nodes = _need(setup.nodes, "trainer.nnodes", where)
    algo = setup.algorithm
    if algo is None:
        raise InputError(f"{where}: cannot import: algorithm.adv_estimator '{setup.estimator}' has no recipe algorithm")
    lay = setup.layout
    layout = layout_mapping(lay)
    batch: dict[str, Any] = {
        "train_batch_size": _need(setup.train_batch_size, "data.train_batch_size", where),
        "ppo_mini_batch_size": _need(setup.ppo_mini_batch_size, ACTOR + "ppo_mini_batch_size", where),
        "micro_batch_per_gpu": lay.micro_batch_per_gpu,
    }
    if setup.log_prob_micro_batch_per_gpu is not None:
        batch["log_prob_micro_batch_per_gpu"] = setup.log_prob_micro_batch_per_gpu
    batch["use_dynamic_bsz"] = lay.use_dynamic_bsz
    if lay.use_dynamic_bsz:
        batch["token_budget"] = _need(setup.token_budget, ACTOR + "ppo_max_token_len_per_gpu", where)
        if setup.log_prob_token_budget is not None:
            batch["log_prob_token_budget"] = setup.log_prob_token_budget
    offload: dict[str, Any] = {"param": lay.offload.param, "grad": lay.offload.grad,
                               "optimizer": lay.offload.optimizer, "cpu_optimizer": lay.offload.cpu_optimizer}
    if lay.offload.cpu_optimizer and setup.cpu_optimizer_fraction is not None:
        offload["cpu_optimizer_fraction"] = setup.cpu_optimizer_fraction  # unset: the recipe's default
    rollout_name = setup.rollout_name
    if rollout_name not in ROLLOUT_ENGINES:
        notes.append(f"rollout engine '{rollout_name}' is not one a recipe renders; using vllm")
        rollout_name = "vllm"
    mapping: dict[str, Any] = {
        "name": name,
        "model": facts.name,
        "algorithm": algo,
        "gpus": per_node * nodes,
        "nodes": nodes,
        "gpu": "h100",
        "gpu_assumed": True,  # a launch script does not name its GPU
        "backend": "megatron",
        "verl_versions": [config.version],
        "tags": ["imported"],
        "description": f"{facts.name} {algo.upper()} on {per_node * nodes} GPUs, imported from a launch script",
        "provenance": "",
        **({"model_path": model_path} if model_path else {}),
        "config": {
            "layout": layout,
            "rollout": {"name": rollout_name, "tp": lay.rollout_tp,
                        "gpu_memory_utilization": lay.gpu_memory_utilization, "n": setup.n or 1},
            "batch": batch,
            "lengths": {"prompt": _need(setup.prompt_len, "data.max_prompt_length", where),
                        "response": _need(setup.response_len, "data.max_response_length", where)},
            "offload": offload,
            "recompute": lay.recompute,
        },
    }
    notes.append("gpu type is not written in a launch script; 'h100' assumed (gen import --gpu TYPE, or set the "
                 "recipe's 'gpu' field and drop 'gpu_assumed')")
    return mapping, notes


def _same(a: object, b: object) -> bool:
    from generator.config.parsed_values import same_value

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
        # `++` stays `++`: verl's own examples use it where the key may already be there when the
        # line is applied (the ref's mapping an earlier `+actor...` line filled); `+` would fail
        word_key = (key if key in rendered.values or override.op == "=" else
                    "++" + key if override.op == "++" else "+" + key)
        for flat_key, flat_value in _flatten(word_key, value):
            extra[flat_key] = flat_value
    return extra, notes


def _flatten(key: str, value: object) -> Iterator[tuple[str, object]]:
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
    from generator.library.recipe_format import name_problem, recipe_from_mapping
    from generator.library.store import user_library_dir
    from generator.project.settings import load_project
    from generator.schema.resolution import check_explicit, recipe_release, resolve_script
    from generator.script.extract import trainer_call
    from generator.reading.shell import read_launch

    problem = name_problem(name)
    if problem:  # before reading anything: nothing is written under a name that is refused
        raise InputError(f"--name: {problem}")
    check_explicit(version, None)
    launch = read_launch(script)
    call = trainer_call(launch)
    if call is None:
        raise InputError(f"{script}: cannot import: no trainer call found")
    # The verl the script runs, as gen check resolves it; the recipe targets its packaged release.
    chosen, retargeted = recipe_release(resolve_script(launch, script, version=version, project=load_project(script)))
    invocation = call.invocation
    notes = [f"{script}: {call.live_calls} trainer calls; imported the one at line {invocation.line}"] \
        if call.live_calls > 1 else []
    if retargeted:
        notes.append(retargeted)
    config = build_config(invocation, version=chosen, script_dir=str(Path(script).resolve().parent))
    mapping, more = recipe_mapping_from_config(config, name=name, where=script, entry=invocation.entry)
    if gpu is not None:
        from generator.layout.hardware import gpu_spec

        mapping["gpu"] = gpu_spec(gpu).name
        mapping.pop("gpu_assumed", None)
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
    from generator.library.recipe_format import recipe_from_mapping
    from generator.judging import check_config

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
            # A recipe is written only when its config is clean of errors and warnings
            # (generator.render refuses either), so a setup with either is refused here, in one line.
            problems = [f"{f.code} {f.message}" for f in loud]
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
