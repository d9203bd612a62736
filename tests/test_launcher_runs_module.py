"""A launcher that runs the module its first argument names (issue 34): `python tools/run_x.py
verl.trainer.main_ppo k=v` is a call of verl's trainer, judged as one."""

from __future__ import annotations

from generator.judging import check_script
from generator.reading.shell.script_reader import read_script

SCRIPT = """python3 tools/run_with_env.py verl.trainer.main_ppo \\
    data.train_batch_size=64 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def test_the_module_a_launcher_runs_is_the_entry() -> None:
    script = read_script(SCRIPT, "run.sh")
    (call,) = script.invocations
    assert call.entry == "verl.trainer.main_ppo" and call.entry_kind == "module"
    assert "tools/run_with_env.py" in call.launcher
    assert [o.key for o in call.overrides][0] == "data.train_batch_size"
    found = {f.code for _i, _c, findings in check_script(script, version="0.9.1") for f in findings}
    assert "VB102" in found and "VS709" not in found and "VK609" not in found


def test_a_module_launcher_too() -> None:
    script = read_script("python3 -m mypkg.launch verl.trainer.sft_trainer data.train_batch_size=8\n", "run.sh")
    (call,) = script.invocations
    assert call.entry == "verl.trainer.sft_trainer"


def test_a_plain_argument_is_not_a_module() -> None:
    script = read_script("python3 -m verl.trainer.main_ppo data.train_batch_size=8\n", "run.sh")
    (call,) = script.invocations
    assert call.entry == "verl.trainer.main_ppo" and call.launcher == "python3 -m"
