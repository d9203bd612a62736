"""VS7xx: shell hazards become findings; the structural fixes repair the text."""

from __future__ import annotations

from generator.reading.edit_kinds import TextEdit
from generator.reading.launch_script import Hazard, LaunchScript, Span
from generator.judging import script_findings


def apply(source: bytes, edits) -> bytes:
    out = source
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        assert isinstance(edit, TextEdit)
        out = out[:edit.start] + edit.replacement.encode() + out[edit.end:]
    return out


# These scripts are built by hand with no invocations, so VS709 (no trainer call) is ignored.
def script_with(source: str, kind: str, needle: str, message: str = "hazard", span_word: bool = False) -> LaunchScript:
    data = source.encode()
    offset = data.index(needle.encode())
    line = data.count(b"\n", 0, offset) + 1
    span = Span(offset, offset + len(needle.encode()), line)
    return LaunchScript(path="run.sh", source=data, hazards=[Hazard(kind, line, message, span)])


def test_comment_in_continuation_moves_comment_above_command():
    source = ("set -x\npython3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64 \\\n"
              "    # rollout settings\n    actor_rollout_ref.rollout.n=4\n")
    script = script_with(source, "comment-in-continuation", "# rollout settings", "comment cuts the command")
    (finding,) = script_findings(script, ignore=["VS709"])
    assert finding.code == "VS701" and finding.line == 4 and finding.severity == "error"
    fixed = apply(script.source, finding.fix.edits).decode()
    assert fixed == ("set -x\n# rollout settings\npython3 -m verl.trainer.main_ppo \\\n"
                     "    data.train_batch_size=64 \\\n    actor_rollout_ref.rollout.n=4\n")


def test_backslash_space_fix_strips_whitespace():
    source = "python3 -m verl.trainer.main_ppo \\  \n    data.train_batch_size=64\n"
    script = script_with(source, "backslash-space", "\\  ")
    (finding,) = script_findings(script, ignore=["VS709"])
    assert finding.code == "VS702"
    assert apply(script.source, finding.fix.edits).decode() == (
        "python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64\n")


def test_unquoted_glob_single_quotes_plain_words_only():
    source = "python3 -m verl.trainer.main_ppo data.train_files=[a*.parquet]\n"
    script = script_with(source, "unquoted-glob", "data.train_files=[a*.parquet]")
    (finding,) = script_findings(script, ignore=["VS709"])
    assert apply(script.source, finding.fix.edits).decode().endswith("'data.train_files=[a*.parquet]'\n")
    source = "python3 -m verl.trainer.main_ppo data.train_files=$HOME/a*.parquet\n"
    script = script_with(source, "unquoted-glob", "data.train_files=$HOME/a*.parquet")
    (finding,) = script_findings(script, ignore=["VS709"])
    assert finding.fix is None  # quoting would stop $HOME from expanding


def test_hazards_without_fix_and_select():
    source = "python3 -m verl.trainer.main_ppo data.train_batch_size=64 data.train_batch_size=128\n"
    script = script_with(source, "duplicate-key", "data.train_batch_size=128", "set twice: 64 then 128")
    (finding,) = script_findings(script, ignore=["VS709"])
    assert finding.code == "VS704" and finding.severity == "warning" and finding.fix is None
    assert finding.message == "set twice: 64 then 128"
    assert script_findings(script, ignore=["VS"]) == []


def test_backslash_space_before_a_comment_is_fixable_in_check():
    # `\  # note`: deleting the spaces would leave `\#` (an escaped '#', passed as an argument),
    # so the one backslash fixer moves the comment above the command; `gen check` offers it too.
    source = ("python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64 \\  # note\n"
              "    actor_rollout_ref.rollout.n=4\n")
    script = script_with(source, "backslash-space", "\\  # note")
    (finding,) = script_findings(script, ignore=["VS709"])
    assert finding.code == "VS702" and finding.fix is not None
    assert apply(script.source, finding.fix.edits).decode() == (
        "# note\npython3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64 \\\n"
        "    actor_rollout_ref.rollout.n=4\n")
