"""Effective config of one trainer call (schema defaults + overrides with Hydra semantics)."""

from generator.config.types import Config, KeyIssue

__all__ = [
    "Config",
    "KeyIssue",
    "apply_overrides",
    "build_config",
    "config_from_overrides",
    "is_hydra_rejection",
    "missing_mandatory",
    "needed_op",
]


def __getattr__(name: str):  # lazy: importing generator.config stays cheap
    if name in __all__ and name not in ("Config", "KeyIssue"):
        from generator.config import build

        return getattr(build, name)
    raise AttributeError(name)
