"""Syntax findings only where bash agrees: the reader's parse errors and unclosed quotes are
checked against `bash -n` (bash_syntax). Where bash parses the file, each becomes a
`reader-limit` note at its line (the reader may have read that part incompletely; the user's
script is not broken), so a valid script never gets "bash syntax error" or exit 2."""

from __future__ import annotations

from generator.reading.launch_script import Hazard
from generator.reading.shell.bash_syntax import bash_parses

# The reader's findings that claim bash cannot read the script.
SYNTAX_KINDS = frozenset({"parse-error", "unterminated-quote"})


def second_opinion(hazards: list[Hazard], data: bytes) -> list[Hazard]:
    """`hazards` with its syntax claims replaced by reader-limit notes when bash parses `data`."""
    claims = [h for h in hazards if h.kind in SYNTAX_KINDS]
    if not claims or bash_parses(data) is not True:
        return hazards
    out = [h for h in hazards if h.kind not in SYNTAX_KINDS]
    for line in sorted({h.line for h in claims}):
        first = next(h for h in claims if h.line == line)
        out.append(Hazard(
            "reader-limit", line,
            f"bash parses this script, but the reader could not read line {line} "
            f"({first.message.split(': ', 1)[-1][:80]}); calls and values around it may be read "
            "incompletely (bash -n was asked; nothing was run)", first.span))
    return out
