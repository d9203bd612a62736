"""Issue 35's red-team round (tests/hostile_cases_35.py): one test per attack, each building its own
hostile project in a temp folder and running the real command line in a child process, held to
hostile_cases.problems (exit code, one line, no secret printed, no traceback, <= 10 s a command,
<= 500 MB) and to hostile_cases_35.extra_problems (nothing outside the project touched, no runner
command, raw escape, line separator or bidi override in any output)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_cases import run_case
from hostile_cases_35 import CASES_35, all_problems


@pytest.mark.parametrize("name", sorted(CASES_35))
def test_attack_is_handled(tmp_path: Path, name: str) -> None:
    case = CASES_35[name](tmp_path)
    got = run_case(case, timeout=60)
    found = all_problems(case, got)
    assert not found, (found, got.rc, got.stderr[-800:], got.stdout[-800:])
