"""Byte-level editing primitives: splice edits back to front, write a value into a quoting
context, and replace a file atomically.

Everything here is pure except `write_atomic`. Offsets are byte offsets into the original
UTF-8 text (as recorded by the shell reader), so edits never depend on each other: they are
sorted and applied from the end of the file, the way pyupgrade does, and earlier offsets stay
valid while later text changes length.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

from generator.errors import InputError
from generator.rules.core import TextEdit


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


# --- atomic write --------------------------------------------------------------------------


def _writable_bits(mode: int) -> bool:
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _match_trailing_newline(original: bytes, data: bytes) -> bytes:
    if original.endswith(b"\n") and not data.endswith(b"\n"):
        return data + b"\n"
    if not original.endswith(b"\n") and data.endswith(b"\n") and original:
        return data.rstrip(b"\n")
    return data


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace the file at `path` with `data`, all or nothing.

    The new text goes to a temporary file in the same directory, is flushed to disk, gets the
    original's mode bits, and then replaces the original with `os.replace` (atomic on POSIX).
    The original's trailing-newline state is kept. A symlink is followed (the target is
    replaced, the link stays). Any failure leaves the original untouched and raises
    InputError with one line. A file without write permission is refused even for root: its
    owner marked it read-only.
    """
    target = Path(os.path.realpath(path))
    try:
        st = target.stat()
        original = target.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file")
    if not _writable_bits(st.st_mode) or not os.access(target, os.W_OK):
        raise InputError(f"{path}: file is read-only; nothing written")
    directory = target.parent
    try:
        dir_mode = directory.stat().st_mode
    except OSError as err:
        raise InputError(f"{path}: cannot stat its directory: {err.strerror or err}") from None
    if not _writable_bits(dir_mode) or not os.access(directory, os.W_OK):
        raise InputError(f"{path}: directory {directory} is read-only; nothing written")

    data = _match_trailing_newline(original, data)
    temp_name: str | None = None
    try:
        fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".gen-tmp", dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, stat.S_IMODE(st.st_mode))
        os.replace(temp_name, target)
        temp_name = None
        _fsync_dir(directory)
    except OSError as err:
        raise InputError(f"{path}: write failed, original kept: {err.strerror or err}") from None
    finally:
        if temp_name is not None:
            try:
                os.unlink(temp_name)
            except OSError:
                pass


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; best effort (some filesystems refuse O_RDONLY on dirs)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
