"""The recipe model: which verl keys a generated Megatron script sets, and why.

This is the single place that knows the keys of a recipe. `build_recipe(spec)` turns a
`RecipeSpec` (model, chosen layout, algorithm, rollout engine, launcher, verl release, paths,
lengths, batch sizes, names) into a `ScriptSettings`: the knob block (env-overridable variables at
the top of the script) and ordered override groups (data, model, actor, rollout, ref,
critic, algorithm, trainer). Templates only format a `ScriptSettings`; the rules judge the overrides
`recipe_overrides()` yields, with every knob at its default.

Pure: no I/O, no printing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from generator.base.errors import InputError
from generator.model.facts import ModelFacts
from generator.reading.overrides import format_value
from generator.layout.candidate import Candidate
from generator.render.algorithm_settings import algorithm_keys, dapo_extras
from generator.render.quoting import hydra_body
from generator.render.scale import scale_settings
from generator.render.spec import (
    HydraText,
    Knob,
    KnobKind,
    RecipeSpec,
    ScriptSettings,
    Setting,
    SettingGroup,
    at_least,
    check_spec,
    fill_knob_values,
)
from generator.verl.constants import ACTOR, CRITIC, MODEL_PATH_KEY, REF, ROLLOUT, VLLM_MAX_NUM_BATCHED_TOKENS


# ---------------------------------------------------------------------------------------------
# building the recipe


def _default_model_path(model: ModelFacts) -> str:
    for hf_id in model.hf_ids:
        if hf_id.lower().endswith("-instruct"):
            return hf_id
    return model.hf_ids[0] if model.hf_ids else model.name


def _text_knob(name: str, raw: str | HydraText, comment: str) -> Knob:
    if isinstance(raw, HydraText):
        return Knob(name, raw, "hydra", raw.comment or comment)
    return Knob(name, raw, "text", comment)


def _megatron_layout_settings(prefix: str, c: Candidate, *, offload: bool) -> list[Setting]:
    """TP/PP/VPP/CP/EP/ETP (+ uneven stages, recompute, offload) under `<prefix>megatron.`
    (`prefix` is a role's key prefix from generator.verl.constants, ending in a dot)."""
    m = prefix + "megatron."
    out = [Setting(m + "tensor_model_parallel_size", c.tp, "TP"),
           Setting(m + "pipeline_model_parallel_size", c.pp, "PP")]
    if c.vpp is not None:
        out.append(Setting(m + "virtual_pipeline_model_parallel_size", c.vpp, "VPP"))
    if c.cp != 1:
        out.append(Setting(m + "context_parallel_size", c.cp, "CP"))
    if c.ep != 1:
        out.append(Setting(m + "expert_model_parallel_size", c.ep, "EP"))
    if c.etp is not None:
        out.append(Setting(m + "expert_tensor_parallel_size", c.etp, "ETP"))
    otc = m + "override_transformer_config."
    if c.first_stage_layers is not None:
        out.append(Setting(otc + "num_layers_in_first_pipeline_stage", c.first_stage_layers, add=True))
    if c.last_stage_layers is not None:
        out.append(Setting(otc + "num_layers_in_last_pipeline_stage", c.last_stage_layers, add=True))
    if c.recompute:
        out += [Setting(otc + "recompute_granularity", "full"), Setting(otc + "recompute_method", "uniform"),
                Setting(otc + "recompute_num_layers", 1)]
    if offload:
        # grad_offload is not set: verl never reads it (grad buffers follow param_offload), and
        # 0.9.1 removed the key, so leaving it out keeps the script valid there too.
        out += [Setting(m + "param_offload", c.offload.param, "PARAM_OFFLOAD"),
                Setting(m + "optimizer_offload", c.offload.optimizer, "OPTIMIZER_OFFLOAD")]
    return out


def _cpu_optimizer_settings(prefix: str, c: Candidate) -> list[Setting]:
    if not c.offload.cpu_optimizer:
        return []
    o = prefix + "optim.override_optimizer_config."
    return [Setting(o + "optimizer_cpu_offload", True, add=True),
            Setting(o + "overlap_cpu_optimizer_d2h_h2d", True, add=True),
            Setting(o + "use_precision_aware_optimizer", True, add=True),
            Setting(o + "optimizer_offload_fraction", c.offload.cpu_optimizer_fraction, add=True)]


def build_recipe(spec: RecipeSpec) -> ScriptSettings:
    """The settings of the script `spec` describes: its knob block, then verl's keys group by group
    (engine, data, model, actor, rollout, ref, critic, algorithm, trainer, scale), the recipe's
    notes, DAPO's extras and the overrides a re-rendered script keeps."""
    check_spec(spec)
    algo = algorithm_keys(spec.algo, spec.version)
    _check_token_budgets(spec)
    b = _batches(spec)
    recipe = ScriptSettings(spec)
    recipe.notes.extend(spec.notes)
    if spec.nodes_note:
        recipe.notes.append(spec.nodes_note)
    recipe.knobs.extend(_knobs(spec, b))

    from generator.render.release_form import engine_settings

    for name, settings in (("engine", engine_settings(spec.version)), ("data", _data_settings(spec)),
                           ("model", [Setting(MODEL_PATH_KEY, None, "MODEL_PATH")]),
                           ("actor", _actor_settings(spec, b, algo.actor)), ("rollout", _rollout_settings(spec, b)),
                           ("ref", _ref_settings(spec, b)), ("critic", _critic_settings(spec, b) if algo.uses_critic else []),
                           ("algorithm", [Setting("algorithm.adv_estimator", algo.adv_estimator), *algo.algorithm]),
                           ("trainer", _trainer_settings(spec))):
        if settings:
            recipe.groups.append(SettingGroup(name, tuple(fill_knob_values(recipe, settings))))
    _finish(recipe, spec)
    return recipe


@dataclass(frozen=True, slots=True)
class _Batches:
    """The micro batches and log-prob token budget the script writes (several groups share them)."""

    micro: int
    log_prob_micro: int
    log_prob_budget: int | None  # rollout and ref log-prob passes (dynamic bsz)


def _check_token_budgets(spec: RecipeSpec) -> None:
    c, seq_len = spec.layout, spec.prompt_len + spec.response_len
    if c.use_dynamic_bsz:
        for label, cap in (("actor", c.token_budget), ("log-prob", c.log_prob_token_budget or c.token_budget)):
            if cap is None or cap * c.cp < seq_len:
                raise InputError(f"the {label} token budget {cap} x CP {c.cp} is below prompt+response = {seq_len}")


def _batches(spec: RecipeSpec) -> _Batches:
    c = spec.layout
    micro = c.micro_batch_per_gpu
    log_prob_micro = c.log_prob_micro_batch_per_gpu or micro
    on_policy = spec.ppo_mini_batch_size == spec.train_batch_size and spec.ppo_epochs == 1
    if on_policy:
        # Strictly on-policy: old log-probs computed in other micro batches than the update's
        # make the ratio drift from 1 (VX917, docs/rules/cross-checks.md#vx917).
        log_prob_micro = micro
    log_prob_budget = c.token_budget if on_policy else (c.log_prob_token_budget or c.token_budget)
    return _Batches(micro, log_prob_micro, log_prob_budget)


def _knobs(spec: RecipeSpec, b: _Batches) -> list[Knob]:
    """The knob block at the top of the script (`TP=${TP:-2}` ...), in the order it prints."""
    c = spec.layout
    k = [_text_knob("MODEL_PATH", spec.model_path or _default_model_path(spec.model),
                    "Hugging Face id or local directory of the model")]
    for name, given, default, what in (
            ("TRAIN_FILES", spec.train_files, "$HOME/data/gsm8k/train.parquet", "training data"),
            ("VAL_FILES", spec.val_files, "$HOME/data/gsm8k/test.parquet", "validation data")):
        if given is not None:
            k.append(_text_knob(name, given, f"{what} (parquet)"))
        else:
            k.append(Knob(name, default, "shell", f"{what} (parquet)", shell_default=f'"{default}"'))
    k.append(_text_knob("PROJECT_NAME", spec.project_name or "verl_megatron", "logger project"))
    k.append(_text_knob("EXPERIMENT_NAME",
                        spec.experiment_name or f"{spec.model_slug}_{spec.algo}_megatron", "logger run name"))
    if spec.checkpoint_dir is not None:
        k.append(_text_knob("CHECKPOINT_DIR", spec.checkpoint_dir, "where checkpoints are saved"))
    if spec.resume_from is not None:
        k.append(_text_knob("RESUME_FROM", spec.resume_from, "checkpoint folder to resume from"))
    k += [Knob("NNODES", spec.nodes, "int", "nodes"),
          Knob("GPUS_PER_NODE", spec.gpus_per_node, "int", "GPUs per node"),
          Knob("TP", c.tp, "int", "tensor parallel"),
          Knob("PP", c.pp, "int", "pipeline parallel")]
    if c.vpp is not None:
        k.append(Knob("VPP", c.vpp, "int", "virtual pipeline stages per rank"))
    if c.cp != 1:
        k.append(Knob("CP", c.cp, "int", "context parallel"))
    if c.ep != 1:
        k.append(Knob("EP", c.ep, "int", "expert parallel"))
    if c.etp is not None:
        k.append(Knob("ETP", c.etp, "int", "expert tensor parallel"))
    k += [Knob("ROLLOUT_TP", c.rollout_tp, "int", f"{spec.rollout} tensor parallel"),
          Knob("GPU_MEMORY_UTILIZATION", c.gpu_memory_utilization, "float", f"{spec.rollout} KV-cache share"),
          Knob("PARAM_OFFLOAD", c.offload.param, "bool", "params+grads to CPU between phases"),
          Knob("OPTIMIZER_OFFLOAD", c.offload.optimizer, "bool", "Adam state to CPU between phases"),
          Knob("TRAIN_BATCH_SIZE", spec.train_batch_size, "int", "prompts per step"),
          Knob("PPO_MINI_BATCH_SIZE", spec.ppo_mini_batch_size, "int", "prompts per optimizer update"),
          Knob("MICRO_BATCH_PER_GPU", b.micro, "int", "responses per forward/backward"),
          Knob("LOG_PROB_MICRO_BATCH_PER_GPU", b.log_prob_micro, "int", "responses per log-prob forward"),
          Knob("N_RESPONSES", spec.n, "int", "responses per prompt"),
          Knob("MAX_PROMPT_LENGTH", spec.prompt_len, "int", "tokens"),
          Knob("MAX_RESPONSE_LENGTH", spec.response_len, "int", "tokens")]
    if c.use_dynamic_bsz:
        k += [Knob("ACTOR_TOKEN_BUDGET", c.token_budget, "int", "tokens per GPU per micro-batch (update)"),
              Knob("LOG_PROB_TOKEN_BUDGET", c.log_prob_token_budget or c.token_budget, "int",
                   "tokens per GPU per micro-batch (log-prob, ref)")]
    return k


def _data_settings(spec: RecipeSpec) -> list[Setting]:
    return [Setting("data.train_files", spec.train_files, "TRAIN_FILES"),
            Setting("data.val_files", spec.val_files, "VAL_FILES"),
            Setting("data.train_batch_size", spec.train_batch_size, "TRAIN_BATCH_SIZE"),
            Setting("data.max_prompt_length", spec.prompt_len, "MAX_PROMPT_LENGTH"),
            Setting("data.max_response_length", spec.response_len, "MAX_RESPONSE_LENGTH"),
            Setting("data.filter_overlong_prompts", True),
            Setting("data.truncation", "error")]


def _actor_settings(spec: RecipeSpec, b: _Batches, algorithm_actor: tuple[Setting, ...]) -> list[Setting]:
    c, a = spec.layout, ACTOR
    actor = [Setting(a + "optim.lr", spec.lr),
             Setting(a + "ppo_mini_batch_size", spec.ppo_mini_batch_size, "PPO_MINI_BATCH_SIZE"),
             Setting(a + "ppo_micro_batch_size_per_gpu", b.micro, "MICRO_BATCH_PER_GPU")]
    if spec.ppo_epochs != 1:
        actor.append(Setting(a + "ppo_epochs", spec.ppo_epochs))
    actor.append(Setting(a + "use_dynamic_bsz", c.use_dynamic_bsz))
    if c.use_dynamic_bsz:
        actor.append(Setting(a + "ppo_max_token_len_per_gpu", c.token_budget, "ACTOR_TOKEN_BUDGET"))
    actor += _megatron_layout_settings(a, c, offload=True)
    actor += _cpu_optimizer_settings(a, c)
    actor += algorithm_actor
    return actor


def _rollout_settings(spec: RecipeSpec, b: _Batches) -> list[Setting]:
    c, r = spec.layout, ROLLOUT
    seq_len = spec.prompt_len + spec.response_len
    rollout = [Setting(r + "name", spec.rollout)]
    if at_least(spec.version, "0.7.0"):
        rollout.append(Setting(r + "mode", "async"))
    rollout += [Setting(r + "tensor_model_parallel_size", c.rollout_tp, "ROLLOUT_TP"),
                Setting(r + "gpu_memory_utilization", c.gpu_memory_utilization, "GPU_MEMORY_UTILIZATION"),
                Setting(r + "n", spec.n, "N_RESPONSES"),
                Setting(r + "log_prob_micro_batch_size_per_gpu", b.log_prob_micro, "LOG_PROB_MICRO_BATCH_PER_GPU")]
    if c.use_dynamic_bsz:
        rollout.append(Setting(r + "log_prob_max_token_len_per_gpu", b.log_prob_budget, "LOG_PROB_TOKEN_BUDGET"))
    if seq_len > VLLM_MAX_NUM_BATCHED_TOKENS:  # vLLM could not prefill one sequence in a step
        rollout.append(Setting(r + "max_num_batched_tokens", seq_len))
    return rollout


def _ref_settings(spec: RecipeSpec, b: _Batches) -> list[Setting]:
    """The ref's keys: Megatron asserts its micro key even with dynamic bsz."""
    c, f = spec.layout, REF
    ref = [Setting(f + "log_prob_micro_batch_size_per_gpu", b.log_prob_micro, "LOG_PROB_MICRO_BATCH_PER_GPU")]
    if c.use_dynamic_bsz:
        ref.append(Setting(f + "log_prob_max_token_len_per_gpu", b.log_prob_budget, "LOG_PROB_TOKEN_BUDGET"))
    if not at_least(spec.version, "0.7.0"):
        # before 0.7.0 the ref's sizes were literals (1), not interpolations of the actor's
        ref += [s for s in _megatron_layout_settings(f, c, offload=False)
                if "override_transformer_config.recompute" not in s.key]
        ref.append(Setting(f + "megatron.param_offload", c.offload.param, "PARAM_OFFLOAD"))
    return ref


def _critic_settings(spec: RecipeSpec, b: _Batches) -> list[Setting]:
    """PPO's critic: the SAME layout as the actor, because it reuses the actor's process groups."""
    c = spec.layout
    critic = [Setting(CRITIC + "model.path", None, "MODEL_PATH"),
              Setting(CRITIC + "optim.lr", 1e-5),
              Setting(CRITIC + "optim.lr_warmup_steps_ratio", 0.0),
              Setting(CRITIC + "ppo_micro_batch_size_per_gpu", b.micro, "MICRO_BATCH_PER_GPU")]
    if c.use_dynamic_bsz:
        critic += [Setting(CRITIC + "use_dynamic_bsz", True),
                   Setting(CRITIC + "ppo_max_token_len_per_gpu", c.token_budget, "ACTOR_TOKEN_BUDGET"),
                   Setting(CRITIC + "forward_max_token_len_per_gpu", c.log_prob_token_budget or c.token_budget,
                           "LOG_PROB_TOKEN_BUDGET")]
    critic_layout = _megatron_layout_settings(CRITIC, c, offload=True)
    if not at_least(spec.version, "0.6.0"):
        # before 0.6.0 critic.megatron.override_transformer_config interpolated the actor's
        critic_layout = [s for s in critic_layout if ".override_transformer_config." not in s.key]
    critic += critic_layout
    critic += _cpu_optimizer_settings(CRITIC, c)
    return critic


def _trainer_settings(spec: RecipeSpec) -> list[Setting]:
    trainer = [Setting("trainer.critic_warmup", 0),
               Setting("trainer.logger", list(spec.loggers)),
               Setting("trainer.project_name", None, "PROJECT_NAME"),
               Setting("trainer.experiment_name", None, "EXPERIMENT_NAME"),
               Setting("trainer.n_gpus_per_node", spec.gpus_per_node, "GPUS_PER_NODE"),
               Setting("trainer.nnodes", spec.nodes, "NNODES"),
               Setting("trainer.save_freq", spec.save_freq),
               Setting("trainer.test_freq", 5),
               Setting("trainer.total_epochs", spec.total_epochs)]
    if spec.checkpoint_dir is not None:
        trainer.append(Setting("trainer.default_local_dir", None, "CHECKPOINT_DIR"))
    if spec.resume_mode is not None:
        trainer.append(Setting("trainer.resume_mode", spec.resume_mode))
    if spec.resume_from is not None:
        trainer.append(Setting("trainer.resume_from_path", None, "RESUME_FROM"))
    return trainer


# What every rendered Megatron script exports before its trainer call: (name, value, why).
MEGATRON_ENV: tuple[tuple[str, str, str], ...] = (
    ("CUDA_DEVICE_MAX_CONNECTIONS", "1", "Megatron overlaps TP communication with compute"),
)


def _finish(recipe: ScriptSettings, spec: RecipeSpec) -> None:
    """The scale settings and notes, DAPO's extras, the kept overrides, the environment."""
    scale = scale_settings(spec)
    if scale:
        recipe.groups.append(SettingGroup("scale", tuple(item.setting for item in scale)))
        recipe.notes.extend(f"{item.setting.key}={format_value(item.setting.value, short_floats=True)}: {item.why}"
                            for item in scale)
    recipe.notes.extend(f"{spec.model.name}: {note}" for note in spec.model.checkpoint_notes)
    if spec.algo == "dapo":  # before the script's own values, which then replace DAPO's defaults in place
        dapo_extras(recipe, spec)
    if spec.extra_overrides:
        _apply_extra_overrides(recipe, spec.extra_overrides)
    recipe.env.extend(MEGATRON_ENV)


def _apply_extra_overrides(recipe: ScriptSettings, extra: tuple[tuple[str, Any], ...]) -> None:
    knob_values: dict[str, Any] = {}
    added: list[Setting] = []
    for raw_key, value in extra:
        add, force = raw_key.startswith("+"), raw_key.startswith("++")
        key = raw_key.lstrip("+")
        for gi, group in enumerate(recipe.groups):
            hit = next((i for i, s in enumerate(group.settings) if s.key == key), None)
            if hit is not None:
                old = group.settings[hit]
                if old.knob is not None:
                    knob_values[old.knob] = value
                settings = list(group.settings)
                settings[hit] = replace(old, value=value)
                recipe.groups[gi] = SettingGroup(group.name, tuple(settings))
                break
        else:
            if isinstance(value, HydraText):
                name = _free_knob_name(recipe, key)
                recipe.knobs.append(Knob(name, value, "hydra", value.comment or f"was {key} in the legacy script"))
                setting = Setting(key, value, name, add=add, force=force)
            else:
                setting = Setting(key, value, add=add, force=force)
            added = [s for s in added if s.key != key] + [setting]
    if knob_values:
        recipe.knobs[:] = [replace(k, value=knob_values[k.name], kind=_kind_of(knob_values[k.name], k.kind))
                           if k.name in knob_values else k for k in recipe.knobs]
        for gi, group in enumerate(recipe.groups):
            recipe.groups[gi] = SettingGroup(group.name, tuple(fill_knob_values(recipe, list(group.settings))))
    if added:
        recipe.groups.append(SettingGroup("extra", tuple(added)))


def _free_knob_name(recipe: ScriptSettings, key: str) -> str:
    base = "".join(ch if ch.isalnum() else "_" for ch in key.rsplit(".", 1)[-1]).upper()
    taken = {k.name for k in recipe.knobs}
    name, index = base, 2
    while name in taken:
        name, index = f"{base}_{index}", index + 1
    return name


def _kind_of(value: Any, previous: KnobKind) -> KnobKind:
    if isinstance(value, HydraText):
        return "hydra"
    if previous in ("text", "shell"):
        return "text"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "text"


# ---------------------------------------------------------------------------------------------
# views of a recipe


def knob_hydra_text(knob: Knob) -> str:
    """What Hydra receives for a knob at its default value."""
    if knob.kind == "hydra":
        return str(knob.value.hydra)
    if knob.kind in ("text", "shell"):
        return "'" + hydra_body(str(knob.value)) + "'"
    return format_value(knob.value, short_floats=True)


def setting_hydra_text(recipe: ScriptSettings, setting: Setting) -> str:
    if setting.knob is not None:
        return knob_hydra_text(recipe.knob(setting.knob))
    return format_value(setting.value, short_floats=True)


def recipe_overrides(recipe: ScriptSettings) -> list[str]:
    """The override words the trainer receives with every knob at its default (HOME unexpanded)."""
    return [s.prefix + s.key + "=" + setting_hydra_text(recipe, s) for s in recipe.settings]


def recipe_values(recipe: ScriptSettings) -> dict[str, Any]:
    """key -> Python value with every knob at its default (for config_from_overrides)."""
    return {s.prefix + s.key: (s.value.hydra if isinstance(s.value, HydraText) else s.value)
            for s in recipe.settings}
