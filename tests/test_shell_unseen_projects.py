"""Issue 20's reader and findings, one mechanism per test, on fixtures written here: valid bash
the tree-sitter grammar mis-reads, scripts run by scripts, strings run by eval, placeholders,
unset variables, command traps, and helper scripts that are not launch scripts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from generator.judging import script_findings
from generator.reading.shell import read_script
from generator.reading.shell.bash_syntax import bash_parses

TRAINER = "python3 -m verl.trainer.main_ppo \\\n"
ROOT = Path(__file__).resolve().parent.parent


def _values(script) -> dict[str, str | None]:
    return {ov.key: ov.value for inv in script.invocations for ov in inv.overrides}


def _kinds(script) -> list[str]:
    return [h.kind for h in script.hazards]


def _gen_check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator", "check", *args], cwd=cwd, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)


# --- the reader: valid bash -------------------------------------------------------------------

BACKTICK_COMMENTS = (TRAINER + "    data.train_batch_size=1024 `# the batch (with parens)` \\\n"
                     "    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B `# model (small)` \\\n"
                     "    actor_rollout_ref.rollout.n=5 \\\n    trainer.n_gpus_per_node=8\n")


def test_backtick_comments_expand_to_nothing() -> None:
    script = read_script(BACKTICK_COMMENTS, "t.sh")
    assert bash_parses(BACKTICK_COMMENTS.encode()) is True
    assert _values(script) == {"data.train_batch_size": "1024", "actor_rollout_ref.model.path": "Qwen/Qwen2.5-0.5B",
                               "actor_rollout_ref.rollout.n": "5", "trainer.n_gpus_per_node": "8"}
    assert script.hazards == []


def test_comment_after_a_command_in_backticks_and_in_double_quotes() -> None:
    text = ('NOTE="run `# c (d)`"\n' + TRAINER + "    data.train_batch_size=8 `true # hi (x)` \\\n"
            "    trainer.experiment_name=\"$NOTE\" \\\n    trainer.n_gpus_per_node=8\n")
    script = read_script(text, "t.sh")
    values = _values(script)
    assert values["trainer.n_gpus_per_node"] == "8" and values["data.train_batch_size"] == "8"
    assert values["trainer.experiment_name"] == "run "  # the substitution adds nothing inside "…" either
    assert "parse-error" not in _kinds(script)


def test_dollar_paren_substitutions_with_comments_and_parentheses() -> None:
    text = ("N=$(  # how many (rollouts)\n  echo 4)\nM=$(: \"note (x)\")\n" + TRAINER
            + "    actor_rollout_ref.rollout.n=$N \\\n    data.train_batch_size=64$M\n")
    script = read_script(text, "t.sh")
    assert _values(script)["data.train_batch_size"] == "64"
    assert _kinds(script) == []


def test_no_syntax_error_where_bash_parses(tmp_path: Path) -> None:
    text = TRAINER + "    data.train_batch_size=64\nfor n in 1 2; { echo \"$n\"; }\n"
    assert bash_parses(text.encode()) is True
    script = read_script(text, "t.sh")
    assert "parse-error" not in _kinds(script) and "reader-limit" in _kinds(script)
    (tmp_path / "run.sh").write_text(text)
    done = _gen_check("run.sh", "--select", "VS", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "syntax error" not in done.stdout and "VS731" in done.stdout


def test_a_real_syntax_error_is_still_one() -> None:
    text = TRAINER + "    data.train_batch_size=64 $(: comment (x))\n"
    assert bash_parses(text.encode()) is False
    assert "parse-error" in _kinds(read_script(text, "t.sh"))


def test_bash_n_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    assert bash_parses(f"touch {marker}\necho $(touch {marker}x)\n".encode()) is True
    assert not marker.exists() and not Path(f"{marker}x").exists()


# --- scripts run by scripts, strings run by eval -------------------------------------------------

def _wrapper_project(tmp_path: Path) -> Path:
    callee = tmp_path / "examples" / "grpo" / "run_x.sh"
    callee.parent.mkdir(parents=True)
    callee.write_text("#!/bin/bash\nMODEL=${MODEL_PATH:-Qwen/Qwen2.5-0.5B}\n" + TRAINER
                      + "    data.train_batch_size=${BATCH:-64} \\\n    actor_rollout_ref.model.path=$MODEL \\\n"
                      "    trainer.default_local_dir=ckpt/$LOCAL_ONLY \\\n    trainer.n_gpus_per_node=8 \"$@\"\n")
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text("#!/bin/bash\nexport MODEL_PATH=/models/qwen7b\nexport BATCH=512\nLOCAL_ONLY=x\n"
                       "bash ./examples/grpo/run_x.sh trainer.total_epochs=3\n")
    return wrapper


def test_wrapper_runs_the_callee_with_its_exported_settings(tmp_path: Path) -> None:
    wrapper = _wrapper_project(tmp_path)
    script = read_script(wrapper.read_bytes(), str(wrapper))
    [inv] = script.invocations
    values = {ov.key: ov.value for ov in inv.overrides}
    assert values["data.train_batch_size"] == "512" and values["actor_rollout_ref.model.path"] == "/models/qwen7b"
    assert values["trainer.total_epochs"] == "3"  # the wrapper's argument reaches "$@"
    assert "<?" in (values["trainer.default_local_dir"] or "")  # not exported: the callee never sees it
    assert inv.line == 3  # the callee's own line
    assert any("run_x.sh, run by line 5" in c for c in inv.context)


def test_gen_fix_never_edits_the_wrapper_at_the_callees_offsets(tmp_path: Path) -> None:
    wrapper = _wrapper_project(tmp_path)
    before = wrapper.read_bytes()
    callee = tmp_path / "examples" / "grpo" / "run_x.sh"
    callee_before = callee.read_bytes()
    done = subprocess.run([sys.executable, "-m", "generator", "fix", "--write", "--unsafe", "wrapper.sh"], cwd=tmp_path,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          timeout=120)
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stdout + done.stderr
    assert wrapper.read_bytes() == before and callee.read_bytes() == callee_before


def test_wrapper_found_from_the_folder_above(tmp_path: Path) -> None:
    wrapper = _wrapper_project(tmp_path)
    inner = tmp_path / "examples" / "grpo" / "wrap2.sh"
    inner.write_text("export BATCH=256\nbash examples/grpo/run_x.sh\n")  # written to run from the root
    script = read_script(inner.read_bytes(), str(inner))
    assert _values(script)["data.train_batch_size"] == "256"
    assert wrapper.exists()


def test_source_with_arguments_sees_them_as_its_own(tmp_path: Path) -> None:
    (tmp_path / "common.sh").write_text("BATCH=${1:-64}\n")
    main = tmp_path / "run.sh"
    main.write_text("source ./common.sh 256 extra\n" + TRAINER + "    data.train_batch_size=$BATCH \\\n"
                    "    trainer.total_epochs=${1:-1}\n")
    values = _values(read_script(main.read_bytes(), str(main)))
    assert values == {"data.train_batch_size": "256", "trainer.total_epochs": "1"}  # the caller's $1 is back


def test_eval_of_a_plain_string_and_a_held_string() -> None:
    text = "B=128\nCMD=\"" + TRAINER + "    data.train_batch_size=$B \\\n    trainer.n_gpus_per_node=8\"\neval \"$CMD\"\n"
    assert _values(read_script(text, "t.sh"))["data.train_batch_size"] == "128"
    held = "RUN_SCRIPT=\"\n" + TRAINER + "    data.train_batch_size=32\"\n"
    script = read_script(held, "t.sh")
    assert _values(script) == {"data.train_batch_size": "32"}
    assert "held in $RUN_SCRIPT" in script.invocations[0].context[0]


def test_strings_with_quotes_and_continuations_are_parsed_again() -> None:
    tmux = ('tmux send-keys -t "$S" "python3 -m verl.trainer.main_ppo \\\\\n    data.train_batch_size=64 \\\\\n'
            "    trainer.logger=['console','wandb'] 2>&1 | tee log.txt\" C-m\n")
    script = read_script(tmux, "t.sh")
    [inv] = script.invocations
    # The pane's shell parses the text again: the single quotes go, as they would there.
    assert {ov.key: ov.value for ov in inv.overrides} == {"data.train_batch_size": "64",
                                                         "trainer.logger": "[console,wandb]"}
    assert [ov.line for ov in inv.overrides] == [2, 3] and "tmux send-keys" in inv.context[-1]
    held = ('F=./train.parquet\nRUN_SCRIPT="\npython3 -m verl.trainer.main_ppo \\\n    data.train_files="$F" \\\n'
            "    data.val_files=['a.parquet'] \\\n    trainer.n_gpus_per_node=8\"\n")
    script = read_script(held, "t.sh")
    assert _values(script) == {"data.train_files": "./train.parquet", "data.val_files": "[a.parquet]",
                               "trainer.n_gpus_per_node": "8"}
    assert script.invocations[0].line == 3


def test_an_eval_string_the_reader_cannot_reparse_says_so() -> None:
    text = ("CMD=\"python3 -m verl.trainer.main_ppo\"\nCMD=\"$CMD data.train_batch_size=64 trainer.logger='[console]'\"\n"
            "eval $CMD\n")  # built on itself: not one word to read again
    # the call exists, only its words are unknown: said once as info (VS730), not "no trainer call" (VS709)
    findings = script_findings(read_script(text, "t.sh"), select=["VS709", "VS730"])
    assert [(f.code, f.severity) for f in findings] == [("VS730", "info")]
    assert "string run by `eval`" in findings[0].message and "was not read" in findings[0].message


def test_blank_line_after_ray_job_submit() -> None:
    text = "ray job submit --address=http://127.0.0.1:8265 \\\n\n    -- " + TRAINER + "    data.train_batch_size=64\n"
    script = read_script(text, "t.sh")
    [hz] = [h for h in script.hazards if h.kind == "blank-in-continuation"]
    assert hz.line == 2 and "line 3" in hz.message
    # Only commented-out overrides after the blank line: nothing is cut off.
    harmless = TRAINER + "    data.train_batch_size=64 \\\n\n    # trainer.total_epochs=2 \\\n\nrm -rf ckpts\n"
    assert "blank-in-continuation" not in _kinds(read_script(harmless, "t.sh"))


# --- findings people keep ------------------------------------------------------------------------

def test_one_finding_per_unquoted_placeholder() -> None:
    text = ('CKPT_PATH="THE PATH YOU WANT TO SAVE YOUR CKPT"\n' + TRAINER
            + "    trainer.default_local_dir=$CKPT_PATH \\\n    data.train_files=path to your data \\\n"
            "    trainer.n_gpus_per_node=8\n")
    findings = script_findings(read_script(text, "t.sh"), select=["VS"])
    assert sorted((f.code, f.line) for f in findings) == [("VS712", 3), ("VS712", 4)]
    two = ('A="YOUR CKPT DIR"\nB="MODIFIED YOURSELF e.g. x"\n' + TRAINER
           + "    trainer.default_local_dir=$A/$B \\\n    trainer.n_gpus_per_node=8\n")
    findings = script_findings(read_script(two, "t.sh"), select=["VS"])
    assert [(f.code, f.line) for f in findings] == [("VS712", 4), ("VS712", 4)]  # one per placeholder
    assert "$A, line 1" in findings[0].message + findings[1].message and "$B, line 2" in findings[1].message


def test_a_deletion_followed_by_stray_words_is_read() -> None:
    # `~key` has no value; found by the CLI fuzz test (was an IndexError).
    script = read_script(TRAINER + "    ~data.train_batch_size \\\n    stray words\n", "t.sh")
    assert [h.kind for h in script.hazards] == ["stray-argument", "stray-argument"]


@pytest.mark.parametrize("value", ["/path/to/your/model", "http://xx.xx.xx.xx:8265", "TASK_NAME_YOU_SELECT",
                                   "PATH/TO/val.parquet", "/data/your_dataset/train.parquet", "robotwin2_TASK_YOU_SELECT"])
def test_placeholder_forms(value: str) -> None:
    script = read_script(TRAINER + f"    data.train_files={value} \\\n    trainer.n_gpus_per_node=8\n", "t.sh")
    assert [h.kind for h in script.hazards] == ["placeholder-value"]


def test_template_placeholders_in_the_environment_and_one_finding_where_hydra_cannot_parse(tmp_path: Path) -> None:
    text = ('CONFIG_PATH="<your_path_to_X>/config"\nMODEL="<your_model_path>"\n'
            "PYTHONPATH={the_path_of_your_verl}/src " + TRAINER + "    --config-path=$CONFIG_PATH \\\n"
            "    actor_rollout_ref.model.path=$MODEL \\\n    trainer.n_gpus_per_node=8\n")
    hazards = read_script(text, "t.sh").hazards
    assert sorted(h.message.split(" ")[0] for h in hazards) == ["--config-path", "PYTHONPATH={the_path_of_your_verl}/src"]
    (tmp_path / "run.sh").write_text(text)
    done = _gen_check("run.sh", "--select", "VS714,VK606,VK611", cwd=tmp_path)
    codes = sorted(line.split(" ")[1] for line in done.stdout.splitlines() if ": V" in line)
    assert codes == ["VK606", "VS714", "VS714"], done.stdout  # no VK611 for the placeholder --config-path


def test_placeholder_in_a_launcher_option_and_logger_names_are_labels() -> None:
    text = ("ray job submit --address=http://xx.xx.xx.xx:8265 -- " + TRAINER
            + "    trainer.project_name=Your_project_name \\\n    trainer.experiment_name=your_exp_name\n")
    hazards = read_script(text, "t.sh").hazards
    assert [h.kind for h in hazards] == ["placeholder-value"] and "--address" in hazards[0].message


def test_unset_variables_in_values() -> None:
    text = ("EXP_NAME=run1\n" + TRAINER + "    trainer.default_local_dir=checkpoints/$_EXP_NAME \\\n"
            "    actor_rollout_ref.rollout.multi_turn.enable=${ENABLE_MULTI_TURN} \\\n"
            "    trainer.nnodes=$SLURM_JOB_NUM_NODES\n")
    findings = {f.code: f for f in script_findings(read_script(text, "t.sh"), select=["VS703", "VS715", "VS716"])}
    assert set(findings) == {"VS703", "VS715"}
    assert "did you mean $EXP_NAME" in findings["VS715"].message and findings["VS715"].severity == "warning"
    assert "an empty string" in findings["VS703"].message and "ENABLE_MULTI_TURN" in findings["VS703"].message


def test_a_call_taking_its_settings_from_the_caller_is_noted_not_warned() -> None:
    text = (TRAINER + "    actor_rollout_ref.model.path=$BASE_MODEL \\\n    critic.model.path=$BASE_MODEL \\\n"
            "    trainer.n_gpus_per_node=$N_GPUS \\\n    actor_rollout_ref.rollout.tensor_model_parallel_size=$TP\n")
    findings = script_findings(read_script(text, "t.sh"), select=["VS703", "VS716"])
    assert [f.code for f in findings] == ["VS716"] * 4
    assert "takes $BASE_MODEL, $N_GPUS, $TP from the environment" in findings[0].message


def test_a_script_run_after_exports_in_lower_case_is_noted_not_warned(tmp_path: Path) -> None:
    """Issue 34: a README exports `model_path=...` etc. before `bash train.sh`; the script sets none of
    its inputs. Whatever their case, the names are the script's inputs from the environment (info); a
    single unset name in a script that sets the rest itself is still a warning."""
    script = tmp_path / "train.sh"
    script.write_text("ENGINE=${1:-vllm}\n" + TRAINER + "    data.train_files=$train_file \\\n"
                      "    actor_rollout_ref.model.path=$model_path \\\n"
                      "    trainer.default_local_dir=$save_path/ckpt \\\n"
                      "    actor_rollout_ref.rollout.name=$ENGINE \\\n    trainer.project_name=$project_name\n")
    findings = script_findings(read_script(script.read_bytes(), str(script)), select=["VS703", "VS715", "VS716"])
    assert {f.code for f in findings} == {"VS716"} and len(findings) == 4
    assert all(f.severity == "info" for f in findings)
    assert "$train_file, $model_path, $project_name" in findings[0].message
    forgotten = ("KL=1\n" + TRAINER + "    actor_rollout_ref.actor.use_kl_loss=${use_kl_loss} \\\n"
                 "    actor_rollout_ref.actor.kl_loss_coef=$KL\n")
    codes = [f.code for f in script_findings(read_script(forgotten, "t.sh"), select=["VS703", "VS716"])]
    assert codes == ["VS703"]


def test_would_be_assignment_and_home_source() -> None:
    text = ("#!/bin/bash\nset -euo pipefail\nsource /home/alice/miniconda3/etc/profile.d/conda.sh\nKEY=a\n"
            "$rm_key=$KEY\n" + TRAINER + "    data.train_batch_size=64\n")
    findings = script_findings(read_script(text, "t.sh"), select=["VS732", "VS733"])
    assert [(f.code, f.line) for f in findings] == [("VS733", 3), ("VS732", 5)]
    assert "rm_key=$KEY" in findings[1].message and "alice" in findings[0].message
    no_errexit = text.replace("set -euo pipefail\n", "\n")
    assert [f.code for f in script_findings(read_script(no_errexit, "t.sh"), select=["VS733"])] == []


# --- only launchers are judged -------------------------------------------------------------------

PREP = "#!/bin/bash\nset -e\nmkdir -p data\npython3 prepare.py --local_dir ~/data/gsm8k\nhuggingface-cli download Qwen/Qwen2.5-0.5B\n"


def test_a_data_preparation_script_passes(tmp_path: Path) -> None:
    (tmp_path / "prep.sh").write_text(PREP)
    done = _gen_check("prep.sh", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VS730" in done.stdout and "VS709" not in done.stdout and "checked against" not in done.stdout


def test_a_launcher_whose_call_is_not_read_still_fails(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("$LAUNCHER \\\n    data.train_batch_size=64\n")
    done = _gen_check("run.sh", cwd=tmp_path)
    assert done.returncode == 1 and "VS709" in done.stdout


def test_a_split_word_is_one_finding_not_two(tmp_path: Path) -> None:
    """Issue 34: `trainer.logger=${logger}` with logger holding a space: bash splits the word; the
    stray half is VS712, and the head Hydra cannot parse is the same cause (no VK606 beside it)."""
    from generator.judging import check_script

    text = ("logger=\"['console', 'wandb']\"\n" + TRAINER + "    data.train_batch_size=64 \\\n"
            "    trainer.logger=${logger} \\\n    trainer.project_name=p\n")
    results = check_script(read_script(text, str(tmp_path / "t.sh")), version="0.7.0")
    found = [(f.code, f.line) for _inv, _config, findings in results for f in findings]
    assert ("VS712", 4) in found and not [c for c, line in found if c == "VK606" and line == 4]


def test_a_call_submitted_with_sbatch_wrap_is_read() -> None:
    """Issue 34: `sbatch --wrap="python3 -m verl.trainer.main_ppo ..."` runs the string as the job."""
    text = ('CMD="python3 -m verl.trainer.main_ppo data.train_batch_size=64 trainer.n_gpus_per_node=8"\n'
            'sbatch --job-name=x --gres=gpu:8 --wrap="$CMD"\n'
            'sbatch --wrap "python3 -m verl.trainer.main_ppo data.train_batch_size=32"\n')
    calls = read_script(text, "t.sh").invocations
    assert [[o.text for o in inv.overrides] for inv in calls] == [
        ["data.train_batch_size=64", "trainer.n_gpus_per_node=8"], ["data.train_batch_size=32"]]


def test_jobs_the_reader_does_not_follow_are_noted_not_warned() -> None:
    """A job string built from pieces (`srun bash -c '$setup; $run'`), or a cluster client given the
    overrides behind `-T` flags: the call is where that job runs (VS730 info), not 'no trainer call'."""
    wrapped = ('run="bash /users/$USER/proj/train.sh a b c"\nw="srun bash -c \'pip install x; $run\'"\n'
               'sbatch --nodes=1 --wrap="$w"\n')
    client = ("./client job run --job_name=x -E DATA=/d \\\n    -T data.train_batch_size=128 \\\n"
              "    -T actor_rollout_ref.actor.ppo_mini_batch_size=32 \\\n    -T trainer.total_epochs=10\n")
    for text in (wrapped, client):
        codes = [f.code for f in script_findings(read_script(text, "t.sh"), select=["VS709", "VS730"])]
        assert codes == ["VS730"], text
