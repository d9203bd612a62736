"""The evaluator's internal values: text pieces that remember where they were written.

All text here is the script's bytes decoded as latin-1, so a string index is a byte offset
and spans stay exact for non-ASCII scripts; `as_text` turns it into real text at the edge.
"""

from __future__ import annotations

from typing import Iterable


def as_text(latin: str) -> str:
    """Bytes-as-latin-1 → the UTF-8 text bash would pass on."""
    if latin.isascii():  # most text: the same either way
        return latin
    try:
        return latin.encode("latin-1").decode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return latin


def label_text(text: str, limit: int = 60) -> str:
    text = "_".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def from_text(text: str) -> str:
    """Real text (from --env/--arg) → the bytes-as-latin-1 form used inside the evaluator."""
    return text.encode("utf-8").decode("latin-1")


# The records below are plain classes with __slots__, not dataclasses: a check's start does not
# import dataclasses (and inspect, ast, dis, tokenize behind it) nor compile their methods. Nothing
# compares or prints them, so they have no __eq__ or __repr__.


class Group:
    """Where a variable's value is defined, so an override that is exactly this value can be
    edited at its definition. `span_*` is None when no single place defines it."""

    __slots__ = ("variable", "text", "span_start", "span_end", "quoting", "path")
    variable: str | None
    text: str
    span_start: int | None
    span_end: int | None
    quoting: str
    path: str | None

    def __init__(self, variable: str | None, text: str, span_start: int | None, span_end: int | None,
                 quoting: str = "", path: str | None = None) -> None:
        self.variable = variable
        self.text = text
        self.span_start = span_start
        self.span_end = span_end
        self.quoting = quoting
        self.path = path


class Piece:
    """A run of expanded text.

    a, b:    the source bytes it came from (b excludes a closing quote)
    exact:   text == source[a:b] (so sub-ranges map 1:1 onto bytes)
    q:       quoting at the source: "" bare, "'", '"', "$'", "\\" (backslash-escaped char)
    qa, qb:  the enclosing quotes' own bytes [qa, qb) when q is a quote
    split:   an unquoted expansion result here, so bash would word-split and glob it
    unknown: why the text is unknown (text is then a `<?label>` marker)
    group:   the variable definition this text came from whole
    kind:    "" text, "break" (field boundary from "${a[@]}"), "vanish" (an expansion that
             produced no words: the word disappears unless something else is in it)
    elem:    (a, b, path) of the array element this text came from
    was_split: the field this piece ends up in came from word-splitting a string
    """

    __slots__ = ("text", "a", "b", "exact", "q", "qa", "qb", "path", "split", "unknown", "group", "inner", "kind",
                 "elem", "was_split")
    text: str
    a: int | None
    b: int | None
    exact: bool
    q: str
    qa: int | None
    qb: int | None
    path: str | None
    split: bool
    unknown: str | None
    group: Group | None
    inner: Group | None  # the group before the latest expansion wrapped it (strings)
    kind: str
    elem: tuple[int, int, str | None] | None
    was_split: bool

    def __init__(self, text: str, a: int | None = None, b: int | None = None, exact: bool = False, q: str = "",
                 qa: int | None = None, qb: int | None = None, path: str | None = None, split: bool = False,
                 unknown: str | None = None, group: Group | None = None, inner: Group | None = None,
                 kind: str = "", elem: tuple[int, int, str | None] | None = None, was_split: bool = False) -> None:
        self.text = text
        self.a = a
        self.b = b
        self.exact = exact
        self.q = q
        self.qa = qa
        self.qb = qb
        self.path = path
        self.split = split
        self.unknown = unknown
        self.group = group
        self.inner = inner
        self.kind = kind
        self.elem = elem
        self.was_split = was_split

    def copy(self, **changes: object) -> Piece:
        # Positional and hand-written: a replace() that walks the fields was the reader's top cost.
        p = Piece(self.text, self.a, self.b, self.exact, self.q, self.qa, self.qb, self.path, self.split,
                  self.unknown, self.group, self.inner, self.kind, self.elem, self.was_split)
        for name, value in changes.items():
            setattr(p, name, value)
        return p


BREAK = Piece("", kind="break")

# How large one value may grow. Real launch scripts stay far below (values of a few hundred
# characters, arrays of tens); a value past it can only come from repetition (`x=$x$x` line
# after line, `${x//a/aaaa}`, an array doubled), which grows exponentially when followed: it
# becomes an explicit unknown instead.
MAX_VALUE_CHARS = 256 * 1024
MAX_VALUE_PARTS = 4096
TOO_LARGE = (f"the value grows past {MAX_VALUE_CHARS // 1024} KiB or {MAX_VALUE_PARTS} parts "
             "(built by repetition); not followed")
# Units of expansion work (a part copied; 64 characters of text handled) one script may cost,
# about 1 s of CPU at worst. The costliest of the 585 corpus scripts needs 1,428; 1 MiB of
# references to a value at the caps above would need 10^9 (hours): reading stops with
# TooMuchWork instead.
WORK_LIMIT = 300_000


