"""Recipes into the shapes the rest of verl-gen uses: a Candidate for the memory model, a
RecipeSpec for the renderer, override words and an effective Config for the rules and diff.

The verl keys a recipe sets are decided in exactly one place, `generator.render.recipe_settings`;
this module only hands it the recipe's numbers (plus the recipe's verbatim `overrides`).
With another GPU count the planner re-evaluates the layout and every change is explained.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from generator.base.errors import InputError
from generator.library.recipe_format import Recipe
from generator.model.facts import ModelFacts
from generator.layout.candidate import Candidate, PhaseMemory
from generator.plan.memory import MemorySetup
from generator.verl.constants import MEGATRON_LORA_RANK, VLLM_MAX_NUM_BATCHED_TOKENS

if TYPE_CHECKING:
    from generator.config.types import Config
    from generator.layout.hardware import GpuSpec


def recipe_model(recipe: Recipe) -> ModelFacts:
    from generator.model import find_model

    facts = find_model(recipe.model)
    if facts is None:
        where = recipe.path or recipe.name
        raise InputError(f"{where}: field 'model': unknown model '{recipe.model}'")
    return facts


def recipe_gpu(recipe: Recipe) -> GpuSpec:
    from generator.layout.hardware import gpu_spec

    try:
        return gpu_spec(recipe.gpu)
    except InputError as err:
        raise InputError(f"{recipe.path or recipe.name}: field 'gpu': {err}") from None


def recipe_candidate(recipe: Recipe) -> Candidate:
    """The recipe's layout and knobs as the planner's Candidate (memory not yet filled in)."""
    cfg = recipe.config
    lay = cfg.layout
    return Candidate(
        **lay.sizes(), rollout_tp=cfg.rollout_tp, micro_batch_per_gpu=cfg.micro_batch_per_gpu,
        use_dynamic_bsz=cfg.use_dynamic_bsz, token_budget=cfg.token_budget,
        log_prob_token_budget=cfg.log_prob_token_budget,
        log_prob_micro_batch_per_gpu=cfg.log_prob_micro_batch_per_gpu, offload=cfg.offload,
        recompute=cfg.recompute, gpu_memory_utilization=cfg.gpu_memory_utilization,
    )


def per_rank_mini_batch(recipe: Recipe) -> int | None:
    from generator.layout import derive

    lay = recipe.config.layout
    dp = derive.data_parallel_size(recipe.gpus, lay.tp, lay.pp, lay.cp)
    if not dp:
        return None
    return max(1, derive.per_rank_mini_batch(recipe.config.ppo_mini_batch_size, recipe.config.n, dp))


def recipe_memory_setup(recipe: Recipe) -> MemorySetup:
    """The recipe's model, layout, knobs and workload, as the memory model evaluates them."""
    from generator.plan.release_defaults import rollout_defaults
    from generator.plan.workload import Workload, algo_roles

    gpu = recipe_gpu(recipe)
    has_ref, has_critic = algo_roles(recipe.algorithm)
    extra = recipe.config.overrides
    batched = extra.get("actor_rollout_ref.rollout.max_num_batched_tokens")
    lora_rank = extra.get(MEGATRON_LORA_RANK)
    defaults = rollout_defaults(recipe.target_version)  # the release the recipe targets
    work = Workload(
        gpus=recipe.gpus, gpu_memory_gib=gpu.memory_gib, prompt_len=recipe.config.prompt_len,
        response_len=recipe.config.response_len, per_rank_mini_batch=per_rank_mini_batch(recipe) or 1,
        has_ref=has_ref, has_critic=has_critic,
        sync_bucket_mib=defaults.sync_bucket_mib, max_num_seqs=defaults.max_num_seqs,
        # the recipe's own token budget, else the Workload's (vLLM's) default
        max_num_batched_tokens=int(batched) if isinstance(batched, int) else VLLM_MAX_NUM_BATCHED_TOKENS,
        lora_rank=lora_rank if isinstance(lora_rank, int) and lora_rank > 0 else 0,
    )
    return MemorySetup(recipe_model(recipe), recipe_candidate(recipe), work)


