"""A key given twice in one call where a comment right above the later value records the change
(its key and its new value) is a deliberate repeat, not a mistake (VS704 stands down). Every
script here is written by the test."""

from __future__ import annotations

from generator.reading.shell import read_file, read_script

BS = "\\"
HEAD = f"python3 -m verl.trainer.main_ppo {BS}\n    data.max_prompt_length=12000 {BS}\n    data.train_batch_size=64 {BS}\n"
TAIL = f"    data.max_prompt_length=8192 {BS}\n    trainer.nnodes=1\n"


def duplicates(source: str) -> list[int]:
    return [h.line for h in read_script(source).hazards if h.kind == "duplicate-key"]


def test_a_backquoted_comment_recording_the_change_makes_the_repeat_deliberate():
    assert duplicates(HEAD + f"    `# Reduced max_prompt_length to 8192 to save memory (was 12000)` {BS}\n" + TAIL) == []


def test_a_hash_line_above_counts_too():
    source = ("X=1\n# data.max_prompt_length 8192: lowered on purpose\n"
              "python3 -m verl.trainer.main_ppo data.max_prompt_length=12000 data.max_prompt_length=8192\n")
    assert duplicates(source) == []


def test_a_comment_about_something_else_leaves_the_repeat_reported():
    assert duplicates(HEAD + f"    `# a larger prompt for the tools` {BS}\n" + TAIL) == [5]


def test_a_comment_naming_the_key_but_not_the_value_leaves_it_reported():
    assert duplicates(HEAD + f"    `# max_prompt_length` {BS}\n" + TAIL) == [5]


def test_no_comment_leaves_it_reported():
    assert duplicates(HEAD + TAIL) == [4]


def test_a_script_read_from_its_file_is_judged_the_same(tmp_path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(HEAD + f"    `# Reduced max_prompt_length to 8192 to save memory (was 12000)` {BS}\n" + TAIL)
    assert [h for h in read_file(str(script)).hazards if h.kind == "duplicate-key"] == []
