"""Mechanisms found on issue 34's third hold-out sample, one per test, on fixtures written here:
the stray words of one unquoted split, a call built as a string and run by `eval` after branches
that append to it, a call reached through an option loop's required option, verl's own sequence
cap (`rollout.max_model_len`) in the token-budget check, a defaults file the checkout lacks, and
the missed problems (a log-prob micro batch that floors to 0, a group baseline with one response,
a `max_model_len` below prompt + response)."""

from __future__ import annotations

from pathlib import Path

from tests.project_check import check_json, new_project, write





def _codes(findings: list[dict[str, object]], code: str) -> list[dict[str, object]]:
    return [f for f in findings if f["code"] == code]


# --- one unquoted word split into several stray words ------------------------------------------

def test_the_stray_words_of_one_split_word_are_one_finding(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    script = write(project / "run.sh", """NAME="my first run"
python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=64 \\
    trainer.default_local_dir=ckpt/$NAME \\
    trainer.n_gpus_per_node=8
""")
    _, _, findings = check_json(script, project)
    stray = _codes(findings, "VS712")
    assert len(stray) == 1, stray
    assert "`first`, `run`" in str(stray[0]["message"]) and stray[0]["line"] == 4


def test_stray_words_written_apart_stay_one_finding_each(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    script = write(project / "run.sh", """python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=64 \\
    oops \\
    trainer.n_gpus_per_node=8 \\
    again
""")
    _, _, findings = check_json(script, project)
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
    project = new_project(tmp_path)
    script = write(project / "run.sh", EVAL_CALL.format(head='TRAINER_MODULE="verl.trainer.main_ppo"'))
    _, _, findings = check_json(script, project)
    assert not _codes(findings, "VS709")
    assert [f["line"] for f in _codes(findings, "VB102")] == [7]  # mini 128 > train 64, on its own line
    # the one `[...]` of the string is reported, not every word read from it
    assert [f["line"] for f in _codes(findings, "VS705")] == [9]


def test_a_string_call_whose_entry_comes_from_an_unread_file_is_read_with_it_unknown(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    script = write(project / "run.sh", EVAL_CALL.format(head='source "$CONFIG_FILE"'))
    _, _, findings = check_json(script, project)
    assert not _codes(findings, "VS709")


def test_overrides_given_to_a_command_not_known_statically_are_an_unread_call_not_a_missing_one(
        tmp_path: Path) -> None:
    project = new_project(tmp_path)
    script = write(project / "run.sh", """$LAUNCHER \\
    data.train_batch_size=64 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \\
    trainer.n_gpus_per_node=8
""")
    code, _, findings = check_json(script, project)
    assert not _codes(findings, "VS709")
    unread = _codes(findings, "VS730")
    assert len(unread) == 1 and unread[0]["severity"] == "info" and "was not read" in str(unread[0]["message"])
    assert code == 0


# --- a call reached once the script's required option is given -----------------------------------

def test_a_call_behind_a_required_option_guard_is_reached(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    script = write(project / "run.sh", """MODEL_PATH=""
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
    _, _, findings = check_json(script, project)
    assert not _codes(findings, "VS709")
    assert len(_codes(findings, "VB102")) == 1


# --- verl's own sequence cap in the token-budget check (VD401) and the cap itself (VR513) --------

def _pinned(tmp_path: Path, release: str) -> Path:
    project = new_project(tmp_path)
    write(project / "requirements.txt", f"verl=={release}\n")
    return project


LONG_RESPONSES = """python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=16 \\
    data.max_prompt_length=2048 \\
    data.max_response_length=32768 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=5 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.use_dynamic_bsz=True \\
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu={cap} \\
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True \\
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu={cap} \\
    {model_len}trainer.n_gpus_per_node=8
"""


def test_the_token_budget_is_judged_against_max_model_len_where_it_caps_every_sequence(tmp_path: Path) -> None:
    project = _pinned(tmp_path, "0.8.0")
    capped = write(project / "capped.sh", LONG_RESPONSES.format(
        cap=8192, model_len="actor_rollout_ref.rollout.max_model_len=8192 \\\n    "))
    _, resolution, findings = check_json(capped, project)
    assert "0.8.0" in str(resolution)
    assert not _codes(findings, "VD401")  # no sequence is longer than 8192 on the engine path
    [cut] = _codes(findings, "VR513")
    assert cut["severity"] == "warning" and "8192 < prompt + response = 2048 + 32768 = 34816" in str(cut["message"])
    # without the cap, 8192 tokens cannot hold one 34816-token sequence
    uncapped = write(project / "uncapped.sh", LONG_RESPONSES.format(cap=8192, model_len=""))
    _, _, findings = check_json(uncapped, project)
    assert _codes(findings, "VD401") and not _codes(findings, "VR513")
    # a budget below the cap still fails, judged against the cap
    small = write(project / "small.sh", LONG_RESPONSES.format(
        cap=4096, model_len="actor_rollout_ref.rollout.max_model_len=8192 \\\n    "))
    _, _, findings = check_json(small, project)
    budget = _codes(findings, "VD401")
    assert budget and "rollout.max_model_len = 8192" in str(budget[0]["message"])


# --- missed problems: a log-prob micro batch that floors to 0, a group baseline of one ------------

FLOORED = """python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=64 \\
    actor_rollout_ref.rollout.n={n} \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size={lp} \\
    actor_rollout_ref.ref.log_prob_micro_batch_size={ref} \\
    actor_rollout_ref.rollout.name=vllm \\
    trainer.n_gpus_per_node=4
"""


def test_a_global_log_prob_micro_batch_below_the_ranks_floors_to_zero_for_rollout_and_ref(tmp_path: Path) -> None:
    project = _pinned(tmp_path, "0.4.1")
    script = write(project / "run.sh", FLOORED.format(n=4, lp=2, ref=4))
    _, _, findings = check_json(script, project)
    [floored] = _codes(findings, "VB211")
    assert floored["severity"] == "error" and "2 // 4 = 0" in str(floored["message"]) and floored["line"] == 8
    script = write(project / "ref.sh", FLOORED.format(n=4, lp=8, ref=3))
    _, _, findings = check_json(script, project)
    assert [f["line"] for f in _codes(findings, "VB211")] == [9]


def test_a_group_baseline_with_one_response_per_prompt(tmp_path: Path) -> None:
    project = _pinned(tmp_path, "0.4.1")
    one = write(project / "one.sh", FLOORED.format(n=1, lp=8, ref=8))
    _, _, findings = check_json(one, project)
    [single] = _codes(findings, "VX922")
    assert single["severity"] == "warning" and "rollout.n=1" in str(single["message"])
    four = write(project / "four.sh", FLOORED.format(n=4, lp=8, ref=8))
    assert not _codes(check_json(four, project)[2], "VX922")
    # n left at its default 1 (as verl's own rollout_correction examples do): advice, not a warning
    default = write(project / "default.sh", FLOORED.format(n=4, lp=8, ref=8).replace(
        "    actor_rollout_ref.rollout.n=4 \\\n", ""))
    [advice] = _codes(check_json(default, project)[2], "VX922")
    assert advice["severity"] == "info" and "(its default)" in str(advice["message"])


# --- a defaults file the checkout lacks -------------------------------------------------------

PRIMARY = """defaults:
  - reward_manager@reward_manager
  - data@data: legacy_data
  - _self_

actor_rollout_ref:
  actor:
    ppo_mini_batch_size: 16
trainer:
  n_gpus_per_node: 8
  nnodes: 1
"""
GENERATED = """data:
  train_batch_size: 64
actor_rollout_ref:
  actor:
    ppo_mini_batch_size: 16
trainer:
  n_gpus_per_node: 8
  nnodes: 1
"""
CALL = """python3 -m verl.trainer.main_ppo \\
    data.not_a_key=3 \\
    actor_rollout_ref.actor.not_a_key_either=1 \\
    trainer.n_gpus_per_node=8
"""


def _fork_without_data_defaults(tmp_path: Path, ignore: str | None) -> Path:
    project = new_project(tmp_path)
    write(project / "verl" / "version" / "version", "0.7.0\n")
    config = project / "verl" / "trainer" / "config"
    write(config / "ppo_trainer.yaml", PRIMARY)
    write(config / "_generated_ppo_trainer.yaml", GENERATED)
    write(config / "reward_manager.yaml", "name: naive\n")  # a config entry (no group) that is there
    if ignore is not None:
        write(project / ".gitignore", f"# training data\n{ignore}\n")
    return project


def test_a_defaults_file_the_gitignore_drops_is_reported_and_its_keys_stand_down(tmp_path: Path) -> None:
    project = _fork_without_data_defaults(tmp_path, "data/")
    script = write(project / "run.sh", CALL)
    code, _, findings = check_json(script, project)
    [missing] = _codes(findings, "VK613")
    message = str(missing["message"])
    assert missing["severity"] == "error" and code == 1
    assert "`data@data: legacy_data`" in message and "verl/trainer/config/data/legacy_data.yaml" in message
    assert ".gitignore line `data/`" in message
    unknown = [f["key"] for f in _codes(findings, "VK601")]
    # the data keys rest on the missing file; the actor's are judged as before
    assert "data.not_a_key" not in unknown and "actor_rollout_ref.actor.not_a_key_either" in unknown


def test_a_missing_defaults_file_without_a_gitignore_line_is_a_warning(tmp_path: Path) -> None:
    project = _fork_without_data_defaults(tmp_path, "/outputs/")
    script = write(project / "run.sh", CALL)
    _, _, findings = check_json(script, project)
    [missing] = _codes(findings, "VK613")
    assert missing["severity"] == "warning" and ".gitignore" not in str(missing["message"])
    write(project / "verl" / "trainer" / "config" / "data" / "legacy_data.yaml", "train_batch_size: 64\n")
    assert not _codes(check_json(script, project)[2], "VK613")
