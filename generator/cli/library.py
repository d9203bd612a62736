"""`gen` commands of this group (see generator/cli/__init__.py)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
