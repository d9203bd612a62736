"""Mechanisms found on issue 34's third hold-out sample, one per test, on fixtures written here:
the stray words of one unquoted split, a call built as a string and run by `eval` after branches
that append to it, a call reached through an option loop's required option, verl's own sequence
cap (`rollout.max_model_len`) in the token-budget check, a defaults file the checkout lacks, and
the missed problems (a log-prob micro batch that floors to 0, a group baseline with one response,
a `max_model_len` below prompt + response)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _check(script: Path, cwd: Path) -> tuple[int, dict[str, object], list[dict[str, object]]]:
    done = subprocess.run([sys.executable, "-m", "generator", "check", "--format", "json", str(script)],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    document = json.loads(done.stdout)
    entry = document["files"][0]
    return done.returncode, entry["resolution"] or {}, list(entry["findings"])


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    return project


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _codes(findings: list[dict[str, object]], code: str) -> list[dict[str, object]]:
    return [f for f in findings if f["code"] == code]


# --- one unquoted word split into several stray words ------------------------------------------

def test_the_stray_words_of_one_split_word_are_one_finding(tmp_path: Path) -> None:
    project = _project(tmp_path)
    script = _write(project / "run.sh", """NAME="my first run"
python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=64 \\
    trainer.default_local_dir=ckpt/$NAME \\
    trainer.n_gpus_per_node=8
""")
    _, _, findings = _check(script, project)
    stray = _codes(findings, "VS712")
    assert len(stray) == 1, stray
    assert "`first`, `run`" in str(stray[0]["message"]) and stray[0]["line"] == 4


def test_stray_words_written_apart_stay_one_finding_each(tmp_path: Path) -> None:
    project = _project(tmp_path)
    script = _write(project / "run.sh", """python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=64 \\
    oops \\
    trainer.n_gpus_per_node=8 \\
    again
""")
    _, _, findings = _check(script, project)
    assert sorted(int(str(f["line"])) for f in _codes(findings, "VS712")) == [3, 5]


# --- a call built as a string and run by `eval` --------------------------------------------------

EVAL_CALL = """{head}
CMD="python -m ${{TRAINER_MODULE}}"
CMD+=" data.train_batch_size=64"
if [ "$USE_X" = true ]; then
    CMD+=" +reward_model.concept_file=x.jsonl"
fi
CMD+=" actor_rollout_ref.actor.ppo_mini_batch_size=128"
CMD+=" trainer.n_gpus_per_node=8"
CMD+=" trainer.logger=[console,wandb]"
eval $CMD
"""


def test_a_string_appended_to_under_an_if_and_run_by_eval_is_read(tmp_path: Path) -> None:
    project = _project(tmp_path)
    script = _write(project / "run.sh", EVAL_CALL.format(head='TRAINER_MODULE="verl.trainer.main_ppo"'))
    _, _, findings = _check(script, project)
    assert not _codes(findings, "VS709")
    assert [f["line"] for f in _codes(findings, "VB102")] == [7]  # mini 128 > train 64, on its own line
    # the one `[...]` of the string is reported, not every word read from it
    assert [f["line"] for f in _codes(findings, "VS705")] == [9]


def test_a_string_call_whose_entry_comes_from_an_unread_file_is_read_with_it_unknown(tmp_path: Path) -> None:
    project = _project(tmp_path)
    script = _write(project / "run.sh", EVAL_CALL.format(head='source "$CONFIG_FILE"'))
    _, _, findings = _check(script, project)
    assert not _codes(findings, "VS709")


def test_overrides_given_to_a_command_not_known_statically_are_an_unread_call_not_a_missing_one(
        tmp_path: Path) -> None:
    project = _project(tmp_path)
    script = _write(project / "run.sh", """$LAUNCHER \\
    data.train_batch_size=64 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \\
    trainer.n_gpus_per_node=8
""")
    code, _, findings = _check(script, project)
    assert not _codes(findings, "VS709")
    unread = _codes(findings, "VS730")
    assert len(unread) == 1 and unread[0]["severity"] == "info" and "was not read" in str(unread[0]["message"])
    assert code == 0


# --- a call reached once the script's required option is given -----------------------------------

def test_a_call_behind_a_required_option_guard_is_reached(tmp_path: Path) -> None:
    project = _project(tmp_path)
    script = _write(project / "run.sh", """MODEL_PATH=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --model_path) MODEL_PATH="$2"; shift 2 ;;
        *) shift ;;
    esac
done
if [ -z "$MODEL_PATH" ]; then
    echo "--model_path is required"
    exit 1
fi
train() {
    python3 -m verl.trainer.main_ppo \\
        actor_rollout_ref.model.path=$MODEL_PATH \\
        data.train_batch_size=64 \\
        actor_rollout_ref.actor.ppo_mini_batch_size=128 \\
        trainer.n_gpus_per_node=8
}
if train; then
    echo done
else
    exit 1
fi
""")
    _, _, findings = _check(script, project)
    assert not _codes(findings, "VS709")
    assert len(_codes(findings, "VB102")) == 1
