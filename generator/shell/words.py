"""Static expansion of one shell word: quotes, escapes, `$'…'`, parameter expansion in all its
forms, `$(( ))`, arrays, positional parameters, tilde, and word splitting.

It works on the source text itself (not on tree-sitter's sub-nodes), which sidesteps the
grammar's known mis-parses inside words (deps-and-oracle §1c) and keeps every byte offset.
Nothing is ever run: `$(…)` and backticks become `<?cmd:…>` unknowns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from generator.launch import unknown_marker
from generator.shell import arith, patterns
from generator.shell.model import (
    Field,
    Group,
    Piece,
    Var,
    has_unknown,
    pieces_text,
)

if TYPE_CHECKING:  # pragma: no cover
    from generator.shell.model import State

_PLAIN = re.compile(r"[^\\'\"$`]+")
_PLAIN_DQ = re.compile(r"[^\\\"$`]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAM = re.compile(r"(?P<pre>[#!])?(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!\-])")
_OPS = ("://", ":-", ":=", ":+", ":?", "//", "/#", "/%", "##", "%%", "^^", ",,",
        "-", "=", "+", "?", "/", "#", "%", "^", ",", ":", "@")
_IFS = re.compile(r"[ \t\n]+")
_DQ_ESCAPABLE = '$`"\\\n'
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
         "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _label_text(text: str, limit: int = 60) -> str:
    text = "_".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class WordError(ValueError):
    """A word whose quotes or braces do not close (reported as a parse error)."""


def find_close_quote(s: str, i: int, end: int, quote: str) -> int:
    """Index of the closing quote for an opening quote at i-1 (double quotes honour escapes
    and nested `$(…)`/`${…}`)."""
    if quote == "'":
        j = s.find("'", i, end)
        if j < 0:
            raise WordError("unterminated single quote")
        return j
    j = i
    while j < end:
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            return j
        if c == "$" and j + 1 < end and s[j + 1] in "({":
            j = find_dollar_close(s, j + 2, end, s[j + 1]) + 1
            continue
        if c == "`":
            k = find_backtick(s, j + 1, end)
            j = k + 1
            continue
        j += 1
    raise WordError("unterminated double quote")


def find_backtick(s: str, i: int, end: int) -> int:
    j = i
    while j < end:
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == "`":
            return j
        j += 1
    raise WordError("unterminated backtick")


def find_dollar_close(s: str, i: int, end: int, opener: str) -> int:
    """Index of the `}` or `)` closing `${`/`$(` whose body starts at i."""
    closer = "}" if opener == "{" else ")"
    depth = 1
    j = i
    while j < end:
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "'" and opener == "(":
            j = find_close_quote(s, j + 1, end, "'") + 1
            continue
        if c == '"':
            j = find_close_quote(s, j + 1, end, '"') + 1
            continue
        if c == "$" and j + 1 < end and s[j + 1] in "({":
            j = find_dollar_close(s, j + 2, end, s[j + 1]) + 1
            continue
        if c == "`":
            j = find_backtick(s, j + 1, end) + 1
            continue
        if opener == "(" and c == "#" and (j == i or s[j - 1] in " \t\n;"):
            nl = s.find("\n", j, end)
            j = end if nl < 0 else nl
            continue
        if c == opener or (opener == "{" and c == "{" ):
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise WordError(f"unterminated $({opener}")


def split_words(s: str, a: int, b: int) -> list[tuple[int, int]] | None:
    """Word ranges of a simple command in s[a:b]; None if it has operators (|, ;, &, <, >)."""
    words: list[tuple[int, int]] = []
    i = a
    start = -1
    try:
        while i < b:
            c = s[i]
            if c in " \t\n":
                if start >= 0:
                    words.append((start, i))
                    start = -1
                i += 1
                continue
            if c in "|;&<>()#" and start < 0 or c in "|;&<>":
                return None
            if start < 0:
                start = i
            if c == "\\":
                i += 2
            elif c in "'\"":
                i = find_close_quote(s, i + 1, b, c) + 1
            elif c == "$" and i + 1 < b and s[i + 1] in "({":
                i = find_dollar_close(s, i + 2, b, s[i + 1]) + 1
            elif c == "`":
                i = find_backtick(s, i + 1, b) + 1
            else:
                i += 1
    except WordError:
        return None
    if start >= 0:
        words.append((start, min(i, b)))
    return words


_MAX_BRACE_WORDS = 256


def _skip_quoted(s: str, j: int, end: int) -> int | None:
    """If s[j] opens a quote or an expansion, the index just after it closes; else None."""
    c = s[j]
    if c == "\\":
        return j + 2
    if c in "'\"":
        return find_close_quote(s, j + 1, end, c) + 1
    if c == "$" and j + 1 < end and s[j + 1] in "({":
        return find_dollar_close(s, j + 2, end, s[j + 1]) + 1
    if c == "$" and j + 1 < end and s[j + 1] == "'":
        k = j + 2
        while k < end and s[k] != "'":
            k += 2 if s[k] == "\\" else 1
        return k + 1
    if c == "`":
        return find_backtick(s, j + 1, end) + 1
    return None


_SEQUENCE = re.compile(r"(-?[0-9]+)\.\.(-?[0-9]+)(?:\.\.(-?[0-9]+))?\Z|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?[0-9]+))?\Z")


def _sequence(body: str) -> list[str] | None:
    """`{1..3}`, `{0..10..2}`, `{a..e}`: the words bash generates, or None."""
    m = _SEQUENCE.match(body)
    if not m:
        return None
    if m.group(1) is not None:
        first, last = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        width = max(len(m.group(1)), len(m.group(2))) if re.match(r"-?0\d", m.group(1) + " ") or re.match(
            r"-?0\d", m.group(2) + " ") else 0
        values = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
        if len(values) > _MAX_BRACE_WORDS:
            return None
        return [str(v).zfill(width) if width else str(v) for v in values]
    first_c, last_c = ord(m.group(4)), ord(m.group(5))
    step = abs(int(m.group(6) or 1)) or 1
    codes = range(first_c, last_c + 1, step) if first_c <= last_c else range(first_c, last_c - 1, -step)
    return [chr(c) for c in codes]


def _brace_group(s: str, a: int, b: int) -> tuple[int, list[tuple[int, int]] | list[str], int] | None:
    """The first unquoted `{x,y,…}` in s[a:b]: (open index, alternative ranges, close index);
    for a sequence `{1..3}` the alternatives are the generated texts."""
    i = a
    while i < b:
        skipped = _skip_quoted(s, i, b)
        if skipped is not None:
            i = skipped
            continue
        if s[i] != "{":
            i += 1
            continue
        depth, j, commas = 1, i + 1, []
        while j < b:
            skipped = _skip_quoted(s, j, b)
            if skipped is not None:
                j = skipped
                continue
            c = s[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            elif c == "," and depth == 1:
                commas.append(j)
            j += 1
        if j < b and commas:
            bounds = [i, *commas, j]
            return i, [(bounds[k] + 1, bounds[k + 1]) for k in range(len(bounds) - 1)], j
        if j < b and (i == a or s[i - 1] != "$"):
            generated = _sequence(s[i + 1 : j])
            if generated is not None:
                return i, generated, j
        i += 1
    return None


def brace_words(s: str, a: int, b: int) -> list[list[tuple[int, int] | str]] | None:
    """Bash brace expansion of the word s[a:b] (`x.{a,b}=1` → two words), each word as the
    source ranges it is made of; None when the word has no brace expansion.
    (Sequences such as `{1..3}` are left literal.)"""
    try:
        group = _brace_group(s, a, b)
    except WordError:
        return None
    if group is None:
        return None
    open_at, alternatives, close_at = group
    suffixes = brace_words(s, close_at + 1, b) or [[(close_at + 1, b)]]
    out: list[list[tuple[int, int] | str]] = []
    for alternative in alternatives:
        if isinstance(alternative, str):
            expanded: list[list[tuple[int, int] | str]] = [[alternative]]
        else:
            expanded = brace_words(s, *alternative) or [[alternative]]  # type: ignore[list-item]
        for alt in expanded:
            for suffix in suffixes:
                out.append([(a, open_at), *alt, *suffix])
                if len(out) > _MAX_BRACE_WORDS:
                    return out
    return out


class Expander:
    """Expands words of one file (`src` is its bytes as latin-1) against an evaluator state."""

    def __init__(self, src: str, path: str | None, host: ExpansionHost) -> None:
        self.src = src
        self.path = path
        self.host = host

    # -- entry points -------------------------------------------------------------------------

    def word(self, a: int, b: int, *, assign: bool = False) -> list[Piece]:
        """Expand without word splitting (assignment values, conditions, case words)."""
        pieces = self.expand(a, b, tilde=True, assign=assign)
        return [p for p in pieces if p.kind == ""]

    def fields(self, a: int, b: int) -> list[Field]:
        """Expand a command argument into the fields bash would pass (after word splitting)."""
        if "{" in self.src[a:b]:
            words = brace_words(self.src, a, b)
            if words is not None:
                fields: list[Field] = []
                for ranges in words:
                    pieces: list[Piece] = []
                    for rng in ranges:
                        if isinstance(rng, str):  # generated by a sequence such as {1..3}
                            pieces.append(Piece(rng, a, b, False, "\\", None, None, self.path))
                        elif rng[0] < rng[1]:
                            pieces.extend(self.expand(rng[0], rng[1], tilde=rng[0] == a))
                    if not pieces:
                        continue
                    fields.extend(split_fields(pieces, a, b, self.path))
                return fields
        pieces = self.expand(a, b, tilde=True)
        return split_fields(pieces, a, b, self.path)

    # -- the scanner ----------------------------------------------------------------------------

    def expand(self, a: int, b: int, *, dq: bool = False, tilde: bool = False, assign: bool = False,
               sq_literal: bool = False, qa: int | None = None, qb: int | None = None) -> list[Piece]:
        s = self.src
        out: list[Piece] = []
        i = a
        quote = '"' if dq else ""
        if tilde and not dq and i < b and s[i] == "~":
            i = self._tilde(i, b, out, assign)
        while i < b:
            c = s[i]
            m = (_PLAIN_DQ if dq else _PLAIN).match(s, i, b)
            if m:
                j = m.end()
                if assign and not dq and not sq_literal:
                    # `PATH=a:~/b`: tilde after ':' in an assignment expands too.
                    k = s.find(":~", i, j)
                    if k >= 0:
                        j = k + 1
                out.append(Piece(s[i:j], i, j, True, quote, qa, qb, self.path))
                i = j
                if assign and not dq and i < b and s[i] == "~" and s[i - 1] == ":":
                    i = self._tilde(i, b, out, assign)
                continue
            if c == "\\":
                if i + 1 >= b:
                    out.append(Piece("\\", i, i + 1, True, quote, qa, qb, self.path))
                    i += 1
                    continue
                nxt = s[i + 1]
                if nxt == "\n":
                    i += 2  # line continuation
                    continue
                if dq and nxt not in _DQ_ESCAPABLE:
                    out.append(Piece("\\" + nxt, i, i + 2, True, quote, qa, qb, self.path))
                else:
                    out.append(Piece(nxt, i, i + 2, False, quote or "\\", qa, qb, self.path))
                i += 2
                continue
            if c == "'" and (dq or sq_literal):
                out.append(Piece("'", i, i + 1, True, quote, qa, qb, self.path))
                i += 1
                continue
            if c == "'":
                j = find_close_quote(s, i + 1, b, "'")
                out.append(Piece(s[i + 1 : j], i + 1, j, True, "'", i, j + 1, self.path))
                i = j + 1
                continue
            if c == '"':
                if dq:  # a nested "…" inside ${v:-"…"} within double quotes
                    j = find_close_quote(s, i + 1, b, '"')
                    out.extend(self.expand(i + 1, j, dq=True, qa=qa, qb=qb))
                    i = j + 1
                    continue
                j = find_close_quote(s, i + 1, b, '"')
                inner = self.expand(i + 1, j, dq=True, qa=i, qb=j + 1)
                if not inner:  # "" is an empty but present argument
                    inner = [Piece("", i + 1, j, True, '"', i, j + 1, self.path)]
                out.extend(inner)
                i = j + 1
                continue
            if c == "`":
                j = find_backtick(s, i + 1, b)
                out.append(self._unknown_cmd(s[i + 1 : j], i, j + 1, dq))
                i = j + 1
                continue
            if c == "$":
                i = self._dollar(i, b, dq, out, qa, qb)
                continue
            out.append(Piece(c, i, i + 1, True, quote, qa, qb, self.path))  # pragma: no cover
            i += 1
        return out

    def _tilde(self, i: int, b: int, out: list[Piece], assign: bool) -> int:
        s = self.src
        j = i + 1
        stops = "/:" if assign else "/"
        while j < b and s[j] not in stops and s[j] not in " \t\n":
            j += 1
        user = s[i + 1 : j]
        if not _NAME.fullmatch(user or "x") or any(ch in user for ch in "'\"$\\`"):
            out.append(Piece("~", i, i + 1, True, "", None, None, self.path))
            return i + 1
        if user:
            out.append(self._unknown(f"~{user}", f"the home directory of {user}", i, j))
        else:
            out.extend(self.host.lookup_pieces("HOME", i, j, dq=False, tilde=True))
        return j

    def _unknown(self, label: str, reason: str, a: int, b: int, *, dq: bool = False,
                 group: Group | None = None) -> Piece:
        return Piece(unknown_marker(label), a, b, False, '"' if dq else "", None, None, self.path,
                     split=False, unknown=reason, group=group)

    def _unknown_cmd(self, body: str, a: int, b: int, dq: bool, body_at: int | None = None) -> Piece:
        cmd = body.strip()
        if body_at is not None:
            emulated = self._pure_command(body_at, body_at + len(body), a, b, dq)
            if emulated is not None:
                return emulated
        if cmd in ("pwd", "pwd -P", "pwd -L"):
            return self._unknown("PWD", "the working directory when the script runs", a, b, dq=dq)
        return self._unknown(f"cmd:{_label_text(cmd)}", f"output of `{_label_text(cmd, 80)}` (never run)",
                             a, b, dq=dq)

    def _pure_command(self, a: int, b: int, ea: int, eb: int, dq: bool) -> Piece | None:
        """`$(basename …)`, `$(dirname …)`, `$(echo …)`: string functions bash would compute
        the same way every run, so they are emulated here (never executed)."""
        words = split_words(self.src, a, b)
        if not words or words is None:
            return None
        name = self.src[words[0][0] : words[0][1]]
        if name not in ("basename", "dirname", "echo"):
            return None
        args: list[str] = []
        for wa, wb in words[1:]:
            for f in self.fields(wa, wb):
                if f.unknowns:
                    return None
                args.append(f.text)
        if name == "echo":
            if args and args[0].startswith("-"):
                return None
            result = " ".join(args)
        elif not args or args[0].startswith("-") or len(args) > 2:
            return None
        elif name == "basename":
            stripped = args[0].rstrip("/") or ("/" if args[0] else "")
            result = stripped.rsplit("/", 1)[-1] if stripped != "/" else "/"
            if len(args) == 2 and result.endswith(args[1]) and result != args[1]:
                result = result[: -len(args[1])]
        else:
            stripped = args[0].rstrip("/")
            head = stripped.rsplit("/", 1)[0] if "/" in stripped else "."
            result = head.rstrip("/") or "/"
        # Command substitution strips trailing newlines; the value is not a literal anywhere.
        return Piece(result, ea, eb, False, '"' if dq else "", None, None, self.path, split=not dq)

    def _dollar(self, i: int, b: int, dq: bool, out: list[Piece], qa: int | None, qb: int | None) -> int:
        s = self.src
        quote = '"' if dq else ""
        nxt = s[i + 1] if i + 1 < b else ""
        if nxt == "(" and i + 2 < b and s[i + 2] == "(":
            try:
                j = find_dollar_close(s, i + 3, b, "(")
            except WordError:
                j = -1
            if j >= 0 and j + 1 < b and s[j + 1] == ")":
                out.append(self._arith(i + 3, j, i, j + 2, dq))
                return j + 2
        if nxt == "(":
            j = find_dollar_close(s, i + 2, b, "(")
            out.append(self._unknown_cmd(s[i + 2 : j], i, j + 1, dq, body_at=i + 2))
            return j + 1
        if nxt == "{":
            j = find_dollar_close(s, i + 2, b, "{")
            out.extend(self._param(i + 2, j, i, j + 1, dq))
            return j + 1
        if nxt == "'" and not dq:
            return self._ansi_c(i, b, out)
        if nxt == '"' and not dq:  # $"…" locale translation: same as "…"
            j = find_close_quote(s, i + 2, b, '"')
            out.extend(self.expand(i + 2, j, dq=True, qa=i + 1, qb=j + 1))
            return j + 1
        m = _NAME.match(s, i + 1, b)
        if m:
            out.extend(self.host.lookup_pieces(m.group(), i, m.end(), dq=dq))
            return m.end()
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            out.extend(self.host.special_pieces(nxt, i, i + 2, dq))
            return i + 2
        out.append(Piece("$", i, i + 1, True, quote, qa, qb, self.path))
        return i + 1

    def _ansi_c(self, i: int, b: int, out: list[Piece]) -> int:
        s = self.src
        j = i + 2
        chars: list[str] = []
        exact = True
        while j < b and s[j] != "'":
            if s[j] == "\\" and j + 1 < b:
                exact = False
                esc = s[j + 1]
                if esc in _ANSI:
                    chars.append(_ANSI[esc])
                    j += 2
                elif esc == "x":
                    m = re.match(r"[0-9a-fA-F]{1,2}", s[j + 2 : j + 4])
                    chars.append(chr(int(m.group(), 16)) if m else "\\x")
                    j += 2 + (len(m.group()) if m else 0)
                elif esc in "01234567":
                    m = re.match(r"[0-7]{1,3}", s[j + 1 : j + 4])
                    chars.append(chr(int(m.group(), 8) & 0xFF))  # type: ignore[union-attr]
                    j += 1 + len(m.group())  # type: ignore[union-attr]
                else:
                    chars.append("\\" + esc)
                    j += 2
                continue
            chars.append(s[j])
            j += 1
        if j >= b:
            raise WordError("unterminated $'")
        out.append(Piece("".join(chars), i + 2, j, exact, "$'", i, j + 1, self.path))
        return j + 1

    # -- arithmetic -------------------------------------------------------------------------

    def _arith(self, a: int, b: int, ea: int, eb: int, dq: bool) -> Piece:
        inner = self.expand(a, b, dq=True)
        text = pieces_text(inner)
        label = f"arith:{_label_text(self.src[a:b].strip())}"
        if has_unknown(inner):
            reasons = "; ".join(p.unknown for p in inner if p.unknown)  # type: ignore[misc]
            return self._unknown(label, f"arithmetic on unknown values ({reasons})", ea, eb, dq=dq)
        try:
            value = arith.evaluate(text, self.host.arith_lookup)
        except (arith.ArithError, ValueError, RecursionError, OverflowError) as err:
            return self._unknown(label, f"arithmetic that cannot be evaluated statically: {err}", ea, eb, dq=dq)
        return Piece(str(value), ea, eb, False, '"' if dq else "", None, None, self.path, split=not dq)

    # -- ${…} -------------------------------------------------------------------------------

    def _param(self, a: int, b: int, ea: int, eb: int, dq: bool) -> list[Piece]:
        s = self.src
        m = _PARAM.match(s, a, b)
        if not m:
            return [self._unknown("bad-substitution", f"`${{{s[a:b]}}}` is not a valid expansion", ea, eb, dq=dq)]
        pre, name = m.group("pre"), m.group("name")
        k = m.end()
        if pre == "#" and name and k == b:
            return self._length(name, None, ea, eb, dq)
        if pre == "#" and k == a + 1 and name == "#":  # pragma: no cover - ${##} oddity
            pre = None
        if pre == "#" and m.group("name") and k < b and s[k] != "[":
            # `${#}` or `${#…op…}`: `#` is the name (number of arguments)
            name, k, pre = "#", a + 1, None
        index: str | None = None
        if k < b and s[k] == "[":
            close = s.find("]", k)
            if close < 0 or close >= b:
                return [self._unknown("bad-substitution", f"`${{{s[a:b]}}}` has no closing ]", ea, eb, dq=dq)]
            index = s[k + 1 : close]
            if "$" in index or "`" in index:
                index_pieces = self.expand(k + 1, close, dq=True)
                if has_unknown(index_pieces):
                    return [self._unknown(f"index:{name}", f"the index `{index}` of {name} is unknown", ea, eb, dq=dq)]
                index = pieces_text(index_pieces)
            k = close + 1
        if pre == "#":
            return self._length(name, index, ea, eb, dq)
        if pre == "!":
            return [self._unknown(f"indirect:{name}", f"indirect expansion `${{!{name}…}}`", ea, eb, dq=dq)]
        if k == b:
            return self.host.lookup_pieces(name, ea, eb, dq=dq, index=index)
        op = next((o for o in _OPS if s.startswith(o, k) and o != "://"), None)
        if op is None:
            return [self._unknown("bad-substitution", f"`${{{s[a:b]}}}` is not a valid expansion", ea, eb, dq=dq)]
        oa = k + len(op)
        return self._operator(name, index, op, oa, b, ea, eb, dq)

    def _length(self, name: str, index: str | None, ea: int, eb: int, dq: bool) -> list[Piece]:
        var = self.host.get_var(name)
        if index in ("@", "*") and var is not None and var.elems is not None:
            n = sum(1 for e in var.elems if e.present)
        else:
            value = self.host.lookup_pieces(name, ea, eb, dq=True, index=index)
            if has_unknown(value):
                return [self._unknown(f"length:{name}", f"length of unknown ${name}", ea, eb, dq=dq)]
            n = len(pieces_text(value))
        return [Piece(str(n), ea, eb, False, '"' if dq else "", None, None, self.path, split=not dq)]

    def _operand(self, oa: int, ob: int, dq: bool) -> list[Piece]:
        pieces = self.expand(oa, ob, tilde=not dq, sq_literal=dq)
        if dq:
            return [p.copy(split=False, q=p.q if p.q else '"') for p in pieces]
        return [p.copy(split=p.split or (p.q == "" and not p.unknown and p.kind == "")) for p in pieces]

    def _operator(self, name: str, index: str | None, op: str, oa: int, ob: int, ea: int, eb: int,
                  dq: bool) -> list[Piece]:
        host = self.host
        state_of = host.param_state(name, index)  # "set", "null", "unset", "unknown"
        if op in (":-", "-", ":=", "=", ":?", "?"):
            use_default = state_of == "unset" or (op.startswith(":") and state_of == "null")
            if state_of == "unknown":
                return host.lookup_pieces(name, ea, eb, dq=dq, index=index)
            if not use_default:
                return host.lookup_pieces(name, ea, eb, dq=dq, index=index)
            if op in (":?", "?"):
                return [self._unknown(f"unset:{name}", f"${name} must be set (`${{{name}{op}…}}`)", ea, eb, dq=dq)]
            operand = self._operand(oa, ob, dq)
            group = def_group(name, operand, oa, ob, '"' if dq else "", self.path)
            pieces = [p.copy(group=group) for p in operand]
            if op in (":=", "=") and index is None and _NAME.fullmatch(name):
                host.assign_scalar(name, [p.copy(split=False) for p in operand], group)
            return pieces
        if op in (":+", "+"):
            use_alt = state_of == "set" or (op == "+" and state_of == "null")
            if state_of == "unknown":
                return [self._unknown(f"unset:{name}", f"whether ${name} is set is unknown", ea, eb, dq=dq)]
            if not use_alt:
                return [Piece("", ea, eb, False, '"' if dq else "", None, None, self.path, kind="vanish")]
            operand = self._operand(oa, ob, dq)
            group = def_group(None, operand, oa, ob, '"' if dq else "", self.path)
            return [p.copy(group=group) for p in operand]
        # Transformations of the value's text.
        value = host.lookup_pieces(name, ea, eb, dq=True, index=index)
        if name in ("@", "*") and op == ":":
            return self._positional_slice(oa, ob, ea, eb, dq)
        if has_unknown(value):
            label = next((p.text[2:-1] for p in value if p.unknown), f"unset:{name}")
            reason = next((p.unknown for p in value if p.unknown), "")
            return [self._unknown(label, reason or f"${name} is unknown", ea, eb, dq=dq)]
        text = pieces_text(value)
        try:
            result = self._transform(text, op, oa, ob)
        except (arith.ArithError, ValueError) as err:
            return [self._unknown(f"derived:{name}", f"`${{{name}{op}…}}`: {err}", ea, eb, dq=dq)]
        if result is None:
            return [self._unknown(f"derived:{name}", f"`${{{name}{op}…}}` depends on unknown values", ea, eb, dq=dq)]
        return [Piece(result, ea, eb, False, '"' if dq else "", None, None, self.path, split=not dq)]

    def _pattern_text(self, a: int, b: int) -> str | None:
        """A pattern operand: quoted parts match literally (escaped for glob_regex)."""
        pieces = self.expand(a, b, sq_literal=False)
        if has_unknown(pieces):
            return None
        out = []
        for p in pieces:
            if p.q or not p.exact and not p.split:
                out.append("".join("\\" + ch for ch in p.text))
            else:
                out.append(p.text)
        return "".join(out)

    def _transform(self, text: str, op: str, oa: int, ob: int) -> str | None:
        s = self.src
        if op in ("#", "##", "%", "%%"):
            pattern = self._pattern_text(oa, ob)
            if pattern is None:
                return None
            if op.startswith("#"):
                return patterns.remove_prefix(text, pattern, longest=op == "##")
            return patterns.remove_suffix(text, pattern, longest=op == "%%")
        if op in ("/", "//", "/#", "/%"):
            # split the operand at the first unescaped, unquoted '/'
            j = oa
            while j < ob and s[j] != "/":
                if s[j] == "\\":
                    j += 1
                elif s[j] in "'\"":
                    j = find_close_quote(s, j + 1, ob, s[j])
                j += 1
            pattern = self._pattern_text(oa, min(j, ob))
            rep_pieces = self.expand(j + 1, ob) if j < ob else []
            if pattern is None or has_unknown(rep_pieces):
                return None
            return patterns.replace(text, pattern, pieces_text(rep_pieces), op)
        if op in (",,", ",", "^^", "^"):
            first = len(op) == 1
            return patterns.lower(text, first) if op.startswith(",") else patterns.upper(text, first)
        if op == ":":
            body = s[oa:ob]
            off_text, colon, len_text = body.partition(":")
            offset = self._arith_text(off_text)
            if offset is None:
                return None
            if offset < 0:
                offset = max(0, len(text) + offset)
            if not colon:
                return text[offset:]
            length = self._arith_text(len_text)
            if length is None:
                return None
            if length < 0:
                return text[offset : len(text) + length]
            return text[offset : offset + length]
        if op == "@":
            return text  # ${v@Q} and friends: keep the value
        raise ValueError(f"unsupported operator {op}")

    def _arith_text(self, text: str) -> int | None:
        return arith.evaluate(text, self.host.arith_lookup) if text.strip() else 0

    def _positional_slice(self, oa: int, ob: int, ea: int, eb: int, dq: bool) -> list[Piece]:
        body = self.src[oa:ob]
        off_text, colon, len_text = body.partition(":")
        try:
            offset = int(off_text.strip() or 0)
            length = int(len_text.strip()) if colon else None
        except ValueError:
            return [self._unknown("$@", "a slice of the script's arguments", ea, eb, dq=dq)]
        return self.host.positional_pieces(ea, eb, dq, offset, length)


class ExpansionHost:
    """What the expander needs from the evaluator (see walker.Evaluator)."""

    state: State
    lookup_pieces: Callable[..., list[Piece]]
    special_pieces: Callable[..., list[Piece]]
    positional_pieces: Callable[..., list[Piece]]
    get_var: Callable[[str], Var | None]
    param_state: Callable[[str, str | None], str]
    assign_scalar: Callable[[str, list[Piece], Group | None], None]
    arith_lookup: Callable[[str], int]


def def_group(variable: str | None, pieces: list[Piece], a: int, b: int, outer_quote: str,
              path: str | None) -> Group:
    """Where a value assigned from the word [a, b) is defined: the word itself when it is
    literal, the chained variable's definition when it is exactly one variable, else nowhere."""
    text = pieces_text(pieces)
    groups = {id(p.group) for p in pieces}
    if pieces and len(groups) == 1 and pieces[0].group is not None and pieces[0].group.text == text:
        return pieces[0].group
    literal = all(p.group is None and not p.unknown and (p.exact or p.q == "\\") for p in pieces)
    if not literal:
        return Group(variable, text, None, None, outer_quote, path)
    if not pieces:
        return Group(variable, text, a, a, outer_quote, path)
    first = pieces[0]
    one_quote = first.qa is not None and first.q in ("'", '"') and all(
        p.qa == first.qa for p in pieces
    ) and first.qa == a and first.qb == b
    if one_quote:
        return Group(variable, text, first.qa + 1, first.qb - 1, first.q, path)  # type: ignore[operator]
    return Group(variable, text, a, b, outer_quote, path)


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
    label = f"glob:{_label_text(text[len(keep):])}"
    reason = f"bash replaces `{text[len(keep):]}` with the names of matching files (depends on the filesystem)"
    first = f.pieces[0]
    head = [Piece(keep, first.a, first.a, False, "", None, None, first.path)] if keep else []
    f.pieces = head + [Piece(unknown_marker(label), first.a, f.pieces[-1].b, False, "", None, None, first.path,
                             unknown=reason)]


