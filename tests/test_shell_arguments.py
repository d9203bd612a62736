"""How the reader treats what a run provides: script arguments default to none (`$#` is 0, so
argument-parsing loops are decided), `--arg` decides them the other way, and a guard that exits
when a variable or argument is missing is an assertion that the run provides it."""

from __future__ import annotations

from generator.reading.launch_script import LaunchScript, Override
from generator.reading.shell import read_script

MAIN = "verl.trainer.main_ppo"

PARSER = f"""
TBS=16
LR=1e-6
while [[ $# -gt 0 ]]; do
  case $1 in
    --train_batch_size) TBS=$2; shift 2;;
    --lr) LR=$2; shift 2;;
    *) echo "unknown $1"; exit 1;;
  esac
done
python3 -m {MAIN} data.train_batch_size=$TBS actor_rollout_ref.actor.optim.lr=$LR
"""


def only(script: LaunchScript):
    assert len(script.invocations) == 1, [(i.line, i.entry) for i in script.invocations]
    return script.invocations[0]


def value(script: LaunchScript, key: str) -> str | None:
    found: list[Override] = [o for o in only(script).overrides if o.key == key]
    assert found, [o.key for o in only(script).overrides]
    return found[-1].value


def test_no_arguments_decides_the_parsing_loop() -> None:
    script = read_script(PARSER)
    assert only(script).branch == "live"
    assert value(script, "data.train_batch_size") == "16"
    assert value(script, "actor_rollout_ref.actor.optim.lr") == "1e-6"


def test_arguments_given_run_the_loop_as_bash_would() -> None:
    script = read_script(PARSER, args=["--train_batch_size", "32", "--lr", "3e-6"])
    assert only(script).branch == "live"
    assert value(script, "data.train_batch_size") == "32"
    assert value(script, "actor_rollout_ref.actor.optim.lr") == "3e-6"


def test_an_unknown_option_takes_the_exiting_arm() -> None:
    # `*) …; exit 1` runs for an option the loop does not know: the call after it is dead
    script = read_script(PARSER, args=["--bogus"])
    assert only(script).branch == "dead"


def test_while_true_with_break_and_shift() -> None:
    src = f"""
X=1
while true; do
  case "${{1:-}}" in
    --x) X=$2; shift 2;;
    *) break;;
  esac
done
python3 -m {MAIN} data.train_batch_size=$X
"""
    assert value(read_script(src), "data.train_batch_size") == "1"
    assert value(read_script(src, args=["--x", "7"]), "data.train_batch_size") == "7"


def test_until_counts_and_a_spinning_loop_stops() -> None:
    src = f"""
i=0
until [ $i -ge 3 ]; do i=$((i+1)); done
while true; do sleep 60; done
python3 -m {MAIN} trainer.nnodes=$i
"""
    script = read_script(src)
    assert value(script, "trainer.nnodes") == "3"
    assert only(script).branch == "live"


def test_guards_make_variables_required_and_reading_goes_on() -> None:
    src = f"""
[ -z "${{MODEL_PATH:-}}" ] && {{ echo "set MODEL_PATH"; exit 1; }}
: ${{DATA:?set DATA}}
if [ -z "$CKPT" ]; then
  echo "need CKPT"; exit 1
fi
[ -n "$LOGDIR" ] || exit 2
python3 -m {MAIN} actor_rollout_ref.model.path=$MODEL_PATH data.train_files=$DATA \\
    trainer.default_local_dir=$CKPT trainer.rollout_data_dir=$LOGDIR
"""
    script = read_script(src)
    inv = only(script)
    assert inv.branch == "live"  # `${{MODEL_PATH:-}}` is empty without --env: the guard is not a dead end
    assert value(script, "actor_rollout_ref.model.path") == "<?required:MODEL_PATH>"
    assert value(script, "data.train_files") == "<?required:DATA>"
    assert value(script, "trainer.default_local_dir") == "<?required:CKPT>"
    assert value(script, "trainer.rollout_data_dir") == "<?required:LOGDIR>"
    reason = next(o for o in inv.overrides if o.key == "actor_rollout_ref.model.path").unknowns[0]
    assert "MODEL_PATH must be set" in reason and "exits" in reason


def test_a_guard_after_a_knob_with_an_empty_default_requires_the_variable() -> None:
    # `X=${X:-}` takes X from the environment; the guard below it asserts the run provides it
    # (seen in public launch scripts: the call was read as never reached, so nothing was checked).
    src = f"""
MODEL_PATH=${{MODEL_PATH:-}}
if [ -z "$MODEL_PATH" ]; then
    echo "MODEL_PATH is not set"
    exit 1
fi
python3 -m {MAIN} actor_rollout_ref.model.path=$MODEL_PATH
"""
    script = read_script(src)
    assert only(script).branch == "live"
    assert value(script, "actor_rollout_ref.model.path") == "<?required:MODEL_PATH>"
    given = read_script(src, env={"MODEL_PATH": "/models/qwen"})
    assert value(given, "actor_rollout_ref.model.path") == "/models/qwen"


def test_a_given_variable_passes_its_guard() -> None:
    src = f"""
[ -z "${{MODEL_PATH:-}}" ] && exit 1
python3 -m {MAIN} actor_rollout_ref.model.path=$MODEL_PATH
"""
    script = read_script(src, env={"MODEL_PATH": "/models/qwen"})
    assert value(script, "actor_rollout_ref.model.path") == "/models/qwen"


def test_usage_guard_through_a_function_requires_the_arguments() -> None:
    src = f"""
usage() {{ echo "usage: $0 NGPUS"; exit 1; }}
if [ "$#" -lt 1 ]; then usage; fi
python3 -m {MAIN} trainer.n_gpus_per_node=$1
"""
    script = read_script(src)
    assert only(script).branch == "live"
    assert value(script, "trainer.n_gpus_per_node") == "<?$1>"
    assert value(read_script(src, args=["8"]), "trainer.n_gpus_per_node") == "8"


def test_a_condition_that_does_not_exit_is_no_guard() -> None:
    src = f"""
if [ -z "${{TBS:-}}" ]; then TBS=64; fi
python3 -m {MAIN} data.train_batch_size=$TBS
"""
    assert value(read_script(src), "data.train_batch_size") == "64"
