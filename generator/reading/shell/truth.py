"""Pure three-valued logic of bash conditions: True, False, or None when it cannot be known
statically. The evaluator expands the words; these functions only decide."""

from __future__ import annotations

import operator
from collections.abc import Callable

from generator.base.safe_regex import search

_INTEGER_TESTS: dict[str, Callable[[int, int], bool]] = {
    "-eq": operator.eq, "-ne": operator.ne, "-lt": operator.lt, "-le": operator.le, "-gt": operator.gt,
    "-ge": operator.ge,
}
# The binary operators of `test` / `[ ]` (`[[ ]]` also has `<`, `>` and `=~`).
TEST_OPERATORS = frozenset({"=", "==", "!="}) | frozenset(_INTEGER_TESTS)


def both(left: bool | None, right: Callable[[], bool | None]) -> bool | None:
    """`left && right`; `right` is decided only when it can change the outcome."""
    if left is False:
        return False
    value = right()
    return value if left is True else (False if value is False else None)


def either(left: bool | None, right: Callable[[], bool | None]) -> bool | None:
    """`left || right`; `right` is decided only when it can change the outcome."""
    if left is True:
        return True
    value = right()
    return value if left is False else (True if value is True else None)


def negate(value: bool | None) -> bool | None:
    return None if value is None else not value


def compare(op: str, left: str, right: str) -> bool | None:
    """`left OP right` with a string or integer operator (patterns are matched by the caller)."""
    if op in ("==", "="):
        return left == right
    if op == "!=":
        return left != right
    if op == "=~":
        # The script's regex: matched in linear time (`^(a+)+b$` backtracks for seconds in `re`);
        # unknown when it cannot be judged safely (generator.base.safe_regex).
        return search(right, left)
    if op in ("<", ">"):
        return left < right if op == "<" else left > right
    test = _INTEGER_TESTS.get(op)
    if test is None:
        return None
    try:
        return test(int(left.strip()), int(right.strip()))
    except ValueError:
        return None


def evaluate_test(args: list[str]) -> bool | None:
    """`test ARGS…` / `[ ARGS… ]` (closing `]` removed): its 1-, 2- and 3-argument forms."""
    inverted = len(args) >= 2 and args[0] == "!"
    if inverted:
        args = args[1:]
    result: bool | None = None
    if len(args) == 1:
        result = args[0] != ""
    elif len(args) == 2 and args[0] in ("-z", "-n"):
        result = (args[1] == "") if args[0] == "-z" else (args[1] != "")
    elif len(args) == 3 and args[1] in TEST_OPERATORS:
        result = compare(args[1], args[0], args[2])
    return negate(result) if inverted else result
