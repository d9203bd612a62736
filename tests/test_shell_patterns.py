"""Glob patterns (`${v#p}`, `${v%%p}`, `${v//p/r}`, `[[ v == p ]]`, `case`) agree with bash
itself, and their cost stays linear in the text where bash's grows with the stars.

bash runs here on strings this test generates (never on a user's script): it is the
reference for what the reader computes statically.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import time

import pytest

from generator.reading.shell.patterns import REPLACE_SCAN_LIMIT, glob_match, remove_prefix, remove_suffix, replace

OPERATIONS = {
    "#": lambda t, p, r: remove_prefix(t, p, longest=False),
    "##": lambda t, p, r: remove_prefix(t, p, longest=True),
    "%": lambda t, p, r: remove_suffix(t, p, longest=False),
    "%%": lambda t, p, r: remove_suffix(t, p, longest=True),
    "/": lambda t, p, r: replace(t, p, r, "/"),
    "//": lambda t, p, r: replace(t, p, r, "//"),
    "/#": lambda t, p, r: replace(t, p, r, "/#"),
    "/%": lambda t, p, r: replace(t, p, r, "/%"),
}


def _cases(seed: int, count: int) -> list[tuple[str, str, str]]:
    rnd = random.Random(seed)
    pieces = ["a", "b", "*", "?", "[ab]", "[!a]", "**"]
    return [("".join(rnd.choice("ab") for _ in range(rnd.randint(0, 7))),
             "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 5))),
             rnd.choice(["", "X", "YY"])) for _ in range(count)]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash as the reference")
def test_every_pattern_operation_agrees_with_bash():
    cases = _cases(seed=20261201, count=600)
    lines = []
    for text, pattern, rep in cases:
        lines.append(f"t='{text}'; if [[ $t == {pattern} ]]; then echo 1; else echo 0; fi")
        for op in OPERATIONS:
            operand = f"{pattern}/{rep}" if op.startswith("/") else pattern
            lines.append(f't=\'{text}\'; echo "<${{t{op}{operand}}}>"')
    bash = subprocess.run(["bash", "--norc", "--noprofile"], input="\n".join(lines), capture_output=True,
                          text=True, check=True).stdout.splitlines()
    ours = []
    for text, pattern, rep in cases:
        ours.append("1" if glob_match(pattern, text) else "0")
        ours += [f"<{apply(text, pattern, rep)}>" for apply in OPERATIONS.values()]
    wrong = [(line, got, want) for line, got, want in zip(lines, ours, bash) if got != want]
    assert len(bash) == len(ours) and wrong == []


def test_many_stars_on_a_long_value_take_linear_time():
    # A backtracking regex needs ~n^8 steps here; bash itself takes minutes.
    text = "a" * 200_000
    started = time.process_time()
    assert not glob_match("*a*a*a*a*a*a*a*a*b", text)
    assert remove_suffix(text, "a*a*a*a*b", longest=True) == text
    assert remove_prefix(text, "*a*a*a", longest=False) == "a" * (200_000 - 3)
    assert time.process_time() - started < 5  # seconds of CPU, with a wide margin (measured: 0.01)


def test_a_starred_replacement_in_a_long_value_is_refused_not_scanned():
    with pytest.raises(ValueError, match="too long"):
        replace("a" * (REPLACE_SCAN_LIMIT + 1), "*b", "x", "//")
    assert replace("a" * (REPLACE_SCAN_LIMIT + 1), "a", "b", "//") == "b" * (REPLACE_SCAN_LIMIT + 1)
