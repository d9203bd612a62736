"""Effective config of one trainer call (schema defaults + overrides with Hydra semantics)."""

from generator.config.types import Config, KeyIssue

__all__ = ["Config", "KeyIssue"]
