"""The stored calibration a planning or checking command applies (`gen plan`, `gen recipe`,
`gen check --gpu`, `gen explain --memory`; docs/calibrate.md): found for the project of the path
the command works on (the working directory for plan and recipe), matched on the GPU type and
the verl release, put in the command's session for the models to read, and said in one line on
stderr. `--no-calibration` skips all of it; with nothing stored, nothing is said or changed."""

from __future__ import annotations

from pathlib import Path

from generator.base import session
from generator.base.errors import InputError
from generator.base.safe_text import say

NO_CALIBRATION_HELP = "Ignore a stored calibration (gen calibrate --save): the models' own figures."


def apply_stored(start: str | Path, gpu: str, verl_version: str | None, off: bool) -> None:
    """Apply the calibration stored for `gpu` (and `verl_version` when known) in the project of
    `start` or the user's configuration; one that cannot be read is not applied (one line says why)."""
    session.current().calibration = None
    if off:
        return
    from generator.calibrate.saved import Key, find
    from generator.project.settings import find_project_file, settings_at

    where = Path(start)
    folder = where if where.is_dir() else where.parent
    try:
        project = find_project_file(folder)
        verl = verl_version or (settings_at(project).verl_version if project is not None else None)
        found = find(folder, Key(gpu.lower(), verl))
    except InputError as err:
        # A configuration that cannot be read is not applied: a plan in a folder whose own
        # pyproject.toml is broken still plans, as it did before calibrations were read.
        say(f"info: calibration not applied: {err}", flush=True)
        return
    session.current().calibration = found.calibration
    if found.line:
        say(f"info: {found.line}", flush=True)
