"""The interpolation scanner (generator/config/interp.py `_unquoted`) jumps between the
characters it looks for with regex searches (issue 22); it must find exactly what a step a
character finds, quotes, escapes and unterminated text included."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given, settings, strategies as st

from generator.config import interp


def _by_character(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """The scan as it was written before: every character outside quotes, one at a time."""
    quote, i = "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            yield i, ch
        i += 1


TEXTS = st.text(alphabet="ab${}[],:'\"\\ .", max_size=40)


@settings(max_examples=600, deadline=None)
@given(TEXTS, st.integers(min_value=0, max_value=12), st.sampled_from(["{}", "[]{},"]))
def test_the_scan_finds_what_a_step_a_character_finds(text: str, start: int, chars: str) -> None:
    assert list(interp._unquoted(text, chars, start)) == [(i, ch) for i, ch in _by_character(text, start)
                                                            if ch in chars]


def test_the_shapes_verl_writes() -> None:
    assert interp._split_top.__wrapped__("a.b,'x,y',\"q\\\",z\",[1,2],{k: 1, j: 2}", ",") == (
        "a.b", "'x,y'", '"q\\",z"', "[1,2]", "{k: 1, j: 2}")
    assert interp._find_close.__wrapped__("${oc.select:a.${b},'}'}x", 2) == 22
