"""Structural repairs for shell hazards whose finding reached the fix engine without one.

The repairs themselves live with the rules that report the hazards (generator.rules.shell,
one fixer per hazard kind); this is the engine's way to ask for them by line.
"""

from __future__ import annotations

from generator.launch import LaunchScript
from generator.rules.core import Fix
from generator.rules.shell import hazard_fix


def fallback_fix(script: LaunchScript, line: int | None) -> Fix | None:
    """A structural fix for the hazard reported at `line`, when the finding brought none."""
    if line is None:
        return None
    for hazard in script.hazards:
        if hazard.line == line and hazard.kind == "backslash-space":
            fix = hazard_fix(script, hazard)
            if fix is not None:
                return fix
    return None
