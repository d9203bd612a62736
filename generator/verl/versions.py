"""verl release numbers and the ranges rules apply to.

Releases compare as tuples of ints. Rules state the first and last release they apply to;
`None` means open-ended. The releases verl-gen knows are those with a packaged schema
(generator.schema.packaged_releases).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple
from functools import lru_cache


@lru_cache(maxsize=1024)  # pure, and asked for the same few releases hundreds of times a call
def parse(version: str) -> tuple[int, ...]:
    """'0.7.0' -> (0, 7, 0); 'v0.6.1' and '0.7.0.dev1+abc' are accepted (the suffix is dropped)."""
    text = version.strip().lstrip("vV")
    parts: list[int] = []
    for piece in text.split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    if not parts:
        raise ValueError(f"not a version: {version!r}")
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


class VersionRange(NamedTuple):
    """Inclusive range of verl releases, e.g. VersionRange('0.6.0', None) = 0.6.0 and later."""

    first: str | None = None
    last: str | None = None

    def contains(self, version: str) -> bool:
        v = parse(version)
        if self.first is not None and v < parse(self.first):
            return False
        if self.last is not None and v > parse(self.last):
            return False
        return True

    def __str__(self) -> str:
        if self.first is None and self.last is None:
            return "all releases"
        if self.last is None:
            return f">= {self.first}"
        if self.first is None:
            return f"<= {self.last}"
        if self.first == self.last:
            return self.first
        return f"{self.first} .. {self.last}"


def containing(ranges: Sequence[VersionRange], version: str) -> list[bool | None]:
    """For each range, whether it holds `version` (VersionRange.contains), None where that cannot
    be said (a version or a bound that is no release number): asked once for all the rules a
    call might run, not once per rule."""
    try:
        v = parse(version)
    except ValueError:
        return [None] * len(ranges)
    out: list[bool | None] = []
    for span in ranges:
        try:
            out.append(not ((span.first is not None and v < parse(span.first))
                            or (span.last is not None and v > parse(span.last))))
        except ValueError:
            out.append(None)
    return out


ALL = VersionRange()
