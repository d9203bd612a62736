"""Where packaged data lives, in a wheel and in a source checkout alike.

The wheel ships `templates/`, `recipes/` and `docs/` inside the `generator` package (see pyproject's
force-include); an editable install or a plain checkout has them beside the package.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

_PACKAGE = Path(__file__).resolve().parent.parent  # base/ -> the generator package


def _shipped(name: str) -> Path:
    inside = _PACKAGE / name
    if inside.is_dir():
        return inside
    return _PACKAGE.parent / name


def templates_dir() -> Path:
    return _shipped("templates")


def recipes_dir() -> Path:
    return _shipped("recipes")


def docs_dir() -> Path:
    """The project's docs/ (rule pages, models, CLI): `gen doc` and `gen rule` print from it."""
    return _shipped("docs")


def data_dir() -> Path:
    return _PACKAGE / "data"


def load_data_yaml(path: Path) -> Any:
    """A packaged data file's YAML (models, verl's layouts, the step-time calibration), parsed with
    libyaml's C loader when PyYAML has it: the pure-Python one costs a plan tens of milliseconds."""
    import yaml  # PyYAML, a dependency of omegaconf; imported only by the commands that read data

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)


def load_cached_data_yaml(path: Path, valid: Callable[[Any], bool]) -> Any:
    """A packaged data file's YAML through the data cache (generator.base.cache.cached_parse: keyed
    by the file's stamp, kept as JSON), so a command that reads it need not import PyYAML (~20-45 ms
    of a `gen plan`); `valid` is the shape a trusted entry must have."""
    from generator.base.cache import cached_parse

    return cached_parse(path, load_data_yaml, valid)


@lru_cache(maxsize=32)
def packaged_json(path: Path) -> Any:
    """A JSON file shipped inside the package (the rule catalog), parsed once: package data never
    changes while a command runs, and no user file is read here (tests/test_caches.py lists it)."""
    import json

    return json.loads(path.read_text(encoding="utf-8"))
