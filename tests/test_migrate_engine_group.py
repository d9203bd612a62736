"""`gen migrate --to 0.8+` moves a main_ppo call off the deprecated `ppo_megatron_trainer` shim to
`model_engine=megatron` on the default ppo_trainer, as verl's own Megatron examples do from 0.8.0
(e.g. examples/grpo_trainer/run_deepseek_v3_671b_megatron.sh @v0.8.0); the shim is
`defaults: [ppo_trainer, override model_engine: megatron, _self_]` there. Self-written fixtures;
real Hydra composes before and after against verl 0.9.0's config tree and must give the same config."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app

FIX = Path(__file__).resolve().parent / "fixtures" / "release09"


def _gen(*args: str):
    return CliRunner().invoke(app, list(args))


def _call(path: Path) -> tuple[str, list[str]]:
    from generator.fix.engine import default_reader

    script = default_reader()(path.read_bytes(), str(path))
    (inv,) = script.invocations
    return inv.config_name or "ppo_trainer", [o.text.replace("<?unset:HOME>", "/home/u") for o in inv.overrides]


def _compose(verl_config_dir: Path, name: str, overrides: list[str]) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(verl_config_dir / "v0.9.0" / "verl" / "trainer" / "config"),
                               version_base=None):
        cfg = compose(name.removesuffix(".yaml"), overrides=overrides)
    GlobalHydra.instance().clear()
    return OmegaConf.to_container(cfg, resolve=False)


SCRIPT = """#!/usr/bin/env bash
python3 -m verl.trainer.main_ppo \\
    --config-name='ppo_megatron_trainer.yaml' \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=64 \\
    actor_rollout_ref.model.path=Qwen/Qwen2-7B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \\
    actor_rollout_ref.rollout.name=vllm \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=1
"""


def test_the_shim_becomes_model_engine_megatron_and_composes_the_same(tmp_path: Path, verl_config_dir: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    before = _compose(verl_config_dir, *_call(path))
    result = _gen("migrate", "--from", "0.9.0", "--to", "0.9.1", "--write", str(path))
    assert result.exit_code == 0, result.output
    text = path.read_text()
    assert "    model_engine=megatron \\\n" in text and "config-name" not in text
    assert len(text.splitlines()) == len(SCRIPT.splitlines())  # one word replaced in place
    name, overrides = _call(path)
    assert name == "ppo_trainer"
    assert _compose(verl_config_dir, name, overrides) == before
    checked = _gen("check", "--verl-version", "0.9.1", str(path))
    assert " VK6" not in checked.output, checked.output  # the megatron keys are keys of the composed config
    assert "0 change(s)" in _gen("migrate", "--from", "0.9.1", "--to", "0.9.1", str(path)).output


def test_a_call_that_selects_its_engine_keeps_it_and_only_the_name_moves(tmp_path: Path, verl_config_dir: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT.replace("    trainer.nnodes=1\n", "    trainer.nnodes=1 model_engine=megatron\n"))
    before = _compose(verl_config_dir, *_call(path))
    _gen("migrate", "--from", "0.9.0", "--to", "0.9.1", "--write", str(path))
    text = path.read_text()
    assert "--config-name='ppo_trainer.yaml'" in text and text.count("model_engine=megatron") == 1
    assert _compose(verl_config_dir, *_call(path)) == before


def test_releases_before_0_8_keep_the_megatron_config(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    _gen("migrate", "--from", "0.6.1", "--to", "0.7.0", "--write", str(path))
    assert "--config-name='ppo_megatron_trainer.yaml'" in path.read_text()


def test_a_name_from_a_variable_is_reported_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text('CFG=ppo_megatron_trainer\n' + SCRIPT.replace("'ppo_megatron_trainer.yaml'", '"$CFG"'))
    original = path.read_bytes()
    result = _gen("migrate", "--from", "0.9.0", "--to", "0.9.1", "--write", str(path))
    assert "not migrated: ppo_megatron_trainer is deprecated since 0.8.0" in result.output
    assert path.read_bytes() == original
