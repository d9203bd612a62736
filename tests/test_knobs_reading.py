"""One reading of a call's knobs (generator.config.knobs): the script reader behind `gen import` /
`gen recipe --from` and the memory model read the same offload from the same config."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app
from generator.config import build_config
from generator.config.knobs import MEGATRON_OFFLOAD_FRACTION, Reads, read_knobs
from generator.config.reader import ConfigReader
from generator.layout.hardware import gpu_spec
from generator.plan.script_setup import memory_setup_from_config
from generator.script.extract import setup_from_config, trainer_call
from generator.reading.shell import read_launch

# Written for this test: Megatron's CPU optimizer on, its offload fraction left unset.
SCRIPT = r"""#!/bin/bash
python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer' \
    algorithm.adv_estimator=grpo \
    data.train_batch_size=64 data.max_prompt_length=512 data.max_response_length=512 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.actor.megatron.param_offload=True \
    actor_rollout_ref.actor.megatron.optimizer_offload=True \
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True \
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""
FRACTION = "actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction"


def _config(tmp_path: Path, text: str = SCRIPT):  # type: ignore[no-untyped-def]
    path = tmp_path / "run.sh"
    path.write_text(text)
    call = trainer_call(read_launch(str(path)))
    assert call is not None
    return build_config(call.invocation, version="0.7.0")


def test_unset_offload_fraction_is_megatrons_default_in_every_reader(tmp_path: Path) -> None:
    config = _config(tmp_path)
    knobs = read_knobs(Reads(ConfigReader(config)))
    assert knobs.offload.cpu_optimizer and not knobs.offload_fraction_set
    assert knobs.offload.cpu_optimizer_fraction == MEGATRON_OFFLOAD_FRACTION == 0.0
    recipe_side = setup_from_config(config).layout.offload
    memory = memory_setup_from_config(config, gpu=gpu_spec("h100", None)).setup
    assert memory is not None
    assert recipe_side == memory.candidate.offload == knobs.offload
    assert setup_from_config(config).cpu_optimizer_fraction is None  # "as written": not written


def test_a_written_fraction_is_read_as_written(tmp_path: Path) -> None:
    config = _config(tmp_path, SCRIPT.replace("trainer.n_gpus_per_node", f"+{FRACTION}=0.5 trainer.n_gpus_per_node"))
    assert setup_from_config(config).layout.offload.cpu_optimizer_fraction == 0.5
    assert setup_from_config(config).cpu_optimizer_fraction == 0.5


def test_recipe_from_keeps_the_fraction_the_script_runs_with(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.sh"
    legacy.write_text(SCRIPT)
    out = tmp_path / "new.sh"
    result = CliRunner().invoke(app, ["recipe", "--from", str(legacy), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    assert f"{FRACTION}=0.0" in text or f"{FRACTION}=0 " in text, [
        line for line in text.splitlines() if "offload_fraction" in line]
