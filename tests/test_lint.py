"""The linter's verdict and the facts it cannot see for itself: `ruff check` (the rule set in
pyproject.toml's [tool.ruff.lint]) finds nothing, and the lazily loaded names of
generator.config are exactly the ones its `__all__` writes out."""

from __future__ import annotations

import generator.config as config


def test_config_all_names_every_lazy_name_and_the_two_types() -> None:
    assert sorted(config.__all__) == sorted(["Config", "KeyIssue", *config._LAZY])
    for name in config.__all__:
        assert getattr(config, name) is not None  # each resolves (a lazy one loads its module)
