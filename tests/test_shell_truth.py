"""The three-valued logic of bash conditions (shell/truth.py): what `test`, `[ ]`, `[[ ]]`,
`&&` and `||` decide, and where the answer stays unknown (None)."""

from __future__ import annotations

import pytest

from generator.reading.shell.truth import both, compare, either, evaluate_test


def _never() -> bool | None:
    raise AssertionError("the right side must not be decided")


def test_short_circuit_and_unknowns() -> None:
    assert both(False, _never) is False and either(True, _never) is True
    assert both(True, lambda: None) is None and both(None, lambda: False) is False
    assert both(None, lambda: True) is None
    assert either(False, lambda: True) is True and either(None, lambda: True) is True
    assert either(None, lambda: False) is None


@pytest.mark.parametrize("op, left, right, expected", [
    ("==", "a", "a", True), ("=", "a", "b", False), ("!=", "a", "b", True),
    ("-eq", "8", " 8", True), ("-lt", "2", "10", True), ("-ge", "x", "1", None),
    ("<", "a", "b", True), (">", "a", "b", False), ("=~", "v0.7.0", r"^v0\.7", True), ("=~", "a", "(", None),
    ("-nt", "a", "b", None),
])
def test_compare(op: str, left: str, right: str, expected: bool | None) -> None:
    assert compare(op, left, right) is expected


@pytest.mark.parametrize("args, expected", [
    (["x"], True), ([""], False), (["-z", ""], True), (["-n", ""], False), (["!", "-z", ""], False),
    (["1", "-lt", "2"], True), (["a", "=", "a"], True), (["a", "=~", "a"], None),  # no =~ in [ ]
    (["-f", "/etc/passwd"], None), ([], None),
])
def test_test_arguments(args: list[str], expected: bool | None) -> None:
    assert evaluate_test(args) is expected
