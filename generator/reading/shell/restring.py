"""Reading a command string the way the shell that runs it would: `eval "$CMD"`,
`tmux send-keys -t S "python3 -m verl… \\" C-m`, a trainer call held in `RUN_SCRIPT="…"` that
another script evals — when the string is not plain words (it holds quotes, `2>&1 | tee`,
`\\` continuations), eval_words cannot split it, so its text is parsed again here.

The string must be written out as one word in a file the reader holds: the word on the
command line, or the value of the assignment that defines the variable. The text parsed is
that file with everything outside the word blanked (newlines kept), and the word's own quoting
undone in place: its double quotes become blanks, the escapes inside them (`\\"`, `\\$`, `\\\\`)
the character they stand for padded with a blank, a `\\` before a newline (which "…" drops) two
blanks; `$var` inside is left to be expanded again, as eval would. Every offset and line stays
where it is in the file, so findings land on the file's own lines. The re-read text gets a
label of its own ("<file> (string at line N)"), so `gen fix` never edits through it
(generator/fix/place.py refuses other files).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from generator.reading.shell.model import Field
from generator.reading.shell.scan import WordError, skip_quoted

_NOT_NEWLINE = re.compile(r"[^\n]")


def string_region(f: Field, texts: Callable[[str | None], str | None]) -> tuple[str | None, int, int] | None:
    """(file, start, end) of the word that writes the string `f` holds: the definition of the
    variable it is the whole value of (its last `NAME=` in that file), or its own word on the
    command line; else None. `texts` gives a file's text by path."""
    groups = {id(p.group): p.group for p in f.pieces}
    if len(groups) == 1:
        g = next(iter(groups.values()))
        if g is not None and g.text == f.text:
            if g.span_start is not None and g.span_end is not None:
                return g.path, g.span_start, g.span_end
            src = texts(g.path)
            found = definition_word(src, g.variable) if src is not None and g.variable else None
            if found is not None:
                return g.path, found[0], found[1]
    if f.origin == "literal" and f.word_b > f.word_a:
        return f.path, f.word_a, f.word_b
    return None


def fields_region(fields: list[Field], texts: Callable[[str | None], str | None]
                  ) -> tuple[str | None, int, int] | None:
    return string_region(fields[0], texts) if len(fields) == 1 else None


def definition_word(src: str, name: str) -> tuple[int, int] | None:
    """[start, end) of the value word of the last `NAME=…` assignment written in `src`."""
    last = None
    for m in re.finditer(r"(?m)^[ \t]*(?:(?:export|local|declare|readonly)[ \t]+)?" + re.escape(name) + "=", src):
        last = m
    if last is None:
        return None
    a = i = last.end()
    try:
        while i < len(src) and src[i] not in " \t\n;&|":
            k = skip_quoted(src, i, len(src))
            i = k if k is not None else i + 1
    except WordError:
        return None
    if i <= a or re.search(r"\$\{?" + re.escape(name) + r"\b", src[a:i]):
        return None  # `CMD="$CMD …"` builds on itself: its text read again would repeat it
    return a, i


def reparse_text(src: str, a: int, b: int) -> str:
    """The file's text (latin-1) with only the word [a, b) left, its quoting undone: what the
    string holds, which the shell running it parses again. A quote or escape character removed
    from a line is made up for by a blank at the start of the next line (a blank where it was
    would split the word; one before the newline would break a `\\` continuation), so every
    line keeps its place and its content starts where the file's line table says."""
    out: list[str] = [_NOT_NEWLINE.sub(" ", src[:a])]
    pad = 0
    i, dq = a, False

    def emit(text: str) -> None:
        nonlocal pad
        for part in text.split("\n")[:-1]:
            out.append(part + "\n" + " " * pad)
            pad = 0
        out.append(text.rsplit("\n", 1)[-1])

    while i < b:
        c = src[i]
        if c == '"':
            pad += 1
            dq = not dq
            i += 1
        elif c == "\\" and i + 1 < b:
            nxt = src[i + 1]
            if nxt == "\n" or (dq and nxt not in '$`"\\'):
                emit(c + nxt)  # a continuation stays one; inside "…" this backslash stays too
            else:
                pad += 1
                emit(nxt)
            i += 2
        elif c == "'" and not dq:
            j = src.find("'", i + 1, b)
            j = b - 1 if j < 0 else j
            pad += 2
            emit(src[i + 1 : j])
            i = j + 1
        else:
            emit(c)
            i += 1
    emit(" " * pad)
    pad = 0
    out.append(_NOT_NEWLINE.sub(" ", src[b:]))
    return "".join(out)
