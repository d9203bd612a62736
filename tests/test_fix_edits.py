"""The byte-edit engine: back-to-front splicing, re-quoting per context (writes: test_files.py)."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from generator.fix.splice import (
    CannotQuote,
    OverlappingEdits,
    apply_edits,
    requote,
    select_compatible,
)
from generator.reading.edit_kinds import TextEdit


# --- apply_edits ---------------------------------------------------------------------------


def test_edits_apply_back_to_front_so_offsets_stay_valid():
    src = b"a=1 b=22 c=333"
    out = apply_edits(src, [TextEdit(2, 3, "100"), TextEdit(11, 14, "4"), TextEdit(6, 8, "")])
    assert out == b"a=100 b= c=4"


def test_edit_order_given_does_not_matter():
    src = b"x" * 20
    edits = [TextEdit(i, i + 1, str(i)) for i in range(0, 20, 3)]
    assert apply_edits(src, edits) == apply_edits(src, list(reversed(edits)))


def test_multibyte_text_is_spliced_by_bytes():
    src = "é=1 # ünïcode\nk=2\n".encode()
    start = src.index(b"k=2") + 2
    assert apply_edits(src, [TextEdit(start, start + 1, "3")]) == "é=1 # ünïcode\nk=3\n".encode()


def test_overlapping_edits_are_rejected_deterministically():
    with pytest.raises(OverlappingEdits) as first:
        apply_edits(b"abcdef", [TextEdit(1, 4, "x"), TextEdit(3, 5, "y")])
    with pytest.raises(OverlappingEdits) as second:
        apply_edits(b"abcdef", [TextEdit(3, 5, "y"), TextEdit(1, 4, "x")])
    assert (first.value.first, first.value.second) == (second.value.first, second.value.second)


def test_a_wide_edit_swallowing_a_later_one_is_an_overlap():
    with pytest.raises(OverlappingEdits):
        apply_edits(b"0123456789", [TextEdit(0, 9, "x"), TextEdit(2, 3, "y"), TextEdit(5, 6, "z")])


def test_identical_edits_apply_once_and_boundary_insertions_are_fine():
    src = b"abc"
    assert apply_edits(src, [TextEdit(1, 2, "X"), TextEdit(1, 2, "X")]) == b"aXc"
    assert apply_edits(src, [TextEdit(1, 1, "<"), TextEdit(1, 2, "B")]) == b"a<Bc"
    with pytest.raises(OverlappingEdits):
        apply_edits(src, [TextEdit(1, 1, "<"), TextEdit(1, 1, ">")])


def test_out_of_range_edit_raises():
    with pytest.raises(ValueError):
        apply_edits(b"abc", [TextEdit(2, 9, "x")])


def test_select_compatible_keeps_first_of_conflicting_groups():
    groups = [[TextEdit(0, 2, "a")], [TextEdit(1, 3, "b")], [TextEdit(5, 6, "c")]]
    assert select_compatible(groups) == ([0, 2], [1])


# --- requote -------------------------------------------------------------------------------


def _bash_words(words_source: str, tmp_path) -> list[str]:
    """What bash hands a command for `words_source` (our own test text; run with failglob in an
    empty directory so an unquoted glob character fails loudly instead of passing through)."""
    script = f"shopt -s failglob\nprintf '%s\\0' {words_source}\n"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, timeout=10)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().split("\0")[:-1]


@pytest.mark.parametrize(
    "text",
    ["4", "token-mean", "['console','wandb']", '["a", "b"]', "it's", "$HOME", "a b", "*", "~/x",
     "{a,b}", "x#y", "#x", "back\\slash", "`cmd`", 'q"q', ""],
)
@pytest.mark.parametrize("quoting", ["", "'", '"'])
def test_requote_makes_bash_produce_exactly_the_text(text, quoting, tmp_path):
    source = f"key={quoting}{requote(text, quoting)}{quoting}"
    assert _bash_words(source, tmp_path) == [f"key={text}"]


def test_bare_context_quotes_only_when_needed():
    assert requote("256", "") == "256"
    assert requote("Qwen/Qwen2-7B", "") == "Qwen/Qwen2-7B"
    assert requote("[1,2]", "") == "'[1,2]'"
    assert requote("it's [x]", "") == '"it\'s [x]"'


@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
       quoting=st.sampled_from(["", "'", '"']))
def test_requote_property_against_bash(text, quoting, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("q")
    source = f"k={quoting}{requote(text, quoting)}{quoting}"
    assert _bash_words(source, tmp) == [f"k={text}"]


def test_word_split_context_refuses_what_splitting_would_break():
    assert requote("8", '"', word_split=True) == "8"
    for bad in ("a b", "", "[1,2]", "x*"):
        with pytest.raises(CannotQuote):
            requote(bad, '"', word_split=True)


