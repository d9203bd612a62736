"""`gen diff A B` judges each script against its own release, so `diff B A` gives the same
changes and numbers, mirrored (issue 22: the first script's release was applied to both)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app

CALL = ("python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer \\\n"
        "    trainer.n_gpus_per_node=8 data.train_batch_size=64 actor_rollout_ref.rollout.n={n} \\\n"
        "    actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\\n"
        "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size={tp}\n")


def _project(root: Path, release: str, n: int, tp: int) -> Path:
    root.mkdir()
    (root / ".verl-gen.toml").write_text(f'verl-version = "{release}"\n')
    script = root / "run.sh"
    script.write_text(CALL.format(n=n, tp=tp))
    return script


def _diff(a: Path, b: Path, *options: str) -> dict:
    result = CliRunner().invoke(app, ["diff", str(a), str(b), "--format", "json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _mirrored(doc: dict) -> tuple[set, set]:
    changes = {(c["key"], json.dumps(c["b"]), json.dumps(c["a"])) for c in doc["changes"]}
    derived = {(d["name"], json.dumps(d["b"]), json.dumps(d["a"])) for d in doc["derived"]}
    return changes, derived


def _plain(doc: dict) -> tuple[set, set]:
    changes = {(c["key"], json.dumps(c["a"]), json.dumps(c["b"])) for c in doc["changes"]}
    derived = {(d["name"], json.dumps(d["a"]), json.dumps(d["b"])) for d in doc["derived"]}
    return changes, derived


def test_each_side_is_judged_against_its_own_release_in_either_order(tmp_path: Path) -> None:
    old = _project(tmp_path / "old", "0.4.1", n=4, tp=2)
    new = _project(tmp_path / "new", "0.7.0", n=8, tp=4)
    forward, backward = _diff(old, new), _diff(new, old)
    assert (forward["a_verl_version"], forward["b_verl_version"]) == ("0.4.1", "0.7.0")
    assert (backward["a_verl_version"], backward["b_verl_version"]) == ("0.7.0", "0.4.1")
    assert _plain(forward) == _mirrored(backward)
    keys = {c["key"] for c in forward["changes"]}
    assert {"actor_rollout_ref.rollout.n", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"} <= keys
    assert any(d["name"].startswith("DP") or "DP" in d["name"] for d in forward["derived"])
    text = CliRunner().invoke(app, ["diff", str(old), str(new)]).output
    assert "A as verl 0.4.1, B as verl 0.7.0" in text


def test_one_release_for_both_when_asked(tmp_path: Path) -> None:
    old = _project(tmp_path / "old", "0.4.1", n=4, tp=2)
    new = _project(tmp_path / "new", "0.7.0", n=8, tp=4)
    forward = _diff(old, new, "--verl-version", "0.7.0")
    backward = _diff(new, old, "--verl-version", "0.7.0")
    assert forward["verl_version"] == backward["verl_version"] == "0.7.0"
    assert _plain(forward) == _mirrored(backward)
