"""Effective config of one trainer call (schema defaults + overrides with Hydra semantics).

    flat.py       the config being composed and Hydra's structural checks
    apply.py      overrides applied in order (apply_overrides), interpolations resolved
    history.py    why a key is missing (renamed, removed, added later; did you mean)
    locate.py     where a call's --config-path / --config-name point
    build.py      the config of a call read from a script (build_config)
    synthetic.py  configs made from override text or {key: value} (config_from_overrides)
"""

from typing import TYPE_CHECKING

from generator.config.types import Config, KeyIssue

if TYPE_CHECKING:  # the type checker sees the real functions; at run time they load on first use
    # `import X as X` marks each name as re-exported.
    from generator.config.apply import apply_overrides as apply_overrides
    from generator.config.apply import is_hydra_rejection as is_hydra_rejection
    from generator.config.build import build_config as build_config
    from generator.config.synthetic import config_from_overrides as config_from_overrides
    from generator.config.synthetic import missing_mandatory as missing_mandatory
    from generator.config.synthetic import needed_op as needed_op

# name -> module that defines it; loaded on first use so importing generator.config stays cheap.
_LAZY = {
    "apply_overrides": "apply",
    "is_hydra_rejection": "apply",
    "build_config": "build",
    "config_from_overrides": "synthetic",
    "missing_mandatory": "synthetic",
    "needed_op": "synthetic",
}

# Written out, not built from _LAZY: tools that read __all__ without running the module (ruff,
# mypy, an IDE) see the package's names; tests/test_lint.py holds the two lists equal.
__all__ = ["Config", "KeyIssue", "apply_overrides", "build_config", "config_from_overrides", "is_hydra_rejection",
           "missing_mandatory", "needed_op"]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        return getattr(importlib.import_module(f"generator.config.{module}"), name)
    raise AttributeError(name)
