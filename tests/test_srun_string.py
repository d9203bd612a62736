"""A trainer call inside the string of `srun … bash -c "…"` (a Slurm step that runs a shell on the
head node) is read like the one of a plain `bash -c "…"`. Every script here is written by the test."""

from __future__ import annotations

from generator.reading.shell import read_script

CALL = """  cd $WORK
  python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=64 \\
    trainer.n_gpus_per_node=8 trainer.nnodes=$NNODES
"""


def _calls(prefix: str) -> list[tuple[int, str | None]]:
    script = read_script(f'NNODES=2\nWORK=/tmp/w\n{prefix} bash -c "\n{CALL}"\n')
    return [(inv.line, next((o.value for o in inv.overrides if o.key == "trainer.nnodes"), None))
            for inv in script.invocations]


def test_a_plain_bash_c_string_is_read() -> None:
    assert _calls("") == [(5, "2")]


def test_the_string_of_an_srun_step_is_read_too() -> None:
    assert _calls('PYTHONUNBUFFERED=1 srun --overlap --nodes=1 --ntasks=1 -w "$head"') == [(5, "2")]


def test_a_wrapper_without_a_shell_string_is_not_taken_for_one() -> None:
    script = read_script('srun --nodes=1 hostname -c "python3 -m verl.trainer.main_ppo x=1"\n')
    assert script.invocations == []
