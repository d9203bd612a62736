"""Backtick substitutions that hold only a comment: `` `# note (with parens)` ``.

People annotate overrides with them (valid bash: the substitution runs a comment and expands
to nothing). bash finds the closing backtick first and then parses the body, so the comment
ends at that backtick; tree-sitter-bash lexes the `#` as a comment to the end of the line,
swallows the closing backtick, and every word after it lands in one broken command
substitution (a "missing `;`" parse error, then cascading stray-word and batch findings).

`mask_comment_substitutions` turns such a comment into the no-op `:` padded with blanks (same
length, so every offset and line of the script is unchanged) before the reader parses and
expands the text: like the comment, `: ` outputs nothing, so the substitution expands to
nothing (tree-sitter-bash mis-parses an all-blank backtick body, so blanks alone will not do). Only comments tree-sitter itself
lexed right after an opening backtick are touched, so quoted text, heredocs and ordinary
comments that mention backticks are left as written.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from generator.reading.shell.parse import parse_bytes

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

# Each pass fixes every comment tree-sitter lexed wrongly; a fix can let it lex a later one
# right or wrong differently, so passes repeat until none is left (bounded: each pass blanks
# at least one comment, and no script has more than a few dozen of them).
_MAX_PASSES = 64
_MAY_HOLD = re.compile(rb"`[^`\n]*#")


def mask_comment_substitutions(data: bytes) -> tuple[bytes, Tree]:
    """(the script with comment-only backtick bodies made `:`, its syntax tree)."""
    tree = parse_bytes(data)
    if _MAY_HOLD.search(data) is None:  # no `#` after a backtick on any line: nothing to mask
        return data, tree
    for _ in range(_MAX_PASSES):
        spans = list(_swallowing_comments(tree.root_node, data))
        if not spans:
            break
        masked = bytearray(data)
        for a, b in spans:  # blanks keep every offset; `: ` runs nothing, like a comment alone
            alone = data[: a].rstrip(b" \t").endswith(b"`")
            masked[a:b] = (b":" if alone else b" ") + b" " * (b - a - 1)
        data = bytes(masked)
        tree = parse_bytes(data)
    return data, tree


def _swallowing_comments(root: Node, data: bytes) -> list[tuple[int, int]]:
    """[start, end) of each comment that opens right after a backtick and runs past the
    backtick bash would close the substitution with: the text to blank is the comment up to
    (not including) that backtick."""
    out: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            span = _masked_span(node, data)
            if span is not None:
                out.append(span)
            continue
        stack.extend(node.children)
    return out


def _masked_span(comment: Node, data: bytes) -> tuple[int, int] | None:
    a, b = comment.start_byte, min(comment.end_byte, len(data))
    close = _first_unescaped_backtick(data, a, b)
    if close is None:
        return None
    k = a - 1
    while k >= 0 and data[k] in b" \t":
        k -= 1
    right_after_backtick = k >= 0 and data[k] == ord("`") and not (k > 0 and data[k - 1] == ord("\\"))
    if right_after_backtick and _opens(comment, k):
        return a, close
    if not right_after_backtick and _in_backtick_substitution(comment):
        return a, close  # `cmd # note`: the comment after a command ends at the backtick too
    return None


def _in_backtick_substitution(comment: Node) -> bool:
    node = comment.parent
    while node is not None:
        if node.type == "command_substitution" and node.children and node.children[0].type == "`":
            return True
        node = node.parent
    return False


def _opens(comment: Node, at: int) -> bool:
    """Whether the backtick token at byte `at` opens a substitution (the first child of a
    command_substitution, or a lone token of an ERROR); a closing backtick before a real
    comment (`` x=`pwd` # see `y` ``) does not."""
    root = comment
    while root.parent is not None:
        root = root.parent
    token = root.descendant_for_byte_range(at, at + 1)
    # (tree-sitter may start the token at the blank before the backtick: compare the ends.)
    if token is None or token.type != "`" or token.end_byte != at + 1:
        return False
    holder = token.parent
    if holder is None:
        return False
    if holder.type == "command_substitution":
        return holder.children[0].end_byte == at + 1 and holder.children[-1].end_byte != at + 1
    return holder.type == "ERROR"


def _first_unescaped_backtick(data: bytes, a: int, b: int) -> int | None:
    i = a
    while i < b:
        c = data[i]
        if c == 0x5C:  # backslash
            i += 2
            continue
        if c == 0x60:
            return i
        i += 1
    return None
