"""What the text-hazard finders (hazards.py, command_traps.py) ask of the script's source: is a
byte quoted text (inside a string, a heredoc or a comment, by the syntax tree), does a line end
with a `\\` continuation (an odd run of backslashes before its newline), and what a line says."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Tree

# Syntax-tree nodes whose text bash does not read as code.
QUOTED_TYPES = frozenset({"comment", "string", "raw_string", "heredoc_body", "ansi_c_string", "heredoc_redirect"})


def in_quoted_text(tree: Tree, offset: int) -> bool:
    """Whether the byte at `offset` lies inside a node of QUOTED_TYPES."""
    node = tree.root_node.descendant_for_byte_range(offset, offset + 1)
    while node is not None:
        if node.type in QUOTED_TYPES:
            return True
        node = node.parent
    return False


def continues(src: str, line_end: int) -> bool:
    """Does the line ending at `line_end` (index of its newline) end with a continuation?"""
    j = line_end - 1
    count = 0
    while j >= 0 and src[j] == "\\":
        count += 1
        j -= 1
    return count % 2 == 1


def line_from(src: str, start: int) -> str:
    """The text from `start` to the end of its line (the newline left out)."""
    end = src.find("\n", start)
    return src[start : len(src) if end < 0 else end]
