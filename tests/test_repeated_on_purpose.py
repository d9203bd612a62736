"""A key repeated on purpose (issue 34): a call that specialises a shared list of arguments
(`$COMMON` then `key=new`) is not told it gave the key twice; the same key written twice in the
call itself still is (VS704)."""

from __future__ import annotations

from generator.judging import check_script
from generator.reading.shell.script_reader import read_script

SCRIPT = """COMMON="trainer.n_gpus_per_node=8 trainer.nnodes=1 data.train_batch_size=64"
ARGS=(actor_rollout_ref.rollout.n=8)
python3 -m verl.trainer.main_ppo $COMMON "${ARGS[@]}" \\
    trainer.n_gpus_per_node=4 \\
    actor_rollout_ref.rollout.n=4 \\
    data.max_prompt_length=512 data.max_prompt_length=1024
"""


def test_a_shared_argument_specialised_in_the_call_is_not_a_duplicate() -> None:
    results = check_script(read_script(SCRIPT, "run.sh"), version="0.9.1")
    keys = [f.key or f.message for _i, _c, findings in results for f in findings if f.code == "VS704"]
    assert len(keys) == 1 and "data.max_prompt_length" in str(keys[0])
