"""YAML loading that reads scalars the way OmegaConf (and so Hydra and verl) reads them.

PyYAML alone follows YAML 1.1 and reads `1e-6` as a string; OmegaConf adds a float rule so
that it is a float. Config values must match what verl sees, so we use the same rule.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

# Floats as OmegaConf accepts them: 1.0, 1e-6, .5, 1_000.0, +inf, .nan (case-insensitive).
_FLOAT = re.compile(
    r"""^(?:
        [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
      | [-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
      | \.[0-9_]+(?:[eE][-+][0-9]+)?
      | [-+]?\.(?:inf|Inf|INF)
      | \.(?:nan|NaN|NAN)
    )$""",
    re.X,
)


@lru_cache(maxsize=1)
def _loader() -> type:
    import yaml

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    # Drop PyYAML's float rule and install OmegaConf's.
    resolvers = {
        key: [(tag, rx) for tag, rx in value if tag != "tag:yaml.org,2002:float"]
        for key, value in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.yaml_implicit_resolvers = resolvers
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
    return Loader


def load_yaml_text(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=_loader())  # noqa: S506 - SafeLoader subclass


def load_yaml_file(path: str | Path) -> Any:
    return load_yaml_text(Path(path).read_text(encoding="utf-8"))
