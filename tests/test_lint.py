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


def test_ruff_refuses_a_function_over_the_complexity_limit() -> None:
    """C901 is live at 30: a function of McCabe complexity 31 is refused, one of 30 is not."""
    def source(branches: int) -> str:
        body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(branches - 1))
        return f"def f(x):\n{body}    return -1\n"

    def codes(text: str) -> str:
        return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                               "--stdin-filename", "generator/_probe.py", "-"],
                              cwd=REPO, input=text, capture_output=True, text=True, timeout=60).stdout

    assert "C901" in codes(source(31))
    assert "C901" not in codes(source(30))


# A module a reader can hold in their head (CONTRIBUTING.md): about 600 lines at most.
MODULE_LINE_LIMIT = 600


def test_every_module_stays_within_the_size_limit() -> None:
    long_modules = {}
    for folder in ("generator", "tools", "bench"):
        for path in (REPO / folder).rglob("*.py"):
            lines = path.read_text(encoding="utf-8").count("\n")
            if lines > MODULE_LINE_LIMIT:
                long_modules[str(path.relative_to(REPO))] = lines
    assert not long_modules, f"over {MODULE_LINE_LIMIT} lines (split by job): {long_modules}"
