"""What `gen diff` prints as text: the changed keys by group, the derived numbers that change
and why, then notes. (The JSON document is DiffResult.to_json.)"""

from __future__ import annotations

from typing import Callable

from generator.config.parsed_values import MISSING, same_value
from generator.diff.launches import GROUPS, DiffResult, derived_text, show_value
from generator.base.safe_text import one_line


def _change_text(a: object, b: object, limit: int = 160) -> str:
    """`a → b`; for two mappings only the entries that differ, so a nested config stays readable."""
    if isinstance(a, dict) and isinstance(b, dict):
        parts = [f"{k}: {show_value(a.get(k, MISSING))} → {show_value(b.get(k, MISSING))}"
                 for k in sorted(set(a) | set(b), key=str) if not same_value(a.get(k, MISSING), b.get(k, MISSING))]
        return "{" + ", ".join(parts) + "}"
    text = f"{show_value(a)} → {show_value(b)}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_text(result: DiffResult, write: Callable[[str], None]) -> None:
    # One line per row, whatever a file name or a value holds (a newline would start a fake row).
    write(f"A: {one_line(result.a.label)} ({result.a.kind})\n")
    write(f"B: {one_line(result.b.label)} ({result.b.kind})\n")
    if result.releases is not None and result.releases[0] != result.releases[1]:
        write(f"compared as each runs: A as verl {result.releases[0]}, B as verl {result.releases[1]} sees it "
              f"(each with its release's defaults; {one_line(result.version_how)})\n")
    else:
        how = f"; version from {result.version_how}" if result.version_how else ""
        write(f"compared as verl {result.version} sees them (release defaults applied{one_line(how)})\n")
    if not result.changes and not result.derived:
        write("\nno differences\n")
    for group in GROUPS:
        rows = [c for c in result.changes if c.group == group]
        if not rows:
            continue
        write(f"\n{group}\n")
        width = max(len(c.key) for c in rows)
        for c in rows:
            implied = "  (follows: set on neither side)" if c.implied else ""
            write(f"  {c.key.ljust(width)}  {one_line(_change_text(c.a, c.b))}{implied}\n")
    if result.derived:
        write("\nderived numbers\n")
        width = max(len(d.name) for d in result.derived)
        for d in result.derived:
            because = f"  ({'; '.join(d.because)})" if d.because else ""
            write(f"  {d.name.ljust(width)}  {derived_text(d.a)} → {derived_text(d.b)}{one_line(because)}\n")
    if result.notes:
        write("\nnotes\n")
        for note in result.notes:
            write(f"  {one_line(note)}\n")
