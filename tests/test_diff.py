"""`gen diff`: effective-config comparison, grouping, quoting-insensitivity, derived numbers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.config import config_from_overrides
from generator.config.parsed_values import MISSING, same_value
from generator.diff.launches import Side, compare, group_of
from generator.report.diff_text import render_text

runner = CliRunner()

BASE = [
    "trainer.n_gpus_per_node=8", "trainer.nnodes=1",
    "data.train_batch_size=1024", "actor_rollout_ref.rollout.n=5",
    "actor_rollout_ref.actor.ppo_mini_batch_size=256",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
    "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=1",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=2",
    "trainer.logger=['console','wandb']",
]


def side(overrides: list[str], label: str = "x") -> Side:
    config = config_from_overrides(overrides, version="0.7.0")
    return Side(label=label, kind="script", config=config, values=dict(config.values))


def replace_word(words: list[str], key: str, value: str) -> list[str]:
    return [f"{key}={value}" if w.split("=", 1)[0] == key else w for w in words]


@pytest.mark.parametrize("key, group", [
    ("data.train_batch_size", "batch"),
    ("actor_rollout_ref.rollout.n", "batch"),
    ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "batch"),
    ("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", "batch"),
    ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "parallel"),
    ("actor_rollout_ref.rollout.tensor_model_parallel_size", "parallel"),
    ("trainer.n_gpus_per_node", "parallel"),
    ("actor_rollout_ref.actor.megatron.param_offload", "offload"),
    ("actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload", "offload"),
    ("actor_rollout_ref.rollout.gpu_memory_utilization", "rollout"),
    ("actor_rollout_ref.rollout.name", "rollout"),
    ("data.max_prompt_length", "data"),
    ("actor_rollout_ref.actor.optim.lr", "other"),
])
def test_groups(key, group):
    assert group_of(key) == group


def test_same_value_follows_parsed_values():
    assert same_value(["console", "wandb"], ("console", "wandb"))
    assert same_value(1, 1.0) and same_value(1e-6, 0.000001)
    assert not same_value(True, 1) and not same_value(False, 0)
    assert not same_value("1", 1)
    assert not same_value(None, MISSING) and same_value(MISSING, MISSING)
    assert same_value({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]})
    assert not same_value({"a": 1}, {"a": 1, "b": 2})


def test_quoting_only_differences_are_not_reported():
    a = side(BASE)
    b = side(replace_word(BASE, "trainer.logger", '["console","wandb"]'))
    c = side(replace_word(BASE, "trainer.logger", "[console,wandb]"))
    assert compare(a, b, "0.7.0").changes == []
    assert compare(a, c, "0.7.0").changes == []
    d = side(replace_word(BASE, "trainer.logger", "['console']"))
    changes = compare(a, d, "0.7.0").changes
    assert [(ch.key, ch.a, ch.b) for ch in changes] == [("trainer.logger", ["console", "wandb"], ["console"])]


def test_tp_change_explains_the_derived_chain():
    a = side(BASE)
    b = side(replace_word(BASE, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "4"))
    result = compare(a, b, "0.7.0")
    assert [(c.key, c.a, c.b, c.group, c.implied) for c in result.changes] == [
        ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", 2, 4, "parallel", False),
        # verl 0.7.0's ref layout follows the actor's by interpolation: a real, implied change
        ("actor_rollout_ref.ref.megatron.tensor_model_parallel_size", 2, 4, "parallel", True)]
    derived = {d.name: d for d in result.derived}
    # DP = 8/(TP·PP·CP): 8/2 = 4 -> 8/4 = 2; per-rank mini = 256·5/DP: 320 -> 640
    assert (derived["DP"].a, derived["DP"].b) == (4, 2)
    assert derived["DP"].because == ("TP 2 → 4",)
    assert (derived["per-rank mini batch"].a, derived["per-rank mini batch"].b) == (320, 640)
    assert derived["per-rank mini batch"].because == ("DP 4 → 2",)
    # local batch = 1024·5/DP; accumulation = per-rank mini / micro 4
    assert (derived["local batch"].a, derived["local batch"].b) == (1280, 2560)
    assert (derived["grad accumulation steps"].a, derived["grad accumulation steps"].b) == (80, 160)
    # the number of optimizer updates does not change (K = B/m stays 4): not reported
    assert "optimizer updates per step" not in derived
    lines: list[str] = []
    render_text(result, lines.append)
    text = "".join(lines)
    assert "parallel\n  actor_rollout_ref.actor.megatron.tensor_model_parallel_size  2 → 4\n" in text
    assert "actor_rollout_ref.ref.megatron.tensor_model_parallel_size    2 → 4  (follows: set on neither side)" in text
    assert "per-rank mini batch" in text and "320 → 640  (DP 4 → 2)" in text


def test_mini_change_changes_updates_per_step():
    a = side(BASE)
    b = side(replace_word(BASE, "actor_rollout_ref.actor.ppo_mini_batch_size", "128"))
    derived = {d.name: d for d in compare(a, b, "0.7.0").derived}
    # K = B/m = 1280/320 = 4 -> 1280/160 = 8
    assert (derived["optimizer updates per step"].a, derived["optimizer updates per step"].b) == (4, 8)
    assert derived["mini-batches per epoch"].because == ("per-rank mini batch 320 → 160",)


def test_key_only_on_one_side_and_identical_sides():
    a = side(BASE)
    b = side(BASE + ["+actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full"])
    changes = compare(a, b, "0.7.0").changes
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity"
    assert [(c.key, c.a, c.b) for c in changes if not c.implied] == [(key, None, "full")]  # null in the schema
    # the ref (and reward model) transformer configs follow the actor's (interpolations in 0.7.0)
    implied = [c.key for c in changes if c.implied]
    assert any(k.startswith("actor_rollout_ref.ref.megatron.override_transformer_config") for k in implied)
    assert all(".megatron.override_transformer_config" in k for k in implied)
    assert compare(a, side(BASE), "0.7.0").changes == []
    added = compare(a, side(BASE + ["+trainer.my_own_note=hello"]), "0.7.0").changes
    assert [(c.key, c.a, c.b, c.implied) for c in added] == [("trainer.my_own_note", MISSING, "hello", False)]


def test_recipes_diff_json_via_cli():
    result = runner.invoke(app, ["diff", "verl-qwen2-7b-grpo-8gpu", "verl-qwen2.5-7b-grpo-difftp-8gpu",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verl_version"] == "0.7.0"
    changes = {c["key"]: c for c in data["changes"]}
    explicit = {k for k, c in changes.items() if not c["implied"]}
    # G1 and G3 differ in rollout TP, the model, the run name and G1's fused kernels
    assert explicit == {"actor_rollout_ref.rollout.tensor_model_parallel_size", "actor_rollout_ref.model.path",
                        "trainer.experiment_name", "actor_rollout_ref.model.use_fused_kernels"}
    rtp = changes["actor_rollout_ref.rollout.tensor_model_parallel_size"]
    assert (rtp["a"], rtp["b"], rtp["group"]) == (2, 4, "parallel")
    derived = {d["name"]: d for d in data["derived"]}
    assert (derived["rollout replicas"]["a"], derived["rollout replicas"]["b"]) == (4, 2)
    assert derived["rollout replicas"]["because"] == ["rollout TP 2 → 4"]


def test_diff_bad_inputs_are_one_line_exit_2(tmp_path):
    result = runner.invoke(app, ["diff", "no-such-recipe", "verl-qwen2-7b-grpo-8gpu"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    result = runner.invoke(app, ["diff", "verl-qwen2-7b-grpo-8gpu", "verl-qwen2-7b-grpo-8gpu", "--format", "xml"])
    assert result.exit_code == 2 and "--format" in result.stderr
    result = runner.invoke(app, ["diff", str(tmp_path / "missing.sh"), "verl-qwen2-7b-grpo-8gpu"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
