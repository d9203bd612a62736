"""One finding per cause in an unrolled loop, not one per loop value.

The reader unrolls `for c in "${conditions[@]}"; do python3 -m verl... key=$c/x; done` into one
call per value (shell/walker.py), so a mistake the loop carries (array elements written with a
trailing comma: `("a", "b", ...)` makes every value end in `,`) is checked once per value and
reported once per value: seven copies of one error per key, each saying the same thing with
another value. What the user fixes is one line, so the first value's finding stands for the rest
and says which other values repeat it.

A finding repeats when the same call (its line and file) gives the same code on the same line and
key in another pass of the loop; a finding only some values give is a repeat among those values
only. Pure: the caller's results are rebuilt, nothing else is read.
"""

from __future__ import annotations

from typing import TypeVar

from generator.reading.launch_script import Invocation
from generator.rules.core import Finding

C = TypeVar("C")
Result = tuple[Invocation | None, C, list[Finding]]

# How many of the other values the message names before it only counts them.
_NAMED_VALUES = 3


def _pass_label(invocation: Invocation) -> str | None:
    """The loop value this pass runs with (`condition=dots`), from the walker's context label."""
    for label in reversed(invocation.context):
        if label.startswith("for ") and "=" in label and " in " not in label:
            return label[len("for "):]
    return None


def fold_loop_repeats(results: list[Result[C]]) -> list[Result[C]]:
    """`results` (check_script's (invocation, config, findings) per call) with the findings that an
    earlier pass of the same loop already gave removed, and that earlier finding told how many
    passes (and which values) repeat it."""
    first: dict[tuple[object, ...], tuple[int, int]] = {}
    repeats: dict[tuple[int, int], list[str]] = {}
    rebuilt: list[Result[C]] = []
    for index, (invocation, config, findings) in enumerate(results):
        if invocation is None or invocation.branch != "loop":
            rebuilt.append((invocation, config, findings))
            continue
        kept: list[Finding] = []
        for finding in findings:
            key = (invocation.line, invocation.path, finding.code, finding.line, finding.key)
            origin = first.get(key)
            if origin is not None:
                repeats.setdefault(origin, []).append(_pass_label(invocation) or "")
                continue
            first[key] = (index, len(kept))
            kept.append(finding)
        rebuilt.append((invocation, config, kept))
    for (index, position), labels in repeats.items():
        invocation, config, findings = rebuilt[index]
        named = [f"`{label}`" for label in labels if label][:_NAMED_VALUES]
        more = len(labels) - len(named)
        which = ", ".join(named) + (f" and {more} more" if named and more else "")
        note = (f" (the same in {len(labels)} more pass{'es' if len(labels) > 1 else ''} of the loop"
                + (f": {which}" if named else "") + ")")
        finding = findings[position]
        findings[position] = finding._replace(message=finding.message + note)
        rebuilt[index] = (invocation, config, findings)
    return rebuilt


__all__ = ["fold_loop_repeats"]
