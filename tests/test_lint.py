"""The linter's verdict and the facts it cannot see for itself: `ruff check` (the rule set in
pyproject.toml's [tool.ruff.lint]) finds nothing, and the lazily loaded names of
generator.config are exactly the ones its `__all__` writes out."""

from __future__ import annotations

import subprocess
import sys

import generator.config as config
from conftest import REPO


def test_config_all_names_every_lazy_name_and_the_two_types() -> None:
    assert sorted(config.__all__) == sorted(["Config", "KeyIssue", *config._LAZY])
    for name in config.__all__:
        assert getattr(config, name) is not None  # each resolves (a lazy one loads its module)


def test_ruff_finds_nothing() -> None:
    """`ruff check` with the project's rule set: a slip in any file fails here (and in .ci/run)."""
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "No module named ruff" not in result.stderr, "ruff is in the test extra: pip install -e '.[test]'"
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_ruff_reads_the_projects_rule_set() -> None:
    """The check above runs the configured rules, not ruff's defaults: a file with an unused
    import and a late-bound loop variable (bugbear) is refused for both."""
    source = "import os\n\nfns = []\nfor i in range(3):\n    fns.append(lambda: i)\n"
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                             "--stdin-filename", "generator/_probe.py", "-"],
                            cwd=REPO, input=source, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "F401" in result.stdout and "B023" in result.stdout
