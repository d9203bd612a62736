"""verl's config keys and defaults per release, loaded from packaged JSON (or from the user's
installed verl), plus the choice of release and the migrations between releases.

The JSON files under `data/` are built by `tools/build_schemas.py` from verl's own YAML.
Loading one takes a few ms; nothing here imports hydra, omegaconf or verl.
"""

from __future__ import annotations

from generator.schema.release_schema import (
    DEFAULT_CONFIG,
    Schema,
    available,
    load,
    register_dir,
)
from generator.schema.migrations import (
    Rename,
    ValueChange,
    removed_values,
    renames,
)
from generator.schema.releases import HEAD_SCHEMA, SNAPSHOTS, packaged_releases, snapshot_version
from generator.schema.resolution import resolve_version

__all__ = [
    "DEFAULT_CONFIG",
    "HEAD_SCHEMA",
    "Rename",
    "SNAPSHOTS",
    "Schema",
    "ValueChange",
    "available",
    "load",
    "packaged_releases",
    "register_dir",
    "removed_values",
    "renames",
    "resolve_version",
    "snapshot_version",
]
