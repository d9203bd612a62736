"""Shell traps found while reading, each with its consequence: what bash or Hydra does with
the script as written (issue 11 part 5), and the findings and fixes `gen check`/`gen fix` give."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app
from generator.reading.launch_script import LaunchScript
from generator.judging import script_findings
from generator.reading.shell import read_script

CALL = "python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64 \\\n"


def kinds(script: LaunchScript) -> list[str]:
    return [h.kind for h in script.hazards]


def hazard(script: LaunchScript, kind: str):
    found = [h for h in script.hazards if h.kind == kind]
    assert len(found) == 1, script.hazards
    return found[0]


def apply(source: bytes, edits) -> bytes:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        source = source[:edit.start] + edit.replacement.encode() + source[edit.end:]
    return source


def test_crlf_says_which_overrides_are_cut_off_and_the_fix_strips_crs() -> None:
    source = (CALL + "    actor_rollout_ref.rollout.n=4\n").replace("\n", "\r\n").encode()
    script = read_script(source)
    crlf = hazard(script, "crlf")
    assert crlf.line == 1
    assert "command ends at line 1" in crlf.message
    assert "data.train_batch_size, actor_rollout_ref.rollout.n" in crlf.message
    (finding,) = [f for f in script_findings(script) if f.code == "VS710"]
    assert finding.severity == "error"
    fixed = apply(source, finding.fix.edits)
    assert b"\r" not in fixed and fixed == (CALL + "    actor_rollout_ref.rollout.n=4\n").encode()
    assert "crlf" not in kinds(read_script(fixed))


def test_space_after_or_before_equals_makes_two_words() -> None:
    script = read_script(CALL + "    actor_rollout_ref.rollout.n= 4 \\\n    trainer.nnodes =2\n")
    after, before = [h for h in script.hazards if h.kind == "split-assignment"]
    assert after.line == 3 and "`actor_rollout_ref.rollout.n= 4`" in after.message
    assert "sets actor_rollout_ref.rollout.n to empty" in after.message and "stray argument `4`" in after.message
    assert before.line == 4 and "`trainer.nnodes =2`" in before.message
    (inv,) = script.invocations
    assert [o.value for o in inv.overrides if o.key == "actor_rollout_ref.rollout.n"] == [""]  # what bash passes
    assert {f.code for f in script_findings(script)} >= {"VS711"}


def test_a_bare_word_or_unknown_option_among_overrides() -> None:
    script = read_script(CALL + "    --verbose \\\n    debug \\\n    --config-name=ppo_trainer \\\n    -m\n")
    stray = [h for h in script.hazards if h.kind == "stray-argument"]
    assert [(h.line, h.message.split("`")[1]) for h in stray] == [(3, "--verbose"), (4, "debug")]
    assert "Hydra command-line error" in stray[0].message  # Hydra's own --config-name and -m are fine


def test_stray_words_are_not_reported_for_other_programs() -> None:
    script = read_script("python3 train.py --epochs 3 data.train_batch_size=64\n")
    assert "stray-argument" not in kinds(script)


def test_unterminated_quote_at_the_end_of_a_call() -> None:
    script = read_script(CALL + '    trainer.project_name="verl\n')
    found = hazard(script, "unterminated-quote")
    assert found.line == 3 and "double quote" in found.message and "runs nothing" in found.message
    assert "VS713" in {f.code for f in script_findings(script)}


def test_placeholder_values() -> None:
    script = read_script(CALL + "    actor_rollout_ref.model.path=TO_BE_FILLED \\\n"
                         "    trainer.default_local_dir='<your_ckpt_dir>' \\\n    data.val_files=xxx \\\n"
                         "    trainer.project_name=xxx\n")
    found = [h for h in script.hazards if h.kind == "placeholder-value"]
    # '<your_ckpt_dir>' (line 4) is one Hydra cannot parse: VK606 reports it; a logger's project
    # name is only a label (line 6).
    assert [h.line for h in found] == [3, 5]
    assert "verl receives the text `TO_BE_FILLED`" in found[0].message
    assert "placeholder-value" not in kinds(read_script(CALL + "    trainer.project_name=verl_xxx_run\n"))


def test_value_partly_made_of_an_unset_variable() -> None:
    script = read_script(CALL + "    trainer.default_local_dir=$ckpt_root/run1 \\\n"
                         "    data.train_files=$DATA_ROOT/train.parquet \\\n    data.val_files=$HOME/val.parquet\n")
    lower = hazard(script, "unset-in-value")
    assert lower.line == 3 and "bash passes `trainer.default_local_dir=/run1`" in lower.message
    upper = hazard(script, "env-in-value")  # $HOME is the environment's: no hazard for it
    assert upper.line == 4
    severities = {f.code: f.severity for f in script_findings(script)}
    assert severities["VS715"] == "warning" and severities["VS716"] == "info"


def test_option_parsed_but_never_used() -> None:
    src = ("while [[ $# -gt 0 ]]; do\n  case $1 in\n    --lr) LR=$2; shift 2;;\n    --tbs) TBS=\"$2\"; shift 2;;\n"
           "    *) shift;;\n  esac\ndone\n" + CALL + "    data.train_batch_size=${TBS:-64}\n")
    found = hazard(read_script(src), "unused-option")
    assert found.line == 3 and "--lr" in found.message and "$LR" in found.message


def test_no_trainer_call_is_a_warning_and_check_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "launch.sh"
    path.write_text("$LAUNCHER \\\n    data.train_batch_size=64\n")  # looks like a launcher; call not read
    script = read_script(path.read_bytes(), str(path))
    (finding,) = [f for f in script_findings(script) if f.code == "VS709"]
    assert finding.severity == "warning" and "nothing in this script was checked" in finding.message
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1, result.output
    assert "VS709" in result.output
    assert CliRunner().invoke(app, ["check", str(path), "--ignore", "VS709"]).exit_code == 0
    helper = tmp_path / "prepare.sh"  # names no trainer, no overrides: not a launch script (VS730)
    helper.write_text("python3 prepare_data.py --out /data\n")
    result = CliRunner().invoke(app, ["check", str(helper)])
    assert result.exit_code == 0 and "VS730" in result.output and "VS709" not in result.output


def test_a_call_only_in_a_dead_branch_is_not_read() -> None:
    script = read_script("exit 0\n" + CALL + "    actor_rollout_ref.rollout.n=4\n")
    (finding,) = [f for f in script_findings(script) if f.code == "VS709"]
    assert "line 2 is never reached" in finding.message
