"""Every packaged recipe renders a script that our own `gen check` passes and that REAL Hydra
composes against verl v0.7.0's config tree; `gen show NAME` and `gen recipe NAME` work."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.config.reader import ConfigReader
from generator.library.convert import to_config, to_overrides, to_spec
from generator.library.store import load_library
from generator.plan.memory import PHASES

LIBRARY = load_library()
RECIPES = LIBRARY.sorted()
runner = CliRunner()


@pytest.fixture(scope="module")
def rendered():
    """name -> script text (rendered once; the renderer itself refuses configs with findings)."""
    from generator.render import render_recipe

    return {r.name: render_recipe(to_spec(r).spec, filename=f"run_{r.name}.sh") for r in RECIPES}


# the config tree a release's scripts compose against (0.9.1's YAML is 0.9.0's tree)
CONFIG_TREE = {"0.6.0": "v0.6.0", "0.6.1": "v0.6.1", "0.7.0": "v0.7.0", "0.8.0": "v0.8.0", "0.9.0": "v0.9.0",
               "0.9.1": "v0.9.0"}


@pytest.fixture(scope="module")
def hydra_trees(verl_config_dir):
    """compose(tree, config name, overrides) with verl's own config tree of a release. Hydra's
    verdict depends on each override's operator, key and value grammar, not on the numbers, so
    recipes whose overrides have the same (op, key, value type) signature are composed once per tree."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from generator.reading.overrides import parse_override

    seen: set[tuple] = set()

    def composed(tree: str, config_name: str, overrides: list[str]):
        signature = (tree, config_name,
                     tuple(sorted((p.op, p.key, type(p.value).__name__) for p in map(parse_override, overrides))))
        if signature in seen:
            return None
        config_dir = verl_config_dir / tree / "verl" / "trainer" / "config"
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            cfg = compose(config_name=config_name, overrides=overrides)  # raises if Hydra rejects
        GlobalHydra.instance().clear()
        seen.add(signature)
        return cfg

    return composed


def _lookup(config: Any, key: str) -> Any:
    node = config
    for part in key.lstrip("+").split("."):
        node = node[part]
    return node


# verl's qwen2-7b-math megatron-FSDP example sets `++...ref.megatron.override_transformer_config.x`: the
# ref's mapping already holds x once the actor's line is applied, so a rendered `+` would not compose.
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.name)
def test_recipe_renders_checks_clean_and_composes(recipe, rendered, hydra_trees):
    from generator.render.release_form import composed_config_name
    from generator.judging import check_script
    from generator.reading.shell import read_script

    release = recipe.target_version  # what the script is rendered for (0.8+ examples: model_engine=megatron)
    text = rendered[recipe.name]
    script = read_script(text, path=f"run_{recipe.name}.sh")
    results = check_script(script, version=release)
    trainer_calls = [(inv, cfg, findings) for inv, cfg, findings in results if inv is not None]
    assert len(trainer_calls) == 1
    loud = [f"{f.code} {f.message}" for _, _, findings in results for f in findings
            if f.severity in ("error", "warning")]
    assert loud == []

    # What our reader sees in the rendered script is the recipe.
    _, config, _ = trainer_calls[0]
    lay, conf = recipe.config.layout, recipe.config
    expected = {
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": lay.tp,
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size": lay.pp,
        "actor_rollout_ref.actor.megatron.context_parallel_size": lay.cp,
        "actor_rollout_ref.actor.megatron.expert_model_parallel_size": lay.ep,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": conf.rollout_tp,
        "actor_rollout_ref.rollout.n": conf.n,
        "data.train_batch_size": conf.train_batch_size,
        "actor_rollout_ref.actor.ppo_mini_batch_size": conf.ppo_mini_batch_size,
        "actor_rollout_ref.actor.use_dynamic_bsz": conf.use_dynamic_bsz,
        **{key.lstrip("+"): value for key, value in conf.overrides.items()},
    }
    for key, value in expected.items():
        assert config.get(key) == value, key
    assert ConfigReader(config).gpus == recipe.gpus

    # REAL Hydra accepts the overrides (and, where composed, holds the same values).
    cfg = hydra_trees(CONFIG_TREE[release], composed_config_name(release), to_overrides(recipe, release))
    if cfg is not None:
        for key, value in expected.items():
            assert _lookup(cfg, key) == value, key
        assert cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes == recipe.gpus


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
    for phase in PHASES:
        assert re.search(rf"^\s+{phase}\s+[0-9.]+ GiB of", out, re.M)
    data = json.loads(runner.invoke(app, ["show", "verl-qwen2-7b-grpo-8gpu", "--format", "json"]).stdout)
    assert data["derived"]["DP"] == 2 and data["memory"]["limit_gib"] > 0
    assert {p["phase"] for p in data["memory"]["phases"]} == set(PHASES)


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


@pytest.mark.parametrize(("recipe", "gpus", "relief_changes"), [
    ("planned-qwen2.5-0.5b-grpo-8gpu", "16", False),  # the same offload and recompute on 16 GPUs
    ("verl-deepseek-v3-grpo-96xh20", "128", True),  # the optimizer no longer goes to the CPU
])
def test_a_replan_explains_the_memory_relief_only_where_it_changed(recipe: str, gpus: str, relief_changes: bool):
    """Issue 36: `gen recipe NAME --gpus N` printed "why: memory relief: ..." for offload it kept as
    the recipe had it, a note that changed nothing."""
    result = runner.invoke(app, ["recipe", recipe, "--gpus", gpus, "-o", "-"])
    assert result.exit_code == 0, result.stderr
    notes = [line.removeprefix("note: ") for line in result.stderr.splitlines() if line.startswith("note: ")]
    changed = any(note.startswith(("offload:", "recompute:")) for note in notes)
    assert changed is relief_changes, notes
    assert any(note.startswith("why: memory relief:") for note in notes) is relief_changes, notes
    ep = [note for note in notes if note.startswith("EP:")]
    assert not any(note.endswith("-> 1") for note in ep), ep  # a MoE re-plan keeps expert parallelism


def test_recipe_by_name_refuses_planning_options():
    result = runner.invoke(app, ["recipe", "verl-qwen2-7b-grpo-8gpu", "--model", "qwen3-8b", "-o", "-"])
    assert result.exit_code == 2 and "--model is not used with a recipe name" in result.stderr


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.name)
def test_recipe_is_clean_on_every_release_it_claims(recipe):
    from generator.library.convert import recipe_model
    from generator.judging import check_config

    model = recipe_model(recipe)
    for version in recipe.verl_versions:
        config = to_config(recipe, version)
        assert [(i.kind, i.override.key) for i in config.key_issues] == [], version
        loud = [f"{f.code} {f.message}" for f in check_config(config, model=model)
                if f.severity in ("error", "warning")]
        assert loud == [], version


def test_recipe_by_name_from_a_user_library(tmp_path):
    source = LIBRARY.get("verl-qwen2.5-0.5b-ppo-8gpu").path.read_text()
    (tmp_path / "mine.yaml").write_text(source.replace("name: verl-qwen2.5-0.5b-ppo-8gpu", "name: my-small-ppo"))
    result = runner.invoke(app, ["recipe", "my-small-ppo", "--library", str(tmp_path), "-o", "-"])
    assert result.exit_code == 0, result.output
    assert "# Reproduce: gen recipe my-small-ppo" in result.stdout
    missing = runner.invoke(app, ["recipe", "my-small-ppo", "-o", "-"])
    assert missing.exit_code == 2 and "unknown recipe 'my-small-ppo'" in missing.stderr