def recipe_memory(recipe: Recipe) -> tuple[tuple[PhaseMemory, ...], float]:
    """Predicted per-GPU memory of each phase (worst pipeline stage) and the usable limit."""
    from generator.plan.memory import phase_memory, usable_gib

    setup = recipe_memory_setup(recipe)
    phases = phase_memory(setup.model, setup.candidate, setup.workload)
    return phases, usable_gib(setup.workload.gpu_memory_gib)


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True, slots=True)
class SpecResult:
    spec: Any  # generator.render.spec.RecipeSpec
    notes: tuple[str, ...]  # what changed and why (another GPU count, another release)


def _choose_version(recipe: Recipe, version: str | None) -> tuple[str, list[str]]:
    notes: list[str] = []
    if version is None:
        return recipe.target_version, notes
    if version not in recipe.verl_versions:
        notes.append(f"recipe '{recipe.name}' was written for verl {', '.join(recipe.verl_versions)}; "
                     f"rendering for {version}")
    return version, notes


def to_spec(recipe: Recipe, gpus: int | None = None, *, version: str | None = None,
            nodes: int | None = None, **spec_fields: Any) -> SpecResult:
    """A RecipeSpec that renders this recipe. With `gpus` other than the recipe's, the planner
    re-plans the layout for the new count (batch sizes, lengths and n stay) and the notes say
    what changed; `spec_fields` pass through (launcher, model_path, train_files, ...)."""
    from generator.model import model_slug
    from generator.render.spec import RecipeSpec

    model = recipe_model(recipe)
    gpu = recipe_gpu(recipe)
    chosen, notes = _choose_version(recipe, version)
    cfg = recipe.config
    candidate = recipe_candidate(recipe)
    mini = cfg.ppo_mini_batch_size
    target_gpus, target_nodes = recipe.gpus, recipe.nodes
    if gpus is not None and gpus != recipe.gpus:
        target_gpus = gpus
        target_nodes = nodes or max(1, -(-gpus // gpu.gpus_per_node))
        if gpus % target_nodes:
            raise InputError(f"{gpus} GPUs cannot be split evenly over {target_nodes} nodes")
        candidate, mini, replan_notes = replan(recipe, model, gpu, target_gpus, target_nodes)
        notes += replan_notes
    elif nodes is not None and nodes != recipe.nodes:
        raise InputError(f"recipe '{recipe.name}' runs on {recipe.nodes} node(s); pass --gpus to re-plan")
    spec = RecipeSpec(
        model=model, layout=candidate, gpus=target_gpus, nodes=target_nodes, gpu_name=gpu.name,
        gpu_memory_gib=gpu.memory_gib, algo=recipe.algorithm, rollout=cfg.rollout_name, version=chosen,
        model_path=spec_fields.pop("model_path", None) or recipe.model_path,
        prompt_len=cfg.prompt_len, response_len=cfg.response_len, n=cfg.n,
        train_batch_size=cfg.train_batch_size, ppo_mini_batch_size=mini,
        model_slug=model_slug(model), **spec_fields,
    )
    if recipe.config.overrides and hasattr(spec, "extra_overrides"):
        spec = replace(spec, extra_overrides=tuple(recipe.config.overrides.items()))
    return SpecResult(spec=spec, notes=tuple(notes))


def replan(recipe: Recipe, model: ModelFacts, gpu: GpuSpec, gpus: int, nodes: int) -> tuple[Candidate, int, list[str]]:
    """Plan the recipe's workload (prompts per step, mini batch, n, lengths, algorithm) on another
    GPU count: the batch sizes stay, the planner picks layout and knobs; each field that changed
    is explained."""
    from generator.plan import plan_layout

    cfg = recipe.config
    plan = plan_layout(model, gpus, nodes=nodes, gpu=gpu, prompt_len=cfg.prompt_len,
                       response_len=cfg.response_len, n=cfg.n, algo=recipe.algorithm,
                       train_batch_size=cfg.train_batch_size, ppo_mini_batch_size=cfg.ppo_mini_batch_size,
                       verl_version=recipe.target_version)
    best = plan.best
    if best is None:
        reasons = "; ".join(reason for _, reason in plan.rejected[:2]) or "no layout fits"
        raise InputError(f"recipe '{recipe.name}' cannot be re-planned for {gpus} GPUs: {reasons}")
    old = recipe_candidate(recipe)
    notes = [f"re-planned '{recipe.name}' for {gpus} GPUs on {nodes} node(s) (recipe: {recipe.gpus} on "
             f"{recipe.nodes})"]
    for label, field_name in (("TP", "tp"), ("PP", "pp"), ("VPP", "vpp"), ("CP", "cp"), ("EP", "ep"),
                              ("ETP", "etp"), ("first stage layers", "first_stage_layers"),
                              ("last stage layers", "last_stage_layers"), ("rollout TP", "rollout_tp"),
                              ("micro batch per GPU", "micro_batch_per_gpu"),
                              ("log-prob micro batch per GPU", "log_prob_micro_batch_per_gpu"),
                              ("dynamic bsz", "use_dynamic_bsz"), ("token budget", "token_budget"),
                              ("log-prob token budget", "log_prob_token_budget"), ("offload", "offload"),
                              ("recompute", "recompute"), ("gpu_memory_utilization", "gpu_memory_utilization")):
        before, after = getattr(old, field_name), getattr(best, field_name)
        if before != after:
            notes.append(f"{label}: {_short(before)} -> {_short(after)}")
    relief_changed = old.offload != best.offload or old.recompute != best.recompute
    from generator.layout import derive

    mini = plan.ppo_mini_batch_size or cfg.ppo_mini_batch_size
    if mini != cfg.ppo_mini_batch_size:
        notes.append(f"ppo_mini_batch_size: {cfg.ppo_mini_batch_size} -> {mini}")
    dp_old = derive.data_parallel_size(recipe.gpus, old.tp, old.pp, old.cp)
    dp_new = derive.data_parallel_size(gpus, best.tp, best.pp, best.cp)
    if dp_old != dp_new:
        notes.append(f"DP: {dp_old} -> {dp_new} (per-rank mini batch "
                     f"{_per_rank(cfg.ppo_mini_batch_size, cfg.n, dp_old)} -> {_per_rank(mini, cfg.n, dp_new)})")
    from generator.plan.sizing import RELIEF_WHY

    # The memory relief is explained where it changed; the recipe's own offload, kept, is no news.
    notes.extend(f"why: {line}" for line in best.why[:3] if relief_changed or not line.startswith(RELIEF_WHY))
    return best, mini, notes


def _per_rank(mini: int, n: int, dp: int | None) -> str:
    from generator.layout import derive

    return "?" if not dp else str(derive.per_rank_mini_batch(mini, n, dp))


def _short(value: object) -> str:
    if hasattr(value, "param") and hasattr(value, "cpu_optimizer"):
        flags = [name for name in ("param", "grad", "optimizer", "cpu_optimizer") if getattr(value, name)]
        return "+".join(flags) or "none"
    return "unset" if value is None else str(value)


# --------------------------------------------------------------------------- overrides and config


def extra_override_words(recipe: Recipe) -> list[str]:
    """The recipe's verbatim `config.overrides` as Hydra override words."""
    from generator.reading.overrides import format_value

    words = []
    for key, value in recipe.config.overrides.items():
        words.append(f"{key}={format_value(value)}")
    return words


def to_overrides(recipe: Recipe, version: str | None = None) -> list[str]:
    """Every override word a script rendered from this recipe passes (knobs at their defaults)."""
    from generator.render.recipe_settings import build_recipe, recipe_overrides

    result = to_spec(recipe, version=version)
    words = recipe_overrides(build_recipe(result.spec))
    if getattr(result.spec, "extra_overrides", None):
        return words  # the renderer already emitted them
    return _merge(words, extra_override_words(recipe))


def _merge(words: list[str], extra: list[str]) -> list[str]:
    """Later wins, like Hydra: an extra word replaces the renderer's word for the same key."""
    def key_of(word: str) -> str:
        return word.split("=", 1)[0].lstrip("+~")

    extra_keys = {key_of(w) for w in extra}
    return [w for w in words if key_of(w) not in extra_keys] + extra


def to_config(recipe: Recipe, version: str | None = None) -> Config:
    """The effective Config (release defaults + the recipe's overrides) for rules and diff."""
    from generator.config import config_from_overrides
    from generator.verl.constants import PPO_MEGATRON_CONFIG

    chosen, _ = _choose_version(recipe, version)
    return config_from_overrides(to_overrides(recipe, chosen), version=chosen,
                                 config_name=PPO_MEGATRON_CONFIG)
