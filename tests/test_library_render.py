"""Every packaged recipe renders a script that our own `gen check` passes and that REAL Hydra
composes against verl v0.7.0's config tree; `gen show NAME` and `gen recipe NAME` work."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.library.convert import to_config, to_overrides, to_spec
from generator.library.store import load_library

LIBRARY = load_library()
RECIPES = LIBRARY.sorted()
runner = CliRunner()


@pytest.fixture(scope="module")
def rendered():
    """name -> script text (rendered once; the renderer itself refuses configs with findings)."""
    from generator.render import render_recipe

    return {r.name: render_recipe(to_spec(r).spec, filename=f"run_{r.name}.sh") for r in RECIPES}


@pytest.fixture(scope="module")
def hydra_v070(verl_config_dir):
    """Compose with verl v0.7.0's own config tree (initialised once for the module)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = verl_config_dir / "v0.7.0" / "verl" / "trainer" / "config"
    if not config_dir.is_dir():
        pytest.skip(f"verl config tree not present: {config_dir}")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        yield lambda overrides: compose(config_name="ppo_megatron_trainer", overrides=overrides)
    GlobalHydra.instance().clear()


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.name)
def test_recipe_renders_checks_clean_and_composes(recipe, rendered, hydra_v070):
    from generator.rules import check_script
    from generator.shell import read_script

    text = rendered[recipe.name]
    script = read_script(text, path=f"run_{recipe.name}.sh")
    results = check_script(script, version="0.7.0")
    trainer_calls = [(inv, cfg, findings) for inv, cfg, findings in results if inv is not None]
    assert len(trainer_calls) == 1
    loud = [f"{f.code} {f.message}" for _, _, findings in results for f in findings
            if f.severity in ("error", "warning")]
    assert loud == []

    _, config, _ = trainer_calls[0]
    cfg = hydra_v070(to_overrides(recipe, "0.7.0"))  # raises if Hydra rejects any override
    lay, conf = recipe.config.layout, recipe.config
    actor = cfg.actor_rollout_ref.actor
    assert actor.megatron.tensor_model_parallel_size == lay.tp
    assert actor.megatron.pipeline_model_parallel_size == lay.pp
    assert actor.megatron.context_parallel_size == lay.cp
    assert actor.megatron.expert_model_parallel_size == lay.ep
    assert cfg.actor_rollout_ref.rollout.tensor_model_parallel_size == conf.rollout_tp
    assert cfg.actor_rollout_ref.rollout.n == conf.n
    assert cfg.data.train_batch_size == conf.train_batch_size
    assert actor.ppo_mini_batch_size == conf.ppo_mini_batch_size
    assert actor.use_dynamic_bsz == conf.use_dynamic_bsz
    assert cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes == recipe.gpus
    for key, value in conf.overrides.items():
        node = cfg
        for part in key.lstrip("+").split("."):
            node = node[part]
        assert node == value, key
    # the script our reader sees and the recipe's own config agree on the derived chain
    assert config.get("actor_rollout_ref.actor.megatron.tensor_model_parallel_size") == lay.tp
    assert config.gpus == recipe.gpus


def test_to_config_matches_release_defaults_and_recipe():
    recipe = LIBRARY.get("verl-qwen2-7b-grpo-8gpu")
    config = to_config(recipe, "0.7.0")
    assert config.key_issues == []
    assert config.get("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu") == 4
    assert config.get("actor_rollout_ref.model.use_fused_kernels") is True
    # a default nobody set comes from verl 0.7.0's schema
    assert config.get("actor_rollout_ref.actor.ppo_epochs") == 1


def test_show_recipe_text_and_json():
    result = runner.invoke(app, ["show", "verl-qwen2-7b-grpo-8gpu"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "TP2 PP2" in out and "modelled on verl" in out
    # DP = 8 / (2*2) = 2; per-rank mini = 256*5/2 = 640; updates = (1024*5/2)/640 = 4
    assert re.search(r"^\s+DP\s+2$", out, re.M)
    assert re.search(r"^\s+per-rank mini batch\s+640$", out, re.M)
    assert re.search(r"^\s+optimizer updates per step\s+4$", out, re.M)
    for phase in ("update", "log_prob", "ref_log_prob", "rollout"):
        assert re.search(rf"^\s+{phase}\s+[0-9.]+ GiB of", out, re.M)
    data = json.loads(runner.invoke(app, ["show", "verl-qwen2-7b-grpo-8gpu", "--format", "json"]).stdout)
    assert data["derived"]["DP"] == 2 and data["memory"]["limit_gib"] > 0
    assert {p["phase"] for p in data["memory"]["phases"]} == {"update", "log_prob", "ref_log_prob", "rollout"}


def test_show_unknown_name_is_one_line_exit_2():
    result = runner.invoke(app, ["show", "verl-qwen2-7b-grpo-8gp"])
    assert result.exit_code == 2
    assert "verl-qwen2-7b-grpo-8gpu" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_recipe_by_name_to_stdout_and_replanned():
    result = runner.invoke(app, ["recipe", "verl-qwen2-7b-grpo-8gpu", "-o", "-"])
    assert result.exit_code == 0, result.output
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size" in result.stdout
    assert "use_fused_kernels" in result.stdout  # the recipe's extra override is rendered
    replanned = runner.invoke(app, ["recipe", "verl-qwen2-7b-grpo-8gpu", "--gpus", "16", "-o", "-"])
    assert replanned.exit_code == 0, replanned.output
    assert "re-planned 'verl-qwen2-7b-grpo-8gpu' for 16 GPUs" in replanned.stderr
    assert "GPUS_PER_NODE=${GPUS_PER_NODE:-8}" in replanned.stdout and "NNODES=${NNODES:-2}" in replanned.stdout


def test_recipe_by_name_refuses_planning_options():
    result = runner.invoke(app, ["recipe", "verl-qwen2-7b-grpo-8gpu", "--model", "qwen3-8b", "-o", "-"])
    assert result.exit_code == 2 and "--model is not used with a recipe name" in result.stderr