class TooMuchWork(Exception):
    """Reading the script would take more than WORK_LIMIT units of expansion; `cause` says what
    spent the last unit (values built by repetition, shell function calls)."""

    def __init__(self, cause: str = "values built by repetition") -> None:
        super().__init__(cause)
        self.cause = cause


# A call of a shell function costs this much plus its body's size (one unit per 64 bytes):
# `f() { f; f; f; f; f; f; f; f; f; f; }; f` calls f 10^8 times within the depth cap. Walking
# one small call takes 0.2-1 ms (the machine's load), so a call costs 256 units and WORK_LIMIT
# allows ~1,170 calls (about 1 s); real launchers call a few functions a few times (issue 21).
CALL_COST = 256
FUNCTION_CALLS = "shell function calls, e.g. a function that calls itself many times"


class Work:
    """The expansion work spent on one script so far."""

    __slots__ = ("spent",)

    def __init__(self) -> None:
        self.spent = 0

    def charge(self, parts: int, chars: int = 0, cause: str | None = None) -> None:
        self.spent += parts + (chars >> 6)
        if self.spent > WORK_LIMIT:
            raise TooMuchWork(cause) if cause else TooMuchWork()


def size_of(pieces: Iterable[Piece]) -> tuple[int, int]:
    """(parts, characters) of a value's pieces: what storing it costs, and what the caps measure."""
    parts = chars = 0
    for piece in pieces:
        parts += 1
        chars += len(piece.text)
    return parts, chars


def too_large(parts: int, chars: int) -> bool:
    """More parts or characters than one value may hold (MAX_VALUE_*)."""
    return parts > MAX_VALUE_PARTS or chars > MAX_VALUE_CHARS


class Elem:
    """One element of an array variable: its value, where it was assigned (a, b in `path`)."""

    __slots__ = ("pieces", "a", "b", "path", "present")
    pieces: list[Piece]
    a: int | None
    b: int | None
    path: str | None
    present: bool  # False for the gaps of a sparse array (`a[5]=x` on a 2-element array)

    def __init__(self, pieces: list[Piece], a: int | None, b: int | None, path: str | None,
                 present: bool = True) -> None:
        self.pieces = pieces
        self.a = a
        self.b = b
        self.path = path
        self.present = present


class Var:
    """A shell variable: a scalar (`pieces`), an array (`elems`) or unknown (`unknown` set)."""

    __slots__ = ("pieces", "elems", "group", "unknown", "label", "exported", "env_default", "arg_default")
    pieces: list[Piece] | None
    elems: list[Elem] | None
    group: Group | None
    unknown: str | None  # reason
    label: str  # marker label when unknown
    exported: bool
    # `X=${X:-default}` with X unset in the script: the value stands for "the environment's, else
    # this default", so a guard that exits when X is empty asserts the run provides X.
    env_default: bool
    # `X=${2:-default}` read with no second argument: N (here 2), whose default the value is; a
    # guard that exits without N arguments makes it the argument's, unknown (0: not such a value).
    arg_default: int

    def __init__(self, pieces: list[Piece] | None = None, elems: list[Elem] | None = None, group: Group | None = None,
                 unknown: str | None = None, label: str = "", exported: bool = False,
                 env_default: bool = False, arg_default: int = 0) -> None:
        self.pieces = pieces
        self.elems = elems
        self.group = group
        self.unknown = unknown
        self.label = label
        self.exported = exported
        self.env_default = env_default
        self.arg_default = arg_default


def var_size(var: Var) -> tuple[int, int]:
    """(parts, characters) of a variable's value; an array's parts are its elements or their
    pieces, whichever are more."""
    if var.pieces is not None:
        return size_of(var.pieces)
    if var.elems is not None:
        parts, chars = size_of(p for e in var.elems for p in e.pieces)
        return max(parts, len(var.elems)), chars
    return 0, 0


def pieces_text(pieces: list[Piece]) -> str:
    if len(pieces) == 1:  # most values and words: no list to build and join
        return pieces[0].text
    return "".join([p.text for p in pieces])


def has_unknown(pieces: list[Piece]) -> bool:
    return any(p.unknown for p in pieces)


class Field:
    """One argument bash hands to a command, with where it came from."""

    __slots__ = ("pieces", "word_a", "word_b", "path", "origin", "cmd_a")
    pieces: list[Piece]
    word_a: int
    word_b: int
    path: str | None
    origin: str  # literal | array | string
    cmd_a: int  # start of the word on the command line it was expanded from

    def __init__(self, pieces: list[Piece], word_a: int, word_b: int, path: str | None, origin: str = "literal",
                 cmd_a: int = -1) -> None:
        self.pieces = pieces
        self.word_a = word_a
        self.word_b = word_b
        self.path = path
        self.origin = origin
        self.cmd_a = cmd_a

    @property
    def text(self) -> str:
        return pieces_text(self.pieces)

    @property
    def unknowns(self) -> list[str]:
        return [p.unknown for p in self.pieces if p.unknown]
