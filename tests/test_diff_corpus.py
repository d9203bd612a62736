"""`gen diff` on real scripts: verl's GRPO Megatron example as shipped in v0.4.1 and v0.7.0."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

EXAMPLE = "examples/grpo_trainer/run_qwen2-7b_math_megatron.sh"
runner = CliRunner()


def stored_path(corpus: Path, tag: str, path: str) -> Path:
    """Where the corpus keeps the content `path` had at `tag` (identical files are stored once)."""
    with open(corpus / "OCCURRENCES.tsv", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["tag"] == tag and row["path"] == path:
                return corpus / "scripts" / row["first_tag"] / row["first_path"]
    pytest.skip(f"{path} not in the corpus at {tag}")


@pytest.fixture(scope="module")
def grpo_example_pair(corpus_dir):
    return stored_path(corpus_dir, "v0.4.1", EXAMPLE), stored_path(corpus_dir, "v0.7.0", EXAMPLE)


def test_v041_vs_v070_reports_real_changes_only(grpo_example_pair):
    old, new = grpo_example_pair
    # the quoting of trainer.logger changed between the two files; the parsed list did not
    assert "trainer.logger=['console','wandb']" in old.read_text()
    assert "trainer.logger='[\"console\",\"wandb\"]'" in new.read_text()

    result = runner.invoke(app, ["diff", str(old), str(new), "--verl-version", "0.7.0", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    changes = {c["key"]: c for c in data["changes"]}
    assert "trainer.logger" not in changes
    assert "data.train_files" not in changes and "data.val_files" not in changes  # same text, same unknown $HOME
    mode = changes["actor_rollout_ref.rollout.mode"]
    assert (mode["a"], mode["b"], mode["group"]) == ("sync", "async", "rollout")
    fused = changes["actor_rollout_ref.model.use_fused_kernels"]
    assert (fused["a"], fused["b"], fused["implied"]) == (False, True, False)
    # v0.4.1 set return_raw_chat only inside `if [ "$rollout_mode" = "async" ]`, which is false there
    assert changes["data.return_raw_chat"]["b"] is True
    # enable_gradient_checkpointing=True (v0.4.1 only) equals 0.7.0's default: not a change
    assert "actor_rollout_ref.model.enable_gradient_checkpointing" not in changes
    explicit = {k for k, c in changes.items() if not c["implied"]}
    assert explicit == {"actor_rollout_ref.rollout.mode", "actor_rollout_ref.model.use_fused_kernels",
                        "data.return_raw_chat"}
    # the batch and layout are the same, so no derived number changes
    assert data["derived"] == []
    assert any("rollout.mode" in note and "0.7.0" in note for note in data["notes"])


def test_text_output_groups_changes(grpo_example_pair):
    old, new = grpo_example_pair
    result = runner.invoke(app, ["diff", str(old), str(new), "--verl-version", "0.7.0"])
    assert result.exit_code == 0
    out = result.stdout
    assert "\nrollout\n  actor_rollout_ref.rollout.mode  sync → async\n" in out
    assert "trainer.logger" not in out


def test_script_against_recipe_shows_the_derived_effect(grpo_example_pair):
    _, new = grpo_example_pair
    result = runner.invoke(app, ["diff", str(new), "verl-qwen2-7b-grpo-sglang-vpp-8gpu", "--verl-version", "0.7.0",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    changes = {c["key"]: c for c in data["changes"]}
    tp = changes["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"]
    assert (tp["a"], tp["b"], tp["group"]) == (2, 4, "parallel")
    derived = {d["name"]: d for d in data["derived"]}
    # DP = 8/(2·2) = 2 -> 8/(4·2) = 1; per-rank mini = 256·5/DP = 640 -> 1280
    assert (derived["DP"]["a"], derived["DP"]["b"]) == (2, 1)
    assert "TP 2 → 4" in derived["DP"]["because"]
    assert (derived["per-rank mini batch"]["a"], derived["per-rank mini batch"]["b"]) == (640, 1280)
    assert derived["per-rank mini batch"]["because"] == ["DP 2 → 1"]
