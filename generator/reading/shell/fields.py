"""Bash word splitting of an expanded word into the fields a command receives, and the glob
marking of unquoted `*`/`?` (whose result depends on the filesystem)."""

from __future__ import annotations

import re

from generator.reading.launch_script import unknown_marker
from generator.reading.shell.model import Field, Piece, label_text, pieces_text

_IFS = re.compile(r"[ \t\n]+")


def _may_glob(p: Piece) -> bool:
    return (p.split or (p.q == "" and p.exact)) and not p.unknown and ("*" in p.text or "?" in p.text)


def _mark_glob(f: Field) -> None:
    """An unquoted `*` or `?` makes bash replace the word with matching file names: what the
    call receives depends on the filesystem, so the value (after `key=`) becomes unknown.
    (Unquoted `[...]` stays literal: it matches a file only in contrived cases, and the
    reader reports it as the unquoted-glob hazard instead.)"""
    if not any(_may_glob(p) for p in f.pieces):
        return
    text = pieces_text(f.pieces)
    key, eq, _value = text.partition("=")
    keep = (key + eq) if eq and _NAME_OR_KEY.fullmatch(key.lstrip("+~")) else ""
    label = f"glob:{label_text(text[len(keep):])}"
    reason = f"bash replaces `{text[len(keep):]}` with the names of matching files (depends on the filesystem)"
    first = f.pieces[0]
    head = [Piece(keep, first.a, first.a, False, "", None, None, first.path)] if keep else []
    f.pieces = head + [Piece(unknown_marker(label), first.a, f.pieces[-1].b, False, "", None, None, first.path,
                             unknown=reason)]


_NAME_OR_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_\-$./]*")


def split_fields(pieces: list[Piece], word_a: int, word_b: int, path: str | None) -> list[Field]:
    """Bash word splitting (default IFS) and empty-word removal, keeping piece provenance."""
    fields, split_happened = _split(pieces, word_a, word_b, path)
    for f in fields:
        _mark_glob(f)
        _set_origin(f, split_happened)
    return fields


def _split(pieces: list[Piece], word_a: int, word_b: int, path: str | None) -> tuple[list[Field], bool]:
    """The fields the pieces make, and whether any unquoted piece was split at IFS blanks."""
    fields: list[Field] = []
    cur: list[Piece] = []
    present = False  # the current field exists even if empty (quoted "" or literal text)
    split_happened = False

    def close(force: bool = False) -> None:
        nonlocal cur, present
        if cur and (present or any(p.text for p in cur)) or force:
            fields.append(Field(cur, word_a, word_b, path))
        cur = []
        present = False

    for p in pieces:
        if p.kind == "break":
            close(force=present)
            continue
        if p.kind == "vanish":
            continue
        if p.split and not p.unknown and _IFS.search(p.text):
            split_happened = True
            for part in _split_piece(p):
                if part is None:
                    close()
                else:
                    cur.append(part)
            continue
        if p.text or not p.split:
            if not p.split:
                present = True
            cur.append(p)
    close()
    return fields, split_happened


def _split_piece(p: Piece) -> list[Piece | None]:
    """An unquoted piece holding IFS blanks, cut at them: a copy for each non-empty part (its
    offsets narrowed when the piece is the source's own text), None where a field ends."""
    out: list[Piece | None] = []
    starts = [0] + [m.end() for m in _IFS.finditer(p.text)]
    for n, part in enumerate(_IFS.split(p.text)):
        if n > 0:
            out.append(None)
        if part:
            sub_a = p.a + starts[n] if (p.exact and p.a is not None) else p.a
            sub_b = sub_a + len(part) if (p.exact and sub_a is not None) else p.b
            out.append(p.copy(text=part, a=sub_a, b=sub_b, was_split=True))
    return out


def _set_origin(f: Field, split_happened: bool) -> None:
    """Where the field's word is written: an array element's own word, or, for a field split
    out of a string variable, the word inside the string."""
    elem = next((p.elem for p in f.pieces if p.elem is not None), None)
    if elem is not None:
        f.origin, f.word_a, f.word_b, f.path = "array", elem[0], elem[1], elem[2]
    elif split_happened and all(p.split for p in f.pieces):
        f.origin = "string"
        _to_word_inside_string(f)


def _to_word_inside_string(f: Field) -> None:
    """Point the field at its word inside the string: from its first piece to the last piece
    written after it in the same file (pieces of nested variables live elsewhere)."""
    sp = [p for p in f.pieces if p.a is not None and p.b is not None]
    if not sp:
        return
    head = sp[0]
    assert head.a is not None and head.b is not None  # sp keeps pieces with both ends
    tail = max((p.b for p in sp if p.b is not None and p.a is not None and p.path == head.path
                and p.a >= head.a), default=head.b)
    f.word_a, f.word_b, f.path = head.a, tail, head.path
