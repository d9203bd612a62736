"""`gen fix` end to end on self-written fixtures: every provenance kind, unknown values, hazards,
--diff/--write, idempotence, exit codes, and bad input."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

FIX = Path(__file__).resolve().parent / "fixtures" / "fix"
MICRO_KEY = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
VERSION = "0.7.0"


def _gen(*args: str):
    return CliRunner().invoke(app, list(args))


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copy(FIX / name, target)
    return target


def _findings(path: Path, version: str = VERSION):
    from generator.fix.engine import default_checker, default_reader

    read = default_reader()
    script = read(path.read_bytes(), str(path))
    return [f for _, _, fs in default_checker(version)(script) for f in fs]


def _changed_lines(before: bytes, after: bytes) -> list[tuple[str, str]]:
    old, new = before.decode().splitlines(), after.decode().splitlines()
    assert len(old) == len(new), "a value fix must not add or remove lines"
    return [(a, b) for a, b in zip(old, new) if a != b]


def _micro_value(line: str) -> int:
    digits = "".join(ch for ch in line.split("=")[-1] if ch.isdigit())
    return int(digits)


@pytest.mark.parametrize("name,where", [
    ("micro_literal.sh", f"    {MICRO_KEY}="),           # the word on the command line
    ("micro_variable.sh", "MICRO="),                      # the knob, not the call
    ("micro_default.sh", 'MICRO="${MICRO:-'),             # the :- default inside double quotes
    ("micro_array.sh", f"    {MICRO_KEY}="),              # the array element (comment kept)
    ("micro_string.sh", f"    {MICRO_KEY}="),             # the piece of the word-split string
])
def test_micro_fix_lands_where_the_value_is_defined(name, where, tmp_path):
    path = _copy(name, tmp_path)
    before = path.read_bytes()
    assert any(f.key == MICRO_KEY and f.fix for f in _findings(path)), "fixture must have a micro finding"
    result = _gen("fix", "--write", "--verl-version", VERSION, "--select", "VB107", str(path))
    after = path.read_bytes()
    changed = _changed_lines(before, after)
    assert len(changed) == 1, changed
    old_line, new_line = changed[0]
    assert old_line.startswith(where)
    new_micro = _micro_value(new_line)
    # per-rank mini batch = 16·4/4 = 16: the new micro divides it
    assert new_micro != 6 and 16 % new_micro == 0
    # only the number changed: quoting, comments and continuation backslashes are kept
    assert old_line.count("6") == 1 and new_line == old_line.replace("6", str(new_micro))
    assert not [f for f in _findings(path) if f.code == "VB107"]
    assert result.exit_code == 0  # only VB107 was selected, and it is fixed
    # idempotent: nothing more to do
    again = _gen("fix", "--write", "--verl-version", VERSION, "--select", "VB107", str(path))
    assert path.read_bytes() == after and again.exit_code == result.exit_code


def test_diff_is_the_default_and_writes_nothing(tmp_path):
    path = _copy("micro_literal.sh", tmp_path)
    before = path.read_bytes()
    result = _gen("fix", "--verl-version", VERSION, "--select", "VB107", str(path))
    assert path.read_bytes() == before
    assert result.stdout.startswith(f"--- {path}\n+++ {path}\n")  # absolute paths stay as they are
    assert f"-    {MICRO_KEY}=6 \\" in result.stdout and f"+    {MICRO_KEY}=" in result.stdout


def test_unknown_value_is_not_edited_and_the_finding_stays(tmp_path):
    path = _copy("micro_unknown.sh", tmp_path)
    before = path.read_bytes()
    result = _gen("fix", "--write", "--verl-version", VERSION, "--env", "MICRO_FROM_ENV=6", str(path))
    # with the value assumed through --env the finding exists, but its text is an unset variable
    # in the file: the fixer must not replace the expansion with a number
    assert b"${MICRO_FROM_ENV}" in path.read_bytes()
    assert result.exit_code == 1  # the finding on the unknown value remains
    assert path.read_bytes().count(b"\n") == before.count(b"\n")


def test_backslash_space_is_repaired_structurally(tmp_path):
    path = _copy("backslash_space.sh", tmp_path)
    result = _gen("fix", "--write", "--verl-version", VERSION, str(path))
    text = path.read_text()
    assert "\\  \n" not in text and "data.train_batch_size=64 \\\n" in text
    assert result.exit_code == 1  # its batch errors have only unsafe fixes, not applied without --unsafe


# A call cut short by whitespace after its first backslash sets no key, so with no verl found and
# no --verl-version the release is a guess with no evidence and the default-reading rules stand
# down; once the continuation is repaired the call's keys tell the release, and those rules run.
CUT_CALL = ("#!/usr/bin/env bash\n"
            "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\  \n"
            "    actor_rollout_ref.rollout.name=vllm \\\n"
            "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\\n"
            "    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \\\n"
            "    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \\\n"
            "    critic.ppo_micro_batch_size_per_gpu=2 \\\n"
            "    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2\n")


def test_fix_judges_the_repaired_text_by_the_release_its_keys_tell(tmp_path):
    """The fuzzer (slow tier) found `gen fix --write` not idempotent: its later rounds judged the
    repaired text by the release guessed from the broken one, so VP305 (critic layout unlike the
    actor's, a default-reading rule) was left for a second run. Both fixes land in one run now."""
    (tmp_path / ".git").mkdir()
    path = tmp_path / "run.sh"
    path.write_text(CUT_CALL)
    first = _gen("fix", "--write", str(path))
    assert "fixed VS702" in first.output and "fixed VP305" in first.output, first.output
    after_first = path.read_bytes()
    second = _gen("fix", "--write", str(path))
    assert path.read_bytes() == after_first, second.output
    assert "fixed 0 finding(s)" in second.output


def test_comment_in_continuation_is_moved_out_of_the_command(tmp_path):
    path = _copy("comment_in_continuation.sh", tmp_path)
    _gen("fix", "--write", "--verl-version", VERSION, str(path))
    text = path.read_text()
    assert "# the MoE loss settings" in text  # the comment is kept, not deleted
    from generator.fix.engine import default_reader

    script = default_reader()(path.read_bytes(), str(path))
    keys = [o.key for inv in script.invocations for o in inv.overrides]
    assert "trainer.nnodes" in keys and "actor_rollout_ref.rollout.n" in keys
    assert not [h for h in script.hazards if h.kind == "comment-in-continuation"]


def test_read_only_file_is_one_line_error_exit_2(tmp_path):
    path = _copy("micro_literal.sh", tmp_path)
    path.chmod(0o444)
    before = path.read_bytes()
    result = _gen("fix", "--write", "--verl-version", VERSION, "--select", "VB107", str(path))
    assert result.exit_code == 2
    assert path.read_bytes() == before
    lines = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and "read-only" in lines[0]
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_bad_inputs_exit_2_without_traceback(tmp_path):
    good = _copy("micro_literal.sh", tmp_path)
    missing = tmp_path / "missing.sh"
    binary = tmp_path / "binary.sh"
    binary.write_bytes(b"\x00\x01\x02")
    result = _gen("fix", "--verl-version", VERSION, str(missing), str(binary), str(good))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert str(missing) in result.stderr and str(binary) in result.stderr
    assert f"+++ {good}" in result.stdout  # the good file is still processed
    assert _gen("fix", "--verl-version", "banana", str(good)).exit_code == 2
    assert _gen("fix", "--env", "NOEQUALS", str(good)).exit_code == 2
    assert _gen("fix", "--diff", "--write", str(good)).exit_code == 2


def test_exit_1_when_errors_remain_and_0_when_clean(tmp_path):
    path = _copy("micro_unknown.sh", tmp_path)
    errors = [f for f in _findings(path) if f.severity == "error"]
    result = _gen("fix", "--verl-version", VERSION, str(path))
    assert result.exit_code == (1 if errors else 0)


def test_backslash_space_before_a_comment_moves_the_comment(tmp_path):
    path = tmp_path / "pf.sh"
    path.write_text(
        "set -x\n\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "    algorithm.use_pf_ppo=True \\\n"
        "    algorithm.pf_ppo.reweight_method=pow \\  # pow, max_min or max_random\n"
        "    algorithm.pf_ppo.weight_pow=2.0 \\\n"
        "    trainer.nnodes=1\n")
    _gen("fix", "--write", "--verl-version", VERSION, "--select", "VS", str(path))
    assert path.read_text() == (
        "set -x\n\n"
        "# pow, max_min or max_random\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "    algorithm.use_pf_ppo=True \\\n"
        "    algorithm.pf_ppo.reweight_method=pow \\\n"
        "    algorithm.pf_ppo.weight_pow=2.0 \\\n"
        "    trainer.nnodes=1\n")
    from generator.fix.engine import default_reader

    script = default_reader()(path.read_bytes(), str(path))
    assert [o.key for o in script.invocations[0].overrides][-1] == "trainer.nnodes"
    assert not script.hazards


def test_migrate_runs_end_to_end(tmp_path):
    """gen migrate once raised NameError (a memory option copied into it): it must answer."""
    path = tmp_path / "run.sh"
    path.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8 trainer.n_gpus_per_node=8\n")
    result = _gen("migrate", str(path), "--to", "0.7.0", "--from", "0.4.1")
    assert result.exit_code == 0, result.output
    assert f"{path}: 0.4.1 → 0.7.0" in result.output
