"""Structural repairs for shell hazards whose finding carries no fix of its own.

Today one case: a backslash followed by whitespace and a trailing comment,
`    key=v \\  # note`. Deleting the whitespace would leave `\\#`, an escaped `#` that bash passes as
an argument, so the repair moves the comment to its own line above the command (where a
comment is harmless) and ends the line with a clean `\\`. The rule that reports the hazard
decides *whether* it is a problem; this module only knows how to rewrite the text.
"""

from __future__ import annotations

import re

from generator.edits import TextEdit
from generator.launch import Hazard, LaunchScript
from generator.rules.core import Fix

_BACKSLASH_SPACE_COMMENT = re.compile(rb"\\([ \t]+)(#.*)$")


def _line_bounds(source: bytes, line: int) -> tuple[int, int]:
    start = 0
    for _ in range(line - 1):
        start = source.index(b"\n", start) + 1
    end = source.find(b"\n", start)
    return start, len(source) if end < 0 else end


def _continues(line_text: bytes) -> bool:
    return line_text.endswith(b"\\") and not line_text.endswith(b"\\\\")


def _command_start(source: bytes, line: int) -> int:
    """Line number of the first line of the continued command that `line` belongs to."""
    first = line
    while first > 1:
        start, end = _line_bounds(source, first - 1)
        if not _continues(source[start:end]):
            break
        first -= 1
    return first


def backslash_space_comment_fix(script: LaunchScript, hazard: Hazard) -> Fix | None:
    if hazard.kind != "backslash-space":
        return None
    source = script.source
    try:
        start, end = _line_bounds(source, hazard.line)
    except ValueError:
        return None
    text = source[start:end]
    match = _BACKSLASH_SPACE_COMMENT.search(text)
    if match is None or b"'" in text[: match.start()] or b'"' in text[: match.start()]:
        return None  # no trailing comment, or quotes we would have to reason about: leave it
    comment = match.group(2).rstrip().decode("utf-8", "replace")
    first = _command_start(source, hazard.line)
    first_start, first_end = _line_bounds(source, first)
    first_text = source[first_start:first_end]
    indent = first_text[: len(first_text) - len(first_text.lstrip(b" \t"))].decode()
    backslash_end = start + match.start() + 1
    return Fix(
        description=(f"line {hazard.line}: move the trailing comment above the command so the backslash "
                     "ends the line and continues the command"),
        edits=(
            TextEdit(first_start, first_start, f"{indent}{comment}\n"),
            TextEdit(backslash_end, end, ""),
        ),
        applicability="safe",
    )


def fallback_fix(script: LaunchScript, line: int | None) -> Fix | None:
    """A structural fix for the hazard reported at `line`, when the finding brought none."""
    if line is None:
        return None
    for hazard in script.hazards:
        if hazard.line == line:
            fix = backslash_space_comment_fix(script, hazard)
            if fix is not None:
                return fix
    return None
