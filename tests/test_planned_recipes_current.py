"""The library's planned recipes are the planner's answer (tools/make_recipes.py): a change to the
planner that moves a layout must rewrite them, or `gen show planned-…` describes a plan that
`gen plan` no longer gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_committed_planned_recipes_match_the_planner():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "make_recipes.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