_NAME_OR_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_\-$./]*")


def split_fields(pieces: list[Piece], word_a: int, word_b: int, path: str | None) -> list[Field]:
    """Bash word splitting (default IFS) and empty-word removal, keeping piece provenance."""
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
            parts = _IFS.split(p.text)
            offset = 0
            positions = []
            for m in _IFS.finditer(p.text):
                positions.append((m.start(), m.end()))
            starts = [0] + [e for _, e in positions]
            for n, part in enumerate(parts):
                if n > 0:
                    close()
                if part:
                    offset = starts[n]
                    sub_a = p.a + offset if (p.exact and p.a is not None) else p.a
                    sub_b = sub_a + len(part) if (p.exact and sub_a is not None) else p.b
                    cur.append(p.copy(text=part, a=sub_a, b=sub_b, was_split=True))
            continue
        if p.text or not p.split:
            if not p.split:
                present = True
            cur.append(p)
    close()
    for f in fields:
        _mark_glob(f)
        if any(p.elem is not None for p in f.pieces):
            elem = next(p.elem for p in f.pieces if p.elem is not None)
            f.origin, f.word_a, f.word_b, f.path = "array", elem[0], elem[1], elem[2]
        elif split_happened and all(p.split for p in f.pieces):
            f.origin = "string"
            sp = [p for p in f.pieces if p.a is not None and p.b is not None]
            if sp:
                # The word inside the string: from its first piece to the last piece written
                # after it in the same file (pieces of nested variables live elsewhere).
                head = sp[0]
                tail = max((p.b for p in sp if p.path == head.path and p.a >= head.a), default=head.b)
                f.word_a, f.word_b, f.path = head.a, tail, head.path  # type: ignore[assignment]
    return fields
