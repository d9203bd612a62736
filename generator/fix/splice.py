"""Byte-level editing primitives: splice edits back to front, write a value into a quoting
context. (Files are written by generator.base.files.write_atomic.)

Everything here is pure. Offsets are byte offsets into the original
UTF-8 text (as recorded by the shell reader), so edits never depend on each other: they are
sorted and applied from the end of the file, the way pyupgrade does, and earlier offsets stay
valid while later text changes length.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from generator.reading.edit_kinds import TextEdit


class OverlappingEdits(ValueError):
    """Two edits touch the same bytes; the caller decides which one to keep."""

    def __init__(self, first: TextEdit, second: TextEdit) -> None:
        self.first, self.second = first, second
        super().__init__(
            f"edits overlap: [{first.start},{first.end}) and [{second.start},{second.end})"
        )


def _sort_key(edit: TextEdit) -> tuple[int, int]:
    return (edit.start, edit.end)


def overlaps(a: TextEdit, b: TextEdit) -> bool:
    """True when the two edits cannot both be applied.

    Two pure insertions at the same offset conflict too (their order would be a guess), but
    an insertion at the boundary of a replacement does not.
    """
    if a.start == a.end and b.start == b.end:
        return a.start == b.start and a.replacement != b.replacement
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def normalise(edits: Iterable[TextEdit]) -> list[TextEdit]:
    """Sorted, duplicates removed; raises OverlappingEdits on the first conflict (by offset)."""
    unique = sorted(set(edits), key=lambda e: (e.start, e.end, e.replacement))
    for earlier, later in zip(unique, unique[1:]):
        if overlaps(earlier, later):
            raise OverlappingEdits(earlier, later)
    # Beyond neighbours: a long replacement can swallow a later, non-adjacent edit.
    widest_end = -1
    widest: TextEdit | None = None
    for edit in unique:
        if widest is not None and overlaps(widest, edit):
            raise OverlappingEdits(widest, edit)
        if edit.end > widest_end:
            widest_end, widest = edit.end, edit
    return unique


def apply_edits(source: bytes, edits: Sequence[TextEdit]) -> bytes:
    """Apply byte-span edits back to front. Out-of-range or overlapping edits raise ValueError."""
    ordered = normalise(edits)
    for edit in ordered:
        if not 0 <= edit.start <= edit.end <= len(source):
            raise ValueError(f"edit [{edit.start},{edit.end}) outside the text (0..{len(source)})")
    out = source
    for edit in reversed(ordered):
        out = out[: edit.start] + edit.replacement.encode("utf-8") + out[edit.end :]
    return out


def select_compatible(groups: Sequence[Sequence[TextEdit]]) -> tuple[list[int], list[int]]:
    """Greedy, in the given order: indexes of edit groups that can be applied together, and
    of those skipped because they overlap an earlier accepted group (ruff's strategy: the
    skipped ones get another chance in the next round)."""
    accepted: list[TextEdit] = []
    taken: list[int] = []
    skipped: list[int] = []
    for index, group in enumerate(groups):
        # The same edit proposed twice (two rules, one repair) is agreement, not a conflict.
        if any(a != b and overlaps(a, b) for a in group for b in accepted):
            skipped.append(index)
            continue
        try:
            normalise(list(group))
        except OverlappingEdits:
            skipped.append(index)
            continue
        accepted.extend(e for e in group if e not in accepted)
        taken.append(index)
    return taken, skipped


# --- quoting -------------------------------------------------------------------------------

# Characters that bash leaves alone in an unquoted word (no splitting, globbing, expansion,
# tilde, comment or brace expansion anywhere in the word).
_BARE_SAFE = re.compile(r"[A-Za-z0-9_./:@%+=,-]*")
_IFS = (" ", "\t", "\n")


class CannotQuote(ValueError):
    """The text cannot be written into this context without changing what bash produces."""


def requote(new_text: str, quoting: str, *, word_split: bool = False) -> str:
    """Source text that makes bash produce exactly `new_text` when written into a span whose
    quoting context is `quoting` ("" bare, "'" or '"'), without changing the surrounding quotes.

    `word_split`: the span is a piece of a string that bash word-splits into the command (an
    unquoted `$ARGS`); then no quoting can keep whitespace or glob characters together, so
    such text raises CannotQuote.
    """
    if word_split:
        if any(ch in new_text for ch in _IFS) or new_text == "":
            raise CannotQuote(f"{new_text!r} would be split into several words")
        if any(ch in new_text for ch in "*?["):
            raise CannotQuote(f"{new_text!r} would be subject to pathname expansion")
    if quoting == "'":
        # Inside '...': nothing is special except the closing quote.
        return new_text.replace("'", "'\\''")
    if quoting == '"':
        return re.sub(r'([\\"$`])', r"\\\1", new_text)
    if quoting != "":
        raise ValueError(f"unknown quoting context {quoting!r}")
    if new_text and _BARE_SAFE.fullmatch(new_text) and not new_text.startswith(("~", "#")):
        return new_text
    if "'" not in new_text:
        return f"'{new_text}'"
    return '"' + re.sub(r'([\\"$`])', r"\\\1", new_text) + '"'


