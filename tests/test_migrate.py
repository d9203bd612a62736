"""`gen migrate` on self-written fixtures: renames with op adjustment, value replacement, removed
keys (reported, or dropped with --unsafe), --from inference, idempotence, and real Hydra compose
of the result against verl 0.7.0's config tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

FIX = Path(__file__).resolve().parent / "fixtures" / "fix"


def _gen(*args: str):
    return CliRunner().invoke(app, list(args))


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copy(FIX / name, target)
    return target


def _overrides(path: Path) -> list[str]:
    from generator.fix.engine import default_reader

    script = default_reader()(path.read_bytes(), str(path))
    return [o.text for inv in script.invocations for o in inv.overrides]


def _compose(verl_config_dir: Path, config_name: str, overrides: list[str]) -> None:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    config_dir = verl_config_dir / "v0.7.0" / "verl" / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        compose(config_name=config_name, overrides=overrides)


def test_megatron_recompute_keys_move_and_removed_key_is_reported(tmp_path):
    path = _copy("gc_041.sh", tmp_path)
    result = _gen("migrate", "--to", "0.7.0", "--write", str(path))
    text = path.read_text()
    assert "actor_rollout_ref.model.enable_gradient_checkpointing" not in text
    assert "    actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full \\\n" in text
    assert "    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform \\\n" in text
    # Megatron-core refuses full recompute without a layer count: the migration adds verl's usual 1
    assert "    actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1 \\\n" in text
    # critic.kl_ctrl has no replacement: kept and reported, exit 1
    assert "critic.kl_ctrl.kl_coef=0.001" in text and result.exit_code == 1
    assert "drop it with --unsafe" in result.stderr
    # a second run changes nothing
    before = path.read_bytes()
    _gen("migrate", "--to", "0.7.0", "--from", "0.4.1", "--write", str(path))
    assert path.read_bytes() == before


def test_unsafe_drops_the_removed_key_and_the_result_composes(tmp_path, verl_config_dir):
    path = _copy("gc_041.sh", tmp_path)
    result = _gen("migrate", "--to", "0.7.0", "--unsafe", "--write", str(path))
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    assert "critic.kl_ctrl" not in text
    original_lines = (FIX / "gc_041.sh").read_text().splitlines()
    # the whole kl_ctrl line went; the only line added is the recompute layer count
    assert len(text.splitlines()) == len(original_lines) - 1 + 1
    assert "recompute_num_layers=1" in text
    _compose(verl_config_dir, "ppo_megatron_trainer", _overrides(path))


def test_value_and_moved_keys_from_050(tmp_path, verl_config_dir):
    path = _copy("mode_sync_050.sh", tmp_path)
    original = path.read_bytes()
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):  # 0.7.0's config has no place for 0.5.0's keys
        _compose(verl_config_dir, "ppo_megatron_trainer", _overrides(path))
    result = _gen("migrate", "--to", "0.7.0", "--from", "0.5.0", str(path))
    assert path.read_bytes() == original  # --diff is the default
    diff = result.stdout
    assert "-    actor_rollout_ref.rollout.mode=sync \\" in diff
    assert "+    actor_rollout_ref.rollout.mode=async \\" in diff
    assert "+    ray_kwargs.ray_init.num_cpus=32 \\" in diff
    assert "+    global_profiler.steps='[1,2]' \\" in diff  # the quoting of the value is kept
    _gen("migrate", "--to", "0.7.0", "--from", "0.5.0", "--write", str(path))
    _compose(verl_config_dir, "ppo_megatron_trainer", _overrides(path))


def test_from_is_inferred_or_required(tmp_path):
    odd = tmp_path / "odd.sh"
    odd.write_text("python3 -m verl.trainer.main_ppo \\\n    no.such.key=1 \\\n    trainer.nnodes=1\n")
    result = _gen("migrate", "--to", "0.7.0", str(odd))
    assert result.exit_code == 2 and "--from" in result.stderr and "Traceback" not in result.output
    assert _gen("migrate", "--to", "0.7.0", "--from", "0.5.0", str(odd)).exit_code == 0


def test_infer_from_version_picks_the_smallest_release_with_every_key(tmp_path):
    from generator import schema
    from generator.fix.engine import default_reader
    from generator.fix.migrate import infer_from_version

    path = FIX / "mode_sync_050.sh"
    script = default_reader()(path.read_bytes(), str(path))
    found = infer_from_version(script, has=lambda r, k, n: schema.load(r).has(k, n), releases=schema.available())
    # ray_init.* and trainer.profile_steps are gone in 0.6.0, so the script predates it
    assert found in ("0.4.1", "0.5.0")
