"""A Python launcher's text, checked and cut before its concrete-syntax parse.

libcst's native parser crashes the interpreter on deeply nested input (2,000 nested brackets:
exit 139) and is slow on large files (300k assignments: over a minute). So the file is first
scanned in one linear pass (bracket depth, the top-level statements holding an override-looking
string); only those statements are handed on, each first parsed by CPython's own parser (which
refuses what it cannot handle with an exception) and its depth counted without recursion.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Callable
from typing import NamedTuple

from generator.base.errors import InputError

# Deeper than any real launcher (verl's own scripts nest under 15 levels), far below where a
# recursive parser or visitor runs out of stack.
MAX_DEPTH = 100


class Chunk(NamedTuple):
    """Whole lines of the file holding one or more top-level statements."""

    start: int  # byte offset of the chunk in the file
    line: int  # line number of its first line (1-based)
    text: bytes


# AST nodes in one top-level statement of a launcher that names a trainer: a statement that
# lists 2,500 overrides. libcst then reads each such statement; a list of 50,000 overrides took
# 53 s there (issue 21); real launchers list under a hundred.
MAX_NODES = 6_000


def nesting_depth(tree: ast.AST) -> int:
    """The depth of an AST, counted with an explicit stack."""
    return _shape(tree)[0]


def _shape(tree: ast.AST) -> tuple[int, int]:
    """(depth, node count) of an AST, counted with an explicit stack."""
    deepest = count = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest, count


class TooManyNodes(InputError):
    """A statement the reader would hand to libcst is larger than MAX_NODES."""


def checked_tree(data: bytes, path: str | None, first_line: int = 1, max_nodes: int | None = None) -> ast.Module:
    """The module's AST; InputError (one line) when it is not Python or nests too deeply."""
    where = path or "<python>"
    try:
        tree = ast.parse(data)
    except SyntaxError as err:  # IndentationError ("too many levels of indentation") included
        line = (err.lineno or 1) + first_line - 1
        raise InputError(f"{where}: not valid Python (line {line}): {err.msg}") from None
    except (MemoryError, RecursionError):
        raise InputError(f"{where}: the Python launcher nests too deeply to read") from None
    except ValueError as err:  # NUL bytes
        raise InputError(f"{where}: not a Python source file ({err})") from None
    depth, nodes = _shape(tree)
    if depth > MAX_DEPTH:
        raise InputError(f"{where}: the Python launcher nests too deeply to read "
                         f"({depth} levels; the limit is {MAX_DEPTH})")
    if max_nodes is not None and nodes > max_nodes:
        raise TooManyNodes(f"{where}: a statement of the Python launcher (line {first_line}) has more than "
                         f"{max_nodes:,} parts (e.g. thousands of overrides); refused")
    return tree


# Strings, comments, brackets and newlines of Python source; everything else is skipped.
_LEX = re.compile(rb"""#[^\n]*|'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'"""
                  rb"""|"(?:\\.|[^"\\\n])*"|[\[\](){}]|\\\r?\n|\n""", re.S)
_CLAUSE = re.compile(rb"(?:else|elif|except|finally|case)\b")
# Files up to this size are also parsed whole, so a syntax error anywhere is reported.
_FULL_CHECK_BYTES = 1 << 20


def chunks_with_strings(data: bytes, path: str | None, wanted: Callable[[str], bool]) -> list[Chunk]:
    """The top-level statements (whole lines, neighbours merged) holding a string literal for
    which `wanted` is true. A linear scan finds them (and refuses bracket nesting deeper than
    MAX_DEPTH); each is then checked with CPython's parser (see checked_tree), and files up to
    1 MB are checked whole as well."""
    where = path or "<python>"
    whole_checked = len(data) <= _FULL_CHECK_BYTES
    if whole_checked:
        checked_tree(data, path)
    depth = deepest = 0
    starts = [0]  # byte offsets where top-level statements start
    hits: list[int] = []
    size = len(data)
    for match in _LEX.finditer(data):
        token = match.group()
        first = token[:1]
        if token == b"\n":
            nxt = match.end()
            if depth == 0 and nxt < size and data[nxt:nxt + 1] not in b" \t\r\n#" and not (
                    _CLAUSE.match(data, nxt) or data[starts[-1]:starts[-1] + 1] == b"@"):
                starts.append(nxt)
        elif first in b"([{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    raise InputError(f"{where}: the Python launcher nests too deeply to read "
                                     f"(brackets more than {MAX_DEPTH} deep)")
        elif first in b")]}":
            depth = max(depth - 1, 0)
        elif first in b"'\"":
            quote = 3 if token[:3] in (b"'''", b'"""') else 1
            if wanted(token[quote:-quote].decode("utf-8", "replace")):
                hits.append(match.start())
    ranges: list[list[int]] = []
    for offset in hits:
        k = bisect_right(starts, offset) - 1
        begin, end = starts[k], starts[k + 1] if k + 1 < len(starts) else size
        if ranges and begin <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], end)
        else:
            ranges.append([begin, end])
    chunks = [Chunk(begin, data.count(b"\n", 0, begin) + 1, data[begin:end]) for begin, end in ranges]
    try:
        for chunk in chunks:
            checked_tree(chunk.text, path, chunk.line, MAX_NODES)
    except TooManyNodes:
        raise
    except InputError:
        if not whole_checked:
            raise
        return [Chunk(0, 1, data)]  # the file is valid but was cut wrongly: read it whole
    return chunks
