"""`gen migrate` to 0.9.1 (issue 34): every form of the Megatron config name moves (verl 0.4-0.7's
`--config-path=config --config-name=ppo_megatron_trainer`), a value the target refuses is replaced
whatever --from says, and the defaults that changed under keys the call leaves unset are reported."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app

SCRIPT = """python3 -m verl.trainer.main_ppo --config-path=config --config-name=ppo_megatron_trainer \\
    algorithm.adv_estimator=grpo \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.mode=sync \\
    actor_rollout_ref.rollout.max_num_seqs=512 \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def _migrate(tmp_path: Path, text: str, *args: str) -> tuple[str, str]:
    script = tmp_path / "run.sh"
    script.write_text(text)
    result = CliRunner().invoke(app, ["migrate", str(script), "--to", "0.9.1", "--write", *args])
    return script.read_text(), result.output


def test_the_config_path_form_of_the_megatron_config_moves(tmp_path: Path) -> None:
    text, _ = _migrate(tmp_path, SCRIPT, "--from", "0.7.0")
    first = text.splitlines()[0]
    assert first == "python3 -m verl.trainer.main_ppo model_engine=megatron \\"


def test_a_config_path_word_alone_on_its_line_goes_with_its_line(tmp_path: Path) -> None:
    text, _ = _migrate(tmp_path, "python3 -m verl.trainer.main_ppo \\\n    --config-path=config \\\n"
                                 "    --config-name=ppo_megatron_trainer \\\n    data.train_batch_size=64\n",
                       "--from", "0.6.1")
    assert text == "python3 -m verl.trainer.main_ppo \\\n    model_engine=megatron \\\n    data.train_batch_size=64\n"


def test_another_config_folder_is_not_touched(tmp_path: Path) -> None:
    own = SCRIPT.replace("--config-path=config", "--config-path=my_configs")
    text, _ = _migrate(tmp_path, own, "--from", "0.7.0")
    assert "--config-path=my_configs --config-name=ppo_megatron_trainer" in text


def test_a_value_the_target_refuses_is_replaced_whatever_from_says(tmp_path: Path) -> None:
    text, _ = _migrate(tmp_path, SCRIPT, "--from", "0.7.0")
    assert "rollout.mode=async" in text and "mode=sync" not in text


def test_changed_defaults_under_unset_keys_are_reported(tmp_path: Path) -> None:
    _, output = _migrate(tmp_path, SCRIPT, "--from", "0.7.0")
    assert "actor_rollout_ref.actor.megatron.vanilla_mbridge: True → False" in output
    assert "actor_rollout_ref.model.use_remove_padding: False → True" in output
    changed = [line for line in output.splitlines() if "default changed" in line]
    assert changed and not any("max_num_seqs" in line for line in changed)  # the call sets it itself
