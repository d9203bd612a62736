"""What `gen show NAME` knows about a recipe, as data (report/recipes.py draws it)."""

from __future__ import annotations

from typing import Any

from generator.library.recipe_format import Recipe


def recipe_report(recipe: Recipe) -> dict[str, Any]:
    """Everything `gen show NAME` prints, as data: metadata, settings, derived numbers and the
    predicted memory per phase. Memory and derived numbers are None when they cannot be
    computed (e.g. a user recipe for a model the registry does not know)."""
    from generator.base.errors import InputError

    cfg = recipe.config
    report: dict[str, Any] = {
        "recipe": recipe.summary() | {
            "provenance": recipe.provenance, "path": str(recipe.path) if recipe.path else None,
            "model_path": recipe.model_path,
        },
        "settings": {
            "rollout": {"name": cfg.rollout_name, "tp": cfg.rollout_tp,
                        "gpu_memory_utilization": cfg.gpu_memory_utilization, "n": cfg.n},
            "batch": {"train_batch_size": cfg.train_batch_size, "ppo_mini_batch_size": cfg.ppo_mini_batch_size,
                      "micro_batch_per_gpu": cfg.micro_batch_per_gpu,
                      "log_prob_micro_batch_per_gpu": cfg.log_prob_micro_batch_per_gpu,
                      "use_dynamic_bsz": cfg.use_dynamic_bsz, "token_budget": cfg.token_budget,
                      "log_prob_token_budget": cfg.log_prob_token_budget},
            "lengths": {"prompt": cfg.prompt_len, "response": cfg.response_len},
            "offload": {"param": cfg.offload.param, "grad": cfg.offload.grad, "optimizer": cfg.offload.optimizer,
                        "cpu_optimizer": cfg.offload.cpu_optimizer,
                        "cpu_optimizer_fraction": cfg.offload.cpu_optimizer_fraction},
            "recompute": cfg.recompute,
            "overrides": dict(cfg.overrides),
        },
        "derived": None,
        "memory": None,
        "problems": [],
    }
    try:
        from generator.config.chain_numbers import derived_numbers
        from generator.library.convert import to_config

        numbers = derived_numbers(to_config(recipe))
        report["derived"] = {name: d.value for name, d in numbers.items() if d.value is not None}
    except InputError as err:
        report["problems"].append(str(err))
    try:
        from generator.library.convert import recipe_memory

        phases, limit = recipe_memory(recipe)
        report["memory"] = {
            "limit_gib": limit,
            "phases": [{"phase": p.phase, "gib": round(p.gib, 1), "fits": p.gib <= limit,
                        "terms": [{"name": t.name, "gib": round(t.gib, 1), "note": t.note} for t in p.terms]}
                       for p in phases],
        }
    except InputError as err:
        report["problems"].append(str(err))
    return report
