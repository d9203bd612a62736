"""Structural repairs for shell hazards whose finding reached the fix engine without one.

The repairs themselves live with the rules that report the hazards (generator.rules.shell,
one fixer per hazard kind); this is the engine's way to ask for them by line.
"""

from __future__ import annotations

from typing import Callable

from generator.reading.launch_script import Hazard, LaunchScript
from generator.rules.core import Fix
from generator.rules.shell import hazard_fix


def fallback_fixes(script: LaunchScript) -> Callable[[int | None], Fix | None]:
    """The structural fix for the hazard reported at a line, when the finding brought none.
    The hazards are indexed by line once per script: a check can report a finding for each of
    20,000 overrides, and scanning every hazard for each made `gen fix` quadratic."""
    by_line: dict[int, list[Hazard]] = {}
    for hazard in script.hazards:
        if hazard.kind == "backslash-space":
            by_line.setdefault(hazard.line, []).append(hazard)

    def fix_at(line: int | None) -> Fix | None:
        for hazard in by_line.get(line, []) if line is not None else []:
            fix = hazard_fix(script, hazard)
            if fix is not None:
                return fix
        return None

    return fix_at
